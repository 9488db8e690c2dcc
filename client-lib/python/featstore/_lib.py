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
from typing import Any
import sys
import sysconfig
from pathlib import Path

FS_MAX_HOPS = 8
FS_FANOUT_ALL = -1
FS_LOCALITY_AUTO = -1.0
FS_VERSION_MAJOR = 1
FS_BATCH_SAMPLE, FS_BATCH_GATHER = 1, 2
LIB_ENV = "FEATSTORE_LIB"
_LIB_NAME = "libfeatstore.so"
_SONAME = f"libfeatstore.so.{FS_VERSION_MAJOR}"

# ---- structs (featstore/types.h, featstore/client.h, featstore/admin.h) -------

_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_p_i64 = ctypes.POINTER(ctypes.c_int64)


class Versioned(ctypes.Structure):
    """A struct that starts with ``size_t struct_size`` (the caller sets it)."""

    @classmethod
    def new(cls, **fields: Any) -> Any:
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


class NodeTypeInfoC(ctypes.Structure):
    """fs_node_type_info_t (since 1.3)."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("count", _i64),
        ("num_tables", ctypes.c_size_t), ("tables", ctypes.POINTER(TableInfoC)),
        ("num_classes", _i64),
        ("timed", ctypes.c_int),
        ("num_splits", ctypes.c_size_t), ("splits", ctypes.POINTER(ctypes.c_char_p)),
    ]


class EdgeTypeInfoC(ctypes.Structure):
    """fs_edge_type_info_t (since 1.3)."""
    _fields_ = [
        ("src", ctypes.c_char_p), ("rel", ctypes.c_char_p), ("dst", ctypes.c_char_p),
        ("num_edges", _i64),
        ("weighted", ctypes.c_int), ("timed", ctypes.c_int),
        ("reverse", ctypes.c_int),  # index into fs_info_t.edge_types, or -1
        ("num_tables", ctypes.c_size_t), ("tables", ctypes.POINTER(TableInfoC)),
    ]


class LinkSplitInfoC(ctypes.Structure):
    """fs_link_split_info_t (since 1.3)."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("edge_type", ctypes.c_int),  # index into fs_info_t.edge_types
        ("count", _i64),
        ("labelled", ctypes.c_int), ("timed", ctypes.c_int),
        ("num_neg", _i64),
    ]


class RowSplitInfoC(ctypes.Structure):
    """fs_row_split_info_t (since 1.5)."""
    _fields_ = [("name", ctypes.c_char_p), ("offset", _i64), ("count", _i64)]


class CompressedInfoC(ctypes.Structure):
    """fs_compressed_info_t (1.5)."""
    _fields_ = [("table", ctypes.c_char_p), ("codec", ctypes.c_char_p), ("stored_dtype", ctypes.c_int),
                ("stored_dim", _i64)]


class InfoC(ctypes.Structure):
    """fs_info_t: counted arrays of any length. The fields from ``typed`` on
    are 1.3's: read them only from a library that has them (``typed`` below)."""
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
        # 1.3: the graph's types
        ("typed", ctypes.c_int),
        ("num_node_types", ctypes.c_size_t), ("node_types", ctypes.POINTER(NodeTypeInfoC)),
        ("num_edge_types", ctypes.c_size_t), ("edge_types", ctypes.POINTER(EdgeTypeInfoC)),
        ("num_link_splits", ctypes.c_size_t), ("link_splits", ctypes.POINTER(LinkSplitInfoC)),
        # 1.5: a labelled layout's row tables (read only from a 1.5 library: `rows`)
        ("num_row_tables", ctypes.c_size_t), ("row_tables", ctypes.POINTER(ctypes.c_char_p)),
        ("num_row_splits", ctypes.c_size_t), ("row_splits", ctypes.POINTER(RowSplitInfoC)),
        # 1.5: the compressed tables (read only from a 1.5 library: `compressed`)
        ("num_compressed", ctypes.c_size_t), ("compressed", ctypes.POINTER(CompressedInfoC)),
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


class OwnerGroupsC(ctypes.Structure):
    """fs_owner_groups_t."""
    _fields_ = [("num_groups", ctypes.c_int), ("owner", ctypes.POINTER(ctypes.c_int)), ("offsets", _p_i64),
                ("seeds", _p_i64), ("positions", _p_i64), ("map_revision", _i64)]


