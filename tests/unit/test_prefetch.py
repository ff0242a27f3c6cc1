"""`ahead`: the same items in the same order, fetched while the consumer works, errors where they happened,
bounded read-ahead, and a clean stop when the consumer stops early; `ahead_of_all`: the same of several sources
read at once, each in its own order."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.util.prefetch import ahead, ahead_of_all


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


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(), max_size=30), min_size=1, max_size=5), st.integers(min_value=1, max_value=4))
def test_every_source_s_items_arrive_each_in_its_own_order(sources: list[list[int]], depth: int) -> None:
    tagged = [[(k, x) for x in items] for k, items in enumerate(sources)]
    got = list(ahead_of_all([iter(items) for items in tagged], depth))
    assert sorted(got) == sorted(item for items in tagged for item in items)
    for k, items in enumerate(tagged):
        assert [item for item in got if item[0] == k] == items


def test_the_sources_are_read_at_once() -> None:
    # Each source's first item waits until the other has started: read one after the other, they would never
    # both start.
    started = [threading.Event(), threading.Event()]

    def source(k: int) -> Iterator[int]:
        started[k].set()
        assert started[1 - k].wait(5), "the other source was not read meanwhile"
        yield k

    assert sorted(ahead_of_all([source(0), source(1)])) == [0, 1]


def test_an_error_of_one_source_stops_the_others_and_is_raised() -> None:
    closed = threading.Event()

    def endless() -> Iterator[int]:
        try:
            while True:
                yield 0
        finally:
            closed.set()

    def failing() -> Iterator[int]:
        yield 1
        raise ConnectionError("node gone")

    with pytest.raises(ConnectionError, match="node gone"):
        for _ in ahead_of_all([endless(), failing()], depth=2):
            pass
    assert closed.wait(5)
    assert not [t for t in threading.enumerate() if t.name == "esdedup-ahead"]


def test_stopping_early_closes_every_source() -> None:
    closed = [threading.Event() for _ in range(3)]

    def source(k: int) -> Iterator[int]:
        try:
            yield from range(1000)
        finally:
            closed[k].set()

    for i, _ in enumerate(ahead_of_all([source(k) for k in range(3)])):
        if i == 5:
            break
    assert all(c.wait(5) for c in closed)
    assert not [t for t in threading.enumerate() if t.name == "esdedup-ahead"]
