"""The write order of documents: `WRITE_CLOCK`, the one clock every ingest run and label run of a process takes
``seq`` values from (`esdedup.ingest.run`, `esdedup.ingest.label`)."""
from __future__ import annotations

import threading
import time


class WriteClock:
    """`seq` values: nanoseconds since 1970, strictly increasing in this process and larger than any seq it
    has seen (a Lamport clock over the wall clock), so a document labelled after another was read gets a
    larger seq even when two machines' clocks disagree.

    >>> clock = WriteClock()
    >>> a = clock.next()
    >>> clock.next() > a, clock.next(after=a + 10**12) == a + 10**12 + 1
    (True, True)
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self, after: int = 0) -> int:
        """A seq after every one this clock gave, and after ``after`` (a seq read from the store)."""
        with self._lock:
            self._last = max(self._last + 1, time.time_ns(), after + 1)
            return self._last


#: One per process, shared by every run in it.
WRITE_CLOCK = WriteClock()
