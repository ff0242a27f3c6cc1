"""All-pairs search joins the SimHash band keys in memory with the LSH bands (`esdedup.match.joins`), on both
stores: the same pairs, with the same measures, as the store's key groups give, crowded keys included; and
where a document holding band keys has no signature (so is not among the columns joined), the store's key
groups are read as before (and count its crowds)."""
from __future__ import annotations

import dataclasses
import json
import logging
import random
import uuid
from typing import cast

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.api import all_pairs
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match import joins
from esdedup.match.joins import JoinedCrowds
from esdedup.match.pairs import crowded_values, find_pairs, scored_pairs
from esdedup.schema import content_sha1
from esdedup.store.base import NewDoc, Store
from esdedup.store.columns import SignatureColumns, SignatureColumnsStore
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore
from tests.corpus import make_corpus, make_variant

CONFIG = FingerprintConfig(tokenizer="rjieba")
#: Few enough that the planted crowd makes crowded band keys.
MAX_BUCKET = 6


@pytest.fixture(params=["local", pytest.param("es", marks=pytest.mark.es)])
def store(request, tmp_path):
    """Texts long enough for band keys (most of them), their near-duplicates, and a crowd of near copies of one."""
    docs, _ = make_corpus(120, 30, seed=11)
    rng = random.Random(4)
    base = max(docs, key=lambda d: len(d["text"]))["text"]
    docs += [{"id": f"crowd{i:02d}", "text": make_variant(rng, base)} for i in range(10)]
    name = f"esdedup-bandjoin-{uuid.uuid4().hex[:8]}"
    s: Store = (LocalStore(name, tmp_path / "data") if request.param == "local" else
                ElasticStore(request.getfixturevalue("es_client"), name, shards=2, replicas=0))
    s.open(CONFIG)
    _write(s, docs)
    yield s
    s.drop()


def _write(store: Store, docs: list[dict], change=None) -> None:
    fps = Fingerprinter(CONFIG).fingerprint_many([d["text"] for d in docs])
    if change is not None:
        fps = [change(fp) for fp in fps]
    assert all(r.ok for r in store.write(NewDoc(d["id"], fp, {"id": d["id"], "text": d["text"]}, content_sha1(d["text"]))
                                         for d, fp in zip(docs, fps, strict=True)))
    store.refresh()


def _pairs(store: Store, in_memory: bool) -> list[str]:
    return sorted(json.dumps(p.to_dict(), sort_keys=True) for p in find_pairs(store, max_bucket=MAX_BUCKET,
                                                                              in_memory=in_memory))


def _band_pairs(store: Store) -> int:
    j = joins.join_in_memory(store, MAX_BUCKET, None)
    left, _ = joins.band_pair_indices(CONFIG.band_layout(), j.cols.simhash, j.cols.sketches.banded,
                                      max_bucket=MAX_BUCKET)
    return len(left)


def test_the_band_keys_joined_in_memory_give_the_pairs_of_the_key_groups(store, caplog):
    joined = joins.join_in_memory(store, MAX_BUCKET, None)
    assert joined.bands and joined.cols.banded_elsewhere == 0
    assert _band_pairs(store) > 0  # the band keys bring pairs of their own to the join
    assert "shared by 6 or more documents" in caplog.text  # a crowded band key, named as the key groups name it
    by_memory = _pairs(store, True)
    assert by_memory == _pairs(store, False)
    assert len(by_memory) > 30
    assert sorted((p.a, p.b) for p in scored_pairs(store, max_bucket=MAX_BUCKET, in_memory=True)) == \
        sorted((p.a, p.b) for p in scored_pairs(store, max_bucket=MAX_BUCKET, in_memory=False))


