"""Fewer collections of the cyclic garbage collector while esdedup holds many objects for a while.

An ingest run holds a batch's records, fingerprints, labels and rows until the batch is written; `dups` reads
every stored document before it joins their signatures. Python collects its youngest generation every 700
allocations, and makes a full collection, which traverses every tracked object, whenever the objects that
survived have grown by a quarter. Over such work that is most of the collector's time, and it finds no garbage:
reference counting frees these objects. Measured with `gc.callbacks` on the 127,958 poems of bench/quality.py:
ingest spent 0.5 s collecting at 20,000 allocations and 0.17-0.19 s at 100,000; `dups` from Elasticsearch
spent 2.8 s (24 full collections, of 6.5 CPU s) at Python's default and 0.24-0.28 s at 100,000.
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
