#!/usr/bin/python3
"""test_layers.py — the architecture, enforced (ctest: test_layers): no source
file includes a header from a layer it may not use.

    /usr/bin/python3 tests/checks/test_layers.py --source .            # check the tree
    /usr/bin/python3 tests/checks/test_layers.py --source . --table    # print the doc's table

LAYERS below is the architecture: which files make up each layer and which
layers each may use. A change of architecture is a reviewed change of that
table, and docs/architecture.md carries the same table (checked here, printed
by --table). Every C or CUDA file outside tests/ is read; each `#include
"..."` is resolved as the compiler's include paths would (the including file's
folder first, then the header's path under any folder of the tree, or a
header nanopb generates from proto/NAME.proto), and each `#include <...>` is
matched against the external libraries' rows. A file may include headers of
its own layer, of the layers its row names, of the layers whose rows name it
under "used by", and what an EXCEPTIONS row grants it.

It also fails on a file that no row claims (a new folder needs a row), on a
header name that two folders both hold (which one an include finds would
depend on the include order), on an include it cannot resolve, on a row or
exception that matches no file, and on an exception no include needs any more.

Before checking the tree it checks itself: on a copy of the sources with a
planted bad include, a file of no layer and a one-line new layer, it must
find exactly the planted faults. Exit status 0 pass, 1 fail.
"""
import argparse
import fnmatch
import os
import re
import shutil
import sys
import tempfile
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from planted import missed, report  # noqa: E402


class Layer(NamedTuple):
    name: str
    files: tuple        # globs relative to the repository root; <glob>: an external library's headers
    may_use: tuple      # layers this one may include
    used_by: tuple = ()  # layers that may include this one: a new layer is one row


# A file belongs to the row whose pattern matching it is the longest (so
# `server/local*` wins over `server/*`).
LAYERS = (
    # The one include root, include/featstore/: types.h is the public types (the
    # longest pattern wins), client.h and admin.h the public API.
    Layer("public types", ("include/featstore/types.h",), ()),
    Layer("core", ("kernels/fs_types.*", "kernels/fs_codec.*", "kernels/fs_parallel.*", "kernels/fs_pool.*",
                   "kernels/fs_rng.h", "kernels/fs_json.h", "kernels/fs_addr.*", "kernels/fs_shm.*", "kernels/fs_info.*",
                   "kernels/fs_epoch.*", "kernels/fs_npy.*", "kernels/fs_hash*",
                   "kernels/fs_fileio.*"), ("public types",)),
    # fs_limits sits with the engines: it reads their request types.
    Layer("engines", ("kernels/*",), ("public types", "core", "CUDA")),  # CUDA in the .cu twins only
    Layer("dataset", ("dataset/*",), ("core", "engines")),
    Layer("placement", ("placement/*",), ("core", "engines")),
    # Rows read from disk and the row cache local trainers share.
    Layer("disk", ("disk/*",), ("core", "io_uring"), used_by=("server", "client library", "bench")),
    Layer("codecs", ("proto/*",), ("core", "engines", "gRPC/nanopb")),  # they encode the engines' requests
    # The one request pipeline (limits, sample, check, gather, count) both engine hosts run.
    Layer("executor", ("exec/*",), ("core", "engines", "dataset", "codecs"), used_by=("server", "client library")),
    # What a sharded featstore's machines share: the etcd client of its membership.
    Layer("cluster", ("cluster/*",), ("core", "engines", "codecs", "gRPC/nanopb"),  # engines: the picks it routes
          used_by=("server", "server main", "client library", "cli", "bench")),
    Layer("server", ("server/*",), ("core", "engines", "dataset", "placement")),
    # The transports reach the engines and the dataset only through the host (engine.h, store.h).
    Layer("server transports", ("server/local*", "server/grpc_*", "server/http*", "server/listen*"),
          ("core", "codecs", "server", "gRPC/nanopb")),
    Layer("server main", ("server/serve.*", "server/serve_shard.c"), ("core", "engines", "server", "server transports")),
    Layer("public API", ("include/featstore/*",), ("public types",)),
    # The unix:// engine host: it opens the (typed) dataset from the server's descriptors.
    Layer("client library", ("client-lib/*",), ("core", "engines", "dataset", "codecs", "public API", "gRPC/nanopb")),
    Layer("cli", ("cli/*",), ("core", "engines", "dataset", "placement", "server", "server transports",
                               "server main", "public API")),
    Layer("examples", ("examples/*",), ("public API",)),
    Layer("bench", ("bench/*",), ("public types", "core", "engines", "dataset", "placement", "codecs", "server",
                                   "server transports", "server main", "public API", "gRPC/nanopb")),
    Layer("gRPC/nanopb", ("<grpc/*>", "<pb_*.h>"), ()),
    Layer("CUDA", ("<cuda*>", "<cub/*>"), ()),
    Layer("io_uring", ("<liburing.h>", "<liburing/*>"), ()),
)


