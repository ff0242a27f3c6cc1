"""Short/long strategy switch, the n-gram rule, neighbour probing against brute force (k up to 8), and
the cap on over-full band values."""
from __future__ import annotations

import dataclasses
import itertools
import logging
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup import FingerprintConfig
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.features import char_shingles
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
from esdedup.match.lookup import probe_for, similar
from esdedup.match.measures import minhash_estimates as short_scores
from esdedup.match.pairs import ScoredPair, find_pairs, probe_pairs, scored_pairs, verdicts
from esdedup.match.rule import is_duplicate
from esdedup.match.thresholds import ThresholdOverrides, Thresholds
from esdedup.store.base import NewDoc
from esdedup.store.local import LocalStore
from tests.corpus import SENTENCES

SHORT = "国家统计局今天发布了最新的经济数据，第三季度国内生产总值同比增长百分之五点二。"
LONG = "".join(SENTENCES[:8])


@pytest.fixture(scope="module")
def fper() -> Fingerprinter:
    return Fingerprinter(FingerprintConfig(tokenizer="rjieba"))


# -- the strategy switch ------------------------------------------------------------------------------
def test_auto_strategy_gives_short_texts_lsh_only_and_long_texts_both(fper):
    cfg = fper.config
    assert len(SHORT) < cfg.short_text_chars <= len(LONG)
    short, long_ = fper.fingerprint_many([SHORT, LONG])
    assert short.bands == [] and len(short.lsh) == cfg.minhash_bands
    assert short.minhash is not None
    assert short.shingles == len(set(char_shingles(fper.normalize(SHORT), cfg.minhash_ngram)))
    assert len(long_.bands) == cfg.band_layout().n_tables and len(long_.lsh) == cfg.minhash_bands
    # a short text probes LSH bands only, a long one both kinds
    assert set(probe_for(short, cfg)) == {f"lsh_{i}" for i in range(cfg.minhash_bands)}
    assert {f"band_{i}" for i in range(cfg.band_layout().n_tables)} <= set(probe_for(long_, cfg))


@pytest.mark.parametrize("strategy, short_bands, short_lsh, long_bands, long_lsh",
                         [("simhash", True, False, True, False), ("minhash", False, True, False, True)])
def test_strategy_can_be_overridden(strategy, short_bands, short_lsh, long_bands, long_lsh):
    f = Fingerprinter(FingerprintConfig(tokenizer="rjieba", strategy=strategy))
    short, long_ = f.fingerprint_many([SHORT, LONG])
    assert (bool(short.bands), bool(short.lsh), bool(long_.bands), bool(long_.lsh)) == (
        short_bands, short_lsh, long_bands, long_lsh)
    assert (short.minhash is not None) == short_lsh


def test_short_text_threshold_moves_the_switch():
    f = Fingerprinter(FingerprintConfig(tokenizer="rjieba", short_text_chars=len(SHORT)))
    assert f.fingerprint(SHORT).bands  # exactly at the limit: no longer short


def test_ngram_rule_decides_pairs_with_signatures():
    t = Thresholds(3, 0.8, 0.5, 0.8)
    # far in Hamming and cosine, but the n-grams agree: a duplicate
    assert is_duplicate(30, 0.1, t, True, jaccard=0.6, containment=0.6)
    assert is_duplicate(30, 0.1, t, True, jaccard=0.2, containment=0.9)  # one text contains the other
    assert not is_duplicate(0, 1.0, t, True, jaccard=0.49, containment=0.79)
    # without signatures: Hamming and cosine (short pairs: cosine only)
    assert not is_duplicate(4, 0.99, t, False)
    assert is_duplicate(3, 0.8, t, False)
    assert is_duplicate(30, 0.85, t, True) and not is_duplicate(0, 0.5, t, True)
    # containment switched off
    assert not is_duplicate(0, 1.0, Thresholds(3, 0.8, 0.5, None), True, jaccard=0.2, containment=1.0)


