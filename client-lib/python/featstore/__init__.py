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
        for b in c.stream(split="train", batch_size=512, fanouts=[25, 10], table="feat",
                          seed=42, epoch=epoch, rank=rank, world_size=world):   # a DDP rank's epoch
            x, y = b.batch.features, b.labels

``featstore.pyg`` (imported on its own; needs torch_geometric) puts PyG's
loaders on a server: FeatureStore, GraphStore, a BaseSampler, and
NeighborLoader / LinkNeighborLoader with PyG's arguments and fields.

``featstore.write_dataset`` (featstore.dataset) writes a dataset from numpy
arrays and needs no library; ``/usr/bin/python3 -m featstore.cora`` makes two from
tests/data/cora.npz with it. ``featstore.from_pyg`` (featstore.pyg_data)
writes one from a PyG Data or HeteroData (importing torch_geometric only
when called).
"""
from .dataset import write_dataset
from .pyg_data import from_pyg

__all__ = ["connect", "Client", "Batch", "Block", "DeviceArray", "Info", "TableInfo", "TierInfo", "ReaderInfo", "Error",
           "BatchReleasedError", "Status", "SAMPLE_MODES", "library_path", "library_version", "write_dataset",
           "from_pyg",
           "HeteroBatch", "Stream", "StreamBatch", "StreamLink", "STREAM_ORDERS"]
_CLIENT = frozenset(__all__) - {"write_dataset", "from_pyg"}  # the names that need libfeatstore.so

try:
    from ._lib import path as library_path
    from ._lib import version as library_version
    from .client import (SAMPLE_MODES, STREAM_ORDERS, Batch, BatchReleasedError, Block, Client, DeviceArray, Error,
                         Info, ReaderInfo, Status, TableInfo, TierInfo, connect)
    from .hetero import HeteroBatch
    from .stream import Stream, StreamBatch, StreamLink
except OSError:
    # No libfeatstore.so: writing datasets (featstore.dataset, featstore.cora)
    # needs none. The client's names load it on first use, and raise its
    # error (saying where it was looked for) while it cannot be found.
    def __getattr__(name):
        if name not in _CLIENT:
            raise AttributeError(f"module 'featstore' has no attribute {name!r}")
        from . import _lib, client, hetero, stream
        value = {"library_path": "path", "library_version": "version"}.get(name)
        module = {"HeteroBatch": hetero, "Stream": stream, "StreamBatch": stream,
                  "StreamLink": stream}.get(name, client)
        value = getattr(_lib, value) if value else getattr(module, name)
        globals()[name] = value
        return value

from ._version import __version__  # noqa: E402  (written by CMake: cmake/version.cmake)
