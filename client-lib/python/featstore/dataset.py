"""featstore.dataset — write a featstore dataset (format version 2, a typed
graph) from numpy arrays, in PyG ``HeteroData`` terms.

Pure Python and numpy: it needs neither PyG nor the compiled featstore
library, only Debian's ``python3-xxhash`` for the files' checksums. What it
writes is what the C writer (``dataset/writer.c``) would write for the same
graph: the same layout rules, 4096-byte ``.npy`` headers, a ``manifest.json``
listing every file's size and XXH3-64 checksum, and an atomic commit (a
temporary directory beside the destination, every file fsync'ed, then one
rename), so ``featstore info DIR`` opens it with full verification::

    import numpy as np, featstore
    featstore.write_dataset(
        "/data/cora-typed",
        node_types={"paper": {"count": 2708, "features": {"feat": x}, "labels": y, "num_classes": 7,
                              "splits": {"train": train_idx}},
                    "word": {"count": 1433}},
        edge_types={("paper", "cites", "paper"): {"edge_index": ei, "reverse": "cited_by"},
                    ("paper", "has", "word"): {"edge_index": hw, "weights": w, "reverse": "in"}},
        link_splits={"test": {"edge_type": ("paper", "cites", "paper"), "src": s, "dst": d,
                              "neg_dst": neg}},
        name="cora-typed")

Files are named ``node.<type>.<part>.npy``, ``edge.<src>.<rel>.<dst>.<part>.npy``
and ``link.<split>.<part>.npy`` (parts: ``table_<name>``, ``labels``, ``time``,
``split_<name>``, ``indptr``, ``indices``, ``edge_ids``, ``weights``, ``src``,
``dst``, ``label``, ``neg_dst``); where such a name would reach the format's
128 characters, ``node<i>.``/``edge<i>.``/``link<i>.`` and short parts are used.
The laid-out arrays are held in memory until written (about three times the
edge arrays); graphs larger than memory are for the C importers.

See ``write_dataset`` for every argument and the layout, docs/format.md for
the files, and examples/cora.py for two real datasets made
with it.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from typing import Any

import numpy as np

__all__ = ["write_dataset"]

_NAME = re.compile(r"[A-Za-z0-9_]{1,63}\Z")
_INT64_MAX = np.iinfo(np.int64).max
_NPY_HEADER_LEN = 4096          # kernels/fs_npy.h FS_NPY_WRITE_HEADER_LEN: every file's data starts here
_MAX_NODE_TYPES, _MAX_EDGE_TYPES = 4096, 65536   # dataset/dataset_typed.c
_FEATURE_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}


# ---- arguments ---------------------------------------------------------------------

def _check_name(name, what):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{what} {name!r} is not a valid name: names are 1 to 63 letters, digits or underscores "
                         f"([A-Za-z0-9_])")
    return name


def _array(value, owner, what):
    """value as a numpy array (numpy, lists, CPU torch tensors), or a ValueError naming it."""
    try:
        a = np.asarray(value)
    except Exception as e:  # noqa: BLE001 - anything that is not array-like
        raise ValueError(f"{owner}: {what} is not an array ({type(value).__name__}): {e}") from None
    if a.dtype == object:
        raise ValueError(f"{owner}: {what} is not a numeric array (it holds Python objects)")
    return a


def _int_array(value, owner, what, ndim=1, rows=None, lo=None, hi=None, hi_what=None):
    """An int64 copy of an integer array of ndim dimensions (and `rows` rows),
    every value in [lo, hi) when given."""
    a = _array(value, owner, what)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{owner}: {what} must be integers, got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{owner}: {what} must be {ndim}-dimensional, got shape {a.shape}")
    if rows is not None and a.shape[0] != rows:
        raise ValueError(f"{owner}: {what} has {a.shape[0]} entries, expected {rows}")
    if a.dtype.kind == "u" and a.size and a.max() > _INT64_MAX:
        raise ValueError(f"{owner}: {what} holds {a.max()}, which does not fit int64")
    a = np.ascontiguousarray(a, dtype="<i8")
    _check_range(a, owner, what, lo, hi, hi_what)
    return a


def _check_range(a, owner, what, lo, hi, hi_what=None):
    if a.size == 0 or (lo is None and hi is None):
        return
    flat = a.reshape(-1)
    bad = np.zeros(flat.shape, bool)
    if lo is not None:
        bad |= flat < lo
    if hi is not None:
        bad |= flat >= hi
    if bad.any():
        i = int(np.argmax(bad))
        where = f"at offset {i}" if a.ndim == 1 else f"at {np.unravel_index(i, a.shape)}"
        limit = f" ({hi_what})" if hi_what else ""
        raise ValueError(f"{owner}: {what} {where} is {flat[i]}, outside [{lo if lo is not None else '-inf'}, "
                         f"{hi if hi is not None else 'inf'}){limit}")


def _count(value, owner):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{owner}: \"count\" must be an integer, got {value!r}")
    value = int(value)
    if value < 0 or value >= _INT64_MAX:
        raise ValueError(f"{owner}: \"count\" {value} is out of range [0, 2^63 - 1)")
    return value


def _table(value, rows, owner, name):
    """A feature table [rows, F], float32 or float16 (float64 becomes float32)."""
    _check_name(name, f"{owner}: feature table")
    a = _array(value, owner, f"feature table '{name}'")
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    if a.dtype.newbyteorder("=") not in _FEATURE_DTYPES:
        raise ValueError(f"{owner}: feature table '{name}' must be float32 or float16 (float64 is converted to "
                         f"float32), got dtype {a.dtype}; convert it with .astype(np.float32)")
    if a.ndim != 2:
        raise ValueError(f"{owner}: feature table '{name}' must be 2-dimensional [rows, dim], got shape {a.shape}"
                         f"{' (use x.reshape(-1, 1) for one column)' if a.ndim == 1 else ''}")
    if a.shape[0] != rows:
        raise ValueError(f"{owner}: feature table '{name}' has {a.shape[0]} rows, expected {rows}")
    dt = a.dtype.newbyteorder("<")
    return np.ascontiguousarray(a, dtype=dt), _FEATURE_DTYPES[dt.newbyteorder("=")]


def _tables(value, rows, owner, reserved=()):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{owner}: \"features\" must be a dict of table name -> [rows, dim] array")
    out = {}
    for name, t in value.items():
        if name in reserved:
            raise ValueError(f"{owner}: feature table name '{name}' is reserved for the labels")
        out[name] = _table(t, rows, owner, name)
    return out


def _unknown_keys(d, allowed, owner):
    extra = sorted(set(d) - set(allowed), key=str)
    if extra:
        raise ValueError(f"{owner}: unknown key(s) {', '.join(map(repr, extra))}; allowed: "
                         f"{', '.join(sorted(allowed))}")


def _edge_type_key(key, what):
    if not (isinstance(key, (tuple, list)) and len(key) == 3):
        raise ValueError(f"{what} {key!r} must be a (src, rel, dst) tuple of names")
    for part, role in zip(key, ("source node type", "relation", "destination node type")):
        _check_name(part, f"{what} {tuple(key)!r}: {role}")
    return tuple(key)


def _fmt(et):
    return f"edge type ({et[0]}, {et[1]}, {et[2]})"


# ---- the layout (the C side's rules) ------------------------------------------------

def _csc(dst, num_dst, time):
    """Positions toward the destination: `order` (the edge id at each position:
    by destination, then time, then edge id; stable, so ties keep edge-id
    order) and indptr."""
    if time is None:
        order = np.argsort(dst, kind="stable")
    else:
        span = int(time.max()) - int(time.min()) + 1 if time.size else 1
        if num_dst * span < 2 ** 63:  # one stable sort of dst * span + time: the lexsort's order, ~3x faster
            order = np.argsort(dst * span + (time - time.min()), kind="stable")
        else:
            order = np.lexsort((time, dst))
    order = order.astype(np.int64, copy=False)
    indptr = np.zeros(num_dst + 1, dtype="<i8")
    np.cumsum(np.bincount(dst, minlength=num_dst), out=indptr[1:])
    return order, indptr


# ---- the files ---------------------------------------------------------------------

def _npy_header(dtype, shape):
    """The .npy 1.0 header kernels/fs_npy.c writes: 4096 bytes, so the data starts on a page."""
    dims = f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(s) for s in shape) + ")"
    d = f"{{'descr': '{dtype.str}', 'fortran_order': False, 'shape': {dims}, }}".encode()
    total = _NPY_HEADER_LEN
    while 10 + len(d) + 1 > total:  # never for <= 2 dimensions; kept 64-aligned like numpy otherwise
        total += 64
    return b"\x93NUMPY\x01\x00" + (total - 10).to_bytes(2, "little") + d + b" " * (total - 11 - len(d)) + b"\n"


class _Files:
    """The dataset's files by name, in writing order, each an array to write."""

    def __init__(self) -> None:
        self.arrays: dict[str, Any] = {}

    def add(self, preferred: str, fallback: str, array: Any) -> str:
        name = preferred if len(preferred) < 128 else fallback
        if name in self.arrays:  # cannot happen: names are built from unique, dot-free parts
            raise AssertionError(f"file {name} twice")
        self.arrays[name] = array
        return name


