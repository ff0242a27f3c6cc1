"""Smoke tests against a real Elasticsearch: the server features esdedup relies on.

Keyword band lookups (terms query), dense_vector + top-level kNN, exact terms aggregations,
index ``_meta`` and the Python client's product check -- plus replica failover on 3 nodes.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import elasticsearch
import numpy as np
import pytest
from elasticsearch import Elasticsearch, helpers

pytestmark = pytest.mark.es

N_DOCS = 1000
DIMS = 256
N_GROUPS = 7


def _bands(i: int) -> list[str]:
    # two SimHash-like band keys per doc: band 0 has 50 buckets, band 1 has 13
    return [f"0:{i % 50:04x}", f"1:{i % 13:04x}"]


def _group(i: int) -> str:
    return f"g{i % N_GROUPS}"


def _unit_vectors(n: int, dims: int, seed: int = 20240501) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


MAPPINGS = {
    "dynamic": "strict",
    "properties": {
        "doc_id": {"type": "keyword"},
        "bands": {"type": "keyword"},
        "group": {"type": "keyword"},
        "vec": {"type": "dense_vector", "dims": DIMS, "similarity": "cosine", "index": True},
    },
}


@pytest.fixture(scope="module")
def loaded(es_client: Elasticsearch) -> Iterator[tuple[str, np.ndarray]]:
    """An index with N_DOCS docs (ids d0..d999) loaded through helpers.bulk; yields (name, vectors)."""
    name = f"esdedup-smoke-{uuid.uuid4().hex[:12]}"
    vecs = _unit_vectors(N_DOCS, DIMS)
    es_client.indices.create(
        index=name, settings={"number_of_shards": 2, "number_of_replicas": 0}, mappings=MAPPINGS
    )
    try:
        actions = (
            {
                "_index": name,
                "_id": f"d{i}",
                "_source": {
                    "doc_id": f"d{i}",
                    "bands": _bands(i),
                    "group": _group(i),
                    "vec": vecs[i].tolist(),
                },
            }
            for i in range(N_DOCS)
        )
        ok, errors = helpers.bulk(
            es_client, actions, chunk_size=250, refresh="wait_for", raise_on_error=False
        )
        assert errors == [] and ok == N_DOCS, f"bulk: {ok} ok, errors {errors[:3]}"
        yield name, vecs
    finally:
        es_client.options(ignore_status=404).indices.delete(index=name)


def test_bulk_loaded_every_doc(es_client: Elasticsearch, loaded: tuple[str, np.ndarray]) -> None:
    name, vecs = loaded
    assert es_client.count(index=name)["count"] == N_DOCS
    # Named explicitly: from 9.2 on, dense_vector values are kept out of the stored _source by default
    # and come back (rebuilt from the vector index) only when asked for by name.
    doc = es_client.get(index=name, id="d123", source_includes=["doc_id", "bands", "group", "vec"])["_source"]
    assert doc["doc_id"] == "d123" and doc["bands"] == _bands(123) and doc["group"] == _group(123)
    assert np.allclose(doc["vec"], vecs[123], atol=1e-6)


def test_terms_lookup_on_keyword_returns_exact_ids(
    es_client: Elasticsearch, loaded: tuple[str, np.ndarray]
) -> None:
    name, _ = loaded
    keys = ["0:0003", "1:0005"]  # band-0 bucket 3 OR band-1 bucket 5
    expected = {f"d{i}" for i in range(N_DOCS) if i % 50 == 3 or i % 13 == 5}
    assert len(expected) == 96  # 20 + 77 - 1 overlap: sanity of the test data itself
    resp = es_client.search(
        index=name,
        query={"bool": {"filter": [{"terms": {"bands": keys}}]}},
        size=N_DOCS,
        source=False,
        track_total_hits=True,
    )
    assert resp["hits"]["total"] == {"value": len(expected), "relation": "eq"}
    assert {h["_id"] for h in resp["hits"]["hits"]} == expected

    # a key nobody has must match nothing
    none = es_client.search(
        index=name, query={"terms": {"bands": ["0:ffff"]}}, size=10, track_total_hits=True
    )
    assert none["hits"]["total"]["value"] == 0


@pytest.mark.parametrize("target", [0, 417, 999])
def test_knn_returns_nearest_doc_first(
    es_client: Elasticsearch, loaded: tuple[str, np.ndarray], target: int
) -> None:
    name, vecs = loaded
    rng = np.random.default_rng(target)
    noise = rng.normal(size=DIMS).astype(np.float32)
    query = vecs[target] + 0.3 * noise / np.linalg.norm(noise)  # cosine to the target ~0.96
    assert int(np.argmax(vecs @ (query / np.linalg.norm(query)))) == target  # brute force agrees

    resp = es_client.search(
        index=name,
        knn={"field": "vec", "query_vector": query.tolist(), "k": 5, "num_candidates": 100},
        size=5,
        source=False,
    )
    hits = resp["hits"]["hits"]
    assert len(hits) == 5
    assert hits[0]["_id"] == f"d{target}"
    # cosine similarity score is (1 + cos) / 2: ~0.98 for the target, ~0.5 for unrelated random vectors
    assert hits[0]["_score"] > 0.9 > 0.7 > hits[1]["_score"]


def test_terms_aggregation_exact_counts(es_client: Elasticsearch, loaded: tuple[str, np.ndarray]) -> None:
    name, _ = loaded
    resp = es_client.search(index=name, size=0, aggs={"groups": {"terms": {"field": "group", "size": 50}}})
    agg = resp["aggregations"]["groups"]
    assert {b["key"]: b["doc_count"] for b in agg["buckets"]} == Counter(_group(i) for i in range(N_DOCS))
    assert agg["sum_other_doc_count"] == 0 and agg["doc_count_error_upper_bound"] == 0

    # restricted to a band lookup: counts over exactly the matching docs
    resp = es_client.search(
        index=name,
        size=0,
        query={"terms": {"bands": ["0:0007"]}},
        aggs={"groups": {"terms": {"field": "group", "size": 50}}},
    )
    got = {b["key"]: b["doc_count"] for b in resp["aggregations"]["groups"]["buckets"]}
    assert got == Counter(_group(i) for i in range(N_DOCS) if i % 50 == 7)


def test_index_meta_round_trip(es_client: Elasticsearch, fresh_index: str) -> None:
    meta = {
        "esdedup": {
            "schema_version": 3,
            "simhash": {"bits": 64, "bands": 4, "band_bits": 16},
            "tokenizer": "jieba",
            "note": "近似重复检测",
            "stopwords": ["的", "了"],
        }
    }
    es_client.indices.create(
        index=fresh_index, mappings={"_meta": meta, "properties": {"doc_id": {"type": "keyword"}}}
    )
    got = es_client.indices.get_mapping(index=fresh_index)[fresh_index]["mappings"]["_meta"]
    assert got == meta

    meta2 = {"esdedup": {**meta["esdedup"], "schema_version": 4}}
    es_client.indices.put_mapping(index=fresh_index, meta=meta2)
    got2 = es_client.indices.get_mapping(index=fresh_index)[fresh_index]["mappings"]["_meta"]
    assert got2 == meta2 and got2 != meta


def test_client_product_check_and_major_version(es_client: Elasticsearch) -> None:
    # The client refuses servers that do not identify as Elasticsearch; a plain call passing proves
    # the product check, and the header is what it checks. (`GET /` is not available on the
    # integ-test-zip distribution, so client.info() is not used.)
    resp = es_client.cluster.health()
    assert resp.meta.status == 200
    assert resp.meta.headers.get("x-elastic-product") == "Elasticsearch"
    assert resp["status"] in ("green", "yellow")

    nodes = es_client.nodes.info(node_id="_local")["nodes"]
    (server_version,) = {n["version"] for n in nodes.values()}
    client_major = elasticsearch.__versionstr__.split(".")[0]
    assert server_version.split(".")[0] == client_major, (
        f"client {elasticsearch.__versionstr__} vs server {server_version}: majors must match"
    )


# A fault test: with the other fault tests (-m slow, run by hand), not in the README's command or CI.
@pytest.mark.slow
@pytest.mark.cluster3
def test_three_nodes_survive_losing_one(cluster3) -> None:
    es = cluster3.client
    name = f"esdedup-c3-{uuid.uuid4().hex[:12]}"
    n = 600
    es.indices.create(
        index=name,
        settings={
            "number_of_shards": 4,
            "number_of_replicas": 1,
            # keep the lost replicas unassigned (instead of rebuilding them) until the node is back
            "index.unassigned.node_left.delayed_timeout": "10m",
        },
        mappings={"properties": {"doc_id": {"type": "keyword"}, "group": {"type": "keyword"}}},
    )
    try:
        ok, errors = helpers.bulk(
            es,
            ({"_index": name, "_id": f"d{i}", "doc_id": f"d{i}", "group": _group(i)} for i in range(n)),
            refresh="wait_for",
        )
        assert ok == n and not errors
        health = es.cluster.health(index=name, wait_for_status="green", timeout="90s")
        assert health["status"] == "green" and not health["timed_out"], health

        shards = es.cat.shards(index=name, format="json")
        assert len(shards) == 8 and all(s["state"] == "STARTED" for s in shards)
        master = es.cat.master(format="json")[0]["node"]
        # a node that holds shard copies but is not the elected master (no re-election needed)
        victim = next(
            i
            for i in range(3)
            if cluster3.cluster.node_name(i) != master
            and any(s["node"] == cluster3.cluster.node_name(i) for s in shards)
        )
        survivors = [i for i in range(3) if i != victim]

        cluster3.kill(victim)
        assert cluster3.alive()[victim] is False
        es2 = cluster3.client_for(*survivors)
        try:
            health = es2.cluster.health(
                wait_for_nodes="2", index=name, wait_for_status="yellow", timeout="90s"
            )
            assert not health["timed_out"] and health["number_of_nodes"] == 2, health
            assert health["status"] == "yellow" and health["unassigned_shards"] > 0, (
                health
            )  # copies were lost

            count = es2.count(index=name)
            assert count["count"] == n
            assert count["_shards"]["failed"] == 0 and count["_shards"]["successful"] == 4

            one = es2.search(index=name, query={"ids": {"values": ["d123"]}})
            assert [h["_id"] for h in one["hits"]["hits"]] == ["d123"]
            everything = es2.search(index=name, query={"match_all": {}}, size=n, source=False)
            assert {h["_id"] for h in everything["hits"]["hits"]} == {f"d{i}" for i in range(n)}
            docs = es2.mget(index=name, ids=[f"d{i}" for i in range(n)])["docs"]
            assert all(d["found"] for d in docs) and len(docs) == n
        finally:
            es2.close()

        cluster3.restart(victim)
        assert cluster3.alive() == [True, True, True]
        health = es.cluster.health(index=name, wait_for_nodes="3", wait_for_status="green", timeout="120s")
        assert health["status"] == "green" and health["number_of_nodes"] == 3, health
        assert es.count(index=name)["count"] == n
    finally:
        es.options(ignore_status=404).indices.delete(index=name)