class MicrographsC(ctypes.Structure):
    """fs_micrographs_t."""
    _fields_ = [("num_nodes", _i64), ("num_roots", _i64), ("root_offsets", _p_i64), ("roots", _p_i64),
                ("owner", ctypes.POINTER(ctypes.c_int)), ("pairs", _i64), ("pairs_colocated", _i64),
                ("r_micro", ctypes.c_double)]


class PregatherStatsC(ctypes.Structure):
    """fs_pregather_stats_t."""
    _fields_ = [("rows", _i64), ("rows_requested", _i64), ("rows_saved", _i64), ("rows_remote", _i64),
                ("remote_shards", _i64)]


class ReplanOpts(Versioned):
    """fs_replan_opts_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("topology", ctypes.c_char_p), ("gpu_budget", ctypes.c_double), ("hotness", ctypes.c_char_p),
        ("order", ctypes.c_char_p), ("plan", ctypes.c_char_p), ("save", ctypes.c_char_p),
        ("alpha", ctypes.c_char_p), ("reserve", ctypes.c_char_p),
    ]


# ---- finding the library -----------------------------------------------------

def _system_dirs():
    """Where `cmake --install` and the .deb packages put the library: this
    Python's prefix first (a venv, which `cmake --install --prefix VENV`
    filled), then /usr/local and /usr, each with its multiarch directory."""
    arch = sysconfig.get_config_var("MULTIARCH")
    for prefix in dict.fromkeys((sys.prefix, "/usr/local", "/usr")):
        yield Path(prefix) / "lib"
        if arch:
            yield Path(prefix) / "lib" / arch


def _candidates():
    """Where libfeatstore.so may be, most explicit first."""
    env = os.environ.get(LIB_ENV)
    if env:
        p = Path(env)
        yield p / _LIB_NAME if p.is_dir() else p
        return  # an explicit choice is the only one
    here = Path(__file__).resolve().parent
    yield here / _LIB_NAME                       # shipped inside the package
    yield here.parent / _LIB_NAME                # next to the package
    if here.parts[-3:] == ("client-lib", "python", "featstore"):  # run from the repository, not installed
        yield here.parents[2] / "build" / "client-lib" / _LIB_NAME
    for d in _system_dirs():
        # the runtime package (libfeatstore1) has only the SONAME; the
        # unversioned name is the -dev package's symlink
        yield d / _SONAME
        yield d / _LIB_NAME


def _load():
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_file():
            return ctypes.CDLL(str(path)), str(path)
    if os.environ.get(LIB_ENV):  # an explicit choice that does not exist is an error, not a hint
        raise OSError(f"{LIB_ENV}={os.environ[LIB_ENV]!r}: no {_LIB_NAME} there")
    name = ctypes.util.find_library("featstore")  # the ld.so cache: another libdir in /etc/ld.so.conf.d
    if name:
        lib = ctypes.CDLL(name)
        return lib, _loaded_from(lib, name)
    raise OSError(f"cannot find {_LIB_NAME}: set {LIB_ENV} to its path (build it with "
                  f"`cmake --build BUILD --target featstore_client`, or install it with `cmake --install BUILD`); "
                  f"tried " + ", ".join(tried) + " and the ld.so cache")


def _loaded_from(lib, name):
    """The file the dynamic linker picked for a bare name (dladdr on fs_version)."""
    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]
    info = DlInfo()
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    if hasattr(lib, "fs_version") and dladdr(ctypes.cast(lib.fs_version, ctypes.c_void_p), ctypes.byref(info)):
        return info.dli_fname.decode()
    return name


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
    "fs_split_local": (ctypes.c_int, [_c_client_p, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(IdsC))]),
    "fs_ids_free": (None, [ctypes.POINTER(IdsC)]),
    "fs_split_by_owner": (ctypes.c_int, [_c_client_p, ctypes.c_char_p, _p_i64, _i64,
                                         ctypes.POINTER(ctypes.POINTER(OwnerGroupsC))]),
    "fs_owner_groups_free": (None, [ctypes.POINTER(OwnerGroupsC)]),
    "fs_batch_micrographs": (ctypes.c_int, [_c_client_p, ctypes.POINTER(BatchC),
                                            ctypes.POINTER(ctypes.POINTER(MicrographsC))]),
    "fs_micrographs_free": (None, [ctypes.POINTER(MicrographsC)]),
    "fs_pregather": (ctypes.c_int, [_c_client_p, ctypes.POINTER(BatchC), ctypes.POINTER(MicrographsC), _p_i64, _i64,
                                    ctypes.c_char_p, ctypes.c_int, _i64, _p_batch, ctypes.POINTER(PregatherStatsC)]),
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
# True: the library is 1.5 or later, whose fs_info_t and fs_stream_batch_t end with the row-table fields
rows = tuple(int(x) for x in version.split(".")[:2]) >= (1, 5)
# True: fs_info_t ends with the compressed tables, and out_dtype takes FS_DTYPE_STORED (1.5, as `rows`)
compressed = rows
DTYPE_STORED = 64  # FS_DTYPE_STORED (featstore/types.h): a table's stored form, whatever it is


# ---- typed graphs (featstore/types.h, featstore/client.h; since 1.3) -------------
#
# Appended on their own: a library older than 1.3 has none of these calls,
# so they are bound when present (`typed` below) and the client refuses
# typed requests by name when they are not.

FS_FRONTIER = {"new": 0, "all": 1}                       # fs_frontier_t
FS_TEMPORAL = {None: 0, "uniform": 1, "last": 2}         # fs_temporal_t
FS_NEG = {None: 0, "binary": 1, "triplet": 2}            # fs_neg_mode_t


class HeteroFanout(ctypes.Structure):
    """fs_hetero_fanout_t: one edge type's fanout per hop."""
    _fields_ = [("src", ctypes.c_char_p), ("rel", ctypes.c_char_p), ("dst", ctypes.c_char_p),
                ("fanout", ctypes.c_int * FS_MAX_HOPS)]


