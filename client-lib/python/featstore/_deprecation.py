"""featstore._deprecation — old names that keep working, each with a
``DeprecationWarning`` naming its replacement.

featstore's Python API names one thing one way everywhere: PyG's name where
PyG has one (``num_neighbors``, ``edge_label``, ``edge_label_time``), else
one featstore name (``edge_ids``, ``time_window``, ``time_strict``,
``neg_strict``, ``reorder_window``; docs/api.md §11, "Argument names").
Arguments renamed since 1.5 are accepted under their old names through
``renamed``; calls replaced by others warn through ``deprecated``.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def deprecated(message: str, stacklevel: int = 3) -> None:
    """A DeprecationWarning pointing at the caller of the deprecated call."""
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """A decorator: a keyword argument given by its old name reaches the
    function under its new one, with a DeprecationWarning naming both;
    giving both is a TypeError. The signature (inspect, help) shows the new
    names only."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__qualname__}() got both {old}= and {new}= ({old} is {new}'s old "
                                        f"name)")
                    deprecated(f"{fn.__qualname__}({old}=...) is deprecated: call it with {new}=", stacklevel=3)
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)
        call.__featstore_renamed__ = dict(old_to_new)  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]
    return wrap
