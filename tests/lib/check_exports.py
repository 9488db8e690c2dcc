#!/usr/bin/python3
"""check_exports.py — the shared library's ABI surface (ctest: test_exports).

    /usr/bin/python3 tests/lib/check_exports.py --lib BUILD/client-lib/libfeatstore.so
        --plugin BUILD/client-lib/libfeatstore-grpc.so.1 --cc cc
        --header include/featstore/client.h ... --include-dir include

Checks, each one a failure of its own (all are reported, then exit 1):

1. `nm -D --defined-only` of libfeatstore.so lists exactly the functions the
   public headers declare with FS_API (parsed from the headers, nothing
   hard-coded): no declaration without its export, no export without its
   declaration. Besides those, only the symbols the linker itself defines
   (_init, _fini, _edata, _end, __bss_start, and version-node names when a
   version script is used) may appear.
2. The gRPC plugin exports fs_grpc_plugin_v1 and nothing else.
3. libfeatstore.so needs (readelf NEEDED, and ldd's whole closure) no gRPC,
   gpr, absl, upb, protobuf, nanopb, ssl or CUDA library: those live in the
   plugin or are linked in statically and hidden.
4. Each public header compiles on its own (included first, and twice) as C
   (-std=c99 and -std=c11) and, when a C++ compiler is found, as C++11, with
   -Wall -Wextra -Wpedantic -Werror; the *_INIT macros compile in both
   languages with -Wall -Werror.

Exit status: 0 pass, 1 fail, 77 (ctest's skip) when nm or readelf is
missing (the reason is printed).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

# Symbols GNU ld / gold / lld define in every shared object; they are not API.
LINKER_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start", "__bss_start__", "__bss_end__",
                  "_bss_end__", "__end__", "_DYNAMIC", "_GLOBAL_OFFSET_TABLE_"}
# -fsanitize=address (the ASan stage of scripts/test.sh) gives each exported
# symbol an ODR indicator (gcc: __odr_asan.NAME, clang: __odr_asan_gen_NAME):
# instrumentation, not API.
SANITIZER_SYMBOL = re.compile(r"^__odr_asan[._]")
# Libraries libfeatstore.so must never need: gRPC and its stack belong to the
# plugin; nanopb and cudart are linked in statically and hidden.
FORBIDDEN_DEPS = re.compile(r"(grpc|libgpr|absl|libupb|protobuf|nanopb|libssl|cuda|cudart|libnv)",
                            re.IGNORECASE)

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


# ---- the headers ------------------------------------------------------------------

def strip_comments_and_directives(text):
    """C source without comments, string contents or preprocessor lines."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines, keep, cont = "".join(out).split("\n"), [], False
    for line in lines:
        directive = cont or line.lstrip().startswith("#")
        cont = directive and line.rstrip().endswith("\\")
        keep.append("" if directive else line)
    return "\n".join(keep)


def fs_api_declarations(path):
    """{name: 'function'|'object'} for every declaration marked FS_API."""
    code = strip_comments_and_directives(open(path, encoding="utf-8").read())
    decls = {}
    for m in re.finditer(r"\bFS_API\b", code):
        end = code.find(";", m.end())
        if end < 0:
            fail(f"{path}: FS_API at offset {m.start()} starts no declaration")
            continue
        decl = code[m.end():end]
        paren = decl.find("(")
        head = decl[:paren] if paren >= 0 else re.split(r"[\[=]", decl)[0]
        names = re.findall(r"[A-Za-z_]\w*", head)
        if not names:
            fail(f"{path}: cannot find the name in FS_API declaration {decl.strip()!r}")
            continue
        decls[names[-1]] = "function" if paren >= 0 else "object"
    return decls


# ---- the shared objects -----------------------------------------------------------

def version_nodes(lib):
    """Version definition names (shown by nm -D as absolute symbols)."""
    out = run(["readelf", "-V", "-W", lib]).stdout
    return set(re.findall(r"Name:\s*(\S+)", out))


def exported(lib):
    """{name: nm type letter} of the defined dynamic symbols."""
    r = run(["nm", "-D", "--defined-only", lib])
    if r.returncode != 0:
        fail(f"nm -D --defined-only {lib} failed: {r.stdout.strip()}")
        return {}
    syms = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1].split("@")[0]
        syms[name] = kind
    return syms


def check_library(lib, headers):
    declared = {}
    for h in headers:
        d = fs_api_declarations(h)
        if not d:
            fail(f"{h}: no FS_API declaration found (a public header without API, or the parser is broken)")
        for name in d:
            if name in declared:
                fail(f"{name} is declared FS_API twice")
        declared.update(d)
    print(f"declared FS_API in {len(headers)} headers: {len(declared)} ({', '.join(sorted(declared))})")
    syms = exported(lib)
    vnodes = version_nodes(lib)
    api = {n: k for n, k in syms.items()
           if n not in LINKER_SYMBOLS and not SANITIZER_SYMBOL.match(n) and not (k == "A" and n in vnodes)}
    print(f"exported by {os.path.basename(lib)}: {len(api)} "
          f"(+ linker symbols: {', '.join(sorted(set(syms) - set(api))) or 'none'})")
    for name in sorted(set(declared) - set(api)):
        fail(f"{name} is declared FS_API but {os.path.basename(lib)} does not export it")
    for name in sorted(set(api) - set(declared)):
        why = "" if name.startswith("fs_") else " (not even an fs_ name: a leaked dependency?)"
        fail(f"{os.path.basename(lib)} exports {name} (nm type {api[name]}), which no public header "
             f"declares with FS_API{why}")
    for name in sorted(set(declared) & set(api)):
        if declared[name] == "function" and api[name] not in "TWi":
            fail(f"{name} is a function in the headers but nm says type {api[name]}")


