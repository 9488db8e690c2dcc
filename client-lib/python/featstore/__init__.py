"""featstore — Python client for the featstore GNN feature store.

A pure-Python (ctypes) binding over the C client library ``libfeatstore.so``
(found through $FEATSTORE_LIB alone when it is set; else next to this
package, the repository's ``build/``, then where ``cmake --install`` or the
libfeatstore1 package put it: this Python's prefix (a venv), /usr/local and
/usr, their multiarch lib directories, and the ld.so cache). Results are
zero-copy numpy views of the C buffers; a released Batch raises
BatchReleasedError, and arrays taken from it before keep their data (and its
slot) until they are gone::

    import featstore
    with featstore.connect("unix:///tmp/fs.sock") as c:
        train = c.split("train")
        with c.sample_gather(train[:512], [25, 10], "feat", seed=1) as b:
            x = b.features            # [b.num_nodes, dim] view of the result slot
            blocks = b.blocks         # blocks[0]: the hop from the seeds
        for b in c.node_stream("train", batch_size=512, num_neighbors=[25, 10], table="feat",
                               seed=42, epoch=epoch, rank=rank, world_size=world):   # a DDP rank's epoch
            x, y = b.batch.features, b.labels

``featstore.pyg`` (imported on its own; needs torch_geometric) puts PyG's
loaders on a server: FeatureStore, GraphStore, a BaseSampler, and
NeighborLoader / LinkNeighborLoader with PyG's arguments and fields.

``featstore.write_dataset`` (featstore.dataset) writes a dataset from numpy
arrays and needs no library (examples/cora.py makes two from
tests/data/cora.npz with it). ``featstore.from_pyg`` (featstore.pyg.data)
writes one from a PyG Data or HeteroData (importing torch_geometric only
when called).

Modules: featstore.client (the connection), featstore.batch (results and
the lifetime rule), featstore.info, featstore.hetero (heterogeneous graphs' requests),
featstore.stream (epoch streams), featstore.plan (their plan),
featstore.codec (compressed tables' stored rows), featstore.errors,
featstore.dataset and featstore.pyg.
"""
from __future__ import annotations

from typing import Any

from .codec import dequantize
from .dataset import write_dataset
from .hopgnn import Micrographs, OwnerGroups, PregatherStats

__all__ = ["connect", "Client", "Batch", "Block", "DeviceArray", "Info", "TableInfo", "TierInfo", "ReaderInfo", "Error",
           "BatchReleasedError", "Status", "SAMPLE_MODES", "library_path", "library_version", "write_dataset",
           "from_pyg",
           "HeteroBatch", "Stream", "StreamBatch", "StreamLink", "STREAM_ORDERS", "EpochPlan", "OwnerGroups",
           "Micrographs", "PregatherStats", "dequantize"]
# the names that need libfeatstore.so
_CLIENT = frozenset(__all__) - {"write_dataset", "from_pyg", "OwnerGroups", "Micrographs", "PregatherStats",
                                "dequantize"}


def from_pyg(data: Any, path: str, *, name: str | None = None, num_classes: int | None = None,
             undirected: bool | None = None, force: bool = False) -> str:
    """featstore.pyg.data.from_pyg (see there): a featstore dataset written
    from a PyG Data or HeteroData. torch_geometric (and featstore.pyg) are
    imported only when it is called; libfeatstore.so is not needed."""
    from .pyg.data import from_pyg as write
    return write(data, path, name=name, num_classes=num_classes, undirected=undirected, force=force)


try:
    from ._lib import path as library_path
    from ._lib import version as library_version
    from .client import (SAMPLE_MODES, STREAM_ORDERS, Batch, BatchReleasedError, Block, Client, DeviceArray, Error,
                         Info, ReaderInfo, Status, TableInfo, TierInfo, connect)
    from .hetero import HeteroBatch
    from .plan import EpochPlan
    from .stream import Stream, StreamBatch, StreamLink
except OSError:
    # No libfeatstore.so: writing datasets (featstore.dataset, from_pyg)
    # needs none. The client's names load it on first use, and raise its
    # error (saying where it was looked for) while it cannot be found.
    def __getattr__(name: str) -> Any:
        if name not in _CLIENT:
            raise AttributeError(f"module 'featstore' has no attribute {name!r}")
        from . import _lib, client, hetero, plan, stream
        value = {"library_path": "path", "library_version": "version"}.get(name)
        module = {"HeteroBatch": hetero, "Stream": stream, "StreamBatch": stream, "StreamLink": stream,
                  "EpochPlan": plan}.get(name, client)
        value = getattr(_lib, value) if value else getattr(module, name)
        globals()[name] = value
        return value

from ._version import __version__  # noqa: E402  (written by CMake: cmake/version.cmake)
