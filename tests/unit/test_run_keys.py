"""The run index's keys: their hashes and the key table, in the extension (`esdedup_native.key_hashes`,
`RunKeys`) and in Python (`esdedup.ingest.runindex.key_hashes`, `_KeyTable`), which agree; and a batch's
candidates found before it is labelled (`esdedup.ingest.labels.BatchCandidates`), which are what a lookup
of the run index gives each record as the batch is labelled record by record.

The native tests skip without the extension unless ESDEDUP_REQUIRE_NATIVE=1 (the `extension` fixture,
tests/unit/conftest.py).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup import FingerprintConfig
from esdedup.ingest import native_keys
from esdedup.ingest.documents import FingerprintedRecord
from esdedup.ingest.labels import (
    BatchCandidates,
    _batch_peers,
    _past_first,
    _stable_order,
    batch_peers,
    run_keys,
)
from esdedup.ingest.runindex import (
    MAX_PER_KEY,
    HeldHashes,
    KeyLists,
    RunIndex,
    _hash_chunk,
    _KeyTable,
    key_hashes,
)
from esdedup.ingest.window import MemoryWindow
from esdedup.store.base import StoredDoc
from esdedup.util import native

KEYS = [f"{band}:{value}" for band in range(3) for value in range(4)]


def test_native_key_hashes_are_python_s(extension, switch_on) -> None:
    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.text(max_size=30) | st.sampled_from(["", "a\x00", "\x00", "abcdefgh", "abcdefgh\x00", "键"]),
                    max_size=20))
    def check(keys: list[str]) -> None:
        encodable = [k for k in keys if not any("\ud800" <= c <= "\udfff" for c in k)]
        hashed = native_keys.key_hashes(encodable)
        assert hashed is not None and hashed.tolist() == _hash_chunk(encodable).tolist()

    check()


def test_a_key_the_extension_cannot_encode_is_hashed_in_python(extension, switch_on) -> None:
    keys = ["0:1f2e", "lone \ud800 surrogate"]
    assert native_keys.key_hashes(keys) is None
    assert key_hashes(keys).tolist() == _hash_chunk(keys).tolist()
    assert key_hashes(keys)[0] == np.uint64(0x40AD0678C6525E95)  # the docstring's value, on either path


ops_st = st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 12), max_size=6)), max_size=150)


def test_the_native_key_table_is_the_python_one(extension, switch_on) -> None:
    settings(max_examples=150, deadline=None)(given(ops_st, st.integers(1, 5))(_same_tables))()


def _same_tables(ops: list[tuple[bool, list[int]]], per_key: int) -> None:
    table, reference = native_keys.run_keys(per_key), _KeyTable(per_key)
    assert table is not None
    position = 0
    for is_add, values in ops:
        hashes = [v * 0x9E3779B97F4A7C15 % 2**64 for v in values]
        if is_add:
            assert table.add(position, hashes) == reference.add(position, hashes)
            position += 1
        else:
            looked_up = np.array(hashes, dtype=np.uint64)
            assert table.lookup_many(looked_up, [len(hashes) // 2, len(hashes) - len(hashes) // 2]) == \
                reference.lookup_many(looked_up, [len(hashes) // 2, len(hashes) - len(hashes) // 2])
    assert len(table) == len(reference)
    got, want = table.entries(), reference.entries()
    assert sorted(zip(*(a.tolist() for a in got))) == sorted(zip(*(a.tolist() for a in want)))
    assert got[0].dtype == np.uint64 and got[1].dtype == np.uint32
    for hashes, positions in (got, want):  # a hash's positions never go down (`FrozenKeys.add_index` sorts by hash)
        order = np.argsort(hashes, kind="stable")
        same = hashes[order][1:] == hashes[order][:-1]
        assert np.all(positions[order][1:][same] >= positions[order][:-1][same])


batches_st = st.lists(st.lists(st.lists(st.integers(0, 6), max_size=4), max_size=12), max_size=12)


def test_adding_a_batch_at_once_is_adding_its_documents_in_turn_on_both_paths(extension, switch_on) -> None:
    """`add_many` (a batch's documents with their positions) holds what `add` of each in turn holds, and says
    which keys crowded which document out as `add` does; `held_counts` counts the positions of each hash, and
    `fits` says whether a batch would crowd none."""
    @settings(max_examples=150, deadline=None)
    @given(batches_st, st.integers(1, 5) | st.sampled_from([8, 33, 40]))  # a key's positions outgrow blocks
    def check(batches: list[list[list[int]]], per_key: int) -> None:
        native_table, reference, one_by_one = native_keys.run_keys(per_key), _KeyTable(per_key), _KeyTable(per_key)
        assert native_table is not None
        position = 0
        for batch in batches:
            hashes = np.array([v * 0x9E3779B97F4A7C15 % 2**64 for values in batch for v in values], dtype=np.uint64)
            probe = np.unique(hashes)
            assert native_table.held_counts(probe).tolist() == reference.held_counts(probe).tolist() == \
                [1 + len(one_by_one.more.get(h, ())) if h in one_by_one.first else 0 for h in probe.tolist()]
            held = dict(zip(probe.tolist(), reference.held_counts(probe).tolist(), strict=True))
            fits = all(held[h] + n <= per_key for h, n in zip(*np.unique(hashes, return_counts=True), strict=True))
            assert native_table.fits(hashes) == reference.fits(hashes) == fits
            positions = list(range(position, position + len(batch)))
            counts = [len(values) for values in batch]
            crowded = [(r, x) for r, p in enumerate(positions) for x in one_by_one.add(p, hashes[
                sum(counts[:r]):sum(counts[:r + 1])].tolist())]
            assert native_table.add_many(positions, hashes, counts) == reference.add_many(positions, hashes, counts) \
                == crowded
            position += len(batch)
        assert sorted(zip(*(a.tolist() for a in native_table.entries()))) == \
            sorted(zip(*(a.tolist() for a in one_by_one.entries())))

    check()


def test_a_batch_goes_in_at_once_unless_it_would_crowd_a_key_itself(monkeypatch) -> None:
    """`RunIndex.takes_whole`: a batch is let through only when no key of it can reach more than MAX_PER_KEY
    documents with it, or holds MAX_PER_KEY already (every record is crowded out of it); what `add_all_later` queued is
    held once the index is read, as `add` would have held it."""
    for switch in ("0", "1"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        index = RunIndex()
        for n in range(MAX_PER_KEY - 2):
            index.add_keys(_doc(n), ["shared", f"own-{n}"])
        two = key_hashes(["shared", "shared"])
        assert index.takes_whole(two).tolist() == []  # type: ignore[union-attr]
        assert index.takes_whole(key_hashes(["shared"] * 3)) is None  # which is crowded out depends on which come
        row = attrgetter(*(f.name for f in fields(StoredDoc)))
        later = [_doc(n) for n in range(MAX_PER_KEY - 2, MAX_PER_KEY)]
        for d in later:
            index.add_all_later([row(d)], key_hashes(["shared"]), [1])
        assert index.lookup(["shared"])[-2:] == later  # read: the queued documents are held first
        full = index.takes_whole(key_hashes(["shared", "shared", "shared", "other"]))
        assert full is not None and full.tolist() == key_hashes(["shared"]).tolist()  # the key is full now


def test_a_crowded_key_holds_the_first_documents_on_both_paths(monkeypatch) -> None:
    for switch in ("0", "1"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        index = RunIndex()
        docs = [_doc(n) for n in range(MAX_PER_KEY + 3)]
        out = [index.add_keys(d, ["shared", f"own-{n}"]) for n, d in enumerate(docs)]
        shared = int(key_hashes(["shared"])[0])
        assert out[:MAX_PER_KEY] == [frozenset()] * MAX_PER_KEY and out[MAX_PER_KEY:] == [{shared}] * 3
        assert index.lookup(["shared"]) == docs[:MAX_PER_KEY]
        assert index.lookup([f"own-{MAX_PER_KEY + 1}", "x"]) == [docs[MAX_PER_KEY + 1]]
        assert index.crowded == {"shared": MAX_PER_KEY + 3}


def _doc(n: int) -> StoredDoc:
    return StoredDoc(f"d{n}", n, np.zeros(1, dtype=np.float32), False, 1, 1, f"d{n}", None, seq=n)


def _record(n: int, keys: list[str]) -> FingerprintedRecord:
    fp = SimpleNamespace(empty=False, bands=[], lsh=keys, simhash=n, vector=np.zeros(1, dtype=np.float32),
                         length=1, chars=1, minhash=None, shingles=0)
    return FingerprintedRecord(SimpleNamespace(), fp, n, f"sha-{n}", f"r{n}")  # type: ignore[arg-type]


class _EveryThird:
    """A rule that pairs a record with the candidates whose number and its own add up to a multiple of 3 (any
    rule that decides a pair by the pair alone would do)."""

    @staticmethod
    def pairs(n: int, candidate_id: str) -> bool:
        return (n + int(candidate_id[1:])) % 3 == 0

    def many(self, sketches, cands, own_ids, sha1s):
        return [[p for p, c in enumerate(cs) if self.pairs(fp.simhash, c.id)] for fp, cs in zip(sketches, cands)]

    def in_run(self, docs, items, positions):
        return [[p for p in ps if self.pairs(d.fp.simhash, docs.id_at(p))] for d, ps in zip(items, positions)]


class _Every(_EveryThird):
    """A rule that pairs a record with every candidate: labelling then reads each one as a document."""

    @staticmethod
    def pairs(n: int, candidate_id: str) -> bool:
        return True


@pytest.mark.parametrize("hashed", [False, True], ids=["keys", "hashes"])
@pytest.mark.parametrize("switch", ["0", "1"])
@settings(max_examples=120, deadline=None)
@given(before=st.lists(st.lists(st.sampled_from(KEYS[:4]), min_size=1, max_size=3, unique=True), min_size=10,
                      max_size=40) | st.lists(st.lists(st.sampled_from(KEYS[:4]), max_size=3), max_size=3),
       batch=st.lists(st.tuples(st.lists(st.sampled_from(KEYS[:4]), max_size=3, unique=True), st.booleans()),
                      max_size=90))
def test_a_batch_s_candidates_are_the_run_index_lookups_as_it_is_labelled(before, batch, switch, hashed) -> None:
    """Records added before the batch and in it (``True``: the record is added, as a record labelled and
    written is; else it is not, as a skipped one), with few keys, so that some are crowded past MAX_PER_KEY, in
    the run index and in the batch (a record past the batch's first MAX_PER_KEY of a key that the run index
    takes because some before it were not added is a late peer); the rule's verdicts on each record's
    candidates are those of the pairs, measured beforehand or late.
    ``hashed``: the keys held come as hashes (as the workers make them), their strings made only when a
    crowded key is counted; the crowded counts are the same."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(native.ENV_SWITCH, switch)
        _check_batch(before, batch, hashed=False)
        counted = dict(_CROWDED)
        _check_batch(before, batch, hashed=hashed)
        assert _CROWDED == counted
        _check_batch(before, batch, hashed=hashed, rule=_Every)
        assert _CROWDED == counted


_CROWDED: dict[str, int] = {}


def _check_batch(before: list[list[str]], batch: list[tuple[list[str], bool]], *, hashed: bool,
                 rule: type[_EveryThird] = _EveryThird) -> list[list[str]]:
    """Each record's candidates (ids), checked against the run index's lookups: those labelling reads as
    documents (the batch's records before it), the clusters of those the rule pairs it with (with `_Every`,
    all of them), and the latest write order among them all; and `BatchCandidates.near_roots`, the write
    order and clusters read of them, the same."""
    config = FingerprintConfig()
    index = RunIndex()
    # Ten or more: some key held by MAX_PER_KEY before the batch; else a few documents, and a batch that fills it.
    for n, keys in enumerate(before * (MAX_PER_KEY // len(before) + 1) if len(before) >= 10 else before):
        index.add_keys(_doc(n), keys)
    items = [_record(n, keys) for n, (keys, _) in enumerate(batch)]
    labeller = SimpleNamespace(config=config, window=SimpleNamespace(run_index=index), rule=rule())
    probes = KeyLists([run_keys(d, config, probing=True) for d in items])
    found: list[list[StoredDoc]] = [[] for _ in items]
    holds = KeyLists([run_keys(d, config, probing=False) for d in items])
    if hashed:
        named: list[int] = []
        holds = KeyLists.hashed(holds.hashes, holds.counts, lambda r: named.append(r) or holds_keys[r])
        holds_keys = [run_keys(d, config, probing=False) for d in items]
    cands = BatchCandidates(labeller, items, found, probes, holds)  # type: ignore[arg-type]
    seen: list[list[str]] = []
    for i, (d, (_, added)) in enumerate(zip(items, batch, strict=True)):
        expected = index.lookup(probes.keys_of(i))
        # What labelling reads (made without documents where the batch goes into the run index whole), before
        # `candidates` makes documents of the batch's records, and its parts from `candidates` and `near`.
        read_after, read_roots = cands.near_roots(i, [], set())
        got, after, run_near = cands.candidates(i, [], set())
        assert read_after == after
        assert sorted(read_roots) == sorted([*run_near, *(c.root for c in cands.near(i, got))])
        seen.append([c.id for c in got])
        assert after == max((c.seq for c in expected), default=0)
        # The run index's near-duplicates come as their clusters (each document its own here), then the batch's.
        near = [root[1] for root in run_near] + [c.id for c in cands.near(i, got)]
        assert near == [c.id for c in expected if rule.pairs(i, c.id)]
        assert [c.id for c in got] == [c.id for c in expected if c.seq >= 1000]  # the batch's records
        if added:
            cands.add(i, 1000 + i, (0, d.id), index)
            cands.added_all(index)  # the run index as the next record's lookup finds it (labelling adds them at its end)
    if hashed:  # a record's keys were named only where one of them was crowded
        assert all(set(holds_keys[r]) & set(index.crowded) for r in named)
    _CROWDED.clear()
    _CROWDED.update(index.crowded)
    return seen


def test_a_record_past_the_batch_s_first_holders_of_a_key_is_found_when_those_before_it_were_not_added() -> None:
    """Forty records of one key, the first ten not added (skipped): the run index takes the other thirty, eight of
    them past the batch's first MAX_PER_KEY holders of the key (late peers), and the last record finds them all."""
    batch = [([KEYS[0]], n >= 10) for n in range(MAX_PER_KEY + 8)]
    found = _check_batch([], batch, hashed=False)
    assert found[-1] == [f"r{n}" for n in range(10, MAX_PER_KEY + 7)]


@pytest.mark.parametrize("rule", [_Every, _EveryThird])
def test_the_store_s_copy_of_a_run_document_wins_and_deleted_ids_are_no_candidates(rule) -> None:
    """A document of the run index that the store holds too (``found``: its labels may have moved since) is
    the store's copy alone, and a deleted one is no candidate: neither's cluster is joined nor its write
    order counted from the run index's columns."""
    config = FingerprintConfig()
    index = RunIndex()
    for n in range(1, 7):
        index.add_keys(_doc(n), [KEYS[0]])
    items = [_record(0, [KEYS[0]])]
    keys = KeyLists([run_keys(d, config, probing=False) for d in items])
    copy = StoredDoc("d2", 2, np.zeros(1, dtype=np.float32), False, 1, 1, "d1", "d1", seq=2, cluster_seq=1)
    labeller = SimpleNamespace(config=config, window=SimpleNamespace(run_index=index), rule=rule())
    cands = BatchCandidates(labeller, items, [[copy]], keys, keys)  # type: ignore[arg-type]
    got, after, run_near = cands.candidates(0, [copy], {"d5", "d6"})
    assert got == [copy] and after == 4  # d1, d3, d4 and the store's d2; not d5, d6
    paired = [n for n in (1, 3, 4) if rule.pairs(0, f"d{n}")]
    assert run_near == [(0, f"d{n}") for n in paired]
    assert cands.near(0, got) == ([copy] if rule.pairs(0, "d2") else [])
    got, after, run_near = cands.candidates(0, [], set())
    assert got == [] and after == 6 and run_near == [(0, f"d{n}") for n in range(1, 7) if rule.pairs(0, f"d{n}")]


HELD_ST = (st.lists(st.lists(st.integers(0, 30), max_size=5), max_size=40) |
           st.lists(st.lists(st.integers(0, 4), max_size=3), min_size=40, max_size=120))
PROBED_ST = st.lists(st.lists(st.integers(0, 30), max_size=5), max_size=40)


@settings(max_examples=200, deadline=None)
@given(HELD_ST, PROBED_ST)
def test_a_record_s_batch_peers_are_the_earlier_records_holding_a_hash_it_probes(held, probed) -> None:
    """`batch_peers` against the definition, pair by pair: for one key list serving as both (the default band
    layout, where only hashes held twice are looked at) and for separate probe lists, a hash listed twice by
    a record among them. A record's peers are the earlier records among the first MAX_PER_KEY to hold a hash
    it probes; those past them are named with the hashes they are past the first of. Value 0 hashes to 0."""
    _same_peers(batch_peers, held, probed)
    _same_peers(_batch_peers, held, probed)


def test_the_native_batch_peers_are_the_definition(extension, switch_on) -> None:
    """The extension's `batch_peers` (its own table of the batch's keys, 0 kept apart), against the same
    definition."""
    def native_peers(probes: KeyLists, holds: KeyLists) -> tuple[list[list[int]], dict[int, frozenset[int]]]:
        found = native_keys.batch_peers(probes.hashes, probes.counts, holds.hashes, holds.counts, MAX_PER_KEY)
        assert found is not None
        peers, records, keys = found
        return peers, _past_first(records, keys)

    settings(max_examples=200, deadline=None)(given(HELD_ST, PROBED_ST)(
        lambda held, probed: _same_peers(native_peers, held, probed)))()


def _same_peers(peers_of: Callable[[KeyLists, KeyLists], object], held: list[list[int]],
                probed: list[list[int]]) -> None:
    def lists(values: list[list[int]]) -> KeyLists:
        return KeyLists.hashed(np.array([v * 0x9E3779B97F4A7C15 % 2**64 for vs in values for v in vs],
                                        dtype=np.uint64), [len(vs) for vs in values], lambda r: [])

    holders: dict[int, list[int]] = {}
    for j, values in enumerate(held):
        for v in dict.fromkeys(values):
            holders.setdefault(v, []).append(j)
    first = {v: set(js[:MAX_PER_KEY]) for v, js in holders.items()}
    past = {}
    for v, js in holders.items():
        for j in js[MAX_PER_KEY:]:
            past.setdefault(j, set()).add(v * 0x9E3779B97F4A7C15 % 2**64)

    def wanted(probes: list[list[int]]) -> tuple[list[list[int]], dict[int, frozenset[int]]]:
        return ([[j for j in range(i) if any(j in first.get(v, ()) for v in probes[i])] for i in range(len(held))],
                {j: frozenset(hs) for j, hs in past.items()})

    holds = lists(held)
    probed = (probed + [[]] * len(held))[:len(held)]
    assert peers_of(holds, holds) == wanted(held)
    assert peers_of(lists(probed), holds) == wanted(probed)
    assert peers_of(lists(held), holds) == wanted(held)  # the same lists, as two objects


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=300) | st.lists(st.integers(0, 5), max_size=300))
def test_the_holders_of_a_hash_are_ordered_as_a_stable_sort_orders_them(values: list[int]) -> None:
    """`batch_peers`'s quicksort with its ties put back in order gives what a stable sort gives, for hashes
    mostly distinct and for a few values held many times."""
    hashes = np.array(values, dtype=np.uint64)
    assert _stable_order(hashes).tolist() == np.argsort(hashes, kind="stable").tolist()


def test_without_neighbour_probes_a_record_looks_up_the_keys_it_holds() -> None:
    """What `run_key_lists` relies on to use one key list for both: under a band layout of probe radius 0
    (the default's), the keys a record probes are the keys it holds, texts with and without words alike."""
    from esdedup.fingerprint.fingerprinter import Fingerprinter
    from esdedup.ingest.labels import run_key_lists
    from esdedup.schema import content_sha1

    texts = ["床前明月光，疑是地上霜。举头望明月，低头思故乡。", "。", "a" * 300 + " 白日依山尽，黄河入海流。" * 20]
    for config in (FingerprintConfig(), FingerprintConfig(strategy="simhash")):
        assert config.band_layout().radius == 0
        items = [FingerprintedRecord(SimpleNamespace(), fp, fp.simhash, content_sha1(t), f"r{n}")  # type: ignore[arg-type]
                 for n, (t, fp) in enumerate(zip(texts, Fingerprinter(config).fingerprint_many(texts), strict=True))]
        assert [run_keys(d, config, probing=True) for d in items] == [run_keys(d, config, probing=False)
                                                                      for d in items]
        probes, holds = run_key_lists(items, config)
        want = [run_keys(d, config, probing=False) for d in items]
        assert probes is holds and [holds.keys_of(r) for r in range(len(items))] == want
        # Where the workers made the hashes of the keys held, the lists are the same: of the whole batch, and of
        # the records left of it (others were rejected), in any order.
        held = HeldHashes.counted(key_hashes([k for keys in want for k in keys]), [len(keys) for keys in want])
        for r, d in enumerate(items):
            d.held, d.row = held, r
        for kept in ([0, 1, 2], [2, 0], [1]):
            probes, holds = run_key_lists([items[r] for r in kept], config)
            assert probes is holds and [holds.keys_of(x) for x in range(len(kept))] == [want[r] for r in kept]
            assert holds.hashes.tolist() == key_hashes([k for r in kept for k in want[r]]).tolist()
            assert holds.counts == [len(want[r]) for r in kept]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=15), st.integers(0, 11))
def test_a_new_document_joining_one_cluster_is_a_join_of_the_two(links, near) -> None:
    """`MemoryWindow.join_new` (a new document near one cluster: most near-duplicates) leaves the run's view of
    the clusters as `MemoryWindow.join` of the two does, demotes no representative, and returns the same."""
    def window() -> MemoryWindow:
        w = MemoryWindow(created=True)
        for k in range(12):
            w.written[f"d{k}"] = f"s{k}"
            w.own_roots.add(f"d{k}")
        for a, b in links:  # some clusters of the twelve documents
            w.join({w.roots.find((a + 1, f"d{a}")), w.roots.find((b + 1, f"d{b}"))})
        return w

    whole, fast = window(), window()
    top = whole.roots.find((near + 1, f"d{near}"))
    me = (100, "new")
    for w in (whole, fast):
        w.written["new"] = "s"
    assert fast.join_new(me, top) == top
    assert whole.join({top, me}) == (top, 0)
    assert fast.roots._parent == whole.roots._parent and fast.own_roots == whole.own_roots
    assert fast.roots.find(me) == top
