"""featstore.client — the Python API over libfeatstore: Client, Batch, Error.

Design: every call goes straight to the C library through ctypes (no
compiled extension), and results are numpy arrays that *view* the C
buffers: over ``unix://`` that is the connection's shared result slot the
in-process engines wrote into, over ``grpc://`` the buffer the reply was
received into. Nothing is copied on the way to numpy or torch.

Lifetime rule: a ``Batch`` owns its ``fs_batch_t``. ``Batch.release()`` (or
the end of its ``with`` block) ends the Batch: from then on every attribute
and method of it (``features``, ``nodes``, ``blocks``, ``torch()``,
``region()``, ...) raises ``BatchReleasedError``. The C batch itself, and
over ``unix://`` its result slot, goes back when the Batch is released (or
garbage) *and* no array taken from it is alive any more: every array (and
every numpy view or torch tensor made from one) holds the C batch, so an
array kept past ``release()`` keeps its own data and never shows another
batch's. The price: such an array keeps its slot. A ``unix://`` connection
has few slots (``slots=``, 4 by default), so keep copies (``np.array(x)``),
not views, of anything kept across batches; ``Client.kept_batches`` counts
the released batches that arrays still hold, and the error for running out
of slots names them.

Thread-safety: a Client serialises its calls with a lock, so one Client may
be shared by threads (they take turns; give each thread its own Client for
parallelism). Batches may be released from any thread.

Fork-safety: a Client belongs to the process that made it. In a child
forked after it was made (a ``torch.utils.data.DataLoader`` worker, or
``os.fork``) its first call notices the new process id and connects again
to the same URI with the same options; the inherited connection is dropped
without a word to the server (``fs_close`` in a child frees only the
child's copies), so the parent's connection is untouched. Batches made
before the fork raise ``BatchReleasedError`` in the child. Arrays taken
from them before the fork must not be read there: over ``unix://`` they
view the parent's result slots, which the parent goes on reusing. gRPC's
threads do not survive fork(), and a child forked while gRPC runs cannot
connect; so before every ``os.fork`` (and the fork behind ``subprocess``
with a ``preexec_fn``) grpc:// Clients close their connections, and their
next call reopens them, in the parent and the child alike.
"""
import ctypes
import os
import threading
import weakref
from collections import namedtuple
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from . import _lib
from ._lib import lib

__all__ = ["Status", "Error", "BatchReleasedError", "TableInfo", "TierInfo", "ReaderInfo", "NodeTypeInfo",
           "EdgeTypeInfo", "LinkSplitInfo", "Info", "Block", "Batch",
           "Client", "connect", "SAMPLE_MODES", "STREAM_ORDERS"]


class Status(IntEnum):
    """fs_status_t."""
    OK = 0
    INVALID_ARGUMENT = 1
    NOT_FOUND = 2
    IO = 3
    FORMAT = 4
    UNSUPPORTED = 5
    NOMEM = 6
    EXISTS = 7
    RESOURCE = 8
    NO_DEVICE = 9
    INTERNAL = 10
    UNAVAILABLE = 11
    TIMEOUT = 12
    VERSION = 13
    PERMISSION = 14
    END = 15  # not an error: a stream's epoch is over


class Error(Exception):
    """A failed featstore call.

    ``status`` is the ``Status``, ``status_name`` the C library's short text
    for it (``fs_strerror``), ``message`` the connection's detail
    (``fs_client_errstr``)."""

    def __init__(self, status, message):
        try:
            self.status = Status(status)
        except ValueError:  # a newer library's code: keep the number
            self.status = int(status)
        self.status_name = lib.fs_strerror(int(status)).decode()
        self.message = message
        super().__init__(f"{self.status_name}: {message}" if message else self.status_name)


class BatchReleasedError(Error, ValueError):
    """A Batch used after ``release()``, or in a process forked after it was
    made (there it counts as released: its memory is the parent's). An
    ``Error`` with status ``INVALID_ARGUMENT`` and a message saying which;
    also a ``ValueError``, which featstore 1.0 raised for the same misuse."""

    def __init__(self, message):
        super().__init__(Status.INVALID_ARGUMENT, message)


SAMPLE_MODES = {"uniform": 0, "uniform_replace": 1, "weighted": 2, "weighted_replace": 3}
STREAM_ORDERS = tuple(_lib.FS_ORDER)  # Client.stream's orders: "random", "sequential", "chunked"

# fs_dtype_t -> numpy. bfloat16 has no numpy type: its 16 bits are exposed as
# uint16 (as the dataset stores them) and Batch.torch() reinterprets them.
_NP_DTYPES = {1: np.bool_, 2: np.int8, 3: np.uint8, 4: np.int16, 5: np.uint16, 6: np.int32, 7: np.uint32,
              8: np.int64, 9: np.uint64, 10: np.float16, 11: np.uint16, 12: np.float32, 13: np.float64}


def _dtype_name(code):
    return lib.fs_dtype_name(code).decode()


def _dtype_code(dtype):
    """None -> as stored; else a featstore dtype name ("float32", "bfloat16") or a numpy dtype."""
    if dtype is None:
        return 0
    if isinstance(dtype, str):
        code = lib.fs_dtype_from_name(dtype.encode())
    else:
        try:
            code = lib.fs_dtype_from_name(np.dtype(dtype).name.encode())
        except TypeError:
            code = 0
    if code == 0:
        raise ValueError(f"unknown dtype {dtype!r} (use e.g. 'float32', 'float16', 'bfloat16' or None)")
    return code


def _ids(values, what):
    """A contiguous int64 numpy array of node ids, or a clear ValueError/TypeError.

    Accepts sequences, numpy arrays and CPU torch tensors of integers; refuses
    floats (which would silently truncate), other shapes and negative ids."""
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{what}: id {arr.max()} does not fit int64")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.min() < 0:
        pos = int(np.argmax(arr < 0))
        raise ValueError(f"{what}[{pos}] = {arr[pos]} is negative")
    return arr


