"""featstore._lib — the ctypes mirror of libfeatstore's C API (1.x).

This module only knows the C side: it finds and loads ``libfeatstore.so``,
mirrors the public structs of ``featstore/types.h``, ``featstore/client.h``
and ``featstore/admin.h`` field for field (ctypes applies the same alignment
rules as the C compiler, so declaring the fields in order is enough), and
declares every function's argument and return types so that ctypes converts
and checks them. The Pythonic API lives in ``featstore.client``.

Versioning: option structs carry ``struct_size`` (set here by ``new``), and
the library must be release 1.x (``fs_version``); structs the library
allocates only grow at their end, so reading the fields below stays valid.
"""
import ctypes
import ctypes.util
import os
from pathlib import Path

FS_MAX_HOPS = 8
FS_FANOUT_ALL = -1
FS_LOCALITY_AUTO = -1.0
FS_VERSION_MAJOR = 1
FS_BATCH_SAMPLE, FS_BATCH_GATHER = 1, 2
LIB_ENV = "FEATSTORE_LIB"
_LIB_NAME = "libfeatstore.so"

# ---- structs (featstore/types.h, featstore/client.h, featstore/admin.h) -------

_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_p_i64 = ctypes.POINTER(ctypes.c_int64)


class Versioned(ctypes.Structure):
    """A struct that starts with ``size_t struct_size`` (the caller sets it)."""

    @classmethod
    def new(cls, **fields):
        return cls(struct_size=ctypes.sizeof(cls), **fields)


class SampleReq(Versioned):
    """fs_sample_req_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("num_hops", ctypes.c_int),
        ("fanout", ctypes.c_int * FS_MAX_HOPS),
        ("mode", ctypes.c_int * FS_MAX_HOPS),  # fs_sample_mode_t: a C enum is an int
        ("seed", _u64),
        ("want_edge_ids", ctypes.c_int),
        ("locality", ctypes.c_double),  # 0/1 off, > 1 boost, FS_LOCALITY_AUTO
    ]


class BlockC(ctypes.Structure):
    """fs_block_t."""
    _fields_ = [
        ("num_dst", _i64), ("num_src", _i64), ("num_edges", _i64),
        ("dst_offsets", _p_i64), ("edge_dst", _p_i64), ("edge_src", _p_i64), ("edge_ids", _p_i64),
        ("edge_weights", ctypes.POINTER(ctypes.c_float)),
    ]


class BatchC(ctypes.Structure):
    """fs_batch_t."""
    _fields_ = [
        ("kind", ctypes.c_int),  # FS_BATCH_SAMPLE | FS_BATCH_GATHER
        ("num_hops", ctypes.c_int),
        ("blocks", ctypes.POINTER(BlockC)),
        ("num_nodes", _i64), ("nodes", _p_i64),
        ("num_seeds", _i64), ("seed_local", _p_i64),
        ("rows", _i64), ("dim", _i64),
        ("dtype", ctypes.c_int),
        ("features", ctypes.c_void_p),
        ("features_memory", ctypes.c_int),  # since 1.2: FS_MEM_HOST 0, FS_MEM_DEVICE 1
        ("features_device", ctypes.c_int),  # the GPU holding them, -1 for host memory
    ]


class TableInfoC(ctypes.Structure):
    """fs_table_info_t."""
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rows", _i64), ("dim", _i64)]


class TierInfoC(ctypes.Structure):
    """fs_tier_info_t."""
    _fields_ = [("kind", ctypes.c_char_p), ("device", ctypes.c_int), ("capacity_bytes", _u64),
                ("used_bytes", _u64)]


class ReaderInfoC(ctypes.Structure):
    """fs_reader_info_t."""
    _fields_ = [("reader", ctypes.c_int), ("predicted_bytes", ctypes.c_double * 3), ("measured_bytes", _u64 * 3)]


class InfoC(ctypes.Structure):
    """fs_info_t: counted arrays of any length."""
    _fields_ = [
        ("server_version", ctypes.c_char_p),
        ("dataset", ctypes.c_char_p),
        ("num_nodes", _i64), ("num_edges", _i64), ("num_classes", _i64),
        ("symmetric", ctypes.c_int), ("weighted", ctypes.c_int),
        ("num_tables", ctypes.c_size_t), ("tables", ctypes.POINTER(TableInfoC)),
        ("num_splits", ctypes.c_size_t), ("splits", ctypes.POINTER(ctypes.c_char_p)),
        ("num_tiers", ctypes.c_size_t), ("tiers", ctypes.POINTER(TierInfoC)),
        ("num_readers", ctypes.c_size_t), ("readers", ctypes.POINTER(ReaderInfoC)),
        ("placement_generation", _u64),
    ]


class ConnectOpts(Versioned):
    """fs_connect_opts_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("slots", ctypes.c_int), ("threads", ctypes.c_int), ("timeout_ms", ctypes.c_int),
        ("device", ctypes.c_char_p),
        # 1.1: grpc:// and grpcs:// security (unix:// ignores them)
        ("tls_ca_file", ctypes.c_char_p), ("tls_cert_file", ctypes.c_char_p), ("tls_key_file", ctypes.c_char_p),
        ("token", ctypes.c_char_p),
    ]


