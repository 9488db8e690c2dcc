"""featstore._torch — Batch.torch(): the batch's arrays as torch tensors.

Kept apart so that torch stays optional: ``import featstore`` never imports
it. Tensors come from ``torch.from_numpy`` and share memory with the batch;
each holds its numpy array, which holds the C batch, so the lifetime rule of
arrays applies: a tensor kept past ``Batch.release()`` keeps its data, and
its result slot, until it is gone (featstore.batch).
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, List, NamedTuple, Optional

import numpy as np
import torch

if TYPE_CHECKING:
    from .batch import Batch
    from .hetero import HeteroBatch


class TorchBlock(NamedTuple):
    num_dst: int
    num_src: int
    num_edges: int
    dst_offsets: torch.Tensor
    edge_dst: torch.Tensor
    edge_src: torch.Tensor
    edge_ids: Optional[torch.Tensor]
    edge_weights: Optional[torch.Tensor] = None  # float32, locality-aware sampling only


class TorchBatch(NamedTuple):
    nodes: torch.Tensor
    seed_local: torch.Tensor
    features: Optional[torch.Tensor]
    blocks: List[TorchBlock]


def tensor(array: np.ndarray) -> torch.Tensor:
    """torch.from_numpy on one of our read-only views. torch warns that it
    cannot protect read-only memory; the lifetime rule already says these
    tensors are read-only, so that warning is silenced here (and only here)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(array)


def _features(batch: Batch) -> torch.Tensor | None:
    if batch.features is None:
        return None
    if batch.features_device is not None:  # GPU memory: read in place through __cuda_array_interface__
        if not torch.cuda.is_available():
            raise RuntimeError(f"the features are in the memory of GPU {batch.features_device}, but this torch "
                               f"has no CUDA: connect with device \"cpu\" for host tensors")
        t = torch.as_tensor(batch.features, device=f"cuda:{batch.features_device}")
    else:
        t = tensor(batch.features)
    return t.view(torch.bfloat16) if batch.dtype == "bfloat16" else t  # bits were exposed as uint16


def to_torch(batch: Batch) -> TorchBatch:
    """Batch.torch(), which has checked that the batch is live."""
    blocks = [TorchBlock(b.num_dst, b.num_src, b.num_edges, tensor(b.dst_offsets), tensor(b.edge_dst),
                         tensor(b.edge_src), None if b.edge_ids is None else tensor(b.edge_ids),
                         None if b.edge_weights is None else tensor(b.edge_weights))
              for b in batch.blocks]
    return TorchBatch(tensor(batch.nodes), tensor(batch.seed_local), _features(batch), blocks)


# ---- hetero batches (HeteroBatch.torch()) ---------------------------------------

class TorchHeteroBatch(NamedTuple):
    """HeteroBatch's fields as tensors; dicts keyed as in HeteroBatch.
    count_after stays a tuple of ints; None stays None."""
    node_types: list
    edge_types: list
    num_hops: int
    nodes: dict
    batch: dict
    time: dict
    count_after: dict
    x: dict
    seed_groups: list
    seed_local: dict
    blocks: dict
    edge_attr: dict
    edge_label_index: Optional[torch.Tensor]
    edge_label: Optional[torch.Tensor]
    edge_label_time: Optional[torch.Tensor]
    src_index: Optional[torch.Tensor]
    dst_pos_index: Optional[torch.Tensor]
    dst_neg_index: Optional[torch.Tensor]


def _opt(array: np.ndarray | None) -> torch.Tensor | None:
    return None if array is None else tensor(array)


def _rows(batch: HeteroBatch, type_: Any, table: str, array: np.ndarray) -> torch.Tensor:
    t = tensor(array)
    return t.view(torch.bfloat16) if batch.dtype(type_, table) == "bfloat16" else t


def _torch_block(b: Any) -> TorchBlock:
    return TorchBlock(b.num_dst, b.num_src, b.num_edges, tensor(b.dst_offsets), tensor(b.edge_dst),
                      tensor(b.edge_src), _opt(b.edge_ids), _opt(b.edge_weights))


def hetero_to_torch(batch: HeteroBatch) -> TorchHeteroBatch:
    """HeteroBatch.torch(), which has checked that the batch is live."""
    per_type = lambda d: {t: _opt(a) for t, a in d.items()}  # noqa: E731
    return TorchHeteroBatch(
        list(batch.node_types), list(batch.edge_types), batch.num_hops, per_type(batch.nodes), per_type(batch.batch),
        per_type(batch.time), dict(batch.count_after),
        {t: {k: _rows(batch, t, k, a) for k, a in tables.items()} for t, tables in batch.x.items()},
        [(t, tensor(a)) for t, a in batch.seed_groups], per_type(batch.seed_local),
        {e: [_torch_block(b) for b in blocks] for e, blocks in batch.blocks.items()},
        {e: [{k: _rows(batch, e, k, a) for k, a in hop.items()} for hop in hops]
         for e, hops in batch.edge_attr.items()},
        _opt(batch.edge_label_index), _opt(batch.edge_label), _opt(batch.edge_label_time), _opt(batch.src_index),
        _opt(batch.dst_pos_index), _opt(batch.dst_neg_index))
