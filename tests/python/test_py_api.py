#!/usr/bin/python3
"""test_py_api.py — the Python package's surface, read from its source (ast:
no library, numpy or torch needed, so it runs everywhere, ASan stage too).

1. Type hints: every public function and method of featstore (a def whose
   name has no leading underscore, or __init__, at module level or in any
   class, since a private base's methods are its subclasses' API;
   featstore.pyg included) annotates every argument but self/cls and its
   return.
2. py.typed ships: client-lib/python/featstore/py.typed exists and
   pyproject.toml lists it as package data, with featstore.pyg a package.
3. One name per thing: no public signature takes a name the naming scheme
   retired (RETIRED: fanouts, want_edge_ids, window, strict, label, time),
   except the deprecated calls that keep them (DEPRECATED); every alias
   declared with @renamed maps a retired name to its replacement.
4. Size: no Python file of the package or of examples/ is over 1,000 lines.
5. mypy, when this Python has it (not in CI: a venv of one's own with
   --system-site-packages and `pip install mypy`), finds no error in the
   package (--ignore-missing-imports).

    /usr/bin/python3 tests/python/test_py_api.py [--source .]

Exit status: 0 pass, 1 fail (each failure named).
"""
import argparse
import ast
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Argument names the naming scheme replaced (featstore._deprecation), and by what.
RETIRED = {"fanouts": "num_neighbors", "want_edge_ids": "edge_ids", "window": "time_window or reorder_window",
           "strict": "time_strict or neg_strict", "label": "edge_label", "time": "edge_label_time"}
# Deprecated calls that keep their 1.4-1.5 names (qualified names in their module).
DEPRECATED = {"_stream_calls.py": {"StreamCalls.stream"}}
MAX_LINES = 1000

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def public_defs(tree):
    """(qualified name, FunctionDef, is_method) of every public def: module
    level, and in any class (nested functions are not API)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield node.name, node, False
        elif isinstance(node, ast.ClassDef):  # a private base's public methods are its subclasses' API
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        not item.name.startswith("_") or item.name == "__init__"):
                    yield f"{node.name}.{item.name}", item, True


def arguments(fn):
    a = fn.args
    return a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]


def check_hints(rel, name, fn, method):
    args = arguments(fn)
    if method and args and args[0].arg in ("self", "cls") and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list):
        args = args[1:]
    bare = [x.arg for x in args if x.annotation is None]
    if bare:
        fail(f"{rel}: {name}() has no type hint for {', '.join(bare)}")
    if fn.returns is None:
        fail(f"{rel}: {name}() has no return type hint")


def check_names(rel, name, fn):
    if name in DEPRECATED.get(os.path.basename(rel), ()):
        return
    for x in arguments(fn):
        if x.arg in RETIRED:
            fail(f"{rel}: {name}() takes {x.arg}=, a name the naming scheme retired: call it {RETIRED[x.arg]} "
                 f"(and keep the old one with @renamed)")
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "renamed":
            for kw in d.keywords:
                new = kw.value.value if isinstance(kw.value, ast.Constant) else None
                if kw.arg not in RETIRED or new not in RETIRED[kw.arg].split(" or "):
                    fail(f"{rel}: {name}() aliases {kw.arg}= to {new}=, which is not the naming scheme's "
                         f"replacement ({RETIRED.get(kw.arg, 'none: not a retired name')})")


def python_files(root):
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(d, f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)), help="the repository")
    args = p.parse_args()
    pkg = os.path.join(args.source, "client-lib", "python", "featstore")
    defs = 0
    for path in python_files(pkg):
        rel = os.path.relpath(path, args.source)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name, fn, method in public_defs(ast.parse(text, rel)):
            defs += 1
            check_hints(rel, name, fn, method)
            check_names(rel, name, fn)
    print(f"checked {defs} public functions and methods of {pkg}")
    if defs < 60:
        fail(f"only {defs} public defs found under {pkg}: is the package there?")

    if not os.path.isfile(os.path.join(pkg, "py.typed")):
        fail("client-lib/python/featstore/py.typed is missing (PEP 561: the package's hints are its API)")
    with open(os.path.join(args.source, "client-lib", "python", "pyproject.toml")) as f:
        pyproject = f.read()
    if 'featstore = ["py.typed"]' not in pyproject or '"featstore.pyg"' not in pyproject:
        fail("pyproject.toml must ship py.typed (package-data) and the featstore.pyg package")

    for root in (pkg, os.path.join(args.source, "examples")):
        for path in python_files(root):
            with open(path, encoding="utf-8") as f:
                n = sum(1 for _ in f)
            if n > MAX_LINES:
                fail(f"{os.path.relpath(path, args.source)} has {n} lines, over {MAX_LINES}: split it along its "
                     f"sections")

    if importlib.util.find_spec("mypy") is None:
        print("note: no mypy in this Python: the hints were checked for presence only")
    else:
        cmd = [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-error-summary", "featstore"]
        r = subprocess.run(cmd, cwd=os.path.dirname(pkg), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=600)
        if r.returncode != 0:
            fail(f"mypy found errors in featstore:\n{r.stdout.strip()}")
        else:
            print("mypy: no issues")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