def _locality(value):
    """fs_sample_req_t.locality from Python: 0/1 (off), a boost > 1, or
    "auto" (FS_LOCALITY_AUTO: the connection's Algorithm 2 boost)."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"locality {value!r}: give a number (0 or 1 = off, > 1 = boost) or 'auto'")
        return _lib.FS_LOCALITY_AUTO
    s = float(value)
    if not (s == 0 or (s >= 1 and s != float("inf"))):  # NaN fails both
        raise ValueError(f"locality {value!r}: must be 0 or 1 (off), a finite boost > 1, or 'auto'")
    return s


def _sample_req(fanouts, mode, seed, edge_ids, locality=0):
    """An fs_sample_req_t from Python values, checked."""
    fanouts = [int(f) for f in fanouts]
    if not 1 <= len(fanouts) <= _lib.FS_MAX_HOPS:
        raise ValueError(f"fanouts: need 1..{_lib.FS_MAX_HOPS} hops, got {len(fanouts)}")
    for h, f in enumerate(fanouts):
        if f <= 0 and f != _lib.FS_FANOUT_ALL:
            raise ValueError(f"fanouts[{h}] = {f}: must be > 0 or -1 (all neighbours)")
    modes = [mode] * len(fanouts) if isinstance(mode, str) else list(mode)
    if len(modes) != len(fanouts):
        raise ValueError(f"mode: {len(modes)} modes for {len(fanouts)} hops")
    for m in modes:
        if m not in SAMPLE_MODES:
            raise ValueError(f"unknown sampling mode {m!r} (one of {', '.join(SAMPLE_MODES)})")
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed {seed} must be in [0, 2**64)")
    req = _lib.SampleReq.new(num_hops=len(fanouts), seed=int(seed), want_edge_ids=int(bool(edge_ids)),
                             locality=_locality(locality))
    for h, (f, m) in enumerate(zip(fanouts, modes)):
        req.fanout[h], req.mode[h] = f, SAMPLE_MODES[m]
    return req


# ---- results ------------------------------------------------------------------

_KINDS = {_lib.FS_BATCH_SAMPLE: "sample", _lib.FS_BATCH_GATHER: "gather",
          _lib.FS_BATCH_SAMPLE | _lib.FS_BATCH_GATHER: "sample_gather"}

class _SlotUse:
    """A connection's batches, for explaining slot use: ``held`` C batches
    not yet freed (over unix:// each holds a result slot), of which ``kept``
    were released by their Batch but are still held by arrays."""

    def __init__(self):
        self.held = self.kept = 0

    def hint(self, comes_back):
        """For running out of slots (or of a stream's hold): how many of the
        batches held are released ones kept by their arrays, else ""."""
        if not self.kept:
            return ""
        return (f" ({self.kept} of the {self.held} held by released batches whose arrays are still alive: "
                f"{comes_back} when the last array taken from its batch is gone; keep copies, np.array(x), "
                f"instead)")


class _Handle:
    """Owns one fs_batch_t *, freed when the last reference goes. The Batch
    holds one until release(); every array made from the batch holds one
    too (never the other way round, so there is no reference cycle). So the
    C batch, and its slot, go back once the Batch is released or gone and
    no array taken from it is alive: until then the arrays' memory is
    theirs alone."""

    _FREE = "fs_batch_free"  # the C call that frees what ptr points to

    def __init__(self, ptr, use):
        self.ptr = ptr
        self.use = use
        self.kept = False  # released by its Batch, still held by arrays
        use.held += 1

    def __del__(self):
        ptr, self.ptr = self.ptr, None
        if ptr is None:
            return
        try:
            getattr(lib, self._FREE)(ptr)
        except Exception:  # interpreter shutdown: the library may be gone
            return
        self.use.held -= 1
        if self.kept:
            self.use.kept -= 1


class _View:
    """The owner numpy sees for a zero-copy array: the C buffer's address
    through ``__array_interface__`` (read-only), plus the batch's handle."""

    def __init__(self, handle, address, shape, dtype):
        self.handle = handle
        self.__array_interface__ = {"data": (address, True), "shape": shape,
                                    "typestr": np.dtype(dtype).str, "version": 3}


def _view(handle, pointer, shape, dtype):
    address = ctypes.cast(pointer, ctypes.c_void_p).value
    if not address or 0 in shape:  # empty results may come with NULL pointers
        return np.zeros(shape, dtype=dtype)
    return np.asarray(_View(handle, address, shape, dtype))


class DeviceArray:
    """Feature rows in GPU memory (a trainer connected with device "gpu:N"
    whose placement puts rows in that GPU: the gather ran there). Not a
    numpy array: it carries ``__cuda_array_interface__`` (version 3), so
    ``torch.as_tensor(a, device=f"cuda:{a.device}")``, CuPy or Numba read
    it in place, without a copy. It holds the batch like arrays do, so the
    lifetime rule is the same. bfloat16 rows show as uint16 bits."""

    def __init__(self, handle, pointer, shape, dtype, device):
        self._handle = handle
        self.shape = tuple(int(x) for x in shape)
        self.dtype = np.dtype(dtype)
        self.device = device
        address = ctypes.cast(pointer, ctypes.c_void_p).value or 0
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str,
                                         "data": (address, True), "strides": None, "version": 3}

    def __repr__(self):
        return f"<featstore.DeviceArray {self.dtype} {self.shape} on cuda:{self.device}>"


def _features(h, b):
    if b.dtype not in _NP_DTYPES:
        return None
    if b.features_memory == 1:
        return DeviceArray(h, b.features, (b.rows, b.dim), _NP_DTYPES[b.dtype], b.features_device)
    return _view(h, b.features, (b.rows, b.dim), _NP_DTYPES[b.dtype])


@dataclass(frozen=True)
class TableInfo:
    name: str
    dtype: str
    rows: int
    dim: int


@dataclass(frozen=True)
class TierInfo:
    """One memory tier of the served placement (tier 0: the dataset's files)."""
    kind: str            # "host", "pinned", "device", "sim_device"
    device: int          # -1 for host tiers
    capacity_bytes: int  # 0 = unlimited
    used_bytes: int


@dataclass(frozen=True)
class ReaderInfo:
    """A reader GPU's feature bytes by source ("local", "peer", "host"): the
    placement's prediction per mini-batch and what was measured since that
    placement started serving."""
    reader: int
    predicted_bytes: dict
    measured_bytes: dict


@dataclass(frozen=True)
class NodeTypeInfo:
    """A node type (since 1.3): ids 0..count-1; its splits are fetched with
    ``Client.split("TYPE/NAME")``."""
    name: str
    count: int
    tables: dict = field(default_factory=dict)  # name -> TableInfo: features, then "labels" when labelled
    num_classes: int = 0
    timed: bool = False    # has node timestamps
    splits: tuple = ()     # split names ("train", ...)


class EdgeTypeInfo(namedtuple("EdgeType", "src rel dst")):
    """An edge type (since 1.3): the tuple (src, rel, dst) — equal to, and
    a dict key like, the plain tuple — with its facts as attributes:
    num_edges, weighted, timed, reverse (the edge type holding each edge
    reversed, as a (src, rel, dst) tuple, or None) and tables (name ->
    TableInfo, edge features by edge id)."""

    def __new__(cls, src, rel, dst, num_edges=0, weighted=False, timed=False, reverse=None, tables=None):
        self = super().__new__(cls, src, rel, dst)
        self.num_edges, self.weighted, self.timed = num_edges, weighted, timed
        self.reverse, self.tables = reverse, dict(tables or {})
        return self

    def __repr__(self):
        return (f"EdgeTypeInfo({self.src!r}, {self.rel!r}, {self.dst!r}, num_edges={self.num_edges}, "
                f"weighted={self.weighted}, timed={self.timed}, reverse={self.reverse!r}, "
                f"tables={sorted(self.tables)!r})")


@dataclass(frozen=True)
class LinkSplitInfo:
    """A link-prediction split (since 1.3): `count` positive edges of
    `edge_type` (a (src, rel, dst) tuple). Its int64 arrays are fetched with
    ``Client.split("link/NAME/src")``, ".../dst", and when present
    ".../label" (labelled), ".../time" (timed) and ".../neg_dst" (num_neg > 0:
    [count * num_neg], reshape to (count, num_neg))."""
    name: str
    edge_type: tuple
    count: int
    labelled: bool = False
    timed: bool = False
    num_neg: int = 0


@dataclass(frozen=True)
class Info:
    """What fs_info reports about the server: every list whole.

    Since 1.3 the graph's types too: node_types (name -> NodeTypeInfo),
    edge_types (EdgeTypeInfo, each a (src, rel, dst) tuple, in the server's
    order) and link_splits (name -> LinkSplitInfo). A homogeneous dataset is
    the node type "node" and the edge type ("node", "to", "node"); a typed
    one (``typed``) leaves num_nodes, num_edges, tables and splits empty."""
    server_version: str
    dataset: str
    num_nodes: int
    num_edges: int
    num_classes: int
    symmetric: bool
    weighted: bool
    tables: dict = field(default_factory=dict)  # name -> TableInfo
    splits: tuple = ()
    tiers: tuple = ()      # TierInfo
    readers: tuple = ()    # ReaderInfo, with a placement
    placement_generation: int = 1
    typed: bool = False
    node_types: dict = field(default_factory=dict)   # name -> NodeTypeInfo, in the server's order
    edge_types: tuple = ()                           # EdgeTypeInfo, in the server's order
    link_splits: dict = field(default_factory=dict)  # name -> LinkSplitInfo
    row_tables: tuple = ()                           # 1.5: a labelled layout's row tables (by row)
    row_splits: dict = field(default_factory=dict)   # 1.5: split name -> (first row, rows) in them


def _table_infos(tables, n):
    out = {}
    for t in tables[:n]:
        name = t.name.decode()
        out[name] = TableInfo(name, _dtype_name(t.dtype), t.rows, t.dim)
    return out


def _info_types(i):
    """Info's 1.3 fields from an InfoC."""
    keys = [(e.src.decode(), e.rel.decode(), e.dst.decode()) for e in i.edge_types[:i.num_edge_types]]
    edge_types = tuple(
        EdgeTypeInfo(*keys[k], num_edges=e.num_edges, weighted=bool(e.weighted), timed=bool(e.timed),
                     reverse=keys[e.reverse] if 0 <= e.reverse < len(keys) else None,
                     tables=_table_infos(e.tables, e.num_tables))
        for k, e in enumerate(i.edge_types[:i.num_edge_types]))
    node_types = {}
    for t in i.node_types[:i.num_node_types]:
        name = t.name.decode()
        node_types[name] = NodeTypeInfo(name, t.count, _table_infos(t.tables, t.num_tables), t.num_classes,
                                        bool(t.timed), tuple(s.decode() for s in t.splits[:t.num_splits]))
    link_splits = {}
    for lsp in i.link_splits[:i.num_link_splits]:
        name = lsp.name.decode()
        link_splits[name] = LinkSplitInfo(name, keys[lsp.edge_type], lsp.count, bool(lsp.labelled), bool(lsp.timed),
                                          lsp.num_neg)
    return {"typed": bool(i.typed), "node_types": node_types, "edge_types": edge_types, "link_splits": link_splits}


@dataclass(frozen=True)
class Block:
    """One hop of a sample (fs_block_t), DGL-block style: dst nodes are the
    local ids [0, num_dst), a prefix of the src nodes [0, num_src); edge e
    joins dst ``edge_dst[e]`` to src ``edge_src[e]``, one of its sampled
    neighbours (messages flow src -> dst), grouped by dst: dst d owns edges
    ``dst_offsets[d]:dst_offsets[d+1]``. Local id i is global node
    ``Batch.nodes[i]``. Arrays are int64 views
    into the batch. ``edge_ids`` is None unless requested. ``edge_weights``
    (float32) is None unless the request used locality-aware sampling with a
    boost > 1: then each edge's importance weight 1/q (sum w * x over a
    dst's edges, divided by its degree, is an unbiased mean); None means
    the plain sampler, whose weights would all be deg / min(fanout, deg)."""
    num_dst: int
    num_src: int
    num_edges: int
    dst_offsets: np.ndarray
    edge_dst: np.ndarray
    edge_src: np.ndarray
    edge_ids: object = None
    edge_weights: object = None


def _batch_field(name, doc):
    return property(lambda self: self._live(name)[name], doc=doc)


class _Releasable:
    """What Batch, HeteroBatch and StreamBatch share: the fields (None once released),
    the process that made them, release() and the checks every attribute
    makes. A subclass sets _fields (with its "handle", and "ptr" when
    region() takes another pointer than the handle's) and _pid, and names
    itself and an example copy for the messages. A view of a batch another
    object owns (a StreamBatch's ``batch``) sets _owns_handle False: its
    release() only ends the view, and the owner counts what arrays keep."""

    _NAME = "Batch"
    _COPY_HINT = "np.array(b.features)"
    _REGION = "fs_batch_region"
    _owns_handle = True

    def _live(self, what):
        """The batch's fields, or BatchReleasedError naming `what` and why."""
        fields = self._fields
        if fields is None:
            raise BatchReleasedError(
                f"batch released: {what} is gone with it (release() ends a {self._NAME}; take copies first, "
                f"e.g. {self._COPY_HINT}, or arrays, which keep their data and their slot)")
        if self._pid != os.getpid():
            raise BatchReleasedError(
                f"batch made by process {self._pid} before it forked: {what} cannot be used in process "
                f"{os.getpid()} (over unix:// its memory is the parent's result slot, which the parent reuses); "
                f"make batches in this process (its Client reconnects by itself)")
        return fields

    @property
    def released(self):
        return self._fields is None

    def release(self):
        """Ends the batch: from now on its attributes and methods raise
        ``BatchReleasedError``. The C batch and its result slot go back at
        once, or, when arrays taken from the batch are still alive, once
        the last of them is gone (they keep their data until then).
        Idempotent."""
        fields, self._fields = self._fields, None
        if fields is None or not self._owns_handle:
            return
        alive = weakref.ref(fields["handle"])
        del fields
        handle = alive()
        if handle is not None and handle.ptr is not None:  # arrays hold it: counted until they go
            handle.kept = True
            handle.use.kept += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def region(self):
        """(address, length) of the memory this batch's arrays live in: the
        shared result slot over unix://, the received buffer over grpc://."""
        fields = self._live("region()")
        ptr = fields.get("ptr", fields["handle"].ptr)
        base, length = ctypes.c_void_p(), ctypes.c_size_t()
        st = getattr(lib, self._REGION)(ptr, ctypes.byref(base), ctypes.byref(length))
        if st != Status.OK:
            raise Error(st, f"{self._REGION} failed")
        return base.value or 0, length.value


class Batch(_Releasable):
    """One result (fs_batch_t *). ``kind`` says what it holds: "sample"
    (``blocks``, ``nodes``, ``seed_local``), "gather" (``features``) or
    "sample_gather" (both, with ``features[i]`` the row of ``nodes[i]``).
    Block 0 is the hop from the seeds; the last block reaches farthest.

    Arrays view C memory, read-only. After ``release()`` every attribute
    and method but ``released`` and ``release()`` raises
    ``BatchReleasedError``; arrays taken before keep their data, and their
    slot, until they are gone. See the module comment.

    `handle`: the batch lies inside a larger result that handle owns (a
    stream batch): the Batch views it and frees nothing itself."""

    def __init__(self, ptr, use=None, handle=None):
        h = handle if handle is not None else _Handle(ptr, use if use is not None else _SlotUse())
        self._owns_handle = handle is None
        b = ptr.contents
        self._pid = os.getpid()
        self._fields = {  # None once released
            "handle": h,  # the Batch's own hold on the C batch; region() takes it with the fields
            "ptr": ptr,
            "kind": _KINDS.get(b.kind, "unknown"),
            "num_hops": b.num_hops, "num_nodes": b.num_nodes, "num_seeds": b.num_seeds,
            "rows": b.rows, "dim": b.dim,
            "dtype": _dtype_name(b.dtype) if b.dtype else None,
            "nodes": _view(h, b.nodes, (b.num_nodes,), np.int64),
            "seed_local": _view(h, b.seed_local, (b.num_seeds,), np.int64),
            "blocks": [_block(h, b.blocks[i]) for i in range(b.num_hops)],
            "features": _features(h, b),
            "features_device": b.features_device if b.features_memory == 1 else None,
        }

    kind = _batch_field("kind", '"sample", "gather" or "sample_gather"')
    num_hops = _batch_field("num_hops", "hops sampled (0 for a gather)")
    num_nodes = _batch_field("num_nodes", "sampled nodes: len(nodes)")
    num_seeds = _batch_field("num_seeds", "input seeds: len(seed_local)")
    rows = _batch_field("rows", "feature rows")
    dim = _batch_field("dim", "feature columns")
    dtype = _batch_field("dtype", 'the features\' dtype name ("float32", "bfloat16", ...), None without features')
    nodes = _batch_field("nodes", "int64 [num_nodes]: the global id of each local id")
    seed_local = _batch_field("seed_local", "int64 [num_seeds]: the local id of each input seed")
    blocks = _batch_field("blocks", "one Block per hop; blocks[0] is the hop from the seeds")
    features = _batch_field("features", "[rows, dim] of dtype (bfloat16 as uint16 bits), None without features; "
                                        "a DeviceArray when the rows are in GPU memory (features_device)")
    features_device = _batch_field("features_device", "the GPU whose memory holds the features, None for host memory")

    def torch(self):
        """The arrays as torch tensors sharing the same memory (torch.from_numpy):
        a ``TorchBatch`` with nodes, seed_local, features and blocks (each with
        dst_offsets, edge_dst, edge_src, edge_ids). Same lifetime rule: the
        tensors hold the batch like arrays do; they must not be written to.
        bfloat16 features come out as torch.bfloat16. Features in GPU memory
        come out as a CUDA tensor on that GPU, without a copy
        (``__cuda_array_interface__``)."""
        self._live("torch()")
        from ._torch import to_torch  # torch is optional: imported only here
        return to_torch(self)

    def __repr__(self):
        if self.released:
            return "<featstore.Batch released>"
        if self._pid != os.getpid():
            return f"<featstore.Batch of process {self._pid}>"
        f = self._fields
        return f"<featstore.Batch hops={f['num_hops']} nodes={f['num_nodes']} rows={f['rows']}>"


def _block(handle, c):
    v = lambda p, n: _view(handle, p, (n,), np.int64)  # noqa: E731
    return Block(c.num_dst, c.num_src, c.num_edges, v(c.dst_offsets, c.num_dst + 1),
                 v(c.edge_dst, c.num_edges), v(c.edge_src, c.num_edges),
                 v(c.edge_ids, c.num_edges) if c.edge_ids else None,
                 _view(handle, c.edge_weights, (c.num_edges,), np.float32) if c.edge_weights else None)


# ---- the connection -------------------------------------------------------------

_CLIENTS = weakref.WeakSet()  # every open Client, for the fork handlers


def _before_fork():
    """os.register_at_fork. gRPC's threads do not survive fork(): a process
    forked while a grpc:// connection is open could never connect (the C
    library refuses to try). So each grpc:// Client closes its connection
    here, holding its lock through the fork so that no call is in flight;
    its next call reconnects, in the parent and in the child alike. unix://
    connections stay open (and their locks free): only the child reconnects."""
    for client in list(_CLIENTS):
        if client.transport == "unix":
            continue
        client._lock.acquire()
        client._held_for_fork = True
        if client._c:
            c, client._c = client._c, None
            lib.fs_close(c)


def _after_fork_in_parent():
    for client in list(_CLIENTS):
        if client.__dict__.pop("_held_for_fork", False):
            client._lock.release()


def _after_fork_in_child():
    """The new connection is made by the child's first call
    (Client._connection). Every lock is replaced: one held at the fork
    belongs to a thread of the parent, which the child does not have."""
    for client in list(_CLIENTS):
        client.__dict__.pop("_held_for_fork", None)
        client._lock = threading.Lock()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


class _Closing:
    """A context manager whose ``close()`` (idempotent) also runs when the
    object is garbage: Client and Stream."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class Client(_Closing):
    """A connection to a featstore server (``unix://PATH`` or ``grpc://HOST:PORT``).
    Use ``featstore.connect``. A context manager; ``close()`` is idempotent.
    Batches may outlive the Client. In a forked child the Client reconnects
    by itself on its first call (see the module comment)."""

    def __init__(self, uri, device=None, slots=None, threads=None, timeout_ms=None, token=None, tls_ca_file=None,
                 tls_cert_file=None, tls_key_file=None):
        self._opts = _lib.ConnectOpts.new(slots=_opt_int(slots, "slots"), threads=_opt_int(threads, "threads"),
                                          timeout_ms=_opt_int(timeout_ms, "timeout_ms"),
                                          device=device.encode() if device else None,
                                          token=_opt_str(token, "token"),
                                          tls_ca_file=_opt_str(tls_ca_file, "tls_ca_file"),
                                          tls_cert_file=_opt_str(tls_cert_file, "tls_cert_file"),
                                          tls_key_file=_opt_str(tls_key_file, "tls_key_file"))
        self._start(uri)

    def _start(self, uri):
        self._lock = threading.Lock()
        self._c = None
        self._closed = True  # until connected
        if isinstance(uri, str) and "\0" in uri:  # C would read the URI only up to it: another address
            raise Error(Status.INVALID_ARGUMENT, f"URI {uri!r} has a NUL character (expected unix:///ABS/PATH, "
                        "grpc://HOST:PORT or grpcs://HOST:PORT)")
        self.uri = uri
        self._c = self._open("")
        self._pid = os.getpid()
        self._use = _SlotUse()
        self._closed = False
        self.transport = lib.fs_client_transport(self._c).decode()
        _CLIENTS.add(self)

    def _with_slots(self, slots):
        """A new Client to the same URI with the same options but `slots`
        result slots (unix://): for a loader that keeps several batches in
        flight on a connection of its own."""
        other = Client.__new__(Client)
        other._opts = _lib.ConnectOpts.from_buffer_copy(self._opts)
        other._opts.slots = _opt_int(slots, "slots")
        other._strings = self  # the copied options point at this Client's strings
        other._start(self.uri)
        return other

    # -- plumbing

    def _open(self, context, slots=None):
        """A new C connection to self.uri with self._opts (and `slots`
        result slots when given), or an Error."""
        opts = self._opts
        if slots is not None:
            opts = _lib.ConnectOpts.from_buffer_copy(self._opts)  # its strings are self._opts's, alive with it
            opts.slots = slots
        c = ctypes.c_void_p()
        st = lib.fs_connect(self.uri.encode(), ctypes.byref(opts), ctypes.byref(c))
        if st != Status.OK:
            msg = lib.fs_client_errstr(c).decode(errors="replace")
            lib.fs_close(c)
            raise Error(st, context + msg)
        return c

    def _connection(self):
        """The C connection for a call (under the lock). In a process forked
        after the Client was made, the inherited connection is the parent's:
        its copy is dropped (fs_close in a child sends nothing and frees only
        the child's copies) and the same URI is connected again with the same
        options; a grpc:// connection closed for a fork (_before_fork) is
        reopened the same way. If that fails the call raises, and the next
        call tries again."""
        if self._closed:
            raise ValueError("featstore client is closed")
        if self._pid != os.getpid():
            inherited, self._c = self._c, None
            if inherited:
                lib.fs_close(inherited)
            self._c = self._open(f"reconnecting in process {os.getpid()}, forked from {self._pid}: ")
            self._pid = os.getpid()
            self._use = _SlotUse()
        elif not self._c:
            self._c = self._open("reconnecting after a fork: ")
        return self._c

    def _call(self, fn, *args):
        """Runs one C call under the lock; a non-OK status becomes an Error
        carrying the connection's message."""
        with self._lock:
            c = self._connection()
            st = fn(c, *args)
            if st != Status.OK:
                raise Error(st, lib.fs_client_errstr(c).decode(errors="replace") + self._slot_hint(st))
            return self._use

    def _slot_hint(self, st):
        """For running out of slots: how many of them released batches' arrays keep."""
        if st != Status.RESOURCE or self.transport != "unix":
            return ""
        return self._use.hint("a slot comes back")

    def _batch_call(self, fn, *args):
        out = ctypes.POINTER(_lib.BatchC)()
        use = self._call(fn, *args, ctypes.byref(out))
        return Batch(out, use)

    @property
    def held_batches(self):
        """Batches of this connection whose C memory is not yet freed: not
        released, or released but held by arrays (over unix:// each holds one
        of the ``slots`` result slots)."""
        return self._use.held

    @property
    def kept_batches(self):
        """Released batches still held by arrays taken from them (each keeps
        its memory, over unix:// a result slot, until those arrays are gone)."""
        return self._use.kept

    # -- the API

    def info(self):
        """Facts about the served dataset, as an ``Info``."""
        out = ctypes.POINTER(_lib.InfoC)()
        self._call(lib.fs_info, ctypes.byref(out))
        try:
            i = out.contents
            tables = {}
            for t in i.tables[:i.num_tables]:
                name = t.name.decode()
                tables[name] = TableInfo(name, _dtype_name(t.dtype), t.rows, t.dim)
            sources = ("local", "peer", "host")
            tiers = tuple(TierInfo(t.kind.decode(), t.device, t.capacity_bytes, t.used_bytes)
                          for t in i.tiers[:i.num_tiers])
            readers = tuple(ReaderInfo(r.reader, dict(zip(sources, r.predicted_bytes)),
                                       dict(zip(sources, r.measured_bytes))) for r in i.readers[:i.num_readers])
            types = _info_types(i) if _lib.typed else {}  # a library before 1.3 has no such fields
            if _lib.rows:
                types["row_tables"] = tuple(i.row_tables[k].decode() for k in range(i.num_row_tables))
                types["row_splits"] = {r.name.decode(): (r.offset, r.count) for r in i.row_splits[:i.num_row_splits]}
            return Info(i.server_version.decode(), i.dataset.decode(), i.num_nodes, i.num_edges, i.num_classes,
                        bool(i.symmetric), bool(i.weighted), tables,
                        tuple(s.decode() for s in i.splits[:i.num_splits]), tiers, readers,
                        i.placement_generation, **types)
        finally:
            lib.fs_info_free(out)

    def sample(self, seeds, fanouts, mode="uniform", seed=0, edge_ids=False, locality=0):
        """k-hop sampling from `seeds` with one fanout per hop (-1 = all
        neighbours). `mode`: one of SAMPLE_MODES, or one per hop. The same
        arguments always give the same Batch. `locality`: 0 or 1 = plain
        sampling; a boost s > 1 prefers neighbours whose rows are in this
        trainer's GPU memory and fills ``Block.edge_weights`` (unix:// with
        device="gpu:N" on a server with a placement; uniform mode only);
        "auto" = the boost of ``report_load_ratio``."""
        ids = _ids(seeds, "seeds")
        req = _sample_req(fanouts, mode, seed, edge_ids, locality)
        return self._batch_call(lib.fs_sample, _ptr(ids), len(ids), ctypes.byref(req))

    def gather(self, ids, table, dtype=None):
        """Rows `ids` of `table` (a feature table, or "labels": int64 [n x 1]).
        dtype None = as stored, or "float32" to widen half-precision tables.
        Ids come first, as in every call (since 1.0)."""
        if isinstance(ids, str):
            raise TypeError(f"gather(ids, table): the ids come first, then the table name (got ids={ids!r})")
        arr = _ids(ids, "ids")
        return self._batch_call(lib.fs_gather, _ptr(arr), len(arr), _name(table), _dtype_code(dtype))

    def sample_gather(self, seeds, fanouts, table, seed=0, dtype=None, mode="uniform", edge_ids=False, locality=0):
        """One mini-batch: sample from `seeds`, then the rows of `table` for
        every sampled node (``features[i]`` belongs to ``nodes[i]``).
        `locality` as in ``sample``."""
        ids = _ids(seeds, "seeds")
        req = _sample_req(fanouts, mode, seed, edge_ids, locality)
        return self._batch_call(lib.fs_sample_gather, _ptr(ids), len(ids), ctypes.byref(req), _name(table),
                                _dtype_code(dtype))

    # -- typed graphs (since 1.3; featstore.hetero)

    def hetero_sample(self, seeds, num_neighbors, *, seed=0, mode="uniform", frontier="new", disjoint=False,
                      temporal=None, seed_time=None, strict=False, window=0, node_tables=(), edge_tables=(),
                      dtype=None, want_edge_ids=False):
        """Typed k-hop sampling and the gather of node/edge tables in one call
        (fs_hetero_sample): a ``featstore.hetero.HeteroBatch``.

        seeds: dict node type -> ids, one seed group per key in dict order
        (or a list of (type, ids) pairs). num_neighbors: dict (src, rel, dst)
        -> fanout per hop, PyG's: > 0, -1 (all) or 0 (none); every list the
        same length (the hops); unlisted edge types take none. mode: one of
        SAMPLE_MODES for every hop, or one per hop ("weighted": by edge
        weight). frontier: "new" (PyG: hop h expands the nodes first reached
        at hop h-1) or "all" (DGL blocks, for layered models). disjoint:
        every seed grows its own tree. temporal: None, "uniform" or "last"
        (implies disjoint): only edges no newer than the seed's time (older
        with `strict`; no older than time - `window` with a window > 0);
        seed_time: dict type -> int64 times per seed (default: the nodes'
        timestamps). node_tables / edge_tables: table names, returned for
        every type that has them (``x``, ``edge_attr``; edge tables imply
        edge ids). dtype: None = as stored, "float32" widens half tables.
        The same arguments always give the same batch."""
        from .hetero import hetero_call
        return hetero_call(self, seeds, num_neighbors, seed=seed, mode=mode, frontier=frontier, disjoint=disjoint,
                           temporal=temporal, seed_time=seed_time, strict=strict, window=window,
                           node_tables=node_tables, edge_tables=edge_tables, dtype=dtype, want_edge_ids=want_edge_ids)

    def link_sample(self, edge_type, src, dst, *, num_neighbors, label=None, time=None, neg=None, amount=1.0,
                    neg_weighted=False, strict=False, keep_seed_edges=False, seed=0, mode="uniform", frontier="new",
                    disjoint=False, temporal=None, time_strict=False, window=0, node_tables=(), edge_tables=(),
                    dtype=None, want_edge_ids=False):
        """A link-prediction batch (fs_link_sample; PyG's LinkNeighborLoader):
        a ``HeteroBatch`` with ``edge_label_index``/``edge_label`` (binary or
        no negatives) or ``src_index``/``dst_pos_index``/``dst_neg_index``
        (triplet).

        edge_type: the seed edges' (src, rel, dst); src, dst: their endpoint
        ids; label: int64 per seed edge (default all 1); time: int64 per seed
        edge (temporal requests). neg: None (only the given edges), "binary"
        (round(amount * count) random pairs labelled 0; given labels are
        then shifted by + 1, as PyG does) or "triplet" (`amount` = k
        destinations per positive); neg_weighted: endpoints by degree^0.75;
        strict: a negative is never an edge of the graph. Both endpoints'
        neighbourhoods are sampled with the remaining arguments as in
        ``hetero_sample`` (time_strict is hetero_sample's `strict`), and no
        seed edge, nor its reverse, is in the sampled subgraph unless
        keep_seed_edges."""
        from .hetero import link_call
        return link_call(self, edge_type, src, dst, num_neighbors, label=label, time=time, neg=neg, amount=amount,
                         neg_weighted=neg_weighted, strict=strict, keep_seed_edges=keep_seed_edges, seed=seed,
                         mode=mode, frontier=frontier, disjoint=disjoint, temporal=temporal,
                         time_strict=time_strict, window=window, node_tables=node_tables, edge_tables=edge_tables,
                         dtype=dtype, want_edge_ids=want_edge_ids)

    # -- epoch streams (since 1.4; featstore.stream)

    def stream(self, *, split=None, seeds=None, batch_size, fanouts=None, table=None, dtype=None, labels=None,
               seed=0, epoch=0, rank=0, world_size=1, drop_last=False, prefetch=0, hold=2, order="random", chunk=0,
               start_batch=0, mode="uniform", edge_ids=False, delta="off", window=1, num_neighbors=None,
               frontier="new", disjoint=False, temporal=None, strict=False, time_window=0, node_tables=(),
               edge_tables=(), want_edge_ids=False, seed_type=None, link=None, tables=None, producers=0):
        """This rank's share of one epoch as an iterator of
        ``featstore.stream.StreamBatch`` (fs_stream_open), made ahead by
        background threads while the caller trains; ``StopIteration`` at the
        end of the epoch.

        The seeds: a `split` name or a `seeds` array (one of the two). Each
        batch samples `fanouts` (`mode`, `edge_ids` as in ``sample``) from
        `batch_size` seeds and gathers `table` (None: sample only; `dtype`
        as in ``gather``) and the seeds' `labels` (None: the table "labels"
        when the dataset has it, "": none, or a table name). The plan is
        torch's DistributedSampler's: rank `rank` of `world_size` gets an
        equal, disjoint share of one shuffle per (`seed`, `epoch`) (pass the
        same on every rank), padded by repeating its start unless
        `drop_last`. `order`: one of STREAM_ORDERS ("chunked": runs of
        `chunk` consecutive seeds, the runs shuffled). `prefetch` batches
        are made ahead (0: two per producer); the caller may hold `hold` at
        once. `start_batch`:
        resume at an earlier stream's ``position``. `delta` ("off", "full",
        "only"): seed 002's Match, fetching only the rows the previous batch
        lacks (StreamBatch.new_rows, .take; "full" also assembles
        .features); `window` > 1 reorders each window of batches by overlap
        (needs delta). The stream has connections of its own, so it
        outlives ``close()`` of this Client. `producers` (since 1.5):
        background threads making whole batches at once, 1..16 and at most
        `prefetch`, sharing the connection's `threads`; 0: over unix:// the
        connection's `threads`, else 1 (delta streams, and node streams over
        grpc://, which the server makes, have one).

        Typed streams (since 1.4): `num_neighbors` instead of `fanouts` makes
        each batch ``hetero_sample({seed_type: seeds}, num_neighbors,
        seed=request_seed, ...)`` with `mode`, `frontier`, `disjoint`,
        `temporal`, `strict`, `time_window` (hetero_sample's `window`),
        `node_tables`, `edge_tables`, `dtype` and `want_edge_ids` as there,
        in ``StreamBatch.hetero``; `fanouts`, `table`, `delta`, `window` and
        `edge_ids` are a node stream's (a ValueError names them), and
        `labels` must stay None or "" (put "labels" in `node_tables`).
        `seed_type`: the seeds' node type, by default the typed split's
        "TYPE/" prefix ("paper/train": "paper"). `link` (a dict or a
        ``featstore.stream.StreamLink``: edge_type, neg, amount,
        neg_weighted, strict, keep_seed_edges, as in ``link_sample``) makes
        it a link stream: `split` names a link split, whose edges (and
        labels and times when it has them) are the seeds, each batch
        ``link_sample`` on its edges (``StreamBatch.seeds``: their
        sources).

        Row streams (pre-propagation): `tables` (a list of table names, e.g.
        the hop_0..hop_R of ``featstore propagate``) and no sampling
        options: each batch gathers its seeds' rows of every table
        (``StreamBatch.tables``, one Batch each, in `dtype`) with their
        labels; order="chunked" with chunk = batch_size makes every batch
        one run of consecutive split positions."""
        from .stream import open_stream
        return open_stream(self, split=split, seeds=seeds, batch_size=batch_size, fanouts=fanouts, table=table,
                           dtype=dtype, labels=labels, seed=seed, epoch=epoch, rank=rank, world_size=world_size,
                           drop_last=drop_last, prefetch=prefetch, hold=hold, order=order, chunk=chunk,
                           start_batch=start_batch, mode=mode, edge_ids=edge_ids, delta=delta, window=window,
                           num_neighbors=num_neighbors, frontier=frontier, disjoint=disjoint, temporal=temporal,
                           strict=strict, time_window=time_window, node_tables=node_tables, edge_tables=edge_tables,
                           want_edge_ids=want_edge_ids, seed_type=seed_type, link=link, tables=tables,
                           producers=producers)

    def report_load_ratio(self, ratio):
        """Algorithm 2, once per epoch: `ratio` = loading time / total time
        of the epoch, in [0, 1]. Returns the boost s for the next epoch
        (what locality="auto" requests use)."""
        s = ctypes.c_double()
        self._call(lib.fs_report_load_ratio, float(ratio), ctypes.byref(s))
        return s.value

    def split(self, name):
        """The node ids of split `name` ("train", "valid", "test") as a new
        int64 array (copied: splits are small and this way outlive nothing)."""
        out = ctypes.POINTER(_lib.IdsC)()
        self._call(lib.fs_split, _name(name), ctypes.byref(out))
        try:
            n = out.contents.n
            return np.ctypeslib.as_array(out.contents.ids, (n,)).copy() if n else np.zeros(0, np.int64)
        finally:
            lib.fs_ids_free(out)

    def replan(self, topology=None, gpu_budget=0.0, hotness=None, order=None, plan=None, save=None, alpha=None,
               reserve=None):
        """Re-plans the running server's placement (fs_replan; unix:// only)
        and returns the new placement generation. Unset options keep the
        server's; paths are on the server's machine. alpha: Algorithm 1's
        alpha, a number for every link class or "nvlink=0.2,nvswitch=0";
        order "topology-first", "feature-first" or "auto"; reserve: GPU
        memory kept free per GPU, bytes or "2G"."""
        enc = lambda v: v.encode() if v else None  # noqa: E731
        if alpha is not None and not isinstance(alpha, str):
            alpha = repr(float(alpha))
        if reserve is not None and not isinstance(reserve, str):
            reserve = str(int(reserve))
        opts = _lib.ReplanOpts.new(topology=enc(topology), gpu_budget=float(gpu_budget), hotness=enc(hotness),
                                   order=enc(order), plan=enc(plan), save=enc(save), alpha=enc(alpha),
                                   reserve=enc(reserve))
        gen = ctypes.c_uint64()
        self._call(lib.fs_replan, ctypes.byref(opts), ctypes.byref(gen))
        return gen.value

    def stats(self):
        """The server's metrics, Prometheus text format."""
        text = ctypes.c_void_p()
        self._call(lib.fs_stats, ctypes.byref(text))
        try:
            return ctypes.string_at(text.value).decode(errors="replace")
        finally:
            lib.fs_stats_free(text)

    def close(self):
        """Closes the connection (in a forked child: drops the inherited one,
        which stays the parent's). Batches stay valid until released."""
        with self._lock:
            c, self._c, self._closed = self._c, None, True
            owner = self.__dict__.pop("_stream_owner", None)
        if c:
            lib.fs_close(c)
        if owner is not None:
            owner.release()  # streams still open keep it

    @property
    def closed(self):
        return self._closed

    def __repr__(self):
        return f"<featstore.Client {self.uri} {'closed' if self.closed else self.transport}>"


def _opt_str(value, what):
    """An optional string option (a path or a token) as C bytes; None stays None."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise TypeError(f"{what} must be a non-empty string or None")
    return value.encode()


def _opt_int(value, what):
    if value is None:
        return 0
    if int(value) < 1:
        raise ValueError(f"{what} must be >= 1, got {value}")
    return int(value)


def _name(s):
    if not isinstance(s, str) or not s:
        raise TypeError(f"expected a non-empty name, got {s!r}")
    return s.encode()


def _ptr(arr):
    return arr.ctypes.data_as(_lib._p_i64)


def connect(uri, device=None, slots=None, threads=None, timeout_ms=None, token=None, tls_ca_file=None,
            tls_cert_file=None, tls_key_file=None):
    """Connects to a featstore server: ``unix:///path/to/socket`` (zero-copy,
    local), ``grpc://host:port`` or ``grpcs://host:port`` (TLS). `device`
    ("cpu", "gpu:N"), `slots` and `threads` (this process's threads that
    split each batch's sampling and gather; the same batch at any count)
    matter for unix:// only;
    `timeout_ms` is a per-call deadline. `token` (default $FEATSTORE_TOKEN) is
    sent with every gRPC call; `tls_ca_file` (default $FEATSTORE_TLS_CA, else
    gRPC's roots) verifies a grpcs:// server, and `tls_cert_file` with
    `tls_key_file` ($FEATSTORE_TLS_CERT, $FEATSTORE_TLS_KEY) is the client's
    certificate for mTLS. unix:// ignores the four."""
    return Client(uri, device=device, slots=slots, threads=threads, timeout_ms=timeout_ms, token=token,
                  tls_ca_file=tls_ca_file, tls_cert_file=tls_cert_file, tls_key_file=tls_key_file)