def _write_file(path, array, xxh3):
    header = _npy_header(array.dtype, array.shape)
    h = xxh3()
    h.update(header)
    data = memoryview(array.reshape(-1)).cast("B") if array.size else b""
    h.update(data)
    with open(path, "wb") as f:
        f.write(header)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return {"bytes": len(header) + len(data), "xxh3": h.hexdigest()}


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _xxh3():
    try:
        import xxhash
    except ImportError:
        raise ImportError("featstore.write_dataset needs the xxhash module for the files' XXH3 checksums: "
                          "apt-get install python3-xxhash (or pip install xxhash)") from None
    return xxhash.xxh3_64


# ---- the writer ----------------------------------------------------------------------

def write_dataset(dir: str | os.PathLike[str], node_types: dict[str, Any],
                  edge_types: dict[tuple[str, str, str], Any] | None = None, link_splits: dict[str, Any] | None = None,
                  name: str | None = None, force: bool = False, source: dict[str, Any] | None = None,
                  undirected: bool = False) -> str:
    """Writes a featstore dataset (format version 2) to directory ``dir``.

    Arguments, in PyG ``HeteroData`` terms (arrays: numpy arrays, lists or CPU
    torch tensors; names: 1 to 63 of ``[A-Za-z0-9_]``):

    ``node_types``: ``{name: spec}`` in order (a type's index is its place),
    1 to 4096 types. ``spec`` is a dict, or just the count:

    - ``"count"``: the number of nodes (ids 0..count-1, per type); may be left
      out when a feature table, the labels or the times give it.
    - ``"features"``: ``{table: [count, dim] array}``, float32 or float16 kept
      as given, float64 stored as float32; other dtypes are refused. The
      name ``labels`` is reserved.
    - ``"labels"``: ``[count]`` integers, -1 = unlabelled; ``"num_classes"``
      (default: the largest label + 1). Served as the table ``labels``.
    - ``"time"``: ``[count]`` integer node timestamps.
    - ``"splits"``: ``{name: ids}``: int node ids, or a boolean mask of
      ``count`` entries (PyG's ``train_mask``).

    ``edge_types``: ``{(src, rel, dst): spec}`` in order, src and dst named in
    ``node_types``:

    - ``"edge_index"``: ``[2, E]`` integers, COO, row 0 the source ids, row 1
      the destination ids. An edge's id is its column.
    - ``"weights"``: ``[E]`` finite, >= 0, stored as float32.
    - ``"time"``: ``[E]`` integer timestamps, one for every edge.
    - ``"features"``: ``{table: [E, dim] array}``, rows by edge id (dtypes as
      for nodes).
    - ``"reverse"``: a relation name ``r``: also write the edge type
      ``(dst, r, src)`` holding edge i reversed as its edge i, with the same
      weights, times and features (the feature files are shared, not
      copied), each type naming the other as its reverse. It must not be
      given in ``edge_types`` as well.
    - ``"undirected"``: ``True`` when the edges are undirected: every edge
      (u, v) is given in both directions, as (u, v) and (v, u) (with equal
      weights when weighted; PyG's ``to_undirected`` form). Only for an
      edge type within one node type (between two types, ``"reverse"``
      stores the other direction). Recorded as ``"symmetric": true``, so
      ``featstore info`` and ``Client.info()`` report the graph undirected
      (and ``featstore propagate`` does not symmetrise it again). Edges that
      are not symmetric are refused, naming the first edge whose reverse is
      missing: the writer never adds edges (which weights, times and
      features would they get, and the edge ids would change).
      Default: the ``undirected`` argument.

    ``link_splits``: ``{name: spec}``, positive (or labelled) edges for link
    prediction:

    - ``"edge_type"``: ``(src, rel, dst)`` (a reverse type too), or a
      relation name that only one edge type has.
    - ``"src"``, ``"dst"``: ``[k]`` integer ids of its source and
      destination types.
    - ``"label"``: ``[k]`` integers (e.g. 1/0); absent: all positive.
    - ``"time"``: ``[k]`` integers.
    - ``"neg_dst"``: ``[k, m]`` given negatives: destination ids, each
      paired with that row's ``src``.

    ``undirected``: ``True`` says every edge type is undirected: each one
    within one node type as its ``"undirected"`` key says, and each one
    between two node types must have a ``"reverse"``. A one-type graph's
    ``undirected=True`` is ``featstore import --symmetrize``'s result.

    ``name``: the dataset's name (default: the directory's base name).
    ``force``: replace ``dir`` if it already holds a featstore dataset; a
    directory that is not one is never replaced. ``source``: a JSON-able
    dict recorded under ``"source"`` in the manifest (provenance).

    Layout (the C writer's; docs/format.md): each edge type is
    stored toward its destination (CSC): ``indptr`` int64 ``[count(dst)+1]``,
    ``indices`` (source ids) int32 when ``count(src) < 2**31``, else int64.
    Each destination's sources are ordered by (time, edge id), or by edge id
    when untimed; ``edge_ids`` int64 gives the edge id at each position and
    is left out when it is the identity (edges given sorted by
    destination); weights and times are stored by position, edge features
    by edge id. Splits, labels, times and link-split arrays are int64.

    Every argument is checked before anything is written; a bad one raises
    ``ValueError`` naming the type and the problem (bad names, ids out of
    range, wrong shapes or dtypes, an unknown node type, times for only
    some edges, ...). An existing ``dir`` raises ``FileExistsError`` unless
    ``force``. Writing is atomic: the files go to a temporary directory
    beside ``dir`` (each fsync'ed), which is renamed to ``dir`` only when
    complete; on any error nothing is left behind.

    Returns the dataset's path (``str``).
    """
    xxh3 = _xxh3()  # before any work: without python3-xxhash nothing can be written
    out = os.path.abspath(os.fspath(dir))
    _check_destination(out, force)
    files = _Files()
    if name is None:
        name = os.path.basename(out)
    if not isinstance(name, str) or not 0 < len(name.encode()) < 128 or "\0" in name:
        raise ValueError(f"name {name!r} must be a string of 1 to 127 bytes")
    manifest = {"format": "featstore-dataset", "version": 2, "name": name}
    counts, nodes = _node_types(node_types, files)
    manifest["node_types"] = nodes
    typed_edges = _edge_types(edge_types, counts, files, bool(undirected))
    manifest["edge_types"] = [e["manifest"] for e in typed_edges]
    if link_splits:
        manifest["link_splits"] = _link_splits(link_splits, typed_edges, counts, files)
    src = {"writer": "featstore.write_dataset"}
    if source is not None:
        if not isinstance(source, dict):
            raise ValueError("source must be a dict (provenance recorded in the manifest)")
        src.update(source)
    manifest["source"] = src
    try:
        json.dumps(manifest)
    except (TypeError, ValueError) as e:
        raise ValueError(f"name and source must be JSON-serialisable: {e}") from None
    return _commit(out, force, files, manifest, xxh3)