class HeteroReq(Versioned):
    """fs_hetero_req_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("num_hops", ctypes.c_int),
        ("num_fanouts", ctypes.c_size_t),
        ("fanouts", ctypes.POINTER(HeteroFanout)),
        ("mode", ctypes.c_int * FS_MAX_HOPS),     # fs_sample_mode_t per hop
        ("seed", _u64),
        ("want_edge_ids", ctypes.c_int),
        ("frontier", ctypes.c_int),               # fs_frontier_t
        ("disjoint", ctypes.c_int),
        ("temporal", ctypes.c_int),               # fs_temporal_t
        ("strict", ctypes.c_int),
        ("out_dtype", ctypes.c_int),              # fs_dtype_t
        ("window", _i64),
        ("num_node_tables", ctypes.c_size_t), ("node_tables", ctypes.POINTER(ctypes.c_char_p)),
        ("num_edge_tables", ctypes.c_size_t), ("edge_tables", ctypes.POINTER(ctypes.c_char_p)),
    ]


class HeteroSeeds(ctypes.Structure):
    """fs_hetero_seeds_t: one seed group."""
    _fields_ = [("type", ctypes.c_char_p), ("count", _i64), ("ids", _p_i64), ("time", _p_i64)]


class LinkReq(Versioned):
    """fs_link_req_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("src", ctypes.c_char_p), ("rel", ctypes.c_char_p), ("dst", ctypes.c_char_p),
        ("count", _i64),
        ("src_ids", _p_i64), ("dst_ids", _p_i64),
        ("label", _p_i64),
        ("time", _p_i64),
        ("neg", ctypes.c_int),                    # fs_neg_mode_t
        ("neg_weighted", ctypes.c_int),
        ("amount", ctypes.c_double),
        ("strict", ctypes.c_int),
        ("keep_seed_edges", ctypes.c_int),
    ]


class RowsC(ctypes.Structure):
    """fs_rows_t: one table's rows (data NULL: the type has no such table)."""
    _fields_ = [("rows", _i64), ("dim", _i64), ("dtype", ctypes.c_int), ("data", ctypes.c_void_p)]


