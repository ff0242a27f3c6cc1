"""Fewer collections of the cyclic garbage collector while esdedup holds many objects for a while.

An ingest run holds a batch's records, fingerprints, labels and rows until the batch is written; `dups` reads
every stored document before it joins their signatures. Python collects its youngest generation every 700
allocations, and makes a full collection, which traverses every tracked object, whenever the objects that
survived have grown by a quarter. Over such work those collections traverse the same live objects again and
again and find no garbage: reference counting frees these objects.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: Allocations between two collections of the youngest generation inside `fewer_collections`.
YOUNG_COLLECTION_ALLOCATIONS = 100_000

_lock = threading.Lock()
_inside = 0
_threshold_before: tuple[int, ...] = ()


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Inside, the youngest generation is collected every `YOUNG_COLLECTION_ALLOCATIONS` allocations (a
    program's own higher threshold is kept, and so is collection turned off). The first to enter sets it and
    the last to leave restores the program's own: runs in several threads share it."""
    global _inside, _threshold_before
    with _lock:
        if _inside == 0:
            _threshold_before = gc.get_threshold()
            if _threshold_before[0]:  # 0: the program turned collection off
                gc.set_threshold(max(_threshold_before[0], YOUNG_COLLECTION_ALLOCATIONS), *_threshold_before[1:])
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                gc.set_threshold(*_threshold_before)