_MEASURE = st.none() | st.floats(0, 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.builds(ScoredPair, st.just("a"), st.just("b"), st.integers(0, 64), st.floats(0, 1),
                          st.booleans(), _MEASURE, _MEASURE), max_size=30),
       st.sampled_from([(3, 0.8, 0.5, 0.8), (3, None, 0.5, None), (None, 0.9, None, 0.7), (5, 0.7, None, None)]))
def test_scored_pairs_judged_together_get_the_verdicts_of_one_at_a_time(pairs, limits):
    """`verdicts` (find_pairs judges its pairs in batches) is the rule of `is_duplicate`, pair by pair."""
    t = Thresholds(*limits)
    expected = [is_duplicate(p.hamming, p.cosine, t, p.ngram, jaccard=p.jaccard, containment=p.containment)
                for p in pairs]
    assert verdicts(pairs, t).tolist() == expected
    assert [p.is_duplicate(t) for p in pairs] == expected


def test_short_scores_estimate_jaccard_and_containment(fper):
    edited = SHORT.replace("经济", "金融")
    longer = SHORT + "国家统计局新闻发言人表示，经济运行总体平稳。"
    a, b, c, other = fper.fingerprint_many([SHORT, edited, longer, SENTENCES[5]])
    jac, cont = short_scores(a.minhash, a.shingles, np.stack([b.minhash, c.minhash, other.minhash]),
                             np.array([b.shingles, c.shingles, other.shingles]))
    assert jac[0] > 0.7 and jac[2] < 0.1
    assert cont[1] > 0.85 > jac[1]  # the longer text holds (almost) all of the short one's bigrams
    assert cont[2] < 0.2


# -- neighbour probing: complete for k up to 8 --------------------------------------------------------
def _planted_hashes(n: int, k_max: int, seed: int, bits: int = 64) -> list[int]:
    rng = random.Random(seed)
    hashes = [rng.getrandbits(bits) for _ in range(n)]
    for i in range(0, n - 1, 2):  # every second hash is a copy of the one before at distance 0..k_max+2
        h = hashes[i]
        for bit in rng.sample(range(bits), rng.randint(0, k_max + 2)):
            h ^= 1 << bit
        hashes[i + 1] = h
    return hashes


def _brute(hashes: list[int], k: int) -> set[tuple[int, int]]:
    return {(i, j) for i, j in itertools.combinations(range(len(hashes)), 2)
            if (hashes[i] ^ hashes[j]).bit_count() <= k}


@pytest.mark.parametrize("k, blocks", [(3, 2), (5, 3), (6, 3), (8, 3), (8, 4)])
def test_probe_pairs_find_every_pair_within_k(k, blocks):
    layout = BandLayout.probing(64, k, blocks)
    assert layout.radius > 0
    hashes = _planted_hashes(600, k, seed=k * 10 + blocks)
    left, right = probe_pairs(layout, hashes)
    found = set(zip(left.tolist(), right.tolist(), strict=True))
    truth = _brute(hashes, k)
    assert len(truth) > 200
    assert truth <= found
    assert all(i < j for i, j in found)


def _store_with_hashes(tmp_path, config: FingerprintConfig, hashes: list[int], name: str) -> LocalStore:
    layout = config.band_layout()
    store = LocalStore(name, tmp_path)
    store.open(config)
    vec = np.zeros(config.dims, dtype=np.float32)
    vec[0] = 1.0
    docs = [NewDoc(f"d{i:04d}", Fingerprint(h, layout.keys(h), vec, {"x": 1.0}, 1, chars=500), {}, f"{i}")
            for i, h in enumerate(hashes)]
    assert all(r.ok for r in store.write(docs))
    return store


@pytest.mark.parametrize("k, blocks, key_blocks, radius, bits",
                         [(8, 3, 1, 2, 64), (6, 4, 1, 1, 64), (6, 8, 2, 0, 64), (8, 3, 1, 2, 128), (6, 8, 2, 0, 128)])
