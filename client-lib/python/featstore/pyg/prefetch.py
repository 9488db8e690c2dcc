"""featstore.pyg.prefetch — ``prefetched``: an iterator's items made on a
background thread, a bounded number ahead (featstore's calls release the
GIL, so the thread samples while the caller trains). The loaders' batches
made by explicit calls (LinkNeighborLoader on explicit seed edges) come
through it.

Every wait is bounded, so that a consumer may stop at any time: the thread
offers each item (and the end, or its error) in slices of ``POLL_S``,
giving up once the consumer has gone; the consumer closing (a ``break``
out of its loop, or the iterator dropped) stops the thread, drops the
items made ahead and waits for it at most ``JOIN_S``: a thread still in a
featstore call then ends on its own when the call returns, offering
nothing more.
"""
from __future__ import annotations

import queue
import threading
from typing import Iterator, TypeVar

T = TypeVar("T")

POLL_S = 0.1   # how often a blocked thread looks whether its consumer has gone
JOIN_S = 10.0  # how long a consumer that stops waits for the thread


class _End:
    """The item after the last: the iterator is exhausted."""


def prefetched(items: Iterator[T], depth: int) -> Iterator[T]:
    """The items, made on a background thread at most `depth` ahead (none
    ahead for depth < 1: the caller's thread makes them). An exception of
    the items' iterator is raised to the consumer in its place."""
    if depth < 1:
        yield from items
        return
    q: queue.Queue[object] = queue.Queue(maxsize=depth)
    gone = threading.Event()  # the consumer stopped: offer nothing more

    def offer(item: object) -> bool:
        while not gone.is_set():
            try:
                q.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not offer(item):
                    return
            offer(_End)
        except BaseException as err:  # handed to the consumer
            offer(err)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # a generator stopped early ends here, in the thread that ran it

    thread = threading.Thread(target=produce, name="featstore-pyg-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            try:
                item = q.get(timeout=POLL_S)
            except queue.Empty:
                if not thread.is_alive() and q.empty():
                    raise RuntimeError("featstore.pyg: the prefetch thread ended without a result") from None
                continue
            if item is _End:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        gone.set()
        _drain(q)  # the batches made ahead, and their result slots, go now
        thread.join(JOIN_S)
        _drain(q)  # one the thread had in hand when it saw the consumer go


def _drain(q: queue.Queue[object]) -> None:
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return
