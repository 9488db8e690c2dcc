"""featstore.pyg.sampler — ``NeighborSampler``, PyG's ``BaseSampler`` on
featstore: one featstore request per call (``hetero_sample`` for
``sample_from_nodes``, ``link_sample`` for ``sample_from_edges``) samples
and gathers every node and edge table, so PyG's ``NodeLoader`` and
``LinkLoader`` need no second round trip for features.
"""
from __future__ import annotations

from typing import Any, Sequence

from torch_geometric.sampler import (BaseSampler, EdgeSamplerInput, HeteroSamplerOutput, NegativeSampling,
                                     NodeSamplerInput, SamplerOutput)

from .convert import _link_fields, _read_batch, _Sampled
from .schema import _edge_tables, _long, _node_tables, _request_seed, _sampling_options
from .stores import _client_of

__all__ = ["NeighborSampler"]


class NeighborSampler(BaseSampler):
    """PyG's BaseSampler on featstore: ``sample_from_nodes`` and
    ``sample_from_edges`` each make one featstore request (hetero_sample or
    link_sample) that samples and gathers every node and edge table, so
    PyG's ``NodeLoader(data=(fs, gs), node_sampler=s)`` and ``LinkLoader``
    need no further round trip for features.

    `data`: a URI, a ``featstore.Client``, or the (FeatureStore, GraphStore)
    pair of ``featstore.pyg.stores`` (their connection is shared). Options
    have PyG's NeighborSampler names and meanings: `num_neighbors` a list
    (every edge type) or a dict per edge type; `disjoint`;
    `temporal_strategy` with `time_attr` (any name: featstore samples by the
    dataset's edge times, the seeds' times defaulting to the nodes'
    timestamps); `weight_attr` (any name: the dataset's edge weights).
    featstore's own: `keep_seed_edges` (link batches), `neg_weighted`
    (negative endpoints by degree^0.75, not src_weight/dst_weight) and
    `dtype` ("float32" widens half-precision tables). Every output tensor is
    a copy, so PyG may keep them as long as it likes."""

    def __init__(self, data: Any, num_neighbors: Sequence[int] | dict[Any, Sequence[int]],
                 subgraph_type: Any = "directional", replace: bool = False, disjoint: bool = False,
                 temporal_strategy: str = "uniform", time_attr: str | None = None, weight_attr: str | None = None,
                 directed: bool = True, keep_seed_edges: bool = False, neg_weighted: bool = False,
                 dtype: str | None = None, **connect_kwargs: Any) -> None:
        self.client, self.schema, self._owns = _client_of(data, connect_kwargs, type(self))
        self.num_neighbors = self.schema.fanouts(num_neighbors)
        self.options = _sampling_options(self.schema, replace=replace, subgraph_type=subgraph_type,
                                         disjoint=disjoint, temporal_strategy=temporal_strategy,
                                         time_attr=time_attr, weight_attr=weight_attr, directed=directed)
        self.keep_seed_edges, self.neg_weighted, self.dtype = bool(keep_seed_edges), bool(neg_weighted), dtype
        self.node_tables, self.edge_tables = _node_tables(self.schema), _edge_tables(self.schema)

    def _request(self) -> dict[str, Any]:
        return dict(seed=_request_seed(), node_tables=self.node_tables, edge_tables=self.edge_tables,
                    dtype=self.dtype, edge_ids=True, **self.options)

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs: Any) -> SamplerOutput | HeteroSamplerOutput:
        t = self.schema.node_type(index.input_type)
        seeds = _long(index.node, "seed nodes")
        times = None
        if index.time is not None and self.options["temporal"] is not None:
            times = {t: _long(index.time, "seed times")}
        with self.client.hetero_sample({t: seeds}, self.num_neighbors, seed_time=times, **self._request()) as h:
            s = _read_batch(h, copy=True)
        return self._output(s, (index.input_id, index.time))

    def sample_from_edges(self, index: EdgeSamplerInput, neg_sampling: NegativeSampling | None = None
                          ) -> SamplerOutput | HeteroSamplerOutput:
        e = self.schema.edge_type(index.input_type)
        neg, amount = _negatives(neg_sampling)
        label = None if index.label is None else _long(index.label, "edge labels")
        if label is not None and neg == "binary":
            label = label - 1  # PyG's LinkLoader made 0 mean "negative" already; featstore adds the 1 itself
        time = None if index.time is None else _long(index.time, "edge times")
        with self.client.link_sample(e, _long(index.row, "source nodes"), _long(index.col, "destination nodes"),
                                     num_neighbors=self.num_neighbors, edge_label=label, edge_label_time=time, neg=neg,
                                     amount=amount, neg_weighted=self.neg_weighted,
                                     keep_seed_edges=self.keep_seed_edges, **self._request()) as h:
            s = _read_batch(h, copy=True)
            fields = _link_fields(h, neg == "triplet", copy=True)
        metadata: tuple[Any, ...]
        if neg == "triplet":
            metadata = (index.input_id, fields[0], fields[1], fields[2].squeeze(-1), index.time)
        else:
            metadata = (index.input_id, *fields)
        return self._output(s, metadata)

    def _output(self, s: _Sampled, metadata: Any) -> SamplerOutput | HeteroSamplerOutput:
        """PyG's SamplerOutput (homogeneous) or HeteroSamplerOutput, the
        gathered rows riding on the node tensors for FeatureStore."""
        for t, node in s.node.items():
            node._featstore_rows = {(t, k): v for k, v in s.x[t].items()}
        if self.schema.homogeneous:
            n, e = self.schema.node, self.schema.edge
            return SamplerOutput(node=s.node[n], row=s.row[e], col=s.col[e], edge=s.edge[e], batch=s.batch[n],
                                 num_sampled_nodes=s.num_sampled_nodes[n], num_sampled_edges=s.num_sampled_edges[e],
                                 metadata=metadata)
        batch = s.batch if self.options["disjoint"] else None
        return HeteroSamplerOutput(node=s.node, row=s.row, col=s.col, edge=s.edge, batch=batch,
                                   num_sampled_nodes=s.num_sampled_nodes, num_sampled_edges=s.num_sampled_edges,
                                   metadata=metadata)


def _negatives(neg_sampling: Any) -> tuple[str | None, float]:
    """PyG's NegativeSampling as featstore's (neg, amount)."""
    if neg_sampling is None:
        return None, 1.0
    neg_sampling = NegativeSampling.cast(neg_sampling)
    if neg_sampling.src_weight is not None or neg_sampling.dst_weight is not None:
        raise ValueError("neg_sampling with src_weight/dst_weight: featstore draws negative endpoints uniformly, or "
                         "by degree^0.75 with neg_weighted=True")
    mode = str(getattr(neg_sampling.mode, "value", neg_sampling.mode))
    return mode, float(neg_sampling.amount)
