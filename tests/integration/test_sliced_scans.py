"""Reading a whole index through slices of one point in time (`hit_pages` with ``slices``), on real nodes of
both engines: every document exactly once, whatever the number of slices and shards, and all-pairs search's
columns (`signature_columns`, which reads in slices) the same as one chain of pages gives them."""
from __future__ import annotations

import uuid

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.schema import content_sha1
from esdedup.store.base import NewDoc
from esdedup.store.elastic import scans
from esdedup.store.elastic.store import ElasticStore
from tests.corpus import make_corpus
from tests.engines import BACKENDS, server_client

CONFIG = FingerprintConfig(tokenizer="rjieba", vector_index="int8_flat")  # a vector too, read from _source
DOCS, _ = make_corpus(400, 80, seed=5)
FPS = Fingerprinter(CONFIG).fingerprint_many([d["text"] for d in DOCS])


@pytest.fixture(params=BACKENDS[1:])
def client(request):
    return server_client(request)


@pytest.fixture(params=[1, 3], ids=["1-shard", "3-shards"])
def store(request, client):
    s = ElasticStore(client, f"esdedup-slices-{uuid.uuid4().hex[:8]}", shards=request.param, replicas=0)
    s.open(CONFIG)
    try:
        assert all(r.ok for r in s.write(NewDoc(d["id"], fp, {"id": d["id"], "text": d["text"]},
                                                content_sha1(d["text"])) for d, fp in zip(DOCS, FPS, strict=True)))
        s.refresh()
        yield s
    finally:
        s.drop()


def test_every_document_is_read_once_whatever_the_slices(store):
    index = store.index
    want = sorted(d["id"] for d in DOCS)
    for slices in (1, 2, 3, 5):
        pages = list(scans.hit_pages(index, "reading", batch=40, slices=slices))
        ids = [h["_id"] for page in pages for h in page]
        assert sorted(ids) == want, slices
        assert len(pages) >= len(DOCS) // 40  # pages of the batch asked for, in every slice


def test_the_columns_read_in_slices_are_those_of_one_chain(store, monkeypatch):
    assert scans.SCAN_SLICES > 1
    sliced = store.signature_columns(CONFIG.minhash_perm)
    monkeypatch.setattr(scans, "SCAN_SLICES", 1)
    chained = store.signature_columns(CONFIG.minhash_perm)
    assert len(sliced.ids) > 300
    assert sliced.ids == chained.ids
    assert (sliced.simhash, sliced.chars, sliced.shingles) == (chained.simhash, chained.chars, chained.shingles)
    assert np.array_equal(sliced.sigs, chained.sigs)
    assert np.array_equal(sliced.vectors(), chained.vectors())
    assert sliced.banded_elsewhere == chained.banded_elsewhere
