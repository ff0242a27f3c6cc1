"""All-pairs search gives the same pairs, in the same order with the same fields, whichever path runs it: the
native LSH join and equal-position count (esdedup_native.lsh_pairs, pair_equal_positions) against numpy's
(ESDEDUP_NATIVE=0), both against a brute-force join, and `find_pairs` (the rule over the LSH candidates'
arrays) against the rule over each scored candidate (`scored_pairs`, `verdicts`, `ScoredPair.to_pair`).
`similar` verifies many texts' candidates together (`verify_many`) with the matches of one text at a time.

The native tests skip without the extension unless ESDEDUP_REQUIRE_NATIVE=1 (the `extension` fixture, tests/unit/conftest.py).
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import random
from collections import Counter, defaultdict

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.errors import ConfigError
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match import joins, lookup
from esdedup.match import pairs as P
from esdedup.match.joins import lsh_pair_indices
from esdedup.match.lookup import VERIFY_BATCH, Match
from esdedup.match.measures import hamming_of, measure, measured, pair_equal_positions
from esdedup.match.pairs import Pair, find_pairs, scored_pairs, verdicts
from esdedup.match.rule import decided_by, decided_by_many
from esdedup.match.thresholds import ThresholdOverrides, Thresholds
from esdedup.schema import content_sha1
from esdedup.store.base import NewDoc
from esdedup.store.columns import SignatureColumns, reads_signature_columns
from esdedup.store.local import LocalStore
from esdedup.util import native
from tests.corpus import make_document, make_variant


def _brute_join(sigs: np.ndarray, bands: int, rows: int, max_bucket: int) -> tuple[set[tuple[int, int]], list]:
    """The LSH join by its definition: rows grouped by each band's values, the first max_bucket of a group paired."""
    found: set[tuple[int, int]] = set()
    crowded = []
    for band in range(bands):
        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for x, sig in enumerate(sigs.tolist()):
            groups[tuple(sig[band * rows:(band + 1) * rows])].append(x)
        for members in groups.values():
            if len(members) >= max_bucket:
                crowded.append((band, members[0], len(members)))
            found.update(itertools.combinations(members[:max_bucket], 2))
    return found, sorted(crowded)


