"""featstore.pyg.data — ``from_pyg`` (``featstore.from_pyg``): a featstore dataset from a PyG
``Data`` or ``HeteroData``, through ``write_dataset``.

What PyG holds and what it becomes (docs/format.md, docs/api.md §12):

- node ``x``: the node table ``feat`` (served as ``batch.x``); integer
  ``y`` [N] (-1 = unlabelled): the labels (``batch.y``); float ``y``: a
  node table ``y``; ``train_mask``/``val_mask``/``test_mask``: the splits
  ``train``/``valid``/``test`` (another ``<name>_mask``: split
  ``<name>``); integer ``time``: node times; other float attributes [N]
  or [N, F]: node tables of their names ([N] as one column).
- ``edge_index``: the edge type's edges, edge id = column; ``edge_attr``:
  the edge table ``feat`` (``batch.edge_attr``); ``edge_weight``: edge
  weights (the loaders' ``weight_attr``); integer ``edge_time`` (or an
  edge-level ``time``): edge times (``time_attr``); other float
  attributes [E] or [E, F]: edge tables of their names.
- an edge type whose edges come both ways (``is_undirected()``):
  ``"symmetric"``, reported undirected.

A ``Data`` is one node type ``node`` and one edge type ``(node, to,
node)``: the homogeneous graph that ``featstore.pyg.NeighborLoader(uri,
input_nodes="train", ...)`` serves with ``batch.x``/``batch.y``. A
``HeteroData`` keeps its types and names. What has no place in a dataset
(integer attributes other than labels and times, 2-D masks, PyG's batch
bookkeeping such as ``n_id``/``e_id``/``batch``, link labels) is left out
with a ``UserWarning`` naming it. Attributes may be torch tensors or numpy
arrays; torch_geometric itself is imported only by ``from_pyg``.
"""
import warnings
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..dataset import _missing_reverse, write_dataset

__all__ = ["from_pyg"]

HOMOGENEOUS_NODE = "node"                              # a Data's node type, as a version-1 dataset's
HOMOGENEOUS_EDGE = (HOMOGENEOUS_NODE, "to", HOMOGENEOUS_NODE)
_SPLITS = {"train": "train", "val": "valid", "test": "test"}  # PyG's mask prefixes -> featstore's split names
# a loader's batch bookkeeping and link labels: no part of a dataset's nodes or edges
_NOT_GRAPH = ("n_id", "e_id", "batch", "ptr", "input_id", "batch_size", "num_sampled_nodes", "num_sampled_edges",
              "edge_label", "edge_label_index", "edge_label_time")


def _numpy(value: Any) -> np.ndarray:
    """A CPU numpy array of a torch tensor (bfloat16 widened to float32) or an array."""
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def _left_out(notes: List[str], owner: str, key: str, why: str) -> None:
    notes.append(f"{owner}: '{key}' is left out: {why}")


def _ints(a: np.ndarray) -> bool:
    return a.dtype.kind in "iu" and a.ndim == 1


def _floats(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" and a.ndim in (1, 2)


def _table(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, 1) if a.ndim == 1 else a


def _time_or_table(spec: Dict[str, Any], features: dict, key: str, a: np.ndarray, time_keys, owner: str,
                   notes: List[str], kinds: str) -> None:
    """What nodes and edges share: integer times, float tables, else a note."""
    if key in time_keys and _ints(a):
        spec["time"] = a
    elif _floats(a):
        features[key] = _table(a)
    else:
        _left_out(notes, owner, key, f"{a.dtype} of shape {a.shape} is none of {kinds}")


def _node_spec(store: Any, keys, count: int, owner: str, notes: List[str]) -> Dict[str, Any]:
    """write_dataset's node-type spec of a node store's attributes `keys`."""
    spec: Dict[str, Any] = {"count": count}
    features, splits = {}, {}
    for key in keys:
        a = _numpy(store[key])
        if key == "x":
            features["feat"] = _table(a)
        elif key == "y" and _ints(a):
            spec["labels"] = a
        elif key.endswith("_mask") and a.dtype == bool and a.ndim == 1:
            prefix = key[:-len("_mask")]
            splits[_SPLITS.get(prefix, prefix)] = a
        else:
            _time_or_table(spec, features, key, a, ("time",), owner, notes,
                           "features (floats), labels (int y), a split (bool <name>_mask [N]), times (int time)")
    if features:
        spec["features"] = features
    if splits:  # train, valid, test first, as every importer writes them
        order = list(_SPLITS.values())
        spec["splits"] = dict(sorted(splits.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else 3,
                                                                     kv[0])))
    return spec


def _edge_spec(store: Any, keys, owner: str, notes: List[str]) -> Dict[str, Any]:
    """write_dataset's edge-type spec of an edge store's attributes `keys` (edge_index included)."""
    if "edge_index" not in store:
        raise ValueError(f"featstore.from_pyg: {owner} has no edge_index (a SparseTensor adj_t must be converted to "
                         f"edge_index first)")
    spec: Dict[str, Any] = {"edge_index": _numpy(store["edge_index"])}
    features: Dict[str, np.ndarray] = {}
    times = [k for k in ("edge_time", "time") if k in keys]
    if len(times) == 2:
        raise ValueError(f"featstore.from_pyg: {owner} has both edge_time and time for its edges; keep one")
    for key in (k for k in keys if k != "edge_index"):
        a = _numpy(store[key])
        if key == "edge_attr" and _floats(a):
            features["feat"] = _table(a)
        elif key == "edge_weight" and a.ndim == 1:
            spec["weights"] = a
        else:
            _time_or_table(spec, features, key, a, times, owner, notes,
                           "edge features (floats), edge_weight, edge times (int edge_time)")
    if features:
        spec["features"] = features
    return spec


