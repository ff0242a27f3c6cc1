"""The shared values of a key field (`esdedup.store.elastic.keys.shared_values`, what the store's key groups are read
from): every value held ``min_count`` times or more, with its count, when few documents hold the field and they lie
in several segments (a band field: only the texts long enough for band keys hold one). On one shard the node counts
them alone; on two, with a count of 4, each shard sends only the values it holds twice or more, counted exactly
afterwards."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from elasticsearch import helpers

from esdedup import FingerprintConfig
from esdedup.store.elastic import keys as elastic_keys
from esdedup.store.elastic.store import ElasticStore

pytestmark = pytest.mark.es


@pytest.mark.parametrize(("shards", "min_count", "values"), [(1, 2, 1 << 13), (2, 4, 1 << 11)])
def test_a_sparse_key_field_over_several_segments_gives_every_shared_value(es_client, fresh_index, shards, min_count,
                                                                          values):
    store = ElasticStore(es_client, fresh_index, shards=shards, replicas=0)
    store.open(FingerprintConfig(tokenizer="rjieba"))
    rng = random.Random(1)
    held = {i: f"0:{rng.randrange(values):04x}" for i in range(120_000) if rng.random() < 0.05}
    field = "dedup.band_0"
    for part in range(6):  # a refresh after each part: six segments
        lo, hi = part * 20_000, (part + 1) * 20_000
        helpers.bulk(es_client, ({"_index": fresh_index, "_id": str(i), "dedup": {"band_0": held[i]} if i in held
                                  else {}} for i in range(lo, hi)))
        es_client.indices.refresh(index=fresh_index)
    segments = es_client.indices.segments(index=fresh_index)["indices"][fresh_index]["shards"]
    assert len(segments) == shards and all(len(s[0]["segments"]) > 1 for s in segments.values())
    want = sorted((v, n) for v, n in Counter(held.values()).items() if n >= min_count)
    got = sorted(v for part in elastic_keys.shared_values(store.index, field, min_count) for v in part)
    assert got == want
    assert len(want) > 500
