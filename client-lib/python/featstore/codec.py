"""featstore.codec — decoding a compressed table's stored rows where they are
used (``featstore compress``; kernels/fs_codec.h is the format).

A gather serves a compressed table as float32 by default. Asked for its
stored form (``dtype="stored"``), an int8 table's rows come as int8
``[n, 8 + dim]``: a float32 scale and a float32 bias (little-endian), then
``dim`` int8 codes, value ``code * scale + bias``. That is a quarter of the
bytes over the wire and the PCIe bus; ``dequantize`` turns them into
float32 on whatever device they are on (numpy, or a torch tensor on the
GPU), rounding as the server's gather does (a multiply, then an add: the
same float32 values).
"""
from __future__ import annotations

from typing import Any

__all__ = ["INT8_HEAD", "dequantize"]

INT8_HEAD = 8  # bytes of scale and bias before an int8 row's codes (FS_CODEC_INT8_HEAD)


def dequantize(stored: Any, codec: str = "int8") -> Any:
    """Float32 rows from stored int8 rows ``[n, 8 + dim]`` (numpy array or
    torch tensor, any device): ``[n, dim]``. `codec` is the table's
    (``TableInfo.codec``); "narrow" (float16/bfloat16) rows only widen."""
    if codec == "narrow":
        return stored.float() if hasattr(stored, "float") else stored.astype("float32")
    if codec != "int8":
        raise ValueError(f"unknown codec {codec!r} (a compressed table's is 'int8' or 'narrow')")
    if stored.ndim != 2 or stored.shape[1] <= INT8_HEAD:
        raise ValueError(f"stored int8 rows are [n, 8 + dim]; got shape {tuple(stored.shape)}")
    if hasattr(stored, "float"):  # torch: the head's 8 bytes per row as two float32 (a copy of 8 B a row)
        import torch
        head = stored[:, :INT8_HEAD].contiguous().view(torch.float32)
        return stored[:, INT8_HEAD:].float() * head[:, :1] + head[:, 1:]
    import numpy as np
    head = np.ascontiguousarray(stored[:, :INT8_HEAD]).view(np.float32)
    out = stored[:, INT8_HEAD:].astype(np.float32)
    out *= head[:, :1]
    out += head[:, 1:]
    return out