class HeteroNodesC(ctypes.Structure):
    """fs_hetero_nodes_t."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("num_nodes", _i64),
        ("nodes", _p_i64), ("batch", _p_i64), ("time", _p_i64),
        ("count_after", _p_i64),                  # [num_hops + 1]
        ("tables", ctypes.POINTER(RowsC)),        # [num_node_tables]
    ]


class HeteroEtypeC(ctypes.Structure):
    """fs_hetero_etype_t."""
    _fields_ = [("src", ctypes.c_char_p), ("rel", ctypes.c_char_p), ("dst", ctypes.c_char_p),
                ("src_type", ctypes.c_int), ("dst_type", ctypes.c_int)]


class HeteroBatchC(ctypes.Structure):
    """fs_hetero_batch_t."""
    _fields_ = [
        ("num_hops", ctypes.c_int), ("num_node_types", ctypes.c_int), ("num_edge_types", ctypes.c_int),
        ("types", ctypes.POINTER(HeteroNodesC)),
        ("etypes", ctypes.POINTER(HeteroEtypeC)),
        ("blocks", ctypes.POINTER(BlockC)),       # [num_hops * num_edge_types]
        ("num_node_tables", ctypes.c_size_t), ("num_edge_tables", ctypes.c_size_t),
        ("edge_tables", ctypes.POINTER(RowsC)),   # [(h * E + e) * num_edge_tables + k]
        ("num_groups", ctypes.c_int),
        ("group_type", ctypes.POINTER(ctypes.c_int)),
        ("group_count", _p_i64),
        ("seed_local", ctypes.POINTER(_p_i64)),   # [num_groups][group_count]
        # link prediction
        ("link_src_type", ctypes.c_int), ("link_dst_type", ctypes.c_int),
        ("num_labels", _i64),
        ("label_src", _p_i64), ("label_dst", _p_i64),
        ("label", _p_i64),
        ("label_time", _p_i64),
        ("num_pos", _i64), ("num_neg_per_src", _i64),
        ("src_index", _p_i64), ("dst_pos_index", _p_i64),
        ("dst_neg_index", _p_i64),                # [num_pos][num_neg_per_src]
    ]


_p_hbatch = ctypes.POINTER(ctypes.POINTER(HeteroBatchC))
_TYPED_PROTOTYPES = {
    "fs_hetero_sample": (ctypes.c_int, [_c_client_p, ctypes.POINTER(HeteroSeeds), ctypes.c_size_t,
                                        ctypes.POINTER(HeteroReq), _p_hbatch]),
    "fs_link_sample": (ctypes.c_int, [_c_client_p, ctypes.POINTER(LinkReq), ctypes.POINTER(HeteroReq), _p_hbatch]),
    "fs_hetero_batch_free": (None, [ctypes.POINTER(HeteroBatchC)]),
    "fs_hetero_batch_region": (ctypes.c_int, [ctypes.POINTER(HeteroBatchC), ctypes.POINTER(ctypes.c_void_p),
                                              ctypes.POINTER(ctypes.c_size_t)]),
}


def _bind_optional(lib, prototypes):
    """Binds a release's calls when the library has them all; True if it does."""
    if not all(hasattr(lib, name) for name in prototypes):
        return False
    for name, (restype, argtypes) in prototypes.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return True


# False: a library before 1.3 (Client.hetero_sample/link_sample refuse by name)
typed = _bind_optional(lib, _TYPED_PROTOTYPES)


# ---- epoch streams (featstore/client.h; since 1.4) ----------------------------------
#
# Bound like the typed calls: when present (`streams` below); Client.stream
# refuses by name on an older library.

FS_ORDER = {"random": 0, "sequential": 1, "chunked": 2}  # fs_stream_order_t
FS_DELTA = {"off": 0, "full": 1, "only": 2}              # fs_delta_t (Match)


