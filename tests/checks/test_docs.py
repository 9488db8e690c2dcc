#!/usr/bin/python3
"""test_docs.py — the docs stay true to the tree (ctest: test_docs).

    /usr/bin/python3 tests/checks/test_docs.py --source .

Checks README.md and docs/*.md against the repository:

1. index: every doc in docs/ is linked from docs/README.md;
2. paths: every repository path a doc names (`kernels/fs_x.c`,
   tests/test_y.py, a relative link) exists; a path with a placeholder in
   it (`*`, `<...>`, `{...}`, `…`, `NAME`) is a pattern, not a path;
3. versions: where a doc names the current release (`libfeatstore.so.X.Y.Z`,
   `featstore X.Y.Z`, a quoted version in a sentence about `fs_version()`) it is
   CMake's project(VERSION), and where it names the local protocol
   ("protocol X.Y" or "**X.Y**") on a line about `featstore_local.proto` or
   `FS_LOCAL_MINOR`, proto/fs_local.h's. The
   history (docs/changes.md) is exempt. The Python package's
   featstore/_version.py, which CMake writes (cmake/version.cmake), says
   CMake's version and, in a git checkout, is as committed;
4. api.md section 9 lists every FS_API function of the public headers
   (include/featstore/*.h, the one include root) once,
   with the header that declares it, and nothing else;
5. papers are named, not numbered: no "seed 00N" in PAPERS_BY_NAME (the README,
   docs/, the public headers, the Python package, kernels/, client-lib/ and
   bench/: name the paper in words, with a pointer into docs/papers.md).

Before checking the tree it plants one fault of each kind in a copy of the
docs' text and must find each, and nothing else. Exit status 0 pass, 1 fail.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tests/lib: check_exports
from check_exports import fs_api_declarations  # noqa: E402  (the FS_API parser test_exports uses)
from planted import missed, report  # noqa: E402

HISTORY = ("docs/changes.md",)
PUBLIC_HEADERS = ("include/featstore/*.h",)
# Where papers must be named in words; one line per place (the Python
# package's docstrings: "client-lib/python/featstore/**/*.py").
PAPERS_BY_NAME = ("README.md", "docs/*.md", "client-lib/python/featstore/**/*.py", "kernels/**/*.[ch]",
                  "kernels/**/*.cu", "client-lib/**/*.[ch]", "bench/**/*.[ch]", "bench/**/*.py") + PUBLIC_HEADERS
SEED_NUMBER = re.compile(r"\bseeds? 00\d\b", re.I)
VERSION_FILE = "client-lib/python/featstore/_version.py"
PLACEHOLDER = re.compile(r"[*<>{}…]|\.\.\.|\b[A-Z][A-Z_]*[A-Z]\b(?!\.)")
CURRENT_RELEASE = (re.compile(r"libfeatstore\.so\.(\d+\.\d+\.\d+)"),
                   re.compile(r"\bfeatstore (\d+\.\d+\.\d+)\b"),
                   re.compile(r"fs_version\(\)(?:(?!\.\s)[\s\S]){0,200}?\"(\d+\.\d+\.\d+)\""))  # same sentence
LOCAL_PROTOCOL_LINE = re.compile(r"featstore_local\.proto|FS_LOCAL_MINOR")
PROTOCOL = re.compile(r"(?:\bprotocol |\*\*)(\d+\.\d+)\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def load_docs(root):
    """{repository path: text} of README.md and every docs/*.md."""
    names = ["README.md"] + sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    return {n: read(root, n) for n in names}


def index_faults(docs):
    linked = set(LINK.findall(docs.get("docs/README.md", "")))
    return [f"docs/README.md does not link {name[len('docs/'):]}" for name in docs
            if name.startswith("docs/") and name != "docs/README.md" and name[len("docs/"):] not in linked]


def repo_path_pattern(root):
    """A path that starts with a top-level folder of the repository (build output is not one)."""
    tops = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
                  and not d.startswith((".", "build")))
    return re.compile(r"(?<![\w./-])((?:" + "|".join(map(re.escape, tops)) + r")/[\w./+*<>{}…-]*)")


def path_faults(docs, root):
    named = repo_path_pattern(root)
    faults = []
    for doc, text in docs.items():
        cands = {(m.rstrip(".,:;"), m) for m in named.findall(text)}
        cands |= {(os.path.normpath(os.path.join(os.path.dirname(doc), t.split("#")[0])), t)
                  for t in LINK.findall(text) if not re.match(r"[a-z]+:|#", t)}
        for path, shown in sorted(cands):
            if PLACEHOLDER.search(shown) or not path:
                continue
            if not os.path.exists(os.path.join(root, path)):
                faults.append(f"{doc} names {shown}, which does not exist")
    return faults


def cmake_version(root):
    m = re.search(r"^project\(featstore VERSION (\d+\.\d+\.\d+)", read(root, "CMakeLists.txt"), re.M)
    return m.group(1)


def local_protocol(root):
    h = read(root, "proto/fs_local.h")
    major, minor = (re.search(rf"#define FS_LOCAL_{k} (\d+)", h).group(1) for k in ("MAJOR", "MINOR"))
    return f"{major}.{minor}"


def version_faults(docs, root):
    release, protocol, faults = cmake_version(root), local_protocol(root), []
    for doc, text in docs.items():
        if doc in HISTORY:
            continue
        said = [(m.start(1), m.group(1), release, "release") for rx in CURRENT_RELEASE for m in rx.finditer(text)]
        offset = 0
        for line in text.splitlines(keepends=True):
            if LOCAL_PROTOCOL_LINE.search(line):
                said += [(offset + m.start(1), m.group(1), protocol, "local protocol") for m in PROTOCOL.finditer(line)]
            offset += len(line)
        faults += [f"{doc}:{text.count(chr(10), 0, at) + 1} says {what} {v}; it is {truth}"
                   for at, v, truth, what in sorted(said) if v != truth]
    return faults


def version_file_faults(root):
    release = cmake_version(root)
    m = re.search(r'^__version__ = "([^"]+)"$', read(root, VERSION_FILE), re.M)
    if not m or m.group(1) != release:
        return [f"{VERSION_FILE} says {m and m.group(1)!r}, CMake {release}: reconfigure (cmake/version.cmake)"]
    git = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD", "--", VERSION_FILE],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if git.returncode == 1:  # 0: as committed; anything else: not a git checkout
        return [f"{VERSION_FILE} differs from the committed one: CMake rewrote it from project(VERSION); "
                "commit it, or `pip install ./client-lib/python` from a clone installs another version"]
    return []


def public_functions(root):
    """{function: header basename} of every FS_API function of the public headers."""
    out = {}
    for pattern in PUBLIC_HEADERS:
        for h in sorted(glob.glob(os.path.join(root, pattern))):
            out.update({name: os.path.basename(h) for name, kind in fs_api_declarations(h).items()
                        if kind == "function"})
    return out


def api_table_faults(docs, root):
    text = docs["docs/api.md"]
    m = re.search(r"^## 9\. Every public function\n(.*?)(?=^## )", text, re.M | re.S)
    if not m:
        return ["docs/api.md has no section \"## 9. Every public function\""]
    listed, faults = {}, []
    for row in re.findall(r"^\| (.+?) \| (\S+) \| .*\|$", m.group(1), re.M):
        for name in re.findall(r"`(fs_\w+)\(", row[0]):
            if name in listed:
                faults.append(f"docs/api.md section 9 lists {name} twice")
            listed[name] = row[1]
    declared = public_functions(root)
    for name in sorted(declared.keys() - listed.keys()):
        faults.append(f"docs/api.md section 9 lacks {name} ({declared[name]})")
    for name in sorted(listed.keys() - declared.keys()):
        faults.append(f"docs/api.md section 9 lists {name}, which no public header declares FS_API")
    for name in sorted(listed.keys() & declared.keys()):
        if listed[name] != declared[name]:
            faults.append(f"docs/api.md section 9 puts {name} in {listed[name]}; it is in {declared[name]}")
    return faults


def paper_texts(root):
    return {os.path.relpath(p, root): read(root, os.path.relpath(p, root))
            for pattern in PAPERS_BY_NAME for p in sorted(glob.glob(os.path.join(root, pattern), recursive=True))}


def paper_faults(texts):
    return [f"{path}:{text.count(chr(10), 0, m.start()) + 1} numbers a paper ({m.group(0)!r}): name it in words, "
            "with a pointer into docs/papers.md" for path, text in texts.items() for m in SEED_NUMBER.finditer(text)]


def all_faults(docs, papers, root):
    return (index_faults(docs) + path_faults(docs, root) + version_faults(docs, root)
            + api_table_faults(docs, root) + paper_faults(papers))


def self_test(root, docs, papers):
    """One planted fault of each kind must be found, and nothing else new."""
    already = set(all_faults(docs, papers, root))
    planted_docs, planted_papers = dict(docs), dict(papers)
    planted_docs["docs/README.md"] = docs["docs/README.md"].replace("(api.md)", "(api-gone.md)")
    planted_docs["docs/design.md"] = docs["docs/design.md"] + "\nSee `kernels/fs_gone.c`.\n"
    planted_docs["docs/format.md"] = docs["docs/format.md"] + "\nInstall libfeatstore.so.0.0.1.\n"
    planted_docs["docs/architecture.md"] = docs["docs/architecture.md"] + "\n`featstore_local.proto`: protocol 6.0\n"
    api = docs["docs/api.md"]
    planted_docs["docs/api.md"] = re.sub(r"^\| `fs_ids_free\(.*\n", "", api, count=1, flags=re.M)
    planted_papers["README.md"] = papers["README.md"] + "\nChunk reshuffling (seed 004).\n"
    want = ["docs/README.md does not link api.md", "docs/README.md names api-gone.md",
            "docs/design.md names kernels/fs_gone.c", "docs/format.md:", "docs/architecture.md:",
            "docs/api.md section 9 lacks fs_ids_free",
            "README.md:"]
    return missed([f for f in all_faults(planted_docs, planted_papers, root) if f not in already], want,
                  "one fault of each kind")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="the repository root")
    root = os.path.abspath(ap.parse_args().source)
    docs, papers = load_docs(root), paper_texts(root)
    faults = self_test(root, docs, papers) or all_faults(docs, papers, root) + version_file_faults(root)
    return report(faults, f"{len(docs)} docs, {len(public_functions(root))} public functions, "
                          f"{len(papers)} files checked for numbered papers")


if __name__ == "__main__":
    sys.exit(main())
