"""featstore._convert — Python values to the C API's and back: node ids as
contiguous int64 arrays (checked: integers, one dimension, no negative
id), dtype names and codes, names and option strings as C bytes.

Shared by the client, hetero requests and streams, so that one value is
checked, and refused, the same way whatever call it is given to.
"""
from __future__ import annotations

import ctypes
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lib
from ._lib import lib

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

# fs_sample_mode_t by name: Client.sample's `mode` (featstore.SAMPLE_MODES), hetero requests' too
SAMPLE_MODES = {"uniform": 0, "uniform_replace": 1, "weighted": 2, "weighted_replace": 3}

# fs_dtype_t -> numpy. bfloat16 has no numpy type: its 16 bits are exposed as
# uint16 (as the dataset stores them) and Batch.torch() reinterprets them.
NP_DTYPES = {1: np.bool_, 2: np.int8, 3: np.uint8, 4: np.int16, 5: np.uint16, 6: np.int32, 7: np.uint32,
             8: np.int64, 9: np.uint64, 10: np.float16, 11: np.uint16, 12: np.float32, 13: np.float64}


def dtype_name(code: int) -> str:
    return lib.fs_dtype_name(code).decode()


def dtype_code(dtype: str | DTypeLike | None) -> int:
    """None -> the table's default form (as stored; float32 for a compressed
    table); "stored" -> as stored, whatever it is; else a featstore dtype
    name ("float32", "bfloat16") or a numpy dtype."""
    if dtype is None:
        return 0
    if isinstance(dtype, str) and dtype == "stored":
        if not _lib.compressed:
            raise ValueError('dtype="stored" needs libfeatstore 1.5 or later')
        return _lib.DTYPE_STORED
    if isinstance(dtype, str):
        code = lib.fs_dtype_from_name(dtype.encode())
    else:
        try:
            code = lib.fs_dtype_from_name(np.dtype(dtype).name.encode())
        except TypeError:
            code = 0
    if code == 0:
        raise ValueError(f"unknown dtype {dtype!r} (use e.g. 'float32', 'float16', 'bfloat16' or None)")
    return int(code)


def ids(values: ArrayLike, what: str) -> np.ndarray:
    """A contiguous int64 numpy array of node ids, or a clear ValueError/TypeError.

    Accepts sequences, numpy arrays and CPU torch tensors of integers; refuses
    floats (which would silently truncate), other shapes and negative ids."""
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{what}: id {arr.max()} does not fit int64")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.min() < 0:
        pos = int(np.argmax(arr < 0))
        raise ValueError(f"{what}[{pos}] = {arr[pos]} is negative")
    return arr


def name(s: Any) -> bytes:
    """A non-empty name (a table, a split, a node type) as C bytes."""
    if not isinstance(s, str) or not s:
        raise TypeError(f"expected a non-empty name, got {s!r}")
    return s.encode()


def opt_str(value: str | os.PathLike[str] | None, what: str) -> bytes | None:
    """An optional string option (a path or a token) as C bytes; None stays None."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise TypeError(f"{what} must be a non-empty string or None")
    return value.encode()


def opt_int(value: int | None, what: str) -> int:
    """An optional count >= 1 (None: the C default, 0)."""
    if value is None:
        return 0
    if int(value) < 1:
        raise ValueError(f"{what} must be >= 1, got {value}")
    return int(value)


def seed64(value: int, what: str = "seed") -> int:
    """A seed in [0, 2**64), or a ValueError naming it."""
    if not 0 <= int(value) < 2**64:
        raise ValueError(f"{what} {value} must be in [0, 2**64)")
    return int(value)


def ptr(arr: np.ndarray | None) -> Any:
    """An int64 array's data as an int64_t * (None: NULL)."""
    return None if arr is None else arr.ctypes.data_as(_lib._p_i64)


def address(pointer: Any) -> int:
    """A ctypes pointer's address (0 for NULL)."""
    return ctypes.cast(pointer, ctypes.c_void_p).value or 0