def _check_destination(out, force):
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{parent}: no such directory (the dataset's parent must exist)")
    if os.path.lexists(out):
        if not force:
            raise FileExistsError(f"{out} already exists (force=True replaces a featstore dataset)")
        if not os.path.isdir(out) or os.path.islink(out) or not os.path.isfile(os.path.join(out, "manifest.json")):
            raise FileExistsError(f"{out} exists and is not a featstore dataset; refusing to replace it even with "
                                  f"force=True")


def _node_types(node_types, files):
    if not isinstance(node_types, dict) or not 1 <= len(node_types) <= _MAX_NODE_TYPES:
        raise ValueError(f"node_types must be a dict of 1 to {_MAX_NODE_TYPES} node types (name -> spec)")
    counts, out = {}, []
    for i, (tname, spec) in enumerate(node_types.items()):
        _check_name(tname, "node type")
        owner = f"node type '{tname}'"
        if not isinstance(spec, dict):
            spec = {"count": spec}
        _unknown_keys(spec, ("count", "features", "labels", "num_classes", "time", "splits"), owner)
        count = _infer_count(spec, owner)
        m = {"name": tname, "count": count}
        pre, fb = f"node.{tname}.", f"node{i}."
        if spec.get("time") is not None:
            t = _int_array(spec["time"], owner, "\"time\"", rows=count)
            m["time"] = files.add(pre + "time.npy", fb + "time.npy", t)
        tables = _tables(spec.get("features"), count, owner, reserved=("labels",))
        if tables:
            m["features"] = {t: {"file": files.add(f"{pre}table_{t}.npy", f"{fb}f{j}.npy", a), "dtype": dt}
                             for j, (t, (a, dt)) in enumerate(tables.items())}
        if spec.get("labels") is not None:
            m["labels"] = _labels(spec, count, owner, files, pre, fb)
        elif spec.get("num_classes") is not None:
            raise ValueError(f"{owner}: \"num_classes\" without \"labels\"")
        splits = spec.get("splits")
        if splits:
            if not isinstance(splits, dict):
                raise ValueError(f"{owner}: \"splits\" must be a dict of split name -> node ids or mask")
            m["splits"] = {}
            for j, (sname, ids) in enumerate(splits.items()):
                _check_name(sname, f"{owner}: split")
                a = _array(ids, owner, f"split '{sname}'")
                if a.dtype == bool:
                    if a.shape != (count,):
                        raise ValueError(f"{owner}: split '{sname}' is a boolean mask of shape {a.shape}, expected "
                                         f"({count},)")
                    a = np.flatnonzero(a)
                ids = _int_array(a, owner, f"split '{sname}' node id", lo=0, hi=count, hi_what=f"{count} nodes")
                m["splits"][sname] = files.add(f"{pre}split_{sname}.npy", f"{fb}s{j}.npy", ids)
        counts[tname] = count
        out.append(m)
    return counts, out


def _infer_count(spec, owner):
    if spec.get("count") is not None:
        return _count(spec["count"], owner)
    arrays = [(f'"{k}"', spec[k]) for k in ("labels", "time") if spec.get(k) is not None]
    if isinstance(spec.get("features"), dict):
        arrays += [(f"feature table '{t}'", v) for t, v in spec["features"].items()]
    for what, v in arrays:
        a = _array(v, owner, what)
        if a.ndim >= 1:
            return a.shape[0]
    raise ValueError(f"{owner}: needs \"count\" (the number of nodes)")


def _labels(spec, count, owner, files, pre, fb):
    y = _int_array(spec["labels"], owner, "\"labels\"", rows=count)
    nc = spec.get("num_classes")
    if nc is None:
        nc = int(y.max()) + 1 if y.size else 0
        nc = max(nc, 0)
    elif isinstance(nc, bool) or not isinstance(nc, (int, np.integer)) or nc < 0:
        raise ValueError(f"{owner}: \"num_classes\" must be a non-negative integer, got {nc!r}")
    nc = int(nc)
    _check_range(y, owner, "label", -1, nc, f"num_classes {nc}; -1 = unlabelled")
    return {"file": files.add(pre + "labels.npy", fb + "labels.npy", y), "num_classes": nc}


def _edge_types(edge_types, counts, files, undirected):
    """Every edge type (reverses right after their forward type), validated:
    a list of {key, manifest, count}."""
    edge_types = edge_types or {}
    if not isinstance(edge_types, dict):
        raise ValueError("edge_types must be a dict of (src, rel, dst) -> spec")
    given = [_edge_type_key(k, "edge type") for k in edge_types]
    specs = list(edge_types.values())
    plan = []  # (key, spec, reverse relation, forward key or None)
    for key, spec in zip(given, specs):
        owner = _fmt(key)
        if not isinstance(spec, dict):
            raise ValueError(f"{owner}: its spec must be a dict with at least \"edge_index\"")
        _unknown_keys(spec, ("edge_index", "weights", "time", "features", "reverse", "undirected"), owner)
        for t in (key[0], key[2]):
            if t not in counts:
                raise ValueError(f"{owner} names node type '{t}', which is not in node_types")
        rev = spec.get("reverse")
        plan.append((key, spec, rev, None))
        if rev is not None:
            _check_name(rev, f"{owner}: \"reverse\"")
            rkey = (key[2], rev, key[0])
            if rkey == key:
                raise ValueError(f"{owner}: \"reverse\" '{rev}' names the edge type itself; a reverse needs another "
                                 f"relation name")
            if rkey in given:
                raise ValueError(f"{owner}: its reverse {_fmt(rkey)} is also given in edge_types; give the edges "
                                 f"once, with \"reverse\"")
            plan.append((rkey, spec, key[1], key))
    seen = set()
    for key, *_ in plan:
        if key in seen:
            raise ValueError(f"{_fmt(key)} is listed twice (as an edge type or a reverse)")
        seen.add(key)
    if len(plan) > _MAX_EDGE_TYPES:
        raise ValueError(f"at most {_MAX_EDGE_TYPES} edge types, reverses included; got {len(plan)}")

    out, forward = {}, {}
    for i, (key, spec, rev, of) in enumerate(plan):
        if of is None:
            forward[key] = _edge_arrays(key, spec, counts)
            forward[key]["symmetric"] = _undirected(key, spec, forward[key], undirected)
        a = forward[of or key]
        src, dst = (a["dst"], a["src"]) if of else (a["src"], a["dst"])
        out[key] = _edge_files(i, key, src, dst, a, rev, of, counts, files, out)
    return list(out.values())


def _edge_arrays(key, spec, counts):
    """The validated arrays of one given edge type."""
    owner = _fmt(key)
    if spec.get("edge_index") is None:
        raise ValueError(f"{owner}: needs \"edge_index\" ([2, E] source and destination ids)")
    ei = _array(spec["edge_index"], owner, "\"edge_index\"")
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"{owner}: \"edge_index\" must have shape [2, E] (row 0 sources, row 1 destinations), "
                         f"got {ei.shape}")
    ei = _int_array(ei, owner, "\"edge_index\"", ndim=2)
    n_src, n_dst = counts[key[0]], counts[key[2]]
    src, dst = ei[0], ei[1]
    _check_range(src, owner, "source id", 0, n_src, f"node type '{key[0]}' has {n_src} nodes")
    _check_range(dst, owner, "destination id", 0, n_dst, f"node type '{key[2]}' has {n_dst} nodes")
    e = src.shape[0]
    a = {"src": np.ascontiguousarray(src), "dst": np.ascontiguousarray(dst), "num_edges": e,
         "weights": None, "time": None}
    if spec.get("weights") is not None:
        w = _array(spec["weights"], owner, "\"weights\"")
        if w.dtype.kind not in "fiu":
            raise ValueError(f"{owner}: \"weights\" must be real numbers, got dtype {w.dtype}")
        if w.shape != (e,):
            raise ValueError(f"{owner}: \"weights\" must have shape ({e},), one per edge, got {w.shape}")
        with np.errstate(over="ignore"):  # too large for float32: inf, refused just below
            w = np.ascontiguousarray(w, dtype="<f4")
        bad = ~(np.isfinite(w) & (w >= 0))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{owner}: edge weight {i} is {w[i]} (as float32); weights must be finite and >= 0")
        a["weights"] = w
    if spec.get("time") is not None:
        t = _array(spec["time"], owner, "\"time\"")
        if t.ndim == 1 and t.shape[0] != e:
            raise ValueError(f"{owner}: \"time\" gives {t.shape[0]} times for {e} edges; times must be given for "
                             f"every edge or for none")
        a["time"] = _int_array(t, owner, "\"time\"", rows=e)
    a["tables"] = _tables(spec.get("features"), e, owner)
    return a


