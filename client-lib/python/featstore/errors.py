"""featstore.errors — how a featstore call fails: ``Status`` (fs_status_t),
``Error`` (a failed call: its status and the connection's message) and
``BatchReleasedError`` (a batch used after its release, or in a forked
child). Every other module raises these; ``featstore`` re-exports them.
"""
from __future__ import annotations

from enum import IntEnum

from ._lib import lib

__all__ = ["Status", "Error", "BatchReleasedError"]


class Status(IntEnum):
    """fs_status_t."""
    OK = 0
    INVALID_ARGUMENT = 1
    NOT_FOUND = 2
    IO = 3
    FORMAT = 4
    UNSUPPORTED = 5
    NOMEM = 6
    EXISTS = 7
    RESOURCE = 8
    NO_DEVICE = 9
    INTERNAL = 10
    UNAVAILABLE = 11
    TIMEOUT = 12
    VERSION = 13
    PERMISSION = 14
    END = 15  # not an error: a stream's epoch is over


class Error(Exception):
    """A failed featstore call.

    ``status`` is the ``Status``, ``status_name`` the C library's short text
    for it (``fs_strerror``), ``message`` the connection's detail
    (``fs_client_errstr``)."""

    status: Status | int

    def __init__(self, status: int, message: str) -> None:
        try:
            self.status = Status(status)
        except ValueError:  # a newer library's code: keep the number
            self.status = int(status)
        self.status_name: str = lib.fs_strerror(int(status)).decode()
        self.message = message
        super().__init__(f"{self.status_name}: {message}" if message else self.status_name)


class BatchReleasedError(Error, ValueError):
    """A Batch used after ``release()``, or in a process forked after it was
    made (there it counts as released: its memory is the parent's). An
    ``Error`` with status ``INVALID_ARGUMENT`` and a message saying which;
    also a ``ValueError``, which featstore 1.0 raised for the same misuse."""

    def __init__(self, message: str) -> None:
        super().__init__(Status.INVALID_ARGUMENT, message)