def test_find_pairs_matches_brute_force_for_large_k(tmp_path, k, blocks, key_blocks, radius, bits):
    """Probing layouts (radius > 0) are served by the in-memory join, multi-table ones (radius 0) by shared
    keys; either way all-pairs search returns exactly the pairs within k, for 64- and 128-bit fingerprints."""
    config = FingerprintConfig(strategy="simhash", hamming_k=k, band_blocks=blocks, band_key_blocks=key_blocks,
                               probe_radius=radius, bits=bits)
    hashes = _planted_hashes(400, k, seed=k + blocks, bits=bits)
    store = _store_with_hashes(tmp_path, config, hashes, f"probe{k}{blocks}{bits}")
    got = {(p.a, p.b) for p in find_pairs(store, thresholds=ThresholdOverrides(cosine=None))}
    truth = {(f"d{i:04d}", f"d{j:04d}") for i, j in _brute(hashes, k)}
    assert got == truth
    # single lookups probe the same neighbourhood
    fps = [Fingerprint(h, config.band_layout().keys(h), np.eye(1, config.dims, dtype=np.float32)[0], {}, 1,
                       chars=500) for h in hashes[:40]]
    for i, matches in enumerate(similar(store, fps, thresholds=ThresholdOverrides(cosine=None), top=1000, exclude=[f"d{i:04d}" for i in range(40)])):
        want = {b for a, b in truth if a == f"d{i:04d}"} | {a for a, b in truth if b == f"d{i:04d}"}
        assert {m.id for m in matches} == want
    store.drop()


# -- the bucket cap -----------------------------------------------------------------------------------
def test_crowded_band_values_are_capped_and_reported(tmp_path, caplog):
    config = FingerprintConfig(strategy="simhash")
    hashes = [0xABCDEF0123456789] * 30 + _planted_hashes(40, 3, seed=1)
    store = _store_with_hashes(tmp_path, config, hashes, "crowded")
    with caplog.at_level(logging.WARNING, logger="esdedup.match.pairs"):
        pairs = list(find_pairs(store, max_bucket=10, thresholds=ThresholdOverrides(cosine=None)))
    same = [p for p in pairs if int(p.a[1:]) < 30 and int(p.b[1:]) < 30]
    assert len(same) == 10 * 9 // 2  # only the first 10 of the 30 holders of each crowded value
    assert "shared by 10 or more documents" in caplog.text
    crowded = store.crowded_keys(min_count=11)
    assert {k for k, _ in crowded} == set(config.band_layout().keys(hashes[0]))
    assert all(n == 30 for _, n in crowded)
    from esdedup.api import all_pairs

    report = all_pairs(store, max_bucket=10, thresholds=ThresholdOverrides(cosine=None))
    assert {k for k, _ in report.crowded} == set(config.band_layout().keys(hashes[0]))
    store.drop()


def test_crowded_lsh_values_found_in_memory_equal_the_stores_count(tmp_path, fper, caplog):
    """Boilerplate short texts: all-pairs search joins LSH bands in memory, caps each crowded value and
    reports the same values and counts as the store's own index of LSH keys."""
    from esdedup.api import all_pairs

    store = LocalStore("crowded-lsh", tmp_path)
    store.open(fper.config)
    texts = [SHORT] * 25 + [f"{SHORT[:20]}第{i}条不同的消息内容" for i in range(5)]
    fps = fper.fingerprint_many(texts)
    list(store.write(NewDoc(f"c{i:02d}", fp, {"text": t}, "") for i, (t, fp) in enumerate(zip(texts, fps, strict=True))))
    counts = []
    real_count = store.count
    store.count = lambda: counts.append(1) or real_count()  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="esdedup.match.pairs"):
        report = all_pairs(store, max_bucket=10)
    # In memory or not is decided once, so the search and the crowded report cannot disagree.
    assert len(counts) == 1
    assert "LSH band values are shared by more than 10 documents" in caplog.text
    assert sum(1 for p in report.pairs if int(p.a[1:]) < 25 and int(p.b[1:]) < 25) == 10 * 9 // 2
    expected = store.crowded_keys(min_count=10, limit=10)  # merges the deferred keys first: counts every LSH key
    assert report.crowded == expected
    assert len(expected) == 10 and all(k.isdigit() and n >= 25 for k, n in expected)  # LSH keys
    store.drop()


