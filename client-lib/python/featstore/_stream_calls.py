"""featstore._stream_calls — the Client's stream constructors, one per
kind of batch (fs_stream_open; featstore.stream, docs/api.md §11):

- ``node_stream``: ``sample_gather`` batches of node seeds (a split or ids),
  with their labels; Match's delta and reorder window;
- ``hetero_stream``: ``hetero_sample`` batches of seeds of one node type
  (``typed_stream``, its 1.5 name, still works, deprecated);
- ``link_stream``: ``link_sample`` batches of a link split's edges;
- ``row_stream``: the seeds' rows of several tables (pre-propagation),
  without sampling.

Each takes its kind's request options, named as the explicit call names
them, and the epoch options every kind shares (featstore.stream.Epoch);
what belongs to another kind is not among its arguments, so a mix is
refused by name (Python's TypeError). Each opens its stream through the C
library's open call of its kind (fs_stream_open_nodes, _hetero, _link,
_rows; since 1.5). ``stream``, the one call with every option of 1.4 and
1.5, still works, deprecated: it refuses a mix as it did, then opens the
stream its options make through the C library's 1.4 form (fs_stream_open),
which refuses by name what does not fit the kind.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ._deprecation import deprecated
from .hetero import _Link, _Request, require_hetero
from .stream import Epoch, StreamLink, open_stream, split_or_ids

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .stream import Stream

    EdgeType = tuple[str, str, str]  # (src, rel, dst)

_LINK_KEYS = tuple(StreamLink.__dataclass_fields__)


def _refuse(given: dict[str, bool], why: str) -> None:
    """A ValueError naming the options in `given` (name -> given?) that were given."""
    names = [name for name, is_given in given.items() if is_given]
    if names:
        raise ValueError(f"{', '.join(names)}: {why}")


def _link(value: Any) -> StreamLink:
    """The deprecated link= (a dict, a StreamLink or an object with
    StreamLink's attributes) as a StreamLink."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(_LINK_KEYS), key=str)
        if unknown:
            raise TypeError(f"link: unknown key(s) {', '.join(map(repr, unknown))} (known: {', '.join(_LINK_KEYS)})")
        if "edge_type" not in value:
            raise TypeError("link: give its edge_type, the seed edges' (src, rel, dst)")
        return StreamLink(**value)
    if not hasattr(value, "edge_type"):
        raise TypeError(f"link must be a dict or a featstore.StreamLink ({', '.join(_LINK_KEYS)}), got "
                        f"{type(value).__name__}")
    defaults = StreamLink(())
    return StreamLink(**{k: getattr(value, k, getattr(defaults, k)) for k in _LINK_KEYS})


class StreamCalls:
    """Client's epoch streams (since 1.4; per kind since 1.5). Every
    constructor returns a ``featstore.stream.Stream`` of ``StreamBatch``es,
    this rank's share of one epoch, made ahead by background threads while
    the caller trains; ``StopIteration`` at the end of the epoch.

    The epoch options, the same for every kind: `batch_size` seeds a batch.
    The plan is torch's DistributedSampler's: rank `rank` of `world_size`
    gets an equal, disjoint share of one shuffle per (`seed`, `epoch`) (pass
    the same on every rank), padded by repeating its start unless
    `drop_last`. `order`: one of STREAM_ORDERS ("chunked": runs of `chunk`
    consecutive seeds, the runs shuffled). `prefetch` batches are made
    ahead (0: ``Client.default_prefetch()``, two per producer); the caller
    may hold `hold` at once. `start_batch`: resume at an earlier stream's
    ``position``. `producers` (since 1.5): background threads making whole
    batches at once, 1..16 and at most `prefetch`, sharing the connection's
    `threads`; 0: over unix:// the connection's `threads` if given, else
    one per core this process may use, up to 4; else 1 (delta
    streams, and node streams over grpc://, which the server makes, have
    one). A stream has connections of its own, so it outlives ``close()``
    of its Client."""

    def node_stream(self, seeds: str | ArrayLike, *, batch_size: int, num_neighbors: Sequence[int],
                    table: str | None = None, dtype: str | None = None, labels: str | None = None,
                    mode: str | Sequence[str] = "uniform", edge_ids: bool = False, delta: str = "off",
                    reorder_window: int = 1, calls: str = "auto", seed: int = 0, epoch: int = 0, rank: int = 0,
                    world_size: int = 1, drop_last: bool = False, order: str = "random", chunk: int = 0,
                    start_batch: int = 0, prefetch: int = 0, hold: int = 2, producers: int = 0) -> Stream:
        """Node batches: each batch samples `num_neighbors` (`mode`,
        `edge_ids` as in ``sample``) from its seeds and gathers `table`
        (None: sample only; `dtype` as in ``gather``) and the seeds'
        `labels` (None: the table "labels" when the dataset has it, "":
        none, or a table name) — exactly ``sample_gather(b.seeds,
        num_neighbors, table, seed=b.request_seed)`` and ``gather(b.seeds,
        labels)``. `seeds`: a split's name or an array of ids. `delta`
        ("off", "full", "only"): Match, fetching only the rows the previous
        batch lacks (StreamBatch.new_rows, .take; "full" also assembles
        .features); `reorder_window` > 1 reorders each window of that many
        batches by overlap (needs a delta). `calls` (since 1.5; over
        grpc://): "auto" (the server makes the batches in one call when it
        is 1.5 or later, unless the environment sets
        FEATSTORE_STREAM_CALLS=batch), "stream" (the server; refused where
        it cannot: unix://, an older server) or "batch" (this process, one
        call per batch). Epoch options: see the class."""
        from .client import _sample_req
        split, ids = split_or_ids(seeds)
        sample = _sample_req(num_neighbors, mode, 0, edge_ids)  # its seed is set per batch
        return open_stream(self, _epoch(locals()), split=split, ids=ids, sample=sample, table=table,
                           dtype=dtype, labels=labels, delta=delta, reorder_window=reorder_window, calls=calls)

    def hetero_stream(self, seeds: str | ArrayLike, *, batch_size: int, num_neighbors: Mapping[EdgeType, Sequence[int]],
                      seed_type: str | None = None, node_tables: Sequence[str] = (), edge_tables: Sequence[str] = (),
                      dtype: str | None = None, mode: str | Sequence[str] = "uniform", frontier: str = "new",
                      disjoint: bool = False, temporal: str | None = None, time_strict: bool = False,
                      time_window: int = 0, edge_ids: bool = False, seed: int = 0, epoch: int = 0, rank: int = 0,
                      world_size: int = 1, drop_last: bool = False, order: str = "random", chunk: int = 0,
                      start_batch: int = 0, prefetch: int = 0, hold: int = 2, producers: int = 0) -> Stream:
        """Hetero batches: each is ``hetero_sample({seed_type: b.seeds},
        num_neighbors, seed=b.request_seed, ...)`` with the request options
        as there, in ``StreamBatch.hetero`` (labels too: put "labels" in
        `node_tables`). `seeds`: a hetero split "TYPE/NAME" (its "TYPE/"
        prefix is the default `seed_type`) or an array of ids of
        `seed_type`. Epoch options: see the class."""
        require_hetero()
        split, ids = split_or_ids(seeds)
        hetero = _Request(num_neighbors, 0, mode, frontier, disjoint, temporal, time_strict, time_window, node_tables,
                         edge_tables, dtype, edge_ids)
        return open_stream(self, _epoch(locals()), split=split, ids=ids, hetero=hetero,
                           seed_type=seed_type)

    def typed_stream(self, seeds: str | ArrayLike, **options: Any) -> Stream:
        """Deprecated since 1.5: ``hetero_stream`` ("hetero" is the API's
        word for graphs with several node or edge types), which takes the
        same arguments."""
        deprecated("Client.typed_stream is deprecated: use Client.hetero_stream (the same arguments)")
        return self.hetero_stream(seeds, **options)

    def link_stream(self, split: str, *, edge_type: EdgeType, batch_size: int,
                    num_neighbors: Mapping[EdgeType, Sequence[int]], neg: str | None = None, amount: float = 1.0,
                    neg_weighted: bool = False, neg_strict: bool = False, keep_seed_edges: bool = False,
                    node_tables: Sequence[str] = (), edge_tables: Sequence[str] = (), dtype: str | None = None,
                    mode: str | Sequence[str] = "uniform", frontier: str = "new", disjoint: bool = False,
                    temporal: str | None = None, time_strict: bool = False, time_window: int = 0,
                    edge_ids: bool = False, seed: int = 0, epoch: int = 0, rank: int = 0, world_size: int = 1,
                    drop_last: bool = False, order: str = "random", chunk: int = 0, start_batch: int = 0,
                    prefetch: int = 0, hold: int = 2, producers: int = 0) -> Stream:
        """Link-prediction batches of link split `split`'s edges (with their
        labels and times when it has them): each is ``link_sample(edge_type,
        src, dst, edge_label=..., edge_label_time=..., seed=b.request_seed,
        ...)`` on the edges at its positions in the split, negatives and
        request options as there, in ``StreamBatch.hetero``
        (``StreamBatch.seeds``: the edges' sources). Epoch options: see the
        class."""
        require_hetero()
        if not isinstance(split, str):
            raise TypeError(f"link_stream: split must be a link split's name, got {type(split).__name__}")
        hetero = _Request(num_neighbors, 0, mode, frontier, disjoint, temporal, time_strict, time_window, node_tables,
                         edge_tables, dtype, edge_ids)
        link = _Link(edge_type, neg, amount, neg_weighted, neg_strict, keep_seed_edges, what="link")
        return open_stream(self, _epoch(locals()), split=split, ids=None, hetero=hetero, link=link)

    def row_stream(self, seeds: str | ArrayLike, *, tables: Sequence[str], batch_size: int, dtype: str | None = None,
                   labels: str | None = None, seed: int = 0, epoch: int = 0, rank: int = 0, world_size: int = 1,
                   drop_last: bool = False, order: str = "random", chunk: int = 0, start_batch: int = 0,
                   prefetch: int = 0, hold: int = 2, producers: int = 0) -> Stream:
        """Row batches (pre-propagation): no sampling; each batch gathers
        its seeds' rows of every table in `tables` (e.g. the hop_0..hop_R
        of ``featstore propagate``; ``StreamBatch.tables``, one Batch each,
        in `dtype`) and their `labels` (as ``node_stream``'s).
        order="chunked" with chunk = batch_size makes every batch one run
        of consecutive split positions. Epoch options: see the class."""
        if isinstance(tables, (str, bytes)) or not len(tables):
            raise ValueError(f"tables must be a non-empty list of table names, got {tables!r}")
        split, ids = split_or_ids(seeds)
        return open_stream(self, _epoch(locals()), split=split, ids=ids, dtype=dtype,
                           labels=labels, tables=list(tables))

    def stream(self, *, split: str | None = None, seeds: ArrayLike | None = None, batch_size: int,
               fanouts: Sequence[int] | None = None, table: str | None = None, dtype: str | None = None,
               labels: str | None = None, seed: int = 0, epoch: int = 0, rank: int = 0, world_size: int = 1,
               drop_last: bool = False, prefetch: int = 0, hold: int = 2, order: str = "random", chunk: int = 0,
               start_batch: int = 0, mode: str | Sequence[str] = "uniform", edge_ids: bool = False,
               delta: str = "off", window: int = 1, num_neighbors: Mapping[EdgeType, Sequence[int]] | None = None,
               frontier: str = "new", disjoint: bool = False, temporal: str | None = None, strict: bool = False,
               time_window: int = 0, node_tables: Sequence[str] = (), edge_tables: Sequence[str] = (),
               want_edge_ids: bool = False, seed_type: str | None = None, link: Any = None,
               tables: Sequence[str] | None = None, producers: int = 0) -> Stream:
        """Deprecated since 1.5: ``node_stream`` (`fanouts`), ``hetero_stream``
        (`num_neighbors`), ``link_stream`` (`num_neighbors` and `link`) or
        ``row_stream`` (`tables`), whose arguments these are under their
        1.4 names: `split` or `seeds` (their `seeds`), `fanouts`
        (`num_neighbors`), `window` (`reorder_window`), `strict`
        (`time_strict`), `want_edge_ids` (`edge_ids`), `link` (a dict or a
        StreamLink: `edge_type`, `neg`, `amount`, `neg_weighted`, `strict`
        (`neg_strict`), `keep_seed_edges`). An option of another kind than
        the one the others make is a ValueError naming it."""
        client = self
        common = dict(batch_size=batch_size, seed=seed, epoch=epoch, rank=rank, world_size=world_size,
                      drop_last=drop_last, prefetch=prefetch, hold=hold, order=order, chunk=chunk,
                      start_batch=start_batch, producers=producers)
        epoch_opts = Epoch(**common)  # type: ignore[arg-type]
        if tables is not None:  # a row stream: no sampling
            deprecated("Client.stream(tables=...) is deprecated: use Client.row_stream(seeds, tables=..., ...)")
            _refuse({"fanouts": fanouts is not None, "num_neighbors": num_neighbors is not None,
                     "table": table is not None, "delta": delta != "off", "window": int(window) > 1,
                     "link": link is not None, "edge_ids": edge_ids},
                    "not for a row stream (tables= gathers the seeds' rows of each table, without sampling)")
            if isinstance(tables, (str, bytes)) or not len(tables):
                raise ValueError(f"tables must be a non-empty list of table names, got {tables!r}")
            return open_stream(client, epoch_opts, split=split, ids=seeds, dtype=dtype, labels=labels,
                               tables=list(tables), legacy=True)
        if num_neighbors is None and link is None:  # a node stream
            deprecated("Client.stream(fanouts=...) is deprecated: use Client.node_stream(seeds, num_neighbors=..., "
                       "...)")
            _refuse({"frontier": frontier != "new", "disjoint": disjoint, "temporal": temporal is not None,
                     "strict": strict, "time_window": bool(time_window), "node_tables": bool(node_tables),
                     "edge_tables": bool(edge_tables), "want_edge_ids": want_edge_ids,
                     "seed_type": seed_type is not None},
                    "options of hetero streams: give num_neighbors (a dict (src, rel, dst) -> fanouts) for one")
            if fanouts is None:
                raise ValueError("fanouts: a node stream needs one fanout per hop (or give num_neighbors for a hetero "
                                 "stream)")
            from .client import _sample_req
            sample = _sample_req(fanouts, mode, 0, edge_ids)
            return open_stream(client, epoch_opts, split=split, ids=seeds, sample=sample, table=table, dtype=dtype,
                               labels=labels, delta=delta, reorder_window=window, legacy=True)
        deprecated(f"Client.stream(num_neighbors=...{', link=...' if link is not None else ''}) is deprecated: use "
                   f"Client.{'link_stream' if link is not None else 'hetero_stream'}(...)")
        require_hetero()
        _refuse({"fanouts": fanouts is not None, "table": table is not None, "delta": delta != "off",
                 "window": int(window) > 1, "edge_ids": edge_ids},
                "not for a hetero stream (num_neighbors is its request: put its tables in node_tables and "
                "edge_tables, ask for edge ids with want_edge_ids)")
        # a link stream without num_neighbors goes on to fs_stream_open, which names what it lacks
        hetero = None if num_neighbors is None else _Request(
            num_neighbors, 0, mode, frontier, disjoint, temporal, strict, time_window, node_tables, edge_tables, dtype,
            want_edge_ids)
        lk = None
        if link is not None:
            sl = _link(link)
            lk = _Link(sl.edge_type, sl.neg, sl.amount, sl.neg_weighted, sl.strict, sl.keep_seed_edges, what="link")
        return open_stream(client, epoch_opts, split=split, ids=seeds, labels=labels, hetero=hetero,
                           seed_type=seed_type, link=lk, legacy=True)


def _epoch(arguments: dict[str, Any]) -> Epoch:
    """The epoch options among a constructor's arguments (its locals())."""
    return Epoch(**{k: arguments[k] for k in Epoch.__dataclass_fields__})
