"""`ahead`: the same items in the same order, fetched while the consumer works, errors where they happened,
bounded read-ahead, and a clean stop when the consumer stops early."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.util.prefetch import ahead


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers()), st.integers(min_value=1, max_value=4))
def test_the_same_items_in_the_same_order(items: list[int], depth: int) -> None:
    assert list(ahead(iter(items), depth)) == items


def test_the_next_item_is_fetched_while_the_consumer_holds_this_one() -> None:
    second_fetched = threading.Event()

    def source() -> Iterator[int]:
        yield 0
        second_fetched.set()
        yield 1

    got = ahead(source())
    assert next(got) == 0
    assert second_fetched.wait(5)  # without the thread, item 1 would be fetched only when asked for
    assert list(got) == [1]


def test_an_error_is_raised_after_the_items_before_it() -> None:
    def source() -> Iterator[int]:
        yield 1
        yield 2
        raise ConnectionError("node gone")

    got = []
    with pytest.raises(ConnectionError, match="node gone"):
        for item in ahead(source(), depth=3):
            got.append(item)
    assert got == [1, 2]


def test_it_reads_no_more_than_depth_items_ahead() -> None:
    pulled = []

    def source() -> Iterator[int]:
        for i in range(100):
            pulled.append(i)
            yield i

    got = ahead(source(), depth=2)
    assert next(got) == 0
    deadline = time.monotonic() + 5
    while len(pulled) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    # item 0 handed over, items 1-2 queued, item 3 fetched and waiting for room: no more
    assert len(pulled) == 4
    got.close()


def test_stopping_early_closes_the_source_and_ends_the_thread() -> None:
    closed = threading.Event()

    def source() -> Iterator[int]:
        try:
            yield from range(1000)
        finally:
            closed.set()

    for item in ahead(source()):
        if item == 2:
            break
    assert closed.wait(5)
    assert not [t for t in threading.enumerate() if t.name == "esdedup-ahead"]


def test_depth_is_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        next(ahead(iter([1]), depth=0))