class Exemption(NamedTuple):
    files: str          # a glob
    may_use: str        # one more layer these files may include
    why: str


# Today's truth that the architecture does not want; each row goes when its
# reason does (the test fails on a row no include needs).
EXCEPTIONS = (
)

SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
SKIPPED_TOP = ("tests",)  # test code may include anything
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)
DOC_BEGIN = "<!-- layers: begin (generated: tests/checks/test_layers.py --table) -->"
DOC_END = "<!-- layers: end -->"


def source_files(root):
    """Every C/CUDA file outside tests/, build folders and hidden ones, as repository paths."""
    out = []
    for top in sorted(os.listdir(root)):
        if top.startswith(".") or top.startswith("build") or top in SKIPPED_TOP:
            continue
        full = os.path.join(root, top)
        if os.path.isfile(full):
            if top.endswith(SOURCE_EXT):
                out.append(top)
            continue
        for d, dirs, files in os.walk(full):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x != "__pycache__")
            out += [os.path.relpath(os.path.join(d, f), root) for f in sorted(files) if f.endswith(SOURCE_EXT)]
    return out


def layer_of(path, layers, external=False):
    """The layer whose longest pattern matches path (None if none); raises on a tie between layers."""
    best, best_len = None, -1
    for layer in layers:
        for pat in layer.files:
            if pat.startswith("<") != external or not fnmatch.fnmatchcase(path, pat.strip("<>")):
                continue
            if len(pat) > best_len:
                best, best_len = layer, len(pat)
            elif len(pat) == best_len and best is not layer:
                raise ValueError(f"{path} matches {best.name!r} and {layer.name!r} equally")
    return best


def header_index(files, root):
    """{include text: [repository paths]}: every trailing part of each header's path."""
    index = {}
    for f in files:
        if f.endswith((".h", ".cuh")):
            parts = f.split("/")
            for i in range(len(parts)):
                index.setdefault("/".join(parts[i:]), []).append(f)
    for d, _, names in os.walk(os.path.join(root, "proto")):
        for n in names:
            if n.endswith(".proto"):  # nanopb writes NAME.pb.h into the build tree
                generated = os.path.relpath(os.path.join(d, n[:-len(".proto")] + ".pb.h"), root)
                index.setdefault(os.path.basename(generated), []).append(generated)
    return index


def resolve(including, text, index, root):
    """The repository path an include names, or None (not in the tree); raises if ambiguous."""
    beside = os.path.normpath(os.path.join(os.path.dirname(including), text))
    if os.path.isfile(os.path.join(root, beside)):
        return beside
    found = index.get(text, [])
    if len(found) > 1:
        raise ValueError(f'"{text}" could be any of {", ".join(found)}')
    return found[0] if found else None


def allowed_edges(layers, exceptions):
    """{layer name: set of layer names it may use}, and {file glob: extra layer}."""
    names = {layer.name for layer in layers}
    edges = {layer.name: {layer.name, *layer.may_use} for layer in layers}
    for layer in layers:
        for user in layer.used_by:
            edges[user].add(layer.name)
    unknown = {n for layer in layers for n in (*layer.may_use, *layer.used_by)} - names
    unknown |= {e.may_use for e in exceptions} - names
    if unknown:
        raise ValueError(f"the table names layers it does not define: {', '.join(sorted(unknown))}")
    return edges


def check(root, layers=LAYERS, exceptions=EXCEPTIONS):
    """Every fault of the tree at root against the table, as sentences."""
    faults = []
    edges = allowed_edges(layers, exceptions)
    files = source_files(root)
    index = header_index(files, root)
    faults += [f"header name {name} is held by {', '.join(paths)}: rename one"
               for name, paths in sorted(index.items()) if "/" not in name and len(paths) > 1]
    used_exceptions = set()
    for f in files:
        try:
            mine = layer_of(f, layers)
        except ValueError as e:
            faults.append(str(e))
            continue
        if mine is None:
            faults.append(f"{f} belongs to no layer: add it to a row of LAYERS (tests/checks/test_layers.py)")
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for kind, name in INCLUDE.findall(text):
            faults += check_include(root, f, mine, kind, name, index, layers, edges, exceptions,
                                    used_exceptions)
    faults += [f"LAYERS row {layer.name!r}: {p} matches no file" for layer in layers for p in layer.files
               if not p.startswith("<") and not any(fnmatch.fnmatchcase(f, p) for f in files)]
    faults += [f"EXCEPTIONS row {e.files} -> {e.may_use} is needed by no include any more: remove it"
               for e in exceptions if e not in used_exceptions]
    return faults