def test_the_crowded_band_keys_of_the_join_in_memory_are_the_stores_count(store, monkeypatch, caplog):
    """`dups`' report of the most crowded keys: the join in memory counts the band keys it joined itself, the
    same keys and counts as the store's key tables give, which it then does not index (on the embedded store
    that indexing is a second of the first `dups` after a million-document ingest)."""
    from esdedup.store.local import keys

    monkeypatch.setattr(keys, "NOTICE_DOCS", 1)  # the embedded store says when it indexes a key table
    found = JoinedCrowds()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=keys.__name__):
        assert list(find_pairs(store, max_bucket=MAX_BUCKET, crowded=found, in_memory=True))
        by_memory = crowded_values(store, found, min_count=MAX_BUCKET, limit=1000, in_memory=True)
    assert found.bands
    assert not [r for r in caplog.records if r.getMessage().startswith("indexing the ")]
    assert by_memory == store.crowded_keys(min_count=MAX_BUCKET, limit=1000, lsh=True)  # every key, as stored
    assert any(":" in key for key, _ in by_memory)  # band keys ("<table>:<hex>"), not only LSH values
    assert all_pairs(store, max_bucket=MAX_BUCKET, lsh_join="memory").crowded == \
        all_pairs(store, max_bucket=MAX_BUCKET, lsh_join="store").crowded


def test_a_document_with_band_keys_and_no_signature_leaves_the_band_keys_to_the_store(store):
    # A near copy of a stored text (one more full stop: the same terms, so the same band keys; another SHA-1):
    # it is a candidate of that text through those keys alone.
    copied = max(make_corpus(120, 30, seed=11)[0], key=lambda d: len(d["text"]))["text"] + "。"
    _write(store, [{"id": "unsigned", "text": copied}],
           change=lambda fp: dataclasses.replace(fp, minhash=None, shingles=0, lsh=[]))
    joined = joins.join_in_memory(store, MAX_BUCKET, None)
    assert joined.cols.banded_elsewhere == 1 and not joined.bands
    assert "unsigned" not in joined.cols.ids
    # The store's own read of the columns, as a scan of its documents gives them.
    read = cast(SignatureColumnsStore, store).signature_columns(CONFIG.minhash_perm)
    scanned = SignatureColumns.of((d for batch in store.scan() for d in batch), CONFIG)
    assert (read.ids, read.chars, read.banded_elsewhere) == (scanned.ids, scanned.chars, 1)
    assert np.array_equal(read.sigs, scanned.sigs)
    candidates = [sorted((p.a, p.b) for p in scored_pairs(store, max_bucket=MAX_BUCKET, in_memory=in_memory))
                  for in_memory in (True, False)]
    assert candidates[0] == candidates[1]
    assert any("unsigned" in pair for pair in candidates[0])
    assert _pairs(store, True) == _pairs(store, False)
    found = JoinedCrowds()
    assert list(find_pairs(store, max_bucket=MAX_BUCKET, crowded=found, in_memory=True))
    assert not found.bands  # the band keys' crowds are the store's to count


def test_signatures_of_another_length_are_read_as_a_scan_reads_them(store):
    """A stored signature of another length than the config's (half of it here) is no signature to join: the
    store's read of the columns (on Elasticsearch, a page's signatures decoded at once) leaves it out as a scan
    does, and reads every other one as it was written."""
    docs, _ = make_corpus(20, 5, seed=3)
    _write(store, [{"id": f"half-{d['id']}", "text": d["text"]} for d in docs[:3]],
           change=lambda fp: dataclasses.replace(fp, minhash=fp.minhash[:len(fp.minhash) // 2]))
    read = cast(SignatureColumnsStore, store).signature_columns(CONFIG.minhash_perm)
    scanned = SignatureColumns.of((d for batch in store.scan() for d in batch), CONFIG)
    assert (read.ids, read.simhash, read.chars, read.shingles) == (scanned.ids, scanned.simhash, scanned.chars,
                                                                   scanned.shingles)
    assert np.array_equal(read.sigs, scanned.sigs) and read.sigs.dtype == np.uint32
    assert not any(i.startswith("half-") for i in read.ids) and len(read.ids) > 100
