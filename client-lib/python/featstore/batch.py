"""featstore.batch — results: ``Batch`` (fs_batch_t), its ``Block``s, and
``DeviceArray`` for rows in GPU memory; the lifetime machinery every batch
kind shares (``HeteroBatch``, ``StreamBatch`` too).

Arrays are zero-copy: they *view* the C buffers, over ``unix://`` the
connection's shared result slot the in-process engines wrote into, over
``grpc://`` the buffer the reply was received into.

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
"""
from __future__ import annotations

import ctypes
import os
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lib
from ._convert import NP_DTYPES, address, dtype_name
from ._lib import lib
from .errors import BatchReleasedError, Error, Status

if TYPE_CHECKING:
    from ._torch import TorchBatch

__all__ = ["Batch", "Block", "DeviceArray"]

_KINDS = {_lib.FS_BATCH_SAMPLE: "sample", _lib.FS_BATCH_GATHER: "gather",
          _lib.FS_BATCH_SAMPLE | _lib.FS_BATCH_GATHER: "sample_gather"}


class _SlotUse:
    """A connection's batches, for explaining slot use: ``held`` C batches
    not yet freed (over unix:// each holds a result slot), of which ``kept``
    were released by their Batch but are still held by arrays."""

    def __init__(self) -> None:
        self.held = self.kept = 0

    def hint(self, comes_back: str) -> str:
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

    def __init__(self, ptr: Any, use: _SlotUse) -> None:
        self.ptr = ptr
        self.use = use
        self.kept = False  # released by its Batch, still held by arrays
        use.held += 1

    def __del__(self) -> None:
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

    def __init__(self, handle: _Handle, address: int, shape: tuple, dtype: Any) -> None:
        self.handle = handle
        self.__array_interface__ = {"data": (address, True), "shape": shape,
                                    "typestr": np.dtype(dtype).str, "version": 3}


def _view(handle: _Handle, pointer: Any, shape: tuple, dtype: Any) -> np.ndarray:
    at = address(pointer)
    if not at or 0 in shape:  # empty results may come with NULL pointers
        return np.zeros(shape, dtype=dtype)
    return np.asarray(_View(handle, at, shape, dtype))


class DeviceArray:
    """Feature rows in GPU memory (a trainer connected with device "gpu:N"
    whose placement puts rows in that GPU: the gather ran there). Not a
    numpy array: it carries ``__cuda_array_interface__`` (version 3), so
    ``torch.as_tensor(a, device=f"cuda:{a.device}")``, CuPy or Numba read
    it in place, without a copy. It holds the batch like arrays do, so the
    lifetime rule is the same. bfloat16 rows show as uint16 bits."""

    def __init__(self, handle: _Handle, pointer: Any, shape: tuple, dtype: Any, device: int) -> None:
        self._handle = handle
        self.shape = tuple(int(x) for x in shape)
        self.dtype = np.dtype(dtype)
        self.device = device
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str,
                                         "data": (address(pointer), True), "strides": None, "version": 3}

    def __repr__(self) -> str:
        return f"<featstore.DeviceArray {self.dtype} {self.shape} on cuda:{self.device}>"


def _features(h: _Handle, b: Any) -> np.ndarray | DeviceArray | None:
    if b.dtype not in NP_DTYPES:
        return None
    if b.features_memory == 1:
        return DeviceArray(h, b.features, (b.rows, b.dim), NP_DTYPES[b.dtype], b.features_device)
    return _view(h, b.features, (b.rows, b.dim), NP_DTYPES[b.dtype])


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
    edge_ids: np.ndarray | None = None
    edge_weights: np.ndarray | None = None


def _block(handle: _Handle, c: Any) -> Block:
    v = lambda p, n: _view(handle, p, (n,), np.int64)  # noqa: E731
    return Block(c.num_dst, c.num_src, c.num_edges, v(c.dst_offsets, c.num_dst + 1),
                 v(c.edge_dst, c.num_edges), v(c.edge_src, c.num_edges),
                 v(c.edge_ids, c.num_edges) if c.edge_ids else None,
                 _view(handle, c.edge_weights, (c.num_edges,), np.float32) if c.edge_weights else None)


def _batch_field(name: str, doc: str) -> Any:
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
    _fields: dict[str, Any] | None
    _pid: int

    def _live(self, what: str) -> dict[str, Any]:
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
    def released(self) -> bool:
        return self._fields is None

    def release(self) -> None:
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

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def region(self) -> tuple[int, int]:
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

    def __init__(self, ptr: Any, use: _SlotUse | None = None, handle: _Handle | None = None) -> None:
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
            "dtype": dtype_name(b.dtype) if b.dtype else None,
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

    def torch(self) -> TorchBatch:
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

    def __repr__(self) -> str:
        if self.released:
            return "<featstore.Batch released>"
        if self._pid != os.getpid():
            return f"<featstore.Batch of process {self._pid}>"
        f = self._fields
        assert f is not None
        return f"<featstore.Batch hops={f['num_hops']} nodes={f['num_nodes']} rows={f['rows']}>"