def check_plugin(plugin):
    syms = exported(plugin)
    extra = sorted(n for n in syms
                   if n not in LINKER_SYMBOLS and not SANITIZER_SYMBOL.match(n) and n != "fs_grpc_plugin_v1")
    print(f"exported by {os.path.basename(plugin)}: {', '.join(sorted(syms)) or 'nothing'}")
    if "fs_grpc_plugin_v1" not in syms:
        fail(f"{plugin} does not export fs_grpc_plugin_v1")
    for name in extra:
        fail(f"{os.path.basename(plugin)} exports {name}: the plugin may export only fs_grpc_plugin_v1")


def check_dependencies(lib):
    r = run(["readelf", "-d", "-W", lib])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout)
    print(f"NEEDED by {os.path.basename(lib)}: {', '.join(needed) or 'nothing'}")
    if r.returncode != 0 or not needed:
        fail(f"readelf -d {lib} listed no NEEDED entry (status {r.returncode}): {r.stdout.strip()[:300]}")
    for n in needed:
        if FORBIDDEN_DEPS.search(n):
            fail(f"{os.path.basename(lib)} NEEDs {n}: gRPC/protobuf/nanopb/CUDA must stay out of it")
    ldd = shutil.which("ldd")
    if not ldd:
        print("note: no ldd; checked the direct NEEDED entries only")
        return
    r = run([ldd, lib])
    closure = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
    print(f"ldd closure: {', '.join(closure)}")
    for n in closure:
        if FORBIDDEN_DEPS.search(n):
            fail(f"{os.path.basename(lib)} loads {n} (ldd): gRPC/protobuf/nanopb/CUDA must stay out of it")


# ---- the headers compile on their own ----------------------------------------------

INIT_USE = """
int featstore_header_check(void);
int featstore_header_check(void)
{
    fs_sample_req_t req = FS_SAMPLE_REQ_INIT;
    fs_connect_opts_t opts = FS_CONNECT_OPTS_INIT;
    fs_replan_opts_t replan = FS_REPLAN_OPTS_INIT;
    fs_stream_plan_opts_t plan = FS_STREAM_PLAN_OPTS_INIT;
    return (int)(req.struct_size + opts.struct_size + replan.struct_size + plan.struct_size) + FS_VERSION_MAJOR;
}
"""


def compile_ok(compiler, flags, source, suffix, what, tmp):
    path = os.path.join(tmp, "check" + suffix)
    with open(path, "w") as f:
        f.write(source)
    cmd = [compiler] + flags + ["-fsyntax-only", path]
    r = run(cmd)
    if r.returncode != 0:
        fail(f"{what} does not compile: {' '.join(cmd)}\n{r.stdout.strip()}")
        return False
    return True


def check_headers_compile(headers, include_dirs, cc, cxx):
    incs = ["-I" + d for d in include_dirs]
    with tempfile.TemporaryDirectory(prefix="featstore-headers-") as tmp:
        langs = [(cc, ["-x", "c", "-std=c99"], ".c", "C99"), (cc, ["-x", "c", "-std=c11"], ".c", "C11")]
        if cxx:
            langs.append((cxx, ["-x", "c++", "-std=c++11"], ".cpp", "C++11"))
        else:
            print("note: no C++ compiler (c++/g++/clang++) found: the headers are checked as C only")
        strict = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
        ok = 0
        for h in headers:
            rel = "featstore/" + os.path.basename(h)
            src = f'#include "{rel}"\n#include "{rel}"\n'
            for compiler, lang, suffix, name in langs:
                ok += compile_ok(compiler, lang + strict + incs, src, suffix, f"{rel} alone as {name}", tmp)
        for compiler, lang, suffix, name in langs:
            src = '#include "featstore/admin.h"\n' + INIT_USE
            ok += compile_ok(compiler, lang + ["-Wall", "-Werror"] + incs, src, suffix,
                             f"the *_INIT macros as {name}", tmp)
        print(f"header compiles: {ok} passed ({', '.join(n for _, _, _, n in langs)})")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", required=True, help="libfeatstore.so")
    p.add_argument("--plugin", required=True, help="libfeatstore-grpc.so.N")
    p.add_argument("--header", action="append", required=True, help="a public header (repeat)")
    p.add_argument("--include-dir", action="append", required=True, help="-I for the headers (repeat)")
    p.add_argument("--cc", default="cc")
    p.add_argument("--cxx", default=None, help="C++ compiler (default: the first of c++, g++, clang++)")
    args = p.parse_args()
    for tool in ("nm", "readelf"):
        if not shutil.which(tool):
            print(f"SKIP: {tool} is not installed (binutils)")
            return SKIP
    cxx = args.cxx or next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    check_library(args.lib, args.header)
    check_plugin(args.plugin)
    check_dependencies(args.lib)
    check_headers_compile(args.header, args.include_dir, args.cc, cxx)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
