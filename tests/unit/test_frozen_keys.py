"""`esdedup.ingest.runindex.FrozenKeys`: the band keys of a run's earlier windows, frozen into sorted arrays.

Lookups must equal a dict-based reference (the first ``per_key`` documents of each key over all windows, then
the first ``per_record`` of a record's, in write order), and windows of `RunIndex` frozen one after the other
must find what one run index that kept every document finds.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.ingest import runindex as runindex
from esdedup.ingest.runindex import MAX_PER_KEY, FrozenKeys, KeyLists, RunIndex, key_hashes
from esdedup.store.base import StoredDoc
from esdedup.util import native

KEYS = [f"{t}:{v:04x}" for t in range(3) for v in range(6)] + [str(10**11 + v) for v in range(6)]

#: A window: the keys of each of its documents (a few, from a small alphabet, so that keys crowd).
windows_st = st.lists(st.lists(st.lists(st.sampled_from(KEYS), max_size=5, unique=True), max_size=12),
                      min_size=1, max_size=4)
queries_st = st.lists(st.lists(st.sampled_from(KEYS + ["9:ffff", "123"]), max_size=6), max_size=8)


def _ids(windows: list[list[list[str]]]) -> list[list[str]]:
    ids, n = [], 0
    for w in windows:
        ids.append([f"doc-{n + i}-é" for i in range(len(w))])  # not ASCII: ids travel as UTF-8
        n += len(w)
    return ids


def _frozen(windows: list[list[list[str]]]) -> FrozenKeys:
    frozen = FrozenKeys()
    for ids, docs in zip(_ids(windows), windows, strict=True):
        keys = [k for doc in docs for k in doc]
        positions = np.array([i for i, doc in enumerate(docs) for _ in doc], dtype=np.uint32)
        frozen.add(ids, keys, positions)
    return frozen


def _reference(windows: list[list[list[str]]], queries: list[list[str]], per_key: int,
               per_record: int) -> list[list[str]]:
    holders: dict[str, list[int]] = {}
    all_ids = [i for ids in _ids(windows) for i in ids]
    for ordinal, doc in enumerate(d for w in windows for d in w):
        for k in doc:
            holders.setdefault(k, []).append(ordinal)
    out = []
    for keys in queries:
        found = sorted({o for k in keys for o in holders.get(k, [])[:per_key]})
        out.append([all_ids[o] for o in found[:per_record]])
    return out


@settings(max_examples=200, deadline=None)
@given(windows_st, queries_st, st.integers(1, 4), st.integers(1, 6))
def test_lookups_equal_a_dict_of_the_same_keys(windows, queries, per_key, per_record) -> None:
    found = _frozen(windows).lookup(KeyLists(queries), per_key=per_key, per_record=per_record)
    assert found == _reference(windows, queries, per_key, per_record)


#: Six to nine windows over eight keys: most keys are held in every window, so the caps bind across windows.
many_windows_st = st.lists(st.lists(st.lists(st.sampled_from(KEYS[:8]), min_size=1, max_size=4, unique=True),
                                    min_size=1, max_size=8), min_size=6, max_size=9)


@settings(max_examples=150, deadline=None)
@given(many_windows_st, st.lists(st.lists(st.sampled_from(KEYS[:9]), max_size=4), max_size=6),
       st.integers(1, 5), st.integers(1, 8))
def test_many_windows_merged_into_one_table_keep_write_order(windows, queries, per_key, per_record) -> None:
    """Each window is merged into the one table a few entries at a time (a small merge chunk): a key's
    documents stay in write order across windows, so the caps keep the earliest."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runindex, "_MERGE_CHUNK", 3)
        frozen = _frozen(windows)
    found = frozen.lookup(KeyLists(queries), per_key=per_key, per_record=per_record)
    assert found == _reference(windows, queries, per_key, per_record)


def test_a_key_of_every_window_finds_its_earliest_documents() -> None:
    """Seven windows, each of three documents holding "shared" and one of its own key: the first four holders
    of "shared" are the three of the first window and the first of the second, whatever came after."""
    windows = [[["shared", f"w{w}"], ["shared"], ["shared", "x"]] for w in range(7)]
    ids = [i for w in _ids(windows) for i in w]
    frozen = _frozen(windows)
    (shared, everything) = frozen.lookup(KeyLists([["shared"], ["x", "w6", "w5", "shared"]]), per_key=4,
                                         per_record=6)
    assert shared == ids[:4]
    # "x": the third document of each window (its first four); "w5", "w6": the first of those windows.
    assert everything == [ids[0], ids[1], ids[2], ids[3], ids[5], ids[8]]
    assert frozen.docs == 21


