"""featstore — Python client for the featstore GNN feature store.

A pure-Python (ctypes) binding over the C client library ``libfeatstore.so``
(found through $FEATSTORE_LIB, next to this package, the repository's
``build/`` or the system library path). Results are zero-copy numpy views of
the C buffers; a released Batch raises BatchReleasedError, and arrays taken
from it before keep their data (and its slot) until they are gone::

    import featstore
    with featstore.connect("unix:///tmp/fs.sock") as c:
        train = c.split("train")
        with c.sample_gather(train[:512], [25, 10], "feat", seed=1) as b:
            x = b.features            # [b.num_nodes, dim] view of the result slot
            blocks = b.blocks         # blocks[0]: the hop from the seeds
"""
from ._lib import path as library_path
from ._lib import version as library_version
from .client import (SAMPLE_MODES, Batch, BatchReleasedError, Block, Client, DeviceArray, Error, Info, ReaderInfo,
                     Status, TableInfo, TierInfo, connect)

__all__ = ["connect", "Client", "Batch", "Block", "DeviceArray", "Info", "TableInfo", "TierInfo", "ReaderInfo", "Error",
           "BatchReleasedError", "Status", "SAMPLE_MODES", "library_path", "library_version"]
__version__ = "1.2.0"