def _undirected(key, spec, a, undirected):
    """Whether edge type `key` is written undirected ("symmetric"); its
    edges checked to be so."""
    owner = _fmt(key)
    und = spec.get("undirected")
    if und is not None and not isinstance(und, (bool, np.bool_)):
        raise ValueError(f"{owner}: \"undirected\" must be True or False, got {und!r}")
    if key[0] != key[2]:
        if und:
            raise ValueError(f"{owner} joins two node types, so it cannot be undirected itself; give it a \"reverse\" "
                             f"to store the other direction")
        if undirected and spec.get("reverse") is None:
            raise ValueError(f"undirected=True, but {owner} joins two node types and has no \"reverse\" to store the "
                             f"other direction; give it one")
        return False
    und = undirected if und is None else bool(und)
    if und:
        _check_symmetric(owner, a["src"], a["dst"], a["weights"])
    return und


def _missing_reverse(src, dst, weights=None):
    """None when every edge (u, v[, w]) has a reverse (v, u[, w]), parallel
    edges counted (the edges sorted as given and sorted reversed agree);
    else the id of an edge without one. src, dst int64 [E], weights float32
    [E] or None."""
    keys = [src, dst]
    if weights is not None:
        keys.append((weights + np.float32(0)).view("<i4"))  # bits compared: -0.0 becomes 0.0 first
    fwd = np.lexsort(keys[::-1])
    rev = np.lexsort(([keys[2]] if weights is not None else []) + [src, dst])
    f = np.stack([k[fwd] for k in keys])
    r = np.stack([k[rev] for k in [dst, src] + keys[2:]])
    bad = np.flatnonzero((f != r).any(axis=0))
    if not bad.size:
        return None
    i = int(bad[0])
    col = next(j for j in range(len(keys)) if f[j, i] != r[j, i])
    return int(fwd[i] if f[col, i] < r[col, i] else rev[i])  # the one present more often than its reverse