def test_a_window_merges_while_something_else_holds_the_table() -> None:
    """The table grows in place, unless something else holds it (a view; a debugger or line profiler keeping
    a frame's values): numpy then refuses to reallocate it, and it grows by a copy, the view left reading
    the old table."""
    windows = [[["shared", f"w{w}"], ["shared"], ["shared", "x"]] for w in range(3)]
    ids = [i for w in _ids(windows) for i in w]
    frozen = _frozen(windows[:2])
    held = frozen._hashes[:4]  # a view of the table
    before = held.copy()
    frozen.add(_ids(windows)[2], [k for doc in windows[2] for k in doc],
               np.array([i for i, doc in enumerate(windows[2]) for _ in doc], dtype=np.uint32))
    assert np.array_equal(held, before)
    (x, w2) = frozen.lookup(KeyLists([["x"], ["w2"]]))
    assert x == [ids[2], ids[5], ids[8]] and w2 == [ids[6]] and frozen.docs == 9


def test_the_caps_hold_on_a_crowded_key() -> None:
    """100 documents hold key "a", each also a key of its own: a record asking for "a" gets the first
    ``per_key`` of them; asking for every key, the first ``per_record``."""
    docs = [["a", f"own-{i}"] for i in range(100)]
    frozen = _frozen([docs[:40], docs[40:]])
    ids = _ids([docs[:40], docs[40:]])
    every = [i for w in ids for i in w]
    (crowded, many) = frozen.lookup(KeyLists([["a"], ["a", *(f"own-{i}" for i in range(100))]]), per_key=MAX_PER_KEY,
                                    per_record=50)
    assert crowded == every[:MAX_PER_KEY]
    assert many == every[:50]
    assert frozen.docs == 100 and frozen.nbytes > 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(KEYS), max_size=5, unique=True), max_size=120), st.integers(1, 40),
       queries_st)
def test_frozen_windows_find_what_one_run_index_finds(docs, window, queries) -> None:
    """A run index per window of ``window`` documents, each frozen when the next starts (`FrozenKeys.add_index`,
    as ingest does), plus the last one live, finds the documents one run index of every document finds (which keeps `MAX_PER_KEY` per key)."""
    whole, live, frozen = RunIndex(), RunIndex(), FrozenKeys()
    for n, keys in enumerate(docs):
        doc = StoredDoc(f"d{n}", 0, np.zeros(1), False, 1, 1, f"d{n}", None, seq=n)
        whole.add_keys(doc, keys)
        if len(live.docs) == window:
            frozen.add_index(live)
            assert not live.docs and not live.lookup(keys)  # emptied: the merge held none of it
            live = RunIndex()
        live.add_keys(doc, keys)
    earlier = frozen.lookup(KeyLists(queries), per_record=10**6)
    for keys, ids in zip(queries, earlier, strict=True):
        expected = [d.id for d in whole.lookup(keys)]
        assert ids + [d.id for d in live.lookup(keys) if d.id not in ids] == expected


def test_key_hashes_do_not_depend_on_the_keys_hashed_with() -> None:
    """A key hashes the same alone and beside longer keys (the array is padded to the longest), keys differing
    in their last byte differ, and the value is fixed (never Python's salted ``hash()``)."""
    alone = key_hashes(["0:1f2e"])
    beside = key_hashes(["0:1f2e", "123456789012345678901234", "键"])
    assert alone[0] == beside[0] and len(set(beside.tolist())) == 3
    assert len(set(key_hashes(["ab", "ab\x01", "ac"]).tolist())) == 3
    assert int(alone[0]) == 0x40AD0678C6525E95
    assert key_hashes([]).dtype == np.uint64 and len(key_hashes([])) == 0