def test_probe_join_caps_crowded_values(caplog):
    layout = BandLayout.probing(64, 4, 2)
    hashes = [0x1234] * 50
    with caplog.at_level(logging.WARNING, logger="esdedup.match.pairs"):
        left, _ = probe_pairs(layout, hashes, max_bucket=5)
    assert len(left) < 50 * 49 // 2
    assert "matched more than 5 documents" in caplog.text


def test_scored_pairs_yields_each_candidate_once(tmp_path, fper):
    config = fper.config
    store = LocalStore("once", tmp_path)
    store.open(config)
    texts = [SHORT, SHORT + "。", SHORT.replace("经济", "金融"), LONG, LONG + "（完）"]
    fps = fper.fingerprint_many(texts)
    list(store.write(NewDoc(f"t{i}", fp, {"text": t}, str(i)) for i, (t, fp) in enumerate(zip(texts, fps, strict=True))))
    pairs = list(scored_pairs(store))
    keys = [(p.a, p.b) for p in pairs]
    assert len(keys) == len(set(keys))
    assert {("t0", "t1"), ("t0", "t2"), ("t1", "t2"), ("t3", "t4")} <= set(keys)
    assert all(p.ngram and p.jaccard is not None for p in pairs)
    assert {(p.a, p.b) for p in find_pairs(store)} >= {("t0", "t1"), ("t3", "t4")}
    store.drop()


def test_probing_find_pairs_on_elasticsearch(es_client, fresh_index):
    """The in-memory probe join reads every document through Store.scan (a point in time on
    Elasticsearch); the answer is the brute-force one, as on the local store."""
    from esdedup.store.elastic.store import ElasticStore

    config = FingerprintConfig(strategy="simhash", hamming_k=8, band_blocks=3, band_key_blocks=1, probe_radius=2)
    hashes = _planted_hashes(300, 8, seed=99)
    layout = config.band_layout()
    store = ElasticStore(es_client, fresh_index, replicas=0)
    store.open(config)
    vec = np.zeros(config.dims, dtype=np.float32)
    vec[0] = 1.0
    docs = [NewDoc(f"d{i:04d}", Fingerprint(h, layout.keys(h), vec, {"x": 1.0}, 1, chars=500), {}, f"{i}")
            for i, h in enumerate(hashes)]
    assert all(r.ok for r in store.write(docs))
    store.refresh()
    assert sum(len(batch) for batch in store.scan(batch=70)) == len(hashes)
    got = {(p.a, p.b) for p in find_pairs(store, thresholds=ThresholdOverrides(cosine=None))}
    assert got == {(f"d{i:04d}", f"d{j:04d}") for i, j in _brute(hashes, 8)}


# -- the in-memory LSH join -----------------------------------------------------------------------------
def test_lsh_pair_indices_equal_brute_force():
    """Pairs of rows equal on every row of some band, each once, left < right; a crowded band value
    contributes only its first max_bucket rows."""
    from esdedup.match.joins import lsh_pair_indices

    rng = np.random.default_rng(3)
    sigs = rng.integers(0, 3, size=(120, 16), dtype=np.uint32)  # few values: many collisions
    for bands, rows in ((8, 2), (5, 3)):  # 5 x 3 leaves the last value out of every band
        left, right = lsh_pair_indices(sigs, bands, rows)
        want = {(i, j) for i, j in itertools.combinations(range(120), 2)
                if any((sigs[i, rows * b:rows * (b + 1)] == sigs[j, rows * b:rows * (b + 1)]).all()
                       for b in range(bands))}
        got = list(zip(left.tolist(), right.tolist(), strict=True))
        assert got == sorted(want)
    crowded = np.zeros((30, 4), dtype=np.uint32)
    left, right = lsh_pair_indices(crowded, 1, 4, max_bucket=5)
    assert set(zip(left.tolist(), right.tolist(), strict=True)) == set(itertools.combinations(range(5), 2))