def _check_symmetric(owner, src, dst, weights):
    """_missing_reverse's edge, named in a ValueError."""
    e = _missing_reverse(src, dst, weights)
    if e is None:
        return
    what = f"{src[e]} -> {dst[e]}" + (f" weight {weights[e]}" if weights is not None else "")
    raise ValueError(f"{owner}: undirected, but edge {e} ({what}) has no reverse ({dst[e]} -> {src[e]}"
                     f"{' with the same weight' if weights is not None else ''}); give every edge in both directions "
                     f"(torch_geometric.utils.to_undirected) or leave undirected out")


def _edge_files(i, key, src, dst, a, rev, of, counts, files, done):
    """Stores one edge type (a reversed one when `of` names its forward type)."""
    n_src, n_dst = counts[key[0]], counts[key[2]]
    order, indptr = _csc(dst, n_dst, a["time"])
    pre, fb = f"edge.{key[0]}.{key[1]}.{key[2]}.", f"edge{i}."
    idx_dtype = "<i4" if n_src < 2 ** 31 else "<i8"
    m = {"src": key[0], "rel": key[1], "dst": key[2], "num_edges": a["num_edges"]}
    if a["symmetric"]:
        m["symmetric"] = True  # a symmetric edge set reversed is itself: its reverse type is too
    if rev is not None:
        m["reverse"] = rev
    m["indptr"] = files.add(pre + "indptr.npy", fb + "indptr.npy", indptr)
    m["indices"] = files.add(pre + "indices.npy", fb + "indices.npy", np.ascontiguousarray(src[order], idx_dtype))
    if not np.array_equal(order, np.arange(a["num_edges"])):
        m["edge_ids"] = files.add(pre + "edge_ids.npy", fb + "edge_ids.npy", order.astype("<i8", copy=False))
    if a["weights"] is not None:
        m["weights"] = files.add(pre + "weights.npy", fb + "weights.npy", a["weights"][order])
    if a["time"] is not None:
        m["time"] = files.add(pre + "time.npy", fb + "time.npy", a["time"][order])
    if a["tables"]:
        if of is not None:  # rows by edge id, and edge i of the reverse is edge i: the same files
            m["features"] = dict(done[of]["manifest"]["features"])
        else:
            m["features"] = {t: {"file": files.add(f"{pre}table_{t}.npy", f"{fb}f{j}.npy", arr), "dtype": dt}
                             for j, (t, (arr, dt)) in enumerate(a["tables"].items())}
    return {"key": key, "manifest": m, "count": a["num_edges"]}


