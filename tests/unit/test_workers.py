"""The fingerprint worker pool (esdedup/ingest/workers.py): what crosses from a worker process to the run."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from esdedup.fingerprint import fingerprinter
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.ingest import workers
from esdedup.ingest.workers import fingerprint_with
from esdedup.schema import dedup_source, json_bytes
from tests.corpus import make_corpus

CONFIG = FingerprintConfig(tokenizer="rjieba")


def test_fingerprints_cross_from_the_workers_as_columns_and_come_back_equal():
    """A worker's batch is pickled as a few columns, not one object per document (fewer objects to pickle); what the writing
    process unpickles is every fingerprint field it reads, bit for bit, and each document's encoded dedup
    fields are those the store would have encoded."""
    texts = [d["text"] for d in make_corpus(30, 10)[0]] + ["", "。。", "短", "臺灣居民明日起" * 60]
    fper = Fingerprinter(CONFIG)
    sent = fingerprint_with(fper, texts, encode=True)
    got = pickle.loads(pickle.dumps(sent, pickle.HIGHEST_PROTOCOL))
    assert len(got) == len(texts) and got.sha1s == sent.sha1s
    for (a, sha), b, enc in zip(got, fper.fingerprint_many(texts), got.dedup_json, strict=True):
        assert (a.simhash, a.bands, a.lsh, a.length, a.chars, a.empty, a.shingles, a.bits) == \
            (b.simhash, b.bands, b.lsh, b.length, b.chars, b.empty, b.shingles, b.bits)
        assert a.vector.dtype == b.vector.dtype and np.array_equal(a.vector, b.vector)
        assert (a.minhash is None) == (b.minhash is None)
        assert a.minhash is None or np.array_equal(a.minhash, b.minhash)
        assert json.loads(b"{" + enc + b"}") == json.loads(json_bytes(dedup_source(b, CONFIG, sha)))


@pytest.mark.parametrize("config", [CONFIG, FingerprintConfig(tokenizer="rjieba", strategy="simhash", bits=128),
                                    FingerprintConfig(tokenizer="char", shingle=2, strategy="minhash"),
                                    FingerprintConfig(t2s=True)], ids=["auto", "simhash-128", "char-minhash", "jieba"])
def test_a_worker_packs_the_columns_as_it_would_pack_the_fingerprints(config: FingerprintConfig,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker process sends its batch from the Fingerprinter's columns, with no fingerprint objects: the
    pickled bytes are those of the batch made from the fingerprints (across internal chunks, empty texts
    among them)."""
    texts = [d["text"] for d in make_corpus(40, 10)[0]] * 2 + ["", "。。", "短", "臺灣居民明日起" * 60]
    monkeypatch.setattr(workers, "_WORKER", Fingerprinter(config))
    monkeypatch.setattr(fingerprinter, "_DOCS_PER_PASS", 16)
    packed = workers._fingerprint_batch(texts, False)
    assert packed._fps is None
    want = fingerprint_with(Fingerprinter(config), texts)
    assert pickle.dumps(packed, pickle.HIGHEST_PROTOCOL) == pickle.dumps(want, pickle.HIGHEST_PROTOCOL)
    assert pickle.dumps(workers._fingerprint_batch([], False)) == pickle.dumps(fingerprint_with(Fingerprinter(config), []))