def test_all_pairs_in_memory_equals_store_key_groups(tmp_path, fper, monkeypatch):
    """find_pairs joins LSH bands in numpy for stores that fit in memory and reads the store's key groups
    otherwise: the same candidate pairs with the same measures either way."""
    import esdedup.match.pairs as pairs_module
    from esdedup.api import all_pairs
    from esdedup.errors import ConfigError
    from tests.corpus import make_corpus

    docs, planted = make_corpus(300, 60, seed=11, sentences=(1, 8))
    store = LocalStore("inmem", tmp_path)
    store.open(fper.config)
    fps = fper.fingerprint_many([d["text"] for d in docs])
    list(store.write(NewDoc(d["id"], fp, {"text": d["text"]}, "") for d, fp in zip(docs, fps, strict=True)))

    def measured():
        return {(p.a, p.b): (p.hamming, round(p.cosine, 5), p.ngram, p.jaccard, p.containment)
                for p in scored_pairs(store)}

    fast = measured()
    monkeypatch.setattr(pairs_module, "LSH_IN_MEMORY_MAX", -1)
    slow = measured()
    assert fast == slow
    with pytest.raises(ConfigError, match="lsh_join must be one of auto, memory, store, got 'disk'"):
        all_pairs(store, lsh_join="disk")
    assert sum(1 for a, b in planted if (min(a, b), max(a, b)) in fast) >= len(planted) * 0.9
    store.drop()


def test_store_key_groups_measure_each_pair_once_under_its_smallest_shared_key(tmp_path, fper, monkeypatch):
    """Read from the store's key groups, a pair of near-duplicates turns up in the group of every key the two
    share (a dozen LSH and band keys); it is measured under the smallest one alone: no pair twice, and the
    pairs are those of the in-memory join."""
    import esdedup.match.pairs as pairs_module
    from tests.corpus import make_corpus

    docs, _ = make_corpus(300, 60, seed=13, sentences=(1, 8))
    store = LocalStore("once", tmp_path)
    store.open(fper.config)
    fps = fper.fingerprint_many([d["text"] for d in docs])
    list(store.write(NewDoc(d["id"], fp, {"text": d["text"]}, "") for d, fp in zip(docs, fps, strict=True)))
    in_memory = sorted((p.a, p.b) for p in scored_pairs(store))
    monkeypatch.setattr(pairs_module, "LSH_IN_MEMORY_MAX", -1)
    from_groups = [(p.a, p.b) for p in scored_pairs(store)]
    lsh = {d["id"]: set(fp.lsh) for d, fp in zip(docs, fps, strict=True)}
    shared = {(a, b) for a, b in from_groups if len(lsh[a] & lsh[b]) > 1}
    assert len(from_groups) == len(set(from_groups)) and sorted(from_groups) == in_memory
    assert len(shared) >= 20  # pairs that several groups hold
    store.drop()


def test_all_pairs_in_memory_measures_equal_measure_pair_by_pair(tmp_path, fper):
    """The in-memory LSH join measures its candidate pairs in bulk (`SketchColumns.measure`); every number must be
    the one `measure` gives the two stored documents, or `dups` would decide otherwise than `similar`."""
    from esdedup.match.measures import hamming_of, measure
    from tests.corpus import make_corpus

    docs, _ = make_corpus(200, 40, seed=5, sentences=(1, 8))
    store = LocalStore("inmem-measures", tmp_path)
    store.open(fper.config)
    fps = fper.fingerprint_many([d["text"] for d in docs])
    list(store.write(NewDoc(d["id"], fp, {"text": d["text"]}, "") for d, fp in zip(docs, fps, strict=True)))
    lsh = {d["id"]: set(fp.lsh) for d, fp in zip(docs, fps, strict=True)}
    found = list(scored_pairs(store, in_memory=True))
    # The LSH pairs all come from the in-memory join (the store's key groups then read SimHash bands only).
    assert sum(1 for p in found if lsh[p.a] & lsh[p.b]) > 20
    stored = store.get(list(lsh))
    for p in found:
        one = measure(stored[p.a], [stored[p.b]], store.config)
        assert (p.hamming, p.cosine, p.ngram) == (hamming_of(one.hamming[0]), one.cosine[0], one.ngram[0]), (p.a, p.b)
        want = [None if np.isnan(x) else x for x in (one.jaccard[0], one.containment[0])]
        assert [p.jaccard, p.containment] == want, (p.a, p.b)
    store.drop()


