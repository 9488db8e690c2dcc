#!/usr/bin/python3
"""test_py_layout.py — the Python binding's ctypes structs have the C layout.

featstore._lib mirrors the public structs of featstore/types.h, client.h and
admin.h field for field. This test finds every ctypes Structure in _lib whose
docstring starts with the C type's name (``fs_block_t.``), writes a C program
that prints, for each, ``sizeof`` and every field's ``offsetof`` and size
(the field names are the C names), compiles it against the real headers and
compares with ctypes (PREFIX_OK below: the few structs that may be
mirrored in part). A field renamed, dropped, reordered or of the wrong
width fails with the struct and field named; so does a struct of _lib's that
names no C type in the headers.

    /usr/bin/python3 tests/python/test_py_layout.py --lib BUILD/client-lib/libfeatstore.so [--cc cc]

Exit status: 0 pass, 1 fail, 77 (ctest's skip) without a C compiler.
(_lib loads the library at import, hence --lib; nothing is called in it.)
"""
import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is tests/python/)
INCLUDES = [os.path.join(ROOT, "include")]  # the one include root of the public headers
HEADERS = ["featstore/types.h", "featstore/client.h", "featstore/admin.h"]
C_NAME = re.compile(r"\s*(fs_\w+_t)\b")
# Structs the library allocates and returns one at a time (never as array
# elements) only grow at their end, so a mirror of a prefix of their fields
# reads correctly: for these a ctypes size below C's is a note, not a failure.
PREFIX_OK = {"fs_info_t", "fs_batch_t", "fs_hetero_batch_t", "fs_ids_t", "fs_stream_batch_t"}


def mirrored_structs(lib_module):
    """[(C type name, ctypes class)] for every struct of _lib naming its C type."""
    out = []
    for value in vars(lib_module).values():
        if isinstance(value, type) and issubclass(value, ctypes.Structure) and value.__module__ == lib_module.__name__:
            m = C_NAME.match(value.__doc__ or "")
            if m and getattr(value, "_fields_", None):
                out.append((m.group(1), value))
    return sorted(out)


def c_program(structs):
    lines = ["#include <stddef.h>", "#include <stdio.h>"] + [f'#include "{h}"' for h in HEADERS]
    lines += ["int main(void)", "{"]
    for cname, cls in structs:
        lines.append(f'    printf("{cname} size %zu\\n", sizeof({cname}));')
        for f in cls._fields_:
            name = f[0]
            lines.append(f'    printf("{cname} {name} %zu %zu\\n", offsetof({cname}, {name}), '
                         f'sizeof(((const {cname} *)0)->{name}));')
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def python_layout(structs):
    lines = []
    for cname, cls in structs:
        lines.append(f"{cname} size {ctypes.sizeof(cls)}")
        for f in cls._fields_:
            d = getattr(cls, f[0])
            lines.append(f"{cname} {f[0]} {d.offset} {d.size}")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", required=True, help="libfeatstore.so (loaded by featstore._lib at import)")
    p.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = p.parse_args()
    cc = shutil.which(args.cc)
    if cc is None:
        print(f"SKIP: no C compiler {args.cc!r}")
        return SKIP
    os.environ["FEATSTORE_LIB"] = args.lib
    sys.path.insert(0, os.path.join(ROOT, "client-lib", "python"))
    from featstore import _lib

    structs = mirrored_structs(_lib)
    with tempfile.TemporaryDirectory(prefix="featstore-layout-") as tmp:
        src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
        with open(src, "w") as f:
            f.write(c_program(structs))
        build = subprocess.run([cc, "-std=c11", "-Wall", "-o", exe, src] + [f"-I{d}" for d in INCLUDES],
                               capture_output=True, text=True)
        if build.returncode != 0:  # a field name C does not know, or a struct the headers lack
            print("FAIL: the layout program does not compile (a mirrored field or struct the headers lack):\n"
                  + build.stderr)
            return 1
        c_lines = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.splitlines()
    py_lines = python_layout(structs)
    bad = []
    for c, py in zip(c_lines, py_lines):
        if c == py:
            continue
        cname, what, c_size = c.split()[:3]
        if what == "size" and cname in PREFIX_OK and int(py.split()[2]) < int(c_size):
            print(f"NOTE: {cname}: ctypes mirrors its first {py.split()[2]} of {c_size} bytes (fields added at "
                  f"the end that the binding does not read yet)")
            continue
        bad.append((c, py))
    for c, py in bad:
        print(f"FAIL: C says '{c}', ctypes says '{py}'  (struct field offset size)")
    if len(c_lines) != len(py_lines):
        print(f"FAIL: {len(c_lines)} C lines against {len(py_lines)} ctypes lines")
        return 1
    fields = sum(len(cls._fields_) for _, cls in structs)
    print(f"RESULT {len(structs)} structs, {fields} fields: "
          f"{'all match' if not bad else f'{len(bad)} mismatches'} ({', '.join(c for c, _ in structs)})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
