"""featstore.hopgnn — HopGNN's owner-routed training on a sharded cluster
(docs/papers.md; docs/api.md section 13): ``OwnerGroups``, a global batch's
roots grouped by owning shard (``Client.split_by_owner``), and
``Micrographs``, each node's roots in a sampled batch with R_micro
(``Client.micrographs``), and ``PregatherStats``, what a pre-gather read
(``Client.pregather``). The C library computes them; these are copies of
its results, which outlive the batch they came from.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np

__all__ = ["OwnerGroups", "Micrographs", "PregatherStats"]


def _copy(ptr: Any, n: int, dtype: Any) -> np.ndarray:
    return np.ctypeslib.as_array(ptr, (n,)).astype(dtype, copy=True) if n else np.zeros(0, dtype)


@dataclass(frozen=True)
class OwnerGroups:
    """A global batch's roots grouped by shard (fs_owner_groups_t): group
    ``g`` holds ``seeds[g]``, owned by shard ``owner[g]``, in the input's
    order, and ``positions[g]``, where each stood in the input (its tag:
    ``labels[positions[g]]`` are its labels). Every shard of the map has a
    group, empty or not, by ascending shard id."""
    owner: List[int]
    seeds: List[np.ndarray]
    positions: List[np.ndarray]
    map_revision: int

    def group_of(self, shard: int) -> int:
        """The index of shard `shard`'s group (ValueError when the map has no such shard)."""
        return self.owner.index(shard)

    @staticmethod
    def _from_c(g: Any) -> "OwnerGroups":
        k = g.num_groups
        offsets = _copy(g.offsets, k + 1, np.int64)
        n = int(offsets[-1]) if k else 0
        seeds, positions = _copy(g.seeds, n, np.int64), _copy(g.positions, n, np.int64)
        return OwnerGroups(owner=[int(g.owner[i]) for i in range(k)],
                           seeds=[seeds[offsets[i]:offsets[i + 1]] for i in range(k)],
                           positions=[positions[offsets[i]:offsets[i + 1]] for i in range(k)],
                           map_revision=int(g.map_revision))


@dataclass(frozen=True)
class Micrographs:
    """A sampled batch's micrographs (fs_micrographs_t), node-major as CSR:
    node ``v``'s roots (seed positions, ascending) are
    ``root[root_ptr[v]:root_ptr[v + 1]]``. A model run on one root's
    micrograph gives that root its output in the whole batch, so per-root
    or per-owner losses' gradients sum to the batch's (``mask``). On a
    sharded cluster ``owner`` is each node's shard and ``r_micro`` the
    share of (node, root) pairs, the root itself left out, whose node is on
    the root's shard; elsewhere None and NaN."""
    root_ptr: np.ndarray
    root: np.ndarray
    owner: Optional[np.ndarray]
    num_roots: int
    pairs: int
    pairs_colocated: int
    r_micro: float

    @property
    def num_nodes(self) -> int:
        return len(self.root_ptr) - 1

    def mask(self, roots: Any) -> np.ndarray:
        """bool [num_nodes]: the nodes of the micrographs of `roots` (seed
        positions), i.e. their union: the sub-batch one owner computes."""
        roots = np.asarray(roots, np.int64)
        want = np.zeros(max(int(self.root.max(initial=-1)), int(roots.max(initial=-1))) + 1, bool)
        want[roots] = True
        node_of_pair = np.repeat(np.arange(self.num_nodes), np.diff(self.root_ptr))
        out = np.zeros(self.num_nodes, bool)
        out[node_of_pair[want[self.root]]] = True
        return out

    def _c(self) -> Any:
        """An fs_micrographs_t viewing these arrays (for fs_pregather), held
        with them: ``.struct``."""
        from . import _lib
        owner = None if self.owner is None else np.ascontiguousarray(self.owner, np.intc)
        view = _CView(self.root_ptr, self.root, owner)
        i64 = ctypes.POINTER(ctypes.c_int64)
        view.struct = _lib.MicrographsC(
            num_nodes=self.num_nodes, num_roots=self.num_roots, root_offsets=self.root_ptr.ctypes.data_as(i64),
            roots=self.root.ctypes.data_as(i64),
            owner=owner.ctypes.data_as(ctypes.POINTER(ctypes.c_int)) if owner is not None else None,
            pairs=self.pairs, pairs_colocated=self.pairs_colocated, r_micro=self.r_micro)
        return view

    @staticmethod
    def _from_c(m: Any) -> "Micrographs":
        ptr = _copy(m.root_offsets, m.num_nodes + 1, np.int64)
        return Micrographs(root_ptr=ptr, root=_copy(m.roots, int(ptr[-1]), np.int64),
                           owner=_copy(m.owner, m.num_nodes, np.intc) if m.owner else None, num_roots=int(m.num_roots),
                           pairs=int(m.pairs), pairs_colocated=int(m.pairs_colocated),
                           r_micro=float(m.r_micro) if not math.isnan(m.r_micro) else math.nan)



@dataclass(frozen=True)
class PregatherStats:
    """What a pre-gather read (fs_pregather_stats_t): ``rows``, the union
    of the micrographs, each node once; ``rows_requested``, what fetching
    each micrograph on its own would read; ``rows_saved``, the difference;
    ``rows_remote``, the union's rows on a shard none of the roots is on,
    and ``remote_shards``, how many such shards (one request each)."""
    rows: int
    rows_requested: int
    rows_saved: int
    rows_remote: int
    remote_shards: int

    @staticmethod
    def _from_c(s: Any) -> "PregatherStats":
        return PregatherStats(rows=int(s.rows), rows_requested=int(s.rows_requested), rows_saved=int(s.rows_saved),
                              rows_remote=int(s.rows_remote), remote_shards=int(s.remote_shards))


class _CView:
    """Arrays kept alive while a C struct points into them."""

    def __init__(self, *arrays: Any) -> None:
        self.arrays = arrays
        self.struct: Any = None