def test_threshold_overrides_are_checked_when_given():
    """Refused at construction, before a caller (ingest) has created an index with them."""
    from esdedup.errors import ConfigError

    with pytest.raises(ConfigError, match="hamming_k must be a whole number"):
        ThresholdOverrides(hamming_k=-1)
    with pytest.raises(ConfigError, match="cosine threshold must be a number in"):
        ThresholdOverrides(cosine=float("nan"))
    assert ThresholdOverrides(containment=0).for_config(FingerprintConfig()).containment is None  # 0: off


def test_measure_pairs_equals_measure_pair_by_pair():
    """The store-side join measures its candidate pairs in bulk (`measure_pairs`); every number must be the one
    `measure` gives the same two texts, or `dups` would decide otherwise than `similar`. Texts short and long,
    with and without signatures (strategy simhash: short ones are then measured by the legacy rule)."""
    from esdedup.match.measures import measure, measure_pairs

    long_text = "".join(SENTENCES[:6])
    texts = [*SENTENCES[:12], long_text, long_text[:-3] + "改动了", "短"]
    # Texts without signatures first and last, so that each side of a pair is sometimes one.
    plain = Fingerprinter(FingerprintConfig(strategy="simhash")).fingerprint_many(texts[:4])
    fps = [*plain[:2], *Fingerprinter(FingerprintConfig()).fingerprint_many(texts), *plain[2:]]
    docs = [fp for fp in fps if not fp.empty]
    pairs = list(itertools.combinations(range(len(docs)), 2))
    left, right = (np.array(side, dtype=np.int64) for side in zip(*pairs, strict=True))
    config = FingerprintConfig()
    bulk = measure_pairs(docs, left, right, config)
    for x, (i, j) in enumerate(pairs):
        one = measure(docs[i], [docs[j]], config)
        assert np.array_equal(bulk.hamming[x], one.hamming[0], equal_nan=True)
        assert bulk.cosine[x] == one.cosine[0]
        for name in ("jaccard", "containment"):
            got, want = getattr(bulk, name)[x], getattr(one, name)[0]
            assert (np.isnan(got) and np.isnan(want)) or got == want, (name, i, j)
        assert bool(bulk.ngram[x]) == bool(one.ngram[0]), (i, j)


def test_sketch_columns_measure_a_grid_as_they_measure_its_pairs():
    """`SketchColumns.measure_grid` (diversify's pages) gives each pair of the grid the numbers `measure`
    gives it as a pair (the cosine up to the last bits of a matrix product), texts lacking a SimHash or a
    vector included (NaN where a side lacks it)."""
    from esdedup.match.measures import SketchColumns

    texts = [*SENTENCES[:6], "".join(SENTENCES[:6]), "短"]
    fps = [*Fingerprinter(FingerprintConfig(strategy="simhash")).fingerprint_many(texts[:3]),
           *Fingerprinter(FingerprintConfig()).fingerprint_many(texts)]
    sketches = [dataclasses.replace(fp, simhash=None) if i % 4 == 1 else
                dataclasses.replace(fp, vector=None) if i % 4 == 2 else fp for i, fp in enumerate(fps)]
    cols = SketchColumns.of(sketches, FingerprintConfig())
    rows, others = np.array([0, 2, 5, 9, 10]), np.arange(len(fps))
    grid = cols.measure_grid(rows, others)
    flat = cols.measure(np.repeat(rows, len(others)), np.tile(others, len(rows)))
    assert grid.hamming.shape == (len(rows), len(others))
    for name in ("hamming", "jaccard", "containment", "legacy_short"):
        assert np.array_equal(getattr(grid, name).ravel(), getattr(flat, name), equal_nan=name != "legacy_short"), name
    assert np.allclose(grid.cosine.ravel(), flat.cosine, atol=1e-6, equal_nan=True)
    assert np.isnan(grid.hamming[1, 1]) and np.isnan(grid.cosine[1, 2]) and not np.isnan(grid.cosine[0, 0])
    assert grid.ngram.any() and (~grid.ngram).any() and grid.legacy_short.any()