class StreamOpts(Versioned):
    """fs_stream_opts_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("split", ctypes.c_char_p),               # the seeds: a split's name, or ...
        ("seeds", _p_i64), ("num_seeds", _i64),   # ... an array (copied)
        ("batch_size", _i64),
        ("drop_last", ctypes.c_int),
        ("sample", ctypes.POINTER(SampleReq)),    # its seed is replaced per batch
        ("table", ctypes.c_char_p),               # NULL: sample only
        ("out_dtype", ctypes.c_int),              # fs_dtype_t
        ("labels", ctypes.c_char_p),              # NULL = "labels" when the dataset has it, "" = none
        ("seed", _u64),                           # the shuffle seed
        ("epoch", _i64),
        ("rank", ctypes.c_int), ("world_size", ctypes.c_int),
        ("prefetch", ctypes.c_int),
        ("order", ctypes.c_int),                  # fs_stream_order_t
        ("chunk", _i64),
        ("start_batch", _i64),
        ("hold", ctypes.c_int),
        ("delta", ctypes.c_int),                  # fs_delta_t (Match)
        ("window", ctypes.c_int),                 # Reorder (needs delta)
        # typed and link streams, instead of sample/table (featstore.stream: num_neighbors, link)
        ("hetero", ctypes.POINTER(HeteroReq)),
        ("seed_type", ctypes.c_char_p),
        ("link", ctypes.POINTER(LinkReq)),
        # row streams (pre-propagation): no sampling, these tables' rows per batch
        ("tables", ctypes.POINTER(ctypes.c_char_p)), ("num_tables", ctypes.c_size_t),
        # 1.5: the threads making batches, each a whole batch (0 = automatic)
        ("producers", ctypes.c_int),
    ]


class StreamBatchC(ctypes.Structure):
    """fs_stream_batch_t: one batch of a stream (the library allocates it)."""
    _fields_ = [
        ("batch", ctypes.POINTER(BatchC)),        # owned by the stream batch: never fs_batch_free it
        ("index", _i64),
        ("request_seed", _u64),
        ("num_seeds", _i64),
        ("seeds", _p_i64),
        ("labels", _p_i64),                       # NULL without a label table
        ("plan_index", _i64),                     # the plan's batch number (index, unless reordered)
        # the features (with FS_DELTA_OFF, batch->features) and Match's delta
        ("features", ctypes.c_void_p), ("dim", _i64), ("dtype", ctypes.c_int),
        ("num_new", _i64), ("new_rows", ctypes.c_void_p), ("take", _p_i64), ("prev_rows", _i64),
        ("match", ctypes.c_double),
        ("hetero", ctypes.POINTER(HeteroBatchC)),  # typed and link streams' batch (batch is NULL)
        ("num_tables", ctypes.c_size_t),            # row streams: one gather per table (batch is NULL)
        ("tables", ctypes.POINTER(ctypes.POINTER(BatchC))),
        # 1.5 (read only from a 1.5 library: `rows`): row streams over row tables: the batch's runs of
        # rows; every stream: the seeds' positions in its seed list
        ("num_ranges", _i64), ("ranges", _p_i64), ("positions", _p_i64),
    ]


_c_stream_p = ctypes.c_void_p  # fs_stream_t * (opaque)
_STREAM_PROTOTYPES = {
    "fs_stream_open": (ctypes.c_int, [_c_client_p, ctypes.POINTER(StreamOpts), ctypes.POINTER(_c_stream_p)]),
    "fs_stream_next": (ctypes.c_int, [_c_stream_p, ctypes.POINTER(ctypes.POINTER(StreamBatchC))]),
    "fs_stream_batch_free": (None, [ctypes.POINTER(StreamBatchC)]),
    "fs_stream_num_batches": (_i64, [_c_stream_p]),
    "fs_stream_position": (_i64, [_c_stream_p]),
    "fs_stream_ready": (ctypes.c_int, [_c_stream_p]),
    "fs_stream_errstr": (ctypes.c_char_p, [_c_stream_p]),
    "fs_stream_close": (None, [_c_stream_p]),
}

# False: a library before 1.4 (Client.stream refuses by name)
streams = _bind_optional(lib, _STREAM_PROTOTYPES)


# ---- epoch streams, one open call per kind (featstore/client.h; since 1.5) -----------
#
# Bound when present (`stream_kinds` below); featstore.stream falls back to
# fs_stream_open on an older library (and refuses calls= other than "auto").

FS_STREAM_CALLS = {"auto": 0, "stream": 1, "batch": 2}  # fs_stream_calls_t


class StreamCommon(Versioned):
    """fs_stream_common_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("split", ctypes.c_char_p), ("seeds", _p_i64), ("num_seeds", _i64),
        ("batch_size", _i64),
        ("drop_last", ctypes.c_int),
        ("seed", _u64), ("epoch", _i64), ("chunk", _i64), ("start_batch", _i64),
        ("order", ctypes.c_int),                  # fs_stream_order_t
        ("rank", ctypes.c_int), ("world_size", ctypes.c_int),
        ("prefetch", ctypes.c_int), ("hold", ctypes.c_int), ("producers", ctypes.c_int),
    ]


