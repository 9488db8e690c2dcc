"""featstore.plan — ``EpochPlan``: the plan an epoch stream follows
(fs_stream_plan_*, featstore/client.h and docs/api.md §11; since 1.5),
for batches made with explicit calls.

A stream deals one rank's share of an epoch as torch's DistributedSampler
does (featstore.stream). A caller that makes each batch itself, with
``Client.hetero_sample`` or ``link_sample`` (featstore.pyg's loaders on
explicit seed edges or seed times), asks the C library for the same plan
rather than working it out again, so that its epochs are the stream's::

    plan = EpochPlan(len(edges), batch_size=256, seed=42, epoch=epoch, rank=rank, world_size=world)
    for positions, request_seed in plan:      # positions into the seed list, batch by batch
        b = client.link_sample(edge_type, src[positions], dst[positions], num_neighbors=...,
                               seed=request_seed)  # exactly the link stream's batch over the same edges

An EpochPlan is immutable and holds O(1) memory whatever the number of
seeds; any thread may read it.
"""
from __future__ import annotations

import ctypes
from typing import Any, Iterator

import numpy as np

from . import _lib
from ._convert import seed64
from ._lib import lib
from .errors import Error, Status

__all__ = ["EpochPlan"]


def require_plans(what: str) -> None:
    """An Error (UNSUPPORTED) unless the loaded library has fs_stream_plan_*."""
    if not _lib.plans:
        raise Error(Status.UNSUPPORTED, f"{what}: {_lib.path} is libfeatstore {_lib.version}, which has no epoch "
                                        f"plans (fs_stream_plan_open, fs_stream_default_prefetch): install "
                                        f"libfeatstore 1.5 or later")


class EpochPlan:
    """One rank's epoch of `num_seeds` seeds in batches of `batch_size`:
    which positions of the seed list each batch takes, and the request
    seed it is sampled with, exactly as a stream with the same options
    (``Client.node_stream`` and its siblings: `order` one of
    STREAM_ORDERS, `chunk`, `drop_last`, `seed`, `epoch`, `rank`,
    `world_size`) deals them. ``len()`` is the number of batches; iterating
    gives (positions, request_seed) per batch. Bad options raise
    ``featstore.Error`` (INVALID_ARGUMENT) naming them, as a stream's do."""

    def __init__(self, num_seeds: int, batch_size: int, *, order: str = "random", chunk: int = 0,
                 drop_last: bool = False, seed: int = 0, epoch: int = 0, rank: int = 0, world_size: int = 1) -> None:
        require_plans("EpochPlan")
        if order not in _lib.FS_ORDER:
            raise ValueError(f"unknown stream order {order!r} (one of {', '.join(_lib.FS_ORDER)})")
        self.batch_size = int(batch_size)
        opts = _lib.StreamPlanOpts.new(num_seeds=int(num_seeds), batch_size=self.batch_size,
                                       drop_last=int(bool(drop_last)), order=_lib.FS_ORDER[order], chunk=int(chunk),
                                       seed=seed64(seed), epoch=int(epoch), rank=int(rank), world_size=int(world_size))
        self._p: Any = ctypes.c_void_p()
        st = lib.fs_stream_plan_open(ctypes.byref(opts), ctypes.byref(self._p))
        if st != Status.OK:
            message = lib.fs_stream_plan_errstr(self._p).decode(errors="replace")
            self._free()
            raise Error(st, message)
        self.num_batches = int(lib.fs_stream_plan_num_batches(self._p))

    def positions(self, b: int) -> np.ndarray:
        """Batch b's positions in the seed list (int64, batch_size of them or
        fewer for a short last batch)."""
        if not 0 <= b < self.num_batches:
            raise IndexError(f"batch {b} of a plan of {self.num_batches}")
        out = np.empty(self.batch_size, np.int64)
        n = lib.fs_stream_plan_batch(self._p, int(b), out.ctypes.data_as(_lib._p_i64))
        return out[:n]

    def request_seed(self, b: int) -> int:
        """The seed batch b is sampled with (StreamBatch.request_seed)."""
        if not 0 <= b < self.num_batches:
            raise IndexError(f"batch {b} of a plan of {self.num_batches}")
        return int(lib.fs_stream_plan_batch_seed(self._p, int(b)))

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self) -> Iterator[tuple[np.ndarray, int]]:
        for b in range(self.num_batches):
            yield self.positions(b), self.request_seed(b)

    def _free(self) -> None:
        p, self._p = self._p, None
        if p:
            lib.fs_stream_plan_free(p)

    def __del__(self) -> None:
        try:
            self._free()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    def __repr__(self) -> str:
        return f"<featstore.EpochPlan {self.num_batches} batches of {self.batch_size}>"