def _random_sigs(rng: np.random.Generator, n: int, perm: int, alphabet: int, high: int) -> np.ndarray:
    """Signatures whose values come from a few of ``alphabet`` values (many band collisions), some rows
    copies of others, the values spread up to ``high``."""
    spread = np.r_[high - 1, rng.integers(0, high, size=alphabet - 1, dtype=np.int64)]
    sigs = spread[rng.integers(0, alphabet, size=(n, perm))].astype(np.uint32)
    copies = rng.integers(0, n, size=n // 4)
    sigs[rng.integers(0, n, size=n // 4)] = sigs[copies]
    return sigs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("perm", "bands", "rows", "high"), [
    (12, 4, 3, 1 << 16),    # the band values pack into one integer
    (12, 3, 4, 1 << 16),
    (15, 3, 5, 1 << 16),    # 16-bit values that do not pack: hashed, then compared
    (8, 4, 2, 1 << 32),     # 32-bit values
    (9, 3, 3, 1 << 32),
])
def test_lsh_join_is_the_brute_force_join_on_both_paths(seed, perm, bands, rows, high, monkeypatch, extension):
    rng = np.random.default_rng(seed)
    sigs = _random_sigs(rng, int(rng.integers(2, 120)), perm, int(rng.integers(2, 4)), high)
    max_bucket = int(rng.integers(2, 12))
    want, want_crowded = _brute_join(sigs, bands, rows, max_bucket)
    for switch in ("1", "0"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        crowded: list[tuple[int, int, int]] = []
        left, right = lsh_pair_indices(sigs, bands, rows, max_bucket=max_bucket, crowded=crowded)
        assert left.dtype == right.dtype == np.int64
        codes = left * len(sigs) + right
        assert (np.diff(codes) > 0).all(), "sorted, each pair once"
        assert set(zip(left.tolist(), right.tolist(), strict=True)) == want
        assert crowded == want_crowded


def test_lsh_join_logs_the_band_values_it_cut(monkeypatch, caplog, extension):
    sigs = np.zeros((7, 6), dtype=np.uint32)
    for switch in ("1", "0"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=joins.__name__):
            left, _ = lsh_pair_indices(sigs, 2, 3, max_bucket=4)
        assert len(left) == 6
        assert "2 LSH band values are shared by more than 4 documents" in caplog.text


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("layout", [BandLayout.pigeonhole(64, 3), BandLayout.multi_table(64, 1, 3),
                                    BandLayout(64, 0, 1, 1, 0), BandLayout.pigeonhole(128, 3)],
                         ids=["4x16", "3x43", "1x64", "128-bit"])
def test_band_join_is_the_brute_force_join_on_both_paths(seed, layout, monkeypatch, caplog, extension):
    """The SimHash band keys joined in memory: the rows with band keys that share a key of a table, the first
    max_bucket of a key paired, a key held by max_bucket rows or more logged by name, as the store's key groups
    give them. Keys of 16, 43 and 64 bits (two 32-bit values a key past 32) and 128-bit SimHashes."""
    rng = random.Random(seed)
    bases = [rng.getrandbits(layout.bits) for _ in range(4)]
    # Near copies of a few bases (one bit flipped in one block at most) and unrelated ones: crowded keys too.
    simhashes = [rng.choice(bases) ^ (1 << rng.randrange(layout.bits)) if rng.random() < 0.6 else
                 rng.getrandbits(layout.bits) for _ in range(rng.randrange(20, 90))]
    banded = np.array([rng.random() < 0.8 for _ in simhashes])
    max_bucket = rng.randrange(2, 12)
    want: set[tuple[int, int]] = set()
    crowded = set()
    for t in range(layout.n_tables):
        groups: dict[int, list[int]] = defaultdict(list)
        for x, h in enumerate(simhashes):
            if banded[x]:
                groups[layout.key_values(h)[t]].append(x)
        for value, members in groups.items():
            if len(members) >= max_bucket:
                crowded.add(layout.format_key(t, value))
            want.update(itertools.combinations(members[:max_bucket], 2))
    for switch in ("1", "0"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=joins.__name__):
            left, right = joins.band_pair_indices(layout, simhashes, banded, max_bucket=max_bucket)
        assert left.dtype == right.dtype == np.int64
        assert (np.diff(left * len(simhashes) + right) > 0).all(), "sorted, each pair once"
        assert set(zip(left.tolist(), right.tolist(), strict=True)) == want
        assert {r.args[0] for r in caplog.records} == crowded


@pytest.mark.parametrize("high", [1 << 16, 1 << 32])
def test_pair_equal_positions_agree_with_numpy(high, monkeypatch, extension):
    rng = np.random.default_rng(3)
    sigs = _random_sigs(rng, 50, 64, 3, high)
    left, right = rng.integers(0, 50, size=400), rng.integers(0, 50, size=400)
    want = (sigs[left] == sigs[right]).sum(axis=1)
    for switch in ("1", "0"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        got = pair_equal_positions(sigs, left, right)
        assert got.tolist() == want.tolist()
        assert len(pair_equal_positions(sigs, left[:0], right[:0])) == 0


def test_decided_by_many_names_what_decided_by_names_one_at_a_time():
    rng = random.Random(5)
    nan = float("nan")
    limits = [Thresholds(hamming_k=h, cosine=c, jaccard=j, containment=ct)
              for h, c, j, ct in itertools.product([None, 3], [None, 0.8], [None, 0.5], [None, 0.8]) if h or c]
    for t in limits:
        rows = [(rng.choice([nan, 2.0, 5.0]), rng.choice([nan, 0.5, 0.9]), rng.choice([nan, 0.3, 0.5, 0.7]),
                 rng.choice([nan, 0.2, 0.9]), rng.random() < 0.3) for _ in range(60)]
        columns = [np.array(c) for c in zip(*rows, strict=True)]
        many = decided_by_many(t, hamming=columns[0], cosine=columns[1], jaccard=columns[2], legacy_short=columns[4])
        assert many == [decided_by(t, hamming=h, cosine=c, jaccard=j, containment=ct, legacy_short=s)
                        for h, c, j, ct, s in rows]


@pytest.fixture(scope="module", params=["auto", "flat"])
def corpus_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> LocalStore:
    """Short and long documents with planted variants, some texts without words (exact copies of each other);
    without vectors (the default) and with (the pairs show their cosines)."""
    rng = random.Random(11)
    texts: list[str] = []
    for _ in range(150):
        doc = make_document(rng, rng.choice([1, 1, 2, 6]))
        texts.append(doc)
        for _ in range(rng.randrange(3)):
            texts.append(make_variant(rng, doc))
    texts += ["。。", "……", "！"] * 2
    rng.shuffle(texts)
    fper = Fingerprinter(FingerprintConfig(tokenizer="rjieba", vector_index=request.param))
    store = LocalStore("pairs", tmp_path_factory.mktemp("native_pairs"))
    store.open(fper.config)
    fps = fper.fingerprint_many(texts)
    list(store.write(NewDoc(f"d{i:04d}", fp, {"text": t}, content_sha1(fper.normalize(t)))
                     for i, (t, fp) in enumerate(zip(texts, fps, strict=True))))
    return store


def _judged_one_by_one(store: LocalStore, t: Thresholds) -> list[Pair]:
    """`find_pairs` as the rule over each scored candidate, then the exact copies without words."""
    scored = list(scored_pairs(store, hamming_k=t.hamming_k))
    kept = [p.to_pair(t, vectors=store.config.stores_vector) for p, dup in zip(scored, verdicts(scored, t), strict=True)
            if dup]
    return kept + list(P.empty_copy_pairs(store))


@pytest.mark.parametrize(("overrides", "cosine_alone"), [
    (None, False), (ThresholdOverrides(jaccard=0.7), False), (ThresholdOverrides(containment=None), False),
    (ThresholdOverrides(jaccard=None, containment=None, cosine=0.6), True)])
def test_find_pairs_is_the_rule_over_each_candidate_on_both_paths(corpus_store, overrides, cosine_alone, monkeypatch,
                                                                  extension):
    if cosine_alone and not corpus_store.config.stores_vector:
        # The cosine alone decides only on an index that stores vectors: both paths refuse, naming the fix.
        for switch in ("1", "0"):
            monkeypatch.setenv(native.ENV_SWITCH, switch)
            with pytest.raises(ConfigError, match="vector_index such as"):
                list(find_pairs(corpus_store, thresholds=overrides))
        return
    found = {}
    for switch in ("1", "0"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        t = P.lookup_thresholds(overrides, corpus_store.config)
        found[switch] = list(find_pairs(corpus_store, thresholds=overrides))
        assert found[switch] == _judged_one_by_one(corpus_store, t)
        assert [p.to_dict() for p in found[switch]] == [p.to_dict() for p in _judged_one_by_one(corpus_store, t)]
    assert found["1"] == found["0"]
    assert len(found["1"]) > 100
    assert any(p.decided_by == "content_sha1" for p in found["1"])
    assert all((p.cosine is not None) == corpus_store.config.stores_vector for p in found["1"] if p.jaccard is not None)


def test_a_pair_is_a_value_that_sets_and_dicts_take(corpus_store):
    """`Pair` is not frozen (its constructor is paid for every pair of a store), yet it stays a value: pairs with
    the same fields are equal and hash alike, so a set of a search's pairs, found twice, holds each once."""
    found = list(find_pairs(corpus_store))
    again = [Pair(*dataclasses.astuple(p)) for p in found]
    assert again == found and again is not found
    assert len(set(found) | set(again)) == len(found) > 100
    assert {p: p.decided_by for p in again}[found[0]] == found[0].decided_by
    assert Pair("a", "b", 3, None) != Pair("a", "b", 4, None)


def test_the_embedded_store_reads_the_columns_a_scan_gives(corpus_store):
    """`LocalStore.signature_columns` (one query, no document objects) and `SignatureColumns.of` a scan (every
    other store) give all-pairs search the same columns."""
    config = corpus_store.config
    assert reads_signature_columns(corpus_store)
    read = corpus_store.signature_columns(config.minhash_perm)
    scanned = SignatureColumns.of((d for batch in corpus_store.scan(batch=7) for d in batch), config)
    assert (read.ids, read.simhash, read.chars, read.shingles) == (scanned.ids, scanned.simhash, scanned.chars,
                                                                   scanned.shingles)
    assert read.sigs.dtype == scanned.sigs.dtype == np.uint32
    assert np.array_equal(read.sigs, scanned.sigs)
    assert read.vectors().tobytes() == scanned.vectors().tobytes()
    assert read.vectors().any() == config.stores_vector
    assert 0 < len(read.ids) < corpus_store.count()


def test_the_embedded_store_groups_the_exact_copies_a_scan_gives(corpus_store, tmp_path, monkeypatch):
    """`LocalStore.copy_columns` (one query of three columns, the rows of shared SHA-1s only) and `copy_rows` of a
    scan (every other store) give the same exact-copy groups to all-pairs search: copies with and without words, a
    document written without a content SHA-1 and one with an empty one in no group, and `find_pairs` the same
    pairs either way."""
    fper = Fingerprinter(corpus_store.config)
    store = LocalStore("copies", tmp_path)
    store.open(fper.config)
    texts = ["北京欢迎你，我们去公园散步。", "北京欢迎你，我们去公园散步。", "今天天气很好", "。。", "！！", "。。"]
    docs = [NewDoc(f"c{i}", fp, {"text": t}, content_sha1(fper.normalize(t)))
            for i, (t, fp) in enumerate(zip(texts, fper.fingerprint_many(texts), strict=True))]
    docs += [dataclasses.replace(docs[0], id="c6", content_sha1=None),
             dataclasses.replace(docs[0], id="c7", content_sha1="")]
    list(store.write(docs))
    for s in (store, corpus_store):
        rows = sorted(s.copy_columns())
        scanned = P.copy_rows(d for batch in s.scan(batch=7) for d in batch)
        held = Counter(sha1 for _, sha1, _ in scanned)
        assert rows == sorted(r for r in scanned if held[r[1]] > 1)
        assert len(rows) < len(scanned)  # the singletons are left in the store
        groups = P.CopyGroups.of(s).groups
        with monkeypatch.context() as m:
            m.setattr(joins, "reads_signature_columns", lambda _store: False)  # as a store without columns
            m.setattr(P, "reads_copy_columns", lambda _store: False)
            assert P.CopyGroups.of(s).groups == groups
            scanned = list(find_pairs(s))
        assert list(find_pairs(s)) == scanned
    assert sorted((empty, ids) for _, empty, ids in P.CopyGroups.of(store).groups) == [
        (False, ["c0", "c1"]), (True, ["c3", "c5"])]


def _verified_one_text_at_a_time(fp, cands, config, t, sha1) -> list[Match]:
    """`verify` by its definition: `measure` of the text against its candidates, the rule, `decided_by` each."""
    docs = [d for d in cands if not d.empty]
    if fp.empty or not docs:
        return []
    m = measure(fp, docs, config)
    out = []
    for i in np.flatnonzero(m.decide(t)).tolist():
        cosine = float(m.cosine[i]) if config.stores_vector else None
        jaccard, containment = measured(m.jaccard[i]), measured(m.containment[i])
        out.append(Match(docs[i].id, hamming_of(m.hamming[i]), cosine, jaccard=jaccard, containment=containment,
                         exact=docs[i].content_sha1 == sha1,
                         decided_by=decided_by(t, hamming=float(m.hamming[i]), cosine=cosine, jaccard=jaccard,
                                               containment=containment, legacy_short=bool(m.legacy_short[i]))))
    return sorted(out, key=Match.rank)


@pytest.mark.parametrize("batch", [5, VERIFY_BATCH])
def test_a_candidate_texts_share_is_judged_as_copies_of_it_are(corpus_store, batch, monkeypatch):
    """A candidate object several texts' lists share (a batch's near-duplicates share theirs) is measured
    once a chunk, with the verdicts of a copy in each list."""
    monkeypatch.setattr(lookup, "VERIFY_BATCH", batch)
    config = corpus_store.config
    t = P.lookup_thresholds(None, config)
    docs = corpus_store.sample(30)
    texts = [corpus_store.get_source(d.id)["text"] for d in docs[:12]]  # type: ignore[index]
    fps = Fingerprinter(config).fingerprint_many(texts)
    sha1s = [d.content_sha1 for d in docs[:12]]
    shared = lookup.near_positions(fps, [docs] * len(fps), config, t, exclude=[None] * len(fps), sha1s=sha1s)
    copies = lookup.near_positions(fps, [[dataclasses.replace(d) for d in docs] for _ in fps], config, t,
                                   exclude=[None] * len(fps), sha1s=sha1s)
    assert shared == copies
    assert all(k in found for k, found in enumerate(shared))  # each text's own stored copy, at least


@pytest.mark.parametrize("batch", [7, VERIFY_BATCH])
def test_texts_verified_together_get_the_matches_of_one_at_a_time(corpus_store, batch, monkeypatch, extension):
    monkeypatch.setattr(lookup, "VERIFY_BATCH", batch)
    config = corpus_store.config
    t = P.lookup_thresholds(None, config)
    fper = Fingerprinter(config)
    rng = random.Random(2)
    texts = [make_variant(rng, make_document(rng, rng.choice([1, 2, 6]))) for _ in range(20)]
    # Stored texts: found again by their own keys, their exact copies first.
    texts += [corpus_store.get_source(d.id)["text"] for d in corpus_store.sample(40)]  # type: ignore[index]
    fps = fper.fingerprint_many(texts)
    sha1s = [content_sha1(fper.normalize(x)) for x in texts]
    found = corpus_store.lookup([lookup.probe_for(fp, config) for fp in fps])
    want = [_verified_one_text_at_a_time(fp, cands, config, t, sha) for fp, cands, sha in zip(fps, found, sha1s,
                                                                                             strict=True)]
    assert sum(map(len, want)) > 40
    for switch in ("1", "0"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        got = lookup.verify_many(fps, found, config, t, exclude=[None] * len(fps), sha1s=sha1s)
        assert got == want
        assert [m.decided_by for ms in got for m in ms] == [m.decided_by for ms in want for m in ms]


def test_the_all_pairs_join_reads_the_store_with_fewer_collections(corpus_store, monkeypatch):
    """Every stored document is read and held before the join: the young generation is collected less often
    while they are read (`fewer_collections`), and the program's own threshold is back afterwards."""
    import gc

    from esdedup.util.collector import YOUNG_COLLECTION_ALLOCATIONS

    seen: list[int] = []
    read = corpus_store.signature_columns

    def recording(perm: int) -> SignatureColumns:
        seen.append(gc.get_threshold()[0])
        return read(perm)

    monkeypatch.setattr(corpus_store, "signature_columns", recording)
    before = gc.get_threshold()
    assert list(find_pairs(corpus_store, in_memory=True))
    assert seen == [max(before[0], YOUNG_COLLECTION_ALLOCATIONS)]
    assert gc.get_threshold() == before


def test_text_rows_put_the_texts_between_the_literals(extension: None, switch_on: None) -> None:
    """`dups`' lines of pairs held as columns (esdedup_native.text_rows): row x interleaves the literals with
    each table's text at its code, the rows between two cuts joined by the separator; a code outside its table,
    code arrays of two lengths, a count of literals that does not fit, cuts that do not cover the rows and a
    table entry that is not a str are refused; a text that is no UTF-8 (a lone surrogate) is left to Python."""
    from esdedup.match.native_kernels import text_rows

    rng = np.random.default_rng(5)
    tables = [["x", "台湾", "", 'q"\\'], ["\x00\x1b", "é" * 50]]
    codes = [rng.integers(0, 4, 500), rng.integers(0, 2, 500)]
    rows = [f"<{tables[0][a]}|{tables[1][b]}>" for a, b in zip(codes[0].tolist(), codes[1].tolist(), strict=True)]
    for cuts in ([0, 500], [0, 1, 2, 499, 500], list(range(501))):
        assert text_rows(["<", "|", ">"], codes, tables, ", ", cuts) == [
            ", ".join(rows[lo:hi]) for lo, hi in zip(cuts, cuts[1:], strict=False)]
    same = tables[0]  # one table given twice is read once, and reads the same
    assert text_rows(["", "-", ""], [codes[0], codes[0][::-1]], [same, same], "\n", [0, 500]) == [
        "\n".join(f"{same[a]}-{same[b]}" for a, b in zip(codes[0].tolist(), codes[0][::-1].tolist(), strict=True))]
    assert text_rows(["only"], [], [], "", [0]) == [] and text_rows(["(", ")"], [np.zeros(0, dtype=np.int64)], [[]], "", [0]) == []
    with pytest.raises(ValueError, match="code 4 is outside its table of 4 texts"):
        text_rows(["", "", ""], [np.array([4]), np.array([0])], tables, "", [0, 1])
    with pytest.raises(ValueError, match="code -1 is outside"):
        text_rows(["", ""], [np.array([-1])], tables[:1], "", [0, 1])
    with pytest.raises(ValueError, match="one length"):
        text_rows(["", "", ""], [np.array([0, 1]), np.array([0])], tables, "", [0, 2])
    with pytest.raises(ValueError, match="one more literal"):
        text_rows(["", ""], [np.array([0]), np.array([0])], tables, "", [0, 1])
    for cuts in ([0], [1, 2], [0, 2, 1, 2], [0, 3]):
        with pytest.raises(ValueError, match="cuts must ascend from 0 to the 2 rows"):
            text_rows(["", ""], [np.array([0, 1])], tables[:1], "", cuts)
    with pytest.raises(TypeError):
        text_rows(["", ""], [np.array([0])], [[1]], "", [0, 1])  # type: ignore[list-item]
    assert text_rows(["", ""], [np.array([0])], [["\udc80"]], "", [0, 1]) is None