def _usable(store: Any, keys, owner: str, notes: List[str]) -> List[str]:
    """keys but num_nodes and _NOT_GRAPH (noted)."""
    for key in keys:
        if key in _NOT_GRAPH:
            _left_out(notes, owner, key, "a loader's batch bookkeeping or link labels (write link splits with "
                                         "write_dataset's link_splits)")
    return [k for k in keys if k not in _NOT_GRAPH and k != "num_nodes"]


def _undirected(spec: Dict[str, Any], bipartite: bool, undirected: Optional[bool]) -> bool:
    """An edge type's "undirected": as given, else PyG's is_undirected() on
    its edge_index (with edge weights, not edge features, compared). Edges
    that write_dataset would refuse anyway are left to it to name."""
    if bipartite or undirected is not None:
        return bool(undirected) and not bipartite
    ei, w = spec["edge_index"], spec.get("weights")
    if ei.ndim != 2 or ei.shape[0] != 2 or ei.dtype.kind not in "iu" or (w is not None and w.shape != ei.shape[1:]):
        return False
    return _missing_reverse(ei[0], ei[1], None if w is None else w.astype("<f4")) is None


def _from_data(data: Any, undirected: Optional[bool], notes: List[str]) -> Tuple[dict, dict]:
    keys = [k for k in _usable(data, data.keys(), "Data", notes) if k != "edge_index"]
    node_keys = [k for k in keys if data.is_node_attr(k)]  # PyG's rule: by size, "edge" in the name when N = E
    edge_keys = [k for k in keys if k not in node_keys and data.is_edge_attr(k)]
    for k in keys:
        if k not in node_keys and k not in edge_keys:
            _left_out(notes, "Data", k, "neither a node nor an edge attribute (PyG's is_node_attr/is_edge_attr)")
    nodes = {HOMOGENEOUS_NODE: _node_spec(data, node_keys, int(data.num_nodes), "Data", notes)}
    spec = _edge_spec(data, ["edge_index"] + edge_keys, "Data", notes)
    spec["undirected"] = _undirected(spec, False, undirected)
    return nodes, {HOMOGENEOUS_EDGE: spec}


def _from_hetero(data: Any, undirected: Optional[bool], notes: List[str]) -> Tuple[dict, dict]:
    nodes, edges = {}, {}
    for t in data.node_types:
        store, owner = data[t], f"node type '{t}'"
        nodes[t] = _node_spec(store, _usable(store, store.keys(), owner, notes), int(store.num_nodes), owner, notes)
    for et in data.edge_types:
        store, owner = data[et], f"edge type {et}"
        edges[et] = _edge_spec(store, _usable(store, store.keys(), owner, notes), owner, notes)
        edges[et]["undirected"] = _undirected(edges[et], et[0] != et[-1], undirected)
    return nodes, edges


def from_pyg(data: Any, path: str, *, name: Optional[str] = None, num_classes: Optional[int] = None,
             undirected: Optional[bool] = None, force: bool = False) -> str:
    """Writes PyG ``data`` (``Data`` or ``HeteroData``) as a featstore dataset
    at ``path`` (the module comment says what becomes what) and returns the
    path.

    `undirected`: None detects it per edge type as PyG's
    ``is_undirected()`` does on the edge_index (edge weights compared too;
    edge features not: they may differ by direction); True insists, and an
    edge type whose edges are not all given both ways is refused naming the
    first edge without its reverse; False writes every edge type directed.
    An edge type between two node types is never undirected itself (PyG's
    ``ToUndirected`` gives it a ``rev_`` edge type, written as it is). `num_classes`: the
    labels' classes (default: the largest label + 1; on a HeteroData, for
    every labelled node type). `name`, `force`: as ``write_dataset``'s.
    Bad input raises ``ValueError`` naming the type and attribute."""
    from torch_geometric.data import Data, HeteroData  # only here: write_dataset needs no PyG
    notes: List[str] = []
    if isinstance(data, HeteroData):
        nodes, edges = _from_hetero(data, undirected, notes)
    elif isinstance(data, Data):
        nodes, edges = _from_data(data, undirected, notes)
    else:
        raise TypeError(f"featstore.from_pyg takes a torch_geometric Data or HeteroData, got {type(data).__name__}")
    if notes:
        warnings.warn("featstore.from_pyg: " + "; ".join(notes), UserWarning, stacklevel=2)
    if num_classes is not None:
        for spec in nodes.values():
            if "labels" in spec:
                spec["num_classes"] = num_classes
    source = {"writer": "featstore.from_pyg", "pyg_type": type(data).__name__}
    return write_dataset(path, nodes, edges, name=name, force=force, source=source)
