"""Running an iterator ahead of its consumer, in a thread: `ahead`; several at once: `ahead_of_all`.

An iterator that waits on a server (the Elasticsearch store's key batches: an aggregation, then a search for
the members of each page of keys) and a consumer that spends CPU on every item (all-pairs search: pair ownership,
the rule in numpy) take turns when the one drives the other; on a machine whose cores the server shares, the
server's work and the client's then add up instead of overlapping. `ahead` lets the iterator fetch the next
items while the consumer works on the current one, and changes nothing else: the same items in the same order,
an exception raised where the iterator raised it, nothing fetched beyond ``depth`` items ahead, and the thread
stopped (the iterator closed) when the consumer stops early.

Only for iterators that may run in another thread (an HTTP client may; a SQLite connection may not).
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

#: How often the producer looks whether the consumer has gone, while it waits for room in the queue.
_POLL_SECONDS = 0.1


class _End:
    """The producer's last message: the iterator ended, or raised ``error``."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


def ahead(items: Iterable[T], depth: int = 1) -> Iterator[T]:
    """``items`` in order, the next ``depth`` of them fetched in a thread while the consumer handles the
    current one. An exception of ``items`` is raised to the consumer after the items before it; closing this
    generator (a ``break``, garbage collection) stops the thread and closes ``items``.

    >>> list(ahead(iter(range(5)), depth=2))
    [0, 1, 2, 3, 4]
    """
    return ahead_of_all([items], depth)


def ahead_of_all(sources: Sequence[Iterable[T]], depth: int = 1) -> Iterator[T]:
    """The items of every source, each source read in a thread of its own, in the order they arrive (a
    source's own items in its order): the sources wait on their servers at once. At most ``depth`` items
    wait for the consumer. The first exception of any source is raised to the consumer, after the items that
    arrived before it, and stops the others; closing this generator stops every thread and closes every
    source.

    >>> sorted(ahead_of_all([iter(range(3)), iter(range(10, 12))]))
    [0, 1, 2, 10, 11]
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, not {depth}")
    handoff: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item: object) -> bool:
        """Put ``item`` once there is room; False when the consumer has gone meanwhile."""
        while not stop.is_set():
            try:
                handoff.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def produce(items: Iterable[T]) -> None:
        source = iter(items)
        try:
            for item in source:
                if not offer(item):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, who raises it
            offer(_End(exc))
            return
        finally:
            close = getattr(source, "close", None)
            if close is not None and stop.is_set():
                close()
        offer(_End())

    threads = [threading.Thread(target=produce, args=(items,), name="esdedup-ahead", daemon=True)
               for items in sources]
    for thread in threads:
        thread.start()
    try:
        running = len(threads)
        while running:
            got = handoff.get()
            if isinstance(got, _End):
                if got.error is not None:
                    raise got.error
                running -= 1
                continue
            yield got  # type: ignore[misc]
    finally:
        stop.set()
        for thread in threads:
            thread.join()
