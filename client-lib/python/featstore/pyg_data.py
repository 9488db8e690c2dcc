"""featstore.pyg_data — deprecated since 1.5: ``from_pyg`` is in
featstore.pyg.data (and is ``featstore.from_pyg``, as before)."""
from ._deprecation import deprecated
from .pyg.data import from_pyg

__all__ = ["from_pyg"]

deprecated("featstore.pyg_data is deprecated: use featstore.from_pyg (featstore.pyg.data)", stacklevel=2)