@pytest.mark.parametrize("spread", ["even", "skewed"])
def test_the_extension_s_bucketed_lookup_finds_what_the_binary_search_finds(extension, monkeypatch, spread) -> None:
    """A table of 200,000 entries in four windows (the extension cuts it into buckets of about eight): hashes
    spread evenly as key hashes are, or all in a few buckets (the top bits of most equal: buckets of
    thousands), with 0, 1 and 2**64 - 1 among them and keys held by many documents. Both paths find the same
    ids for a batch of queries that hit, miss, and ask for the extremes."""
    rng = np.random.default_rng(7)
    frozen = FrozenKeys()
    held = []
    for w in range(4):
        n = 50_000
        hashes = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
        if spread == "skewed":
            hashes >>= np.uint64(40)  # the top 40 bits zero: a few buckets hold nearly everything
        hashes[:3] = np.array([0, 1, 2**64 - 1], dtype=np.uint64)
        hashes[3:300] = hashes[3]  # one key held by 297 documents of each window
        frozen._add_entries([f"w{w}-{i}" for i in range(n)], hashes, np.arange(n, dtype=np.uint32) // 2)
        held.append(hashes)
    table = np.concatenate(held)
    queries = np.concatenate([rng.choice(table, 3000), rng.integers(0, 2**64, 3000, dtype=np.uint64, endpoint=False),
                              np.array([0, 1, 2, 2**64 - 2, 2**64 - 1], dtype=np.uint64)])
    counts = [1000] * 6 + [len(queries) - 6000]
    lists = KeyLists.hashed(queries, counts, lambda r: [])
    monkeypatch.setenv(native.ENV_SWITCH, "1")
    got = frozen.lookup(lists, per_key=40, per_record=10**6), frozen.lookup(lists, per_key=3, per_record=50)
    assert frozen._starts is not None and len(frozen._starts) > 2**10
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    want = frozen.lookup(lists, per_key=40, per_record=10**6), frozen.lookup(lists, per_key=3, per_record=50)
    assert got == want
    assert sum(map(len, want[0])) > 3000 and len(want[1][0]) == 50


@pytest.mark.parametrize("spread", ["even", "skewed"])
def test_the_extension_s_merge_puts_every_entry_where_numpy_s_does(extension, monkeypatch, spread) -> None:
    """Five windows merged one after the other, by the extension's one pass and by numpy's chunks: the same
    table, entry for entry. The windows share hashes with the table (a new entry goes after the table's of its
    hash), hold 0 and 2**64 - 1, and one hash held by hundreds of documents in each."""
    rng = np.random.default_rng(11)
    windows = []
    for w in range(5):
        n = 40_000 + 3_000 * w
        hashes = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
        if spread == "skewed":
            hashes >>= np.uint64(48)  # few distinct values: most new entries share a hash with the table
        hashes[:2] = np.array([0, 2**64 - 1], dtype=np.uint64)
        hashes[2:400] = hashes[2]
        windows.append(([f"w{w}-{i}" for i in range(n)], hashes, np.arange(n, dtype=np.uint32) // 3))
    tables = []
    for switch in ("1", "0"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        frozen = FrozenKeys()
        for ids, hashes, positions in windows:
            frozen._add_entries(ids, hashes.copy(), positions.copy())
        tables.append((frozen._hashes.copy(), frozen._ords.copy()))
    (got_h, got_o), (want_h, want_o) = tables
    assert len(want_h) == sum(len(h) for _, h, _ in windows)
    assert np.array_equal(got_h, want_h) and np.array_equal(got_o, want_o)
    order = np.lexsort((want_o, want_h))  # sorted by hash, a hash's entries in write order
    assert np.array_equal(order, np.arange(len(order)))


def test_the_extension_s_merge_refuses_arrays_it_cannot_write_in_place(extension) -> None:
    from esdedup.ingest import native_keys

    table_h, table_o = np.array([1, 5, 0], dtype=np.uint64), np.array([0, 1, 0], dtype=np.uint32)
    native_keys.merge_frozen(table_h, table_o, 2, np.array([3], dtype=np.uint64), np.array([2], dtype=np.uint32))
    assert table_h.tolist() == [1, 3, 5] and table_o.tolist() == [0, 2, 1]
    with pytest.raises(TypeError, match="own uint64 and uint32 arrays"):
        native_keys.merge_frozen(table_h.astype(np.int64), table_o, 2, table_h[:1], table_o[:1])
    frozen_h = table_h.copy()
    frozen_h.flags.writeable = False
    with pytest.raises(ValueError, match="hashes must be a writable"):
        native_keys.merge_frozen(frozen_h, table_o, 2, np.array([4], dtype=np.uint64), np.array([3], dtype=np.uint32))
    with pytest.raises(ValueError, match="room for the new ones"):
        native_keys.merge_frozen(table_h, table_o, 3, np.array([4], dtype=np.uint64), np.array([3], dtype=np.uint32))
    with pytest.raises(ValueError, match="arrays of their own"):
        native_keys.merge_frozen(table_h, table_o, 2, table_h[2:], np.array([3], dtype=np.uint32))