def check_include(root, f, mine, kind, name, index, layers, edges, exceptions, used_exceptions):
    """The faults of one include of file f (of layer mine)."""
    try:
        target = resolve(f, name, index, root)
    except ValueError as e:
        return [f"{f}: {e}"]
    if target is None:
        if kind == '"':
            return [f'{f}: #include "{name}" names no header of the tree']
        theirs = layer_of(name, layers, external=True)
        if theirs is None:
            return []  # the C library, the kernel, and libraries no row restricts
        target = f"<{name}>"
    else:
        theirs = layer_of(target, layers)
        if theirs is None:
            return []  # reported as a file of no layer
    if theirs.name in edges[mine.name]:
        return []
    for e in exceptions:
        if e.may_use == theirs.name and fnmatch.fnmatchcase(f, e.files):
            used_exceptions.add(e)
            return []
    return [f"{f} ({mine.name}) includes {target} ({theirs.name}): {mine.name} may use only "
            f"{', '.join(sorted(edges[mine.name] - {mine.name})) or 'nothing else'}"]


def doc_table(layers=LAYERS, exceptions=EXCEPTIONS):
    """The markdown docs/architecture.md carries between DOC_BEGIN and DOC_END."""
    edges = allowed_edges(layers, exceptions)
    rows = ["| layer | files | may use |", "| --- | --- | --- |"]
    for layer in layers:
        uses = [n for n in (x.name for x in layers) if n in edges[layer.name] and n != layer.name]
        rows.append(f"| {layer.name} | {', '.join(f'`{p}`' for p in layer.files)} | "
                    f"{', '.join(uses) or '—'} |")
    if not exceptions:
        return "\n".join(rows + ["", "Exceptions: none."])
    rows += ["", "| exception: files | may also use | why |", "| --- | --- | --- |"]
    rows += [f"| `{e.files}` | {e.may_use} | {e.why} |" for e in exceptions]
    return "\n".join(rows)


def doc_faults(doc_path):
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(re.escape(DOC_BEGIN) + r"\n(.*?)\n" + re.escape(DOC_END), text, re.S)
    if not m:
        return [f"{doc_path} has no layer table between {DOC_BEGIN} and {DOC_END}"]
    if m.group(1).strip() != doc_table():
        return [f"{doc_path}'s layer table is not tests/checks/test_layers.py's: replace it with the output of "
                "`tests/checks/test_layers.py --table`"]
    return []


def plant(src, dst):
    """A copy of the sources (no tests/, no build) to plant faults in."""
    for top in os.listdir(src):
        full = os.path.join(src, top)
        if os.path.isdir(full) and not (top.startswith(".") or top.startswith("build") or top in SKIPPED_TOP):
            shutil.copytree(full, os.path.join(dst, top),
                            ignore=lambda d, names: [n for n in names if os.path.isfile(os.path.join(d, n))
                                                     and not n.endswith(SOURCE_EXT + (".proto",))])


def self_test(root):
    """The checker finds exactly what was planted in a copy of the tree; an empty list if it does."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="test_layers.") as tmp:
        plant(root, tmp)
        already = set(check(tmp))  # the tree's own faults are the main check's to report
        with open(os.path.join(tmp, "kernels", "fs_types.c"), "a") as f:
            f.write('\n#include "store.h"\n')               # core reaching up to the server
        os.makedirs(os.path.join(tmp, "executor"))
        with open(os.path.join(tmp, "executor", "exec.h"), "w") as f:
            f.write('#include "fs_hetero.h"\n#include "plan.h"\n')
        with open(os.path.join(tmp, "server", "engine.c"), "a") as f:
            f.write('\n#include "exec.h"\n')                # a host using the new layer
        faults = [f for f in check(tmp) if f not in already]
        want = ["kernels/fs_types.c (core) includes server/store.h (server)",
                "executor/exec.h belongs to no layer"]  # (and so its includers are not judged)
        problems += missed(faults, want, "planted faults")
        # The executor as one new row: it may use codecs, not placement; the server may use it.
        executor = Layer("executor", ("executor/*",), ("core", "engines", "dataset", "codecs"),
                         used_by=("server", "client library"))
        faults = [f for f in check(tmp, LAYERS + (executor,)) if f not in already]
        problems += missed(faults, ["kernels/fs_types.c (core) includes server/store.h",
                                    "executor/exec.h (executor) includes placement/plan.h (placement)"],
                           "the executor added in one row")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="the repository root")
    ap.add_argument("--table", action="store_true", help="print docs/architecture.md's layer table and exit")
    args = ap.parse_args()
    if args.table:
        print(DOC_BEGIN, doc_table(), DOC_END, sep="\n")
        return 0
    root = os.path.abspath(args.source)
    try:
        faults = self_test(root)
        if not faults:
            faults = check(root) + doc_faults(os.path.join(root, "docs", "architecture.md"))
    except ValueError as e:  # the table itself is wrong
        faults = [str(e)]
    return report(faults, f"{len(source_files(root))} files, {len(LAYERS)} layers, {len(EXCEPTIONS)} exceptions")


if __name__ == "__main__":
    sys.exit(main())
