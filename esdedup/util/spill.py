"""Records sorted through a temporary file: memory bounded by a run of records, not by all of them.

Records (strings, or tuples of str, int, float, bool and None) are added as they come; every ``run`` of them is sorted and
written to one private temporary file as a sorted run, and reading merges the runs (`heapq.merge`). The order is
exactly that of ``sorted(records)`` (or ``sorted(records, key=key)``: each run is sorted stably, the runs are in
the order their records came, and `heapq.merge` takes the earlier run first among equal keys). Without a key the
tuples compare themselves, which costs about half as much: records that must keep the order they came in among
equal fields say so in a field of their own (a running number), so that two never compare past it.

A run is written as blocks of `BLOCK_RECORDS` records, each a 4-byte length then the block in `marshal`'s
format: it reads back the same values exactly (a float to the bit), it is private to this process (the file has
no name: `tempfile.TemporaryFile`, unlinked as it is made, so the system frees it when it is closed or the
process ends, however it ends), and reading a run holds one block of it, whatever the number of runs.
"""
from __future__ import annotations

import heapq
import marshal
import struct
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any, Generic, TypeVar

#: Records a block of a run: what reading a run holds of it at a time.
BLOCK_RECORDS = 256
_LENGTH = struct.Struct("<I")

#: A record: a string, or a tuple of str, int, float, bool and None (what `marshal` writes and reads back exactly).
R = TypeVar("R", bound="str | tuple[Any, ...]")


class SortedSpill(Generic[R]):
    """Records sorted (by ``key``, when given), at most ``run`` of them in memory while they are added (the rest in a temporary
    file, made at the first full run: fewer records never touch the disk). Add them all (`add`), then read them
    in order as often as wanted (iterating), until `close`, which frees the file (a context manager closes it
    too). Not for adding while reading.

    >>> with SortedSpill[tuple[str, int]](run=2) as s:
    ...     for r in [("c", 1), ("a", 2), ("b", 3), ("a", 4), ("d", 5)]:
    ...         s.add(r)
    ...     len(s), list(s)
    (5, [('a', 2), ('a', 4), ('b', 3), ('c', 1), ('d', 5)])
    """

    def __init__(self, key: Callable[[R], Any] | None = None, *, run: int) -> None:
        if run < 1:
            raise ValueError(f"a run holds at least one record, got {run}")
        self._key = key
        self._run = run
        self._buffer: list[R] = []
        #: Each run written: its first byte and the byte after its last, in the file.
        self._runs: list[tuple[int, int]] = []
        self._file: IO[bytes] | None = None
        self._count = 0
        self._closed = False

    def add(self, record: R) -> None:
        if self._closed:
            raise ValueError("records added to a closed SortedSpill")
        self._buffer.append(record)
        self._count += 1
        if len(self._buffer) >= self._run:
            self._write_run()

    @property
    def runs(self) -> int:
        """The sorted runs written to the file so far (0: every record is in memory)."""
        return len(self._runs)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[R]:
        if self._closed:
            raise ValueError("a closed SortedSpill cannot be read")
        # Sorted in place (stable: equal keys keep the order they came in, as a later run would keep them).
        self._buffer.sort(key=self._key)
        if not self._runs:
            return iter(self._buffer)
        runs = [*(self._read(start, end) for start, end in self._runs), iter(self._buffer)]
        return heapq.merge(*runs) if self._key is None else heapq.merge(*runs, key=self._key)

    def close(self) -> None:
        """Free the file and the records held; reading after this raises ValueError. Closing twice is harmless."""
        self._closed = True
        self._buffer = []
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> SortedSpill[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_run(self) -> None:
        self._buffer.sort(key=self._key)
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="esdedup-spill-")
        f = self._file
        start = f.seek(0, 2)
        for lo in range(0, len(self._buffer), BLOCK_RECORDS):
            block = marshal.dumps(self._buffer[lo:lo + BLOCK_RECORDS])
            f.write(_LENGTH.pack(len(block)))
            f.write(block)
        f.flush()
        self._runs.append((start, f.tell()))
        self._buffer = []

    def _read(self, start: int, end: int) -> Iterator[R]:
        """One run's records, a block at a time. The runs share one file: each read seeks to where its run is
        at, with no other run's read in between (a generator runs between its yields only)."""
        at = start
        while at < end:
            f = self._file
            if f is None:
                raise ValueError("a closed SortedSpill cannot be read")
            f.seek(at)
            (size,) = _LENGTH.unpack(f.read(_LENGTH.size))
            block = marshal.loads(f.read(size))
            at += _LENGTH.size + size
            yield from block