class IdsC(ctypes.Structure):
    """fs_ids_t."""
    _fields_ = [("n", _i64), ("ids", _p_i64)]


class ReplanOpts(Versioned):
    """fs_replan_opts_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("topology", ctypes.c_char_p), ("gpu_budget", ctypes.c_double), ("hotness", ctypes.c_char_p),
        ("order", ctypes.c_char_p), ("plan", ctypes.c_char_p), ("save", ctypes.c_char_p),
        ("alpha", ctypes.c_char_p), ("reserve", ctypes.c_char_p),
    ]


# ---- finding the library -----------------------------------------------------

def _candidates():
    """Where libfeatstore.so may be, most explicit first."""
    env = os.environ.get(LIB_ENV)
    if env:
        p = Path(env)
        yield p / _LIB_NAME if p.is_dir() else p
    here = Path(__file__).resolve().parent
    yield here / _LIB_NAME                       # shipped inside the package
    yield here.parent / _LIB_NAME                # next to the package
    repo = here.parents[2]                       # client-lib/python/featstore -> repository root
    yield repo / "build" / "client-lib" / _LIB_NAME
    for prefix in ("/usr/local/lib", "/usr/lib"):
        yield Path(prefix) / _LIB_NAME


def _load():
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_file():
            return ctypes.CDLL(str(path)), str(path)
    if os.environ.get(LIB_ENV):  # an explicit choice that does not exist is an error, not a hint
        raise OSError(f"{LIB_ENV}={os.environ[LIB_ENV]!r}: no {_LIB_NAME} there")
    name = ctypes.util.find_library("featstore")
    if name:
        return ctypes.CDLL(name), name
    raise OSError(f"cannot find {_LIB_NAME}: set {LIB_ENV} to its path (build it with "
                  f"`cmake --build BUILD --target featstore_client`); tried " + ", ".join(tried))


# ---- prototypes ---------------------------------------------------------------

_c_client_p = ctypes.c_void_p  # fs_client_t * (opaque)
_p_batch = ctypes.POINTER(ctypes.POINTER(BatchC))
_PROTOTYPES = {
    "fs_version": (ctypes.c_char_p, []),
    "fs_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "fs_dtype_name": (ctypes.c_char_p, [ctypes.c_int]),
    "fs_dtype_from_name": (ctypes.c_int, [ctypes.c_char_p]),
    "fs_connect": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ConnectOpts), ctypes.POINTER(_c_client_p)]),
    "fs_close": (None, [_c_client_p]),
    "fs_client_errstr": (ctypes.c_char_p, [_c_client_p]),
    "fs_client_transport": (ctypes.c_char_p, [_c_client_p]),
    "fs_info": (ctypes.c_int, [_c_client_p, ctypes.POINTER(ctypes.POINTER(InfoC))]),
    "fs_info_free": (None, [ctypes.POINTER(InfoC)]),
    "fs_sample": (ctypes.c_int, [_c_client_p, _p_i64, _i64, ctypes.POINTER(SampleReq), _p_batch]),
    "fs_gather": (ctypes.c_int, [_c_client_p, _p_i64, _i64, ctypes.c_char_p, ctypes.c_int, _p_batch]),
    "fs_sample_gather": (ctypes.c_int, [_c_client_p, _p_i64, _i64, ctypes.POINTER(SampleReq), ctypes.c_char_p,
                                        ctypes.c_int, _p_batch]),
    "fs_batch_free": (None, [ctypes.POINTER(BatchC)]),
    "fs_batch_region": (ctypes.c_int, [ctypes.POINTER(BatchC), ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.POINTER(ctypes.c_size_t)]),
    "fs_split": (ctypes.c_int, [_c_client_p, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(IdsC))]),
    "fs_ids_free": (None, [ctypes.POINTER(IdsC)]),
    "fs_stats": (ctypes.c_int, [_c_client_p, ctypes.POINTER(ctypes.c_void_p)]),
    "fs_stats_free": (None, [ctypes.c_void_p]),
    "fs_report_load_ratio": (ctypes.c_int, [_c_client_p, ctypes.c_double, ctypes.POINTER(ctypes.c_double)]),
    "fs_replan": (ctypes.c_int, [_c_client_p, ctypes.POINTER(ReplanOpts), ctypes.POINTER(_u64)]),
}


def _bind(lib, where):
    if not hasattr(lib, "fs_version"):
        raise OSError(f"{where} is a featstore library older than 1.0: install libfeatstore 1.x")
    lib.fs_version.restype = ctypes.c_char_p
    version = lib.fs_version().decode()
    if int(version.split(".")[0]) != FS_VERSION_MAJOR:
        raise OSError(f"{where} is libfeatstore {version}; this binding needs {FS_VERSION_MAJOR}.x")
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return version


lib, path = _load()
version = _bind(lib, path)
