"""featstore.pyg — PyG's remote backend on a featstore server (since 1.5).

PyG's own loaders and layers on featstore's sampler and stores, over
unix:// (zero-copy) or grpc://, for any number of independent jobs::

    from featstore.pyg import NeighborLoader, LinkNeighborLoader
    loader = NeighborLoader("unix:///run/fs.sock", num_neighbors=[15, 10, 5], input_nodes="train",
                            batch_size=1024, shuffle=True)
    for data in loader:          # torch_geometric.data.Data: x, y, edge_index, n_id, batch_size, ...
        out = model(data.x, data.edge_index)[:data.batch_size]

Its layers, each usable alone and each a module (docs/api.md §12):

- ``FeatureStore`` and ``GraphStore`` (featstore.pyg.stores): PyG's remote-backend interfaces,
  read-only views of the served dataset. Node tables appear as PyG
  attributes: "feat" as ``x``, "labels" as ``y`` (int64 [n]), every other
  table under its own name; the graph's edge types in CSC layout, as the
  sampler reads them. ``put``/``remove`` raise ``ReadOnlyError``.
- ``NeighborSampler`` (featstore.pyg.sampler): a ``torch_geometric.sampler.BaseSampler`` that
  samples on featstore (hetero, weighted, temporal, disjoint; link batches
  with binary or triplet negatives), so PyG's ``NodeLoader(data=(fs, gs),
  node_sampler=...)`` and ``LinkLoader`` run on it. Each call samples and
  gathers every node table in one request (a fused map-and-gather,
  docs/papers.md);
  the FeatureStore then hands PyG the rows already fetched.
- ``NeighborLoader`` and ``LinkNeighborLoader`` (featstore.pyg.loader):
  PyG's argument names and output fields, backed by featstore epoch
  streams (docs/api.md §11): the next batches are made by background
  threads while the model trains, and ``rank``/``world_size`` give each DDP
  rank its disjoint share.
- ``from_pyg`` (featstore.pyg.data; also ``featstore.from_pyg``): a
  featstore dataset written from a PyG ``Data`` or ``HeteroData``.

featstore.pyg.convert turns a featstore batch into PyG's fields,
featstore.pyg.schema holds what the others share, featstore.pyg.prefetch
the loaders' bounded background thread.

Sampling semantics are PyG's: hop h expands only the nodes first reached
at hop h-1 (frontier "new"), seeds come first in ``n_id``, edges point from
the sampled neighbour to the node that sampled it (``edge_index[0]`` source,
``edge_index[1]`` destination), ``num_sampled_nodes``/``num_sampled_edges``
count per hop. Two differences, both deliberate: sampling is without
replacement (``replace=True`` is refused), and a link batch leaves its seed
edges (and their reverses) out of the sampled subgraph, so a model never
reads the label it predicts (``keep_seed_edges=True`` keeps them, as PyG
does). Randomness comes from torch's generator: ``torch.manual_seed`` makes
runs repeatable.

Lifetime: tensors of a loader's batch are zero-copy views of featstore's
result memory (over unix://, a shared slot); a loader lets the caller hold
``hold`` batches (default 4) and raises ``featstore.Error`` naming the fix
when one more is asked for. Keep ``.clone()`` copies of anything kept
across batches, or pass ``copy=True``.
"""
from .data import from_pyg  # needs no libfeatstore.so (featstore.from_pyg)

__all__ = ["FeatureStore", "GraphStore", "NeighborSampler", "NeighborLoader", "LinkNeighborLoader", "ReadOnlyError",
           "ATTR_NAMES", "stores", "from_pyg"]

try:
    from .loader import LinkNeighborLoader, NeighborLoader
    from .sampler import NeighborSampler
    from .schema import ATTR_NAMES, ReadOnlyError
    from .stores import FeatureStore, GraphStore, stores
except OSError as _no_library:  # no libfeatstore.so: from_pyg needs none; the rest raise its error when used
    _MISSING = _no_library

    def __getattr__(name: str) -> object:
        if name in __all__:
            raise _MISSING
        raise AttributeError(f"module 'featstore.pyg' has no attribute {name!r}")