class StreamNodeOpts(Versioned):
    """fs_stream_node_opts_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("sample", ctypes.POINTER(SampleReq)), ("table", ctypes.c_char_p), ("labels", ctypes.c_char_p),
        ("out_dtype", ctypes.c_int), ("delta", ctypes.c_int), ("window", ctypes.c_int),
        ("calls", ctypes.c_int),                  # fs_stream_calls_t
    ]


class StreamHeteroOpts(Versioned):
    """fs_stream_hetero_opts_t."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("request", ctypes.POINTER(HeteroReq)),
                ("seed_type", ctypes.c_char_p)]


class StreamLinkOpts(Versioned):
    """fs_stream_link_opts_t."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("request", ctypes.POINTER(HeteroReq)),
                ("link", ctypes.POINTER(LinkReq))]


class StreamRowsOpts(Versioned):
    """fs_stream_rows_opts_t."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("out_dtype", ctypes.c_int),
                ("tables", ctypes.POINTER(ctypes.c_char_p)), ("num_tables", ctypes.c_size_t),
                ("labels", ctypes.c_char_p)]


def _open_kind(opts: type) -> tuple:
    return (ctypes.c_int, [_c_client_p, ctypes.POINTER(StreamCommon), ctypes.POINTER(opts),
                           ctypes.POINTER(_c_stream_p)])


_STREAM_KIND_PROTOTYPES = {
    "fs_stream_open_nodes": _open_kind(StreamNodeOpts),
    "fs_stream_open_hetero": _open_kind(StreamHeteroOpts),
    "fs_stream_open_link": _open_kind(StreamLinkOpts),
    "fs_stream_open_rows": _open_kind(StreamRowsOpts),
}

# False: a library before 1.5's per-kind calls (streams open through fs_stream_open)
stream_kinds = _bind_optional(lib, _STREAM_KIND_PROTOTYPES)


# ---- epoch plans and the default prefetch (featstore/client.h; since 1.5) -------------
#
# Bound when present (`plans` below): featstore.plan.EpochPlan and
# Client.default_prefetch refuse by name on an older library.

class StreamPlanOpts(Versioned):
    """fs_stream_plan_opts_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("num_seeds", _i64),
        ("batch_size", _i64),
        ("drop_last", ctypes.c_int),
        ("order", ctypes.c_int),                  # fs_stream_order_t
        ("chunk", _i64),
        ("seed", _u64),
        ("epoch", _i64),
        ("rank", ctypes.c_int), ("world_size", ctypes.c_int),
    ]


_c_plan_p = ctypes.c_void_p  # fs_stream_plan_t * (opaque)
_PLAN_PROTOTYPES = {
    "fs_stream_default_prefetch": (ctypes.c_int, [_c_client_p, ctypes.POINTER(StreamOpts)]),
    "fs_stream_plan_open": (ctypes.c_int, [ctypes.POINTER(StreamPlanOpts), ctypes.POINTER(_c_plan_p)]),
    "fs_stream_plan_num_batches": (_i64, [_c_plan_p]),
    "fs_stream_plan_batch": (_i64, [_c_plan_p, _i64, _p_i64]),
    "fs_stream_plan_batch_seed": (_u64, [_c_plan_p, _i64]),
    "fs_stream_plan_errstr": (ctypes.c_char_p, [_c_plan_p]),
    "fs_stream_plan_free": (None, [_c_plan_p]),
}

# False: a library before 1.5 (EpochPlan and Client.default_prefetch refuse by name)
plans = _bind_optional(lib, _PLAN_PROTOTYPES)