def _link_splits(link_splits, typed_edges, counts, files):
    if not isinstance(link_splits, dict):
        raise ValueError("link_splits must be a dict of split name -> spec")
    keys = [e["key"] for e in typed_edges]
    out = {}
    for j, (sname, spec) in enumerate(link_splits.items()):
        _check_name(sname, "link split")
        owner = f"link split '{sname}'"
        if not isinstance(spec, dict):
            raise ValueError(f"{owner}: its spec must be a dict with \"edge_type\", \"src\" and \"dst\"")
        _unknown_keys(spec, ("edge_type", "src", "dst", "label", "time", "neg_dst"), owner)
        et = spec.get("edge_type")
        if isinstance(et, str):
            match = [k for k in keys if k[1] == et]
            if len(match) != 1:
                raise ValueError(f"{owner}: \"edge_type\" '{et}' names {len(match)} edge types; give (src, rel, dst)")
            et = match[0]
        et = _edge_type_key(et, f"{owner}: \"edge_type\"")
        if et not in keys:
            raise ValueError(f"{owner} names {_fmt(et)}, which is not in edge_types (nor a reverse)")
        for k in ("src", "dst"):
            if spec.get(k) is None:
                raise ValueError(f"{owner}: needs \"{k}\"")
        n_src, n_dst = counts[et[0]], counts[et[2]]
        src = _int_array(spec["src"], owner, "\"src\"", lo=0, hi=n_src,
                         hi_what=f"node type '{et[0]}' has {n_src} nodes")
        k = src.shape[0]
        dst = _int_array(spec["dst"], owner, "\"dst\"", rows=k, lo=0, hi=n_dst,
                         hi_what=f"node type '{et[2]}' has {n_dst} nodes")
        pre, fb = f"link.{sname}.", f"link{j}."
        m = {"edge_type": list(et), "src": files.add(pre + "src.npy", fb + "src.npy", src),
             "dst": files.add(pre + "dst.npy", fb + "dst.npy", dst)}
        if spec.get("label") is not None:
            lab = _array(spec["label"], owner, "\"label\"")
            if lab.dtype == bool:
                lab = lab.astype(np.int64)
            m["label"] = files.add(pre + "label.npy", fb + "label.npy", _int_array(lab, owner, "\"label\"", rows=k))
        if spec.get("time") is not None:
            t = _int_array(spec["time"], owner, "\"time\"", rows=k)
            m["time"] = files.add(pre + "time.npy", fb + "time.npy", t)
        if spec.get("neg_dst") is not None:
            neg = _array(spec["neg_dst"], owner, "\"neg_dst\"")
            if neg.ndim != 2:
                raise ValueError(f"{owner}: \"neg_dst\" must be [k, m] (m negatives per positive), got shape "
                                 f"{neg.shape}{' (use neg.reshape(-1, 1) for one each)' if neg.ndim == 1 else ''}")
            neg = _int_array(neg, owner, "\"neg_dst\"", ndim=2, rows=k, lo=0, hi=n_dst,
                             hi_what=f"node type '{et[2]}' has {n_dst} nodes")
            m["neg_dst"] = files.add(pre + "neg_dst.npy", fb + "neg_dst.npy", neg)
        out[sname] = m
    return out


# ---- the commit ----------------------------------------------------------------------

def _commit(out, force, files, manifest, xxh3):
    parent, base = os.path.split(out)
    tmp = tempfile.mkdtemp(prefix=f"{base}.tmp-{os.getpid()}-", dir=parent)
    old = None
    try:
        os.chmod(tmp, 0o755)
        entries = {f: _write_file(os.path.join(tmp, f), a, xxh3) for f, a in files.arrays.items()}
        manifest["files"] = entries
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(tmp)
        if os.path.lexists(out):
            _check_destination(out, force)  # again: it may have appeared since
            old = tempfile.mkdtemp(prefix=f"{base}.old-{os.getpid()}-", dir=parent)
            os.rename(out, os.path.join(old, base))  # aside, so the new one goes in by one rename
        os.rename(tmp, out)
        _fsync_dir(parent)
    except BaseException:
        if old is not None and not os.path.lexists(out) and os.path.lexists(os.path.join(old, base)):
            os.rename(os.path.join(old, base), out)  # put the old dataset back
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return out
