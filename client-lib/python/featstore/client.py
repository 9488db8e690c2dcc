"""featstore.client — the connection: ``Client`` and ``connect``.

Design: every call goes straight to the C library through ctypes (no
compiled extension), and results are numpy arrays that *view* the C
buffers (featstore.batch: the lifetime rule). Nothing is copied on the
way to numpy or torch. The Client's calls mirror client.h's, one method
each; hetero requests are built in featstore.hetero, streams in
featstore.stream (whose constructors ``node_stream``, ``hetero_stream``,
``link_stream`` and ``row_stream`` the Client inherits).

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
from __future__ import annotations

import ctypes
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from . import _lib
from ._convert import SAMPLE_MODES, dtype_code, opt_int, opt_str, seed64
from ._convert import ids as _ids
from ._convert import name as _name
from ._convert import ptr as _ptr
from ._closing import Closing
from ._deprecation import renamed
from ._lib import lib
from ._stream_calls import StreamCalls
from .batch import Batch, Block, DeviceArray, _SlotUse
from .errors import BatchReleasedError, Error, Status
from .hopgnn import Micrographs, OwnerGroups, PregatherStats
from .info import EdgeTypeInfo, Info, LinkSplitInfo, NodeTypeInfo, ReaderInfo, TableInfo, TierInfo, read_info

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .hetero import HeteroBatch

    EdgeType = tuple[str, str, str]  # (src, rel, dst)

# What featstore.client has always exported: the batch and info types now
# live in featstore.batch and featstore.info, and are the same objects.
__all__ = ["Status", "Error", "BatchReleasedError", "TableInfo", "TierInfo", "ReaderInfo", "NodeTypeInfo",
           "EdgeTypeInfo", "LinkSplitInfo", "Info", "Block", "Batch", "DeviceArray",
           "Client", "connect", "SAMPLE_MODES", "STREAM_ORDERS"]

STREAM_ORDERS = tuple(_lib.FS_ORDER)  # the streams' orders: "random", "sequential", "chunked"


def _locality(value: float | str) -> float:
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


def _sample_req(num_neighbors: Sequence[int], mode: str | Sequence[str], seed: int, edge_ids: bool,
                locality: float | str = 0) -> _lib.SampleReq:
    """An fs_sample_req_t from Python values, checked. (The messages name
    "fanouts", the C field, as featstore 1.0 to 1.5 did.)"""
    fanouts = [int(f) for f in num_neighbors]
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
    req = _lib.SampleReq.new(num_hops=len(fanouts), seed=seed64(seed), want_edge_ids=int(bool(edge_ids)),
                             locality=_locality(locality))
    for h, (f, m) in enumerate(zip(fanouts, modes)):
        req.fanout[h], req.mode[h] = f, SAMPLE_MODES[m]
    return req


# ---- fork handlers -----------------------------------------------------------------

_CLIENTS: weakref.WeakSet[Client] = weakref.WeakSet()  # every open Client, for the fork handlers


def _before_fork() -> None:
    """os.register_at_fork. gRPC's threads do not survive fork(): a process
    forked while a grpc:// connection is open could never connect (the C
    library refuses to try). So each grpc:// or etcd:// Client closes its
    connection here, and lets go of its streams' owner (closed with the
    producers' connections it keeps, unless a stream still open holds it),
    holding its lock through the fork so that no call is in flight; its
    next call or stream reconnects, in the parent and in the child alike.
    unix:// connections stay open (and their locks free): only the child
    reconnects."""
    for client in list(_CLIENTS):
        if client.transport == "unix":
            continue
        client._lock.acquire()
        client._held_for_fork = True
        owner = client.__dict__.pop("_stream_owner", None)
        if client._c:
            c, client._c = client._c, None
            lib.fs_close(c)
        if owner is not None:
            owner.release()


def _after_fork_in_parent() -> None:
    for client in list(_CLIENTS):
        if client.__dict__.pop("_held_for_fork", False):
            client._lock.release()


def _after_fork_in_child() -> None:
    """The new connection is made by the child's first call
    (Client._connection). Every lock is replaced: one held at the fork
    belongs to a thread of the parent, which the child does not have."""
    for client in list(_CLIENTS):
        client.__dict__.pop("_held_for_fork", None)
        client._lock = threading.Lock()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


# ---- the connection -------------------------------------------------------------

class Client(StreamCalls, Closing):
    """A connection to a featstore server (``unix://PATH`` or ``grpc://HOST:PORT``)
    or sharded cluster (``etcd://HOST:PORT/NAME``). Use ``featstore.connect``. A context manager; ``close()`` is idempotent.
    Batches may outlive the Client. In a forked child the Client reconnects
    by itself on its first call (see the module comment)."""

    uri: str
    transport: str
    _held_for_fork: bool   # set by the fork handlers while its lock is held for a fork
    _strings: Client       # a _with_slots copy's: the Client its copied options' strings belong to
    _stream_owner: Any     # featstore.stream._Owner: the connection its streams are opened on

    def __init__(self, uri: str, device: str | None = None, slots: int | None = None, threads: int | None = None,
                 timeout_ms: int | None = None, token: str | None = None, tls_ca_file: str | None = None,
                 tls_cert_file: str | None = None, tls_key_file: str | None = None) -> None:
        self._opts = _lib.ConnectOpts.new(slots=opt_int(slots, "slots"), threads=opt_int(threads, "threads"),
                                          timeout_ms=opt_int(timeout_ms, "timeout_ms"),
                                          device=device.encode() if device else None,
                                          token=opt_str(token, "token"),
                                          tls_ca_file=opt_str(tls_ca_file, "tls_ca_file"),
                                          tls_cert_file=opt_str(tls_cert_file, "tls_cert_file"),
                                          tls_key_file=opt_str(tls_key_file, "tls_key_file"))
        self._start(uri)

    def _start(self, uri: str) -> None:
        self._lock = threading.Lock()
        self._c: Any = None
        self._closed = True  # until connected
        if isinstance(uri, str) and "\0" in uri:  # C would read the URI only up to it: another address
            raise Error(Status.INVALID_ARGUMENT, f"URI {uri!r} has a NUL character (expected unix:///ABS/PATH, "
                        "grpc://HOST:PORT, grpcs://HOST:PORT or etcd://HOST:PORT/CLUSTER)")
        self.uri = uri
        self._c = self._open("")
        self._pid = os.getpid()
        self._use = _SlotUse()
        self._closed = False
        self.transport = lib.fs_client_transport(self._c).decode()
        _CLIENTS.add(self)

    def _with_slots(self, slots: int, threads: int | None = None) -> Client:
        """A new Client to the same URI with the same options but `slots`
        result slots (unix://), and `threads` where this one's were not
        given: for a loader that keeps several batches in flight on a
        connection of its own."""
        other = Client.__new__(Client)
        other._opts = _lib.ConnectOpts.from_buffer_copy(self._opts)
        other._opts.slots = opt_int(slots, "slots")
        if threads is not None and not self._opts.threads:
            other._opts.threads = opt_int(threads, "threads")
        other._strings = self  # the copied options point at this Client's strings
        other._start(self.uri)
        return other

    # -- plumbing

    def _open(self, context: str, slots: int | None = None) -> Any:
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

    def _connection(self) -> Any:
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

    def _call(self, fn: Callable[..., int], *args: Any) -> _SlotUse:
        """Runs one C call under the lock; a non-OK status becomes an Error
        carrying the connection's message."""
        with self._lock:
            c = self._connection()
            st = fn(c, *args)
            if st != Status.OK:
                raise Error(st, lib.fs_client_errstr(c).decode(errors="replace") + self._slot_hint(st))
            return self._use

    def _slot_hint(self, st: int) -> str:
        """For running out of slots: how many of them released batches' arrays keep."""
        if st != Status.RESOURCE or self.transport != "unix":
            return ""
        return self._use.hint("a slot comes back")

    def _batch_call(self, fn: Callable[..., int], *args: Any) -> Batch:
        out = ctypes.POINTER(_lib.BatchC)()
        use = self._call(fn, *args, ctypes.byref(out))
        return Batch(out, use)

    @property
    def held_batches(self) -> int:
        """Batches of this connection whose C memory is not yet freed: not
        released, or released but held by arrays (over unix:// each holds one
        of the ``slots`` result slots)."""
        return self._use.held

    @property
    def kept_batches(self) -> int:
        """Released batches still held by arrays taken from them (each keeps
        its memory, over unix:// a result slot, until those arrays are gone)."""
        return self._use.kept

    # -- the API

    def info(self) -> Info:
        """Facts about the served dataset, as an ``Info``."""
        out = ctypes.POINTER(_lib.InfoC)()
        self._call(lib.fs_info, ctypes.byref(out))
        try:
            return read_info(out.contents)
        finally:
            lib.fs_info_free(out)

    @renamed(fanouts="num_neighbors")
    def sample(self, seeds: ArrayLike, num_neighbors: Sequence[int], mode: str | Sequence[str] = "uniform",
               seed: int = 0, edge_ids: bool = False, locality: float | str = 0) -> Batch:
        """k-hop sampling from `seeds` with one fanout per hop in
        `num_neighbors` (-1 = all neighbours; ``fanouts`` before 1.5).
        `mode`: one of SAMPLE_MODES, or one per hop. The same arguments
        always give the same Batch. `edge_ids`: fill ``Block.edge_ids``.
        `locality`: 0 or 1 = plain sampling; a boost s > 1 prefers
        neighbours whose rows are in this trainer's GPU memory and fills
        ``Block.edge_weights`` (unix:// with device="gpu:N" on a server with
        a placement; uniform mode only); "auto" = the boost of
        ``report_load_ratio``."""
        arr = _ids(seeds, "seeds")
        req = _sample_req(num_neighbors, mode, seed, edge_ids, locality)
        return self._batch_call(lib.fs_sample, _ptr(arr), len(arr), ctypes.byref(req))

    def gather(self, ids: ArrayLike, table: str, dtype: str | None = None) -> Batch:
        """Rows `ids` of `table` (a feature table, or "labels": int64 [n x 1]).
        dtype None = as stored, or "float32" to widen half-precision tables.
        Ids come first, as in every call (since 1.0)."""
        if isinstance(ids, str):
            raise TypeError(f"gather(ids, table): the ids come first, then the table name (got ids={ids!r})")
        arr = _ids(ids, "ids")
        return self._batch_call(lib.fs_gather, _ptr(arr), len(arr), _name(table), dtype_code(dtype))

    @renamed(fanouts="num_neighbors")
    def sample_gather(self, seeds: ArrayLike, num_neighbors: Sequence[int], table: str, seed: int = 0,
                      dtype: str | None = None, mode: str | Sequence[str] = "uniform", edge_ids: bool = False,
                      locality: float | str = 0) -> Batch:
        """One mini-batch: sample from `seeds`, then the rows of `table` for
        every sampled node (``features[i]`` belongs to ``nodes[i]``). The
        other arguments as in ``sample``."""
        arr = _ids(seeds, "seeds")
        req = _sample_req(num_neighbors, mode, seed, edge_ids, locality)
        return self._batch_call(lib.fs_sample_gather, _ptr(arr), len(arr), ctypes.byref(req), _name(table),
                                dtype_code(dtype))

    # -- heterogeneous graphs (since 1.3; featstore.hetero)

    @renamed(strict="time_strict", window="time_window", want_edge_ids="edge_ids")
    def hetero_sample(self, seeds: dict[str, ArrayLike] | Sequence[tuple[str, ArrayLike]],
                      num_neighbors: Mapping[EdgeType, Sequence[int]], *, seed: int = 0,
                      mode: str | Sequence[str] = "uniform", frontier: str = "new", disjoint: bool = False,
                      temporal: str | None = None, seed_time: Mapping[str, ArrayLike] | None = None,
                      time_strict: bool = False, time_window: int = 0, node_tables: Sequence[str] = (),
                      edge_tables: Sequence[str] = (), dtype: str | None = None, edge_ids: bool = False
                      ) -> HeteroBatch:
        """Hetero k-hop sampling and the gather of node/edge tables in one call
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
        with `time_strict`; no older than time - `time_window` with a window
        > 0); seed_time: dict type -> int64 times per seed (default: the
        nodes' timestamps). node_tables / edge_tables: table names, returned
        for every type that has them (``x``, ``edge_attr``; edge tables
        imply edge ids). dtype: None = as stored, "float32" widens half
        tables. edge_ids: fill the blocks' ``edge_ids``. The same arguments
        always give the same batch. (Before 1.5: `strict`, `window`,
        `want_edge_ids`.)"""
        from .hetero import hetero_call
        return hetero_call(self, seeds, num_neighbors, seed=seed, mode=mode, frontier=frontier, disjoint=disjoint,
                           temporal=temporal, seed_time=seed_time, time_strict=time_strict, time_window=time_window,
                           node_tables=node_tables, edge_tables=edge_tables, dtype=dtype, edge_ids=edge_ids)

    @renamed(label="edge_label", time="edge_label_time", strict="neg_strict", window="time_window",
             want_edge_ids="edge_ids")
    def link_sample(self, edge_type: EdgeType, src: ArrayLike, dst: ArrayLike, *,
                    num_neighbors: Mapping[EdgeType, Sequence[int]], edge_label: ArrayLike | None = None,
                    edge_label_time: ArrayLike | None = None, neg: str | None = None, amount: float = 1.0,
                    neg_weighted: bool = False, neg_strict: bool = False, keep_seed_edges: bool = False,
                    seed: int = 0, mode: str | Sequence[str] = "uniform", frontier: str = "new",
                    disjoint: bool = False, temporal: str | None = None, time_strict: bool = False,
                    time_window: int = 0, node_tables: Sequence[str] = (), edge_tables: Sequence[str] = (),
                    dtype: str | None = None, edge_ids: bool = False) -> HeteroBatch:
        """A link-prediction batch (fs_link_sample; PyG's LinkNeighborLoader):
        a ``HeteroBatch`` with ``edge_label_index``/``edge_label`` (binary or
        no negatives) or ``src_index``/``dst_pos_index``/``dst_neg_index``
        (triplet).

        edge_type: the seed edges' (src, rel, dst); src, dst: their endpoint
        ids; edge_label: int64 per seed edge (default all 1);
        edge_label_time: int64 per seed edge (temporal requests). neg: None
        (only the given edges), "binary" (round(amount * count) random pairs
        labelled 0; given labels are then shifted by + 1, as PyG does) or
        "triplet" (`amount` = k destinations per positive); neg_weighted:
        endpoints by degree^0.75; neg_strict: a negative is never an edge of
        the graph. Both endpoints' neighbourhoods are sampled with the
        remaining arguments as in ``hetero_sample``, and no seed edge, nor
        its reverse, is in the sampled subgraph unless keep_seed_edges.
        (Before 1.5: `label`, `time`, `strict` for neg_strict, `window`,
        `want_edge_ids`.)"""
        from .hetero import link_call
        return link_call(self, edge_type, src, dst, num_neighbors, edge_label=edge_label,
                         edge_label_time=edge_label_time, neg=neg, amount=amount, neg_weighted=neg_weighted,
                         neg_strict=neg_strict, keep_seed_edges=keep_seed_edges, seed=seed, mode=mode,
                         frontier=frontier, disjoint=disjoint, temporal=temporal, time_strict=time_strict,
                         time_window=time_window, node_tables=node_tables, edge_tables=edge_tables, dtype=dtype,
                         edge_ids=edge_ids)

    # -- epoch streams (since 1.4): node_stream, hetero_stream, link_stream,
    #    row_stream and the deprecated stream and typed_stream, from featstore._stream_calls

    def default_prefetch(self, producers: int = 0) -> int:
        """The batches a stream opened on this Client makes ahead by default
        (``prefetch=0``): two per producer, at most 16 (`producers` as the
        streams take it, 0 = automatic: over unix:// the connection's
        `threads` if given, else one per core this process may use, up to
        4; else 1). The C library decides it
        (fs_stream_default_prefetch, since 1.5)."""
        from .plan import require_plans
        require_plans("Client.default_prefetch")
        opts = _lib.StreamOpts.new(producers=int(producers))
        with self._lock:
            return int(lib.fs_stream_default_prefetch(self._connection(), ctypes.byref(opts)))

    def report_load_ratio(self, ratio: float) -> float:
        """Algorithm 2, once per epoch: `ratio` = loading time / total time
        of the epoch, in [0, 1]. Returns the boost s for the next epoch
        (what locality="auto" requests use)."""
        s = ctypes.c_double()
        self._call(lib.fs_report_load_ratio, float(ratio), ctypes.byref(s))
        return s.value

    def split(self, name: str, local: bool = False) -> np.ndarray:
        """The node ids of split `name` ("train", "valid", "test") as a new
        int64 array (copied: splits are small and this way outlive nothing).
        `local` (a sharded cluster, since 1.5): only those the shards on
        this machine hold, in order (``fs_split_local``: a trainer per
        machine trains on them, as DistDGL's node_split)."""
        out = ctypes.POINTER(_lib.IdsC)()
        self._call(lib.fs_split_local if local else lib.fs_split, _name(name), ctypes.byref(out))
        try:
            n = out.contents.n
            return np.ctypeslib.as_array(out.contents.ids, (n,)).copy() if n else np.zeros(0, np.int64)
        finally:
            lib.fs_ids_free(out)

    def split_by_owner(self, seeds: Any, node_type: str | None = None) -> OwnerGroups:
        """A global batch's roots grouped by the shard that owns them, over a
        sharded cluster (``fs_split_by_owner``, HopGNN's owner-routed
        training): an ``OwnerGroups``. The map is etcd's as it is now (the
        process watches it), so a seed whose shard is down raises
        Error(UNAVAILABLE) naming it. `node_type`: the
        seeds' type on a graph of several."""
        arr = _ids(seeds, "seeds")
        out = ctypes.POINTER(_lib.OwnerGroupsC)()
        self._call(lib.fs_split_by_owner, opt_str(node_type, "node_type"), _ptr(arr), len(arr), ctypes.byref(out))
        try:
            return OwnerGroups._from_c(out.contents)
        finally:
            lib.fs_owner_groups_free(out)

    def micrographs(self, batch: Batch) -> Micrographs:
        """The micrographs of a sampled Batch of this Client's
        (``fs_batch_micrographs``): each node's roots, and on a sharded
        cluster each node's shard and R_micro. A copy: it outlives the batch."""
        ptr = batch._live("micrographs()")["ptr"]
        out = ctypes.POINTER(_lib.MicrographsC)()
        self._call(lib.fs_batch_micrographs, ptr, ctypes.byref(out))
        try:
            return Micrographs._from_c(out.contents)
        finally:
            lib.fs_micrographs_free(out)

    def pregather(self, batch: Batch, micrographs: Micrographs, roots: Any, table: str, dtype: str | None = None,
                  max_rows: int = 1 << 24) -> tuple[Batch, PregatherStats]:
        """HopGNN's pre-gathering (``fs_pregather``): the rows of `table` of
        every node of the micrographs of `roots` (seed positions), each once,
        in one gather (over a cluster one request per owning shard): a
        gather Batch whose row i is ``np.flatnonzero(micrographs.mask(roots))[i]``'s,
        and a ``PregatherStats``. More than `max_rows` rows (the staging
        buffer) raises Error(RESOURCE) before anything is gathered."""
        ptr = batch._live("pregather()")["ptr"]
        arr = _ids(roots, "roots")
        m = micrographs._c()
        out, stats = ctypes.POINTER(_lib.BatchC)(), _lib.PregatherStatsC()
        use = self._call(lib.fs_pregather, ptr, ctypes.byref(m.struct), _ptr(arr), len(arr), _name(table),
                         dtype_code(dtype), int(max_rows), ctypes.byref(out), ctypes.byref(stats))
        return Batch(out, use), PregatherStats._from_c(stats)

    def replan(self, topology: str | None = None, gpu_budget: float = 0.0, hotness: str | None = None,
               order: str | None = None, plan: str | None = None, save: str | None = None,
               alpha: float | str | None = None, reserve: int | str | None = None) -> int:
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

    def stats(self) -> str:
        """The server's metrics, Prometheus text format."""
        text = ctypes.c_void_p()
        self._call(lib.fs_stats, ctypes.byref(text))
        try:
            return ctypes.string_at(text.value).decode(errors="replace")  # type: ignore[arg-type]
        finally:
            lib.fs_stats_free(text)

    def close(self) -> None:
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
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return f"<featstore.Client {self.uri} {'closed' if self.closed else self.transport}>"


def connect(uri: str, device: str | None = None, slots: int | None = None, threads: int | None = None,
            timeout_ms: int | None = None, token: str | None = None, tls_ca_file: str | None = None,
            tls_cert_file: str | None = None, tls_key_file: str | None = None) -> Client:
    """Connects to a featstore server: ``unix:///path/to/socket`` (zero-copy,
    local), ``grpc://host:port`` or ``grpcs://host:port`` (TLS), or to a
    sharded cluster as one store: ``etcd://host:port/CLUSTER`` (docs/api.md
    section 13). `device`
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
