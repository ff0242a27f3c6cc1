"""Nothing lost and no wrong answer when an index is not what the code expects, on a real node: searches
over several indexes, an index deleted and created again with another config, index metadata edited by
hand, a page past the first, API misuse."""
from __future__ import annotations

import asyncio
import re
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from esdedup.errors import ConfigError, InputError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.schema import content_sha1
from esdedup.search.paging import async_search_diversified, search_diversified
from esdedup.store.base import NewDoc
from esdedup.store.elastic.store import ElasticStore
from tests.reliability import make_docs

pytestmark = pytest.mark.es

CONFIG = FingerprintConfig(tokenizer="rjieba")


@pytest.fixture
def index_names(es_client):
    """Unique index names (made on demand), deleted after the test."""
    names: list[str] = []

    def make() -> str:
        names.append(f"esdedup-nl-{uuid.uuid4().hex[:10]}")
        return names[-1]

    yield make
    for name in names:
        es_client.options(ignore_status=404).indices.delete(index=name)


def _fill(es_client, index: str, docs: list[dict], config: FingerprintConfig = CONFIG, *,
          cluster_ids: dict[str, str] | None = None) -> None:
    store = ElasticStore(es_client, index, replicas=0)
    store.open(config)
    fps = Fingerprinter(config).fingerprint_many([d["text"] for d in docs])
    new = [NewDoc(d["id"], fp, {"text": d["text"], "rank": len(docs) - i}, content_sha1(d["text"]),
                  cluster_id=(cluster_ids or {}).get(d["id"]))
           for i, (d, fp) in enumerate(zip(docs, fps, strict=True))]
    assert all(r.ok for r in store.write(new))
    store.refresh()


BY_RANK = {"query": {"function_score": {"query": {"match_all": {}}, "field_value_factor": {"field": "rank"},
                                        "boost_mode": "replace"}}}


def test_cluster_ids_are_compared_within_one_index_only(es_client, index_names):
    """Two indexes with the same config whose documents carry the same cluster ids ("1", "2", ...) but
    unrelated texts: a search over both keeps every hit."""
    a, b = index_names(), index_names()
    docs_a, docs_b = make_docs(5, seed=61, prefix="m"), make_docs(5, seed=62, prefix="m")
    _fill(es_client, a, docs_a, cluster_ids={d["id"]: d["id"] for d in docs_a})
    _fill(es_client, b, docs_b, cluster_ids={d["id"]: d["id"] for d in docs_b})
    resp = search_diversified(es_client, f"{a},{b}", BY_RANK, size=10)
    got = sorted((h["_index"], h["_id"]) for h in resp["hits"]["hits"])
    assert got == sorted([(a, d["id"]) for d in docs_a] + [(b, d["id"]) for d in docs_b])
    es_client.indices.put_alias(index=[a, b], name=f"{a}-both")
    resp = search_diversified(es_client, f"{a}-both", BY_RANK, size=10)
    assert len(resp["hits"]["hits"]) == 10


def test_a_rebuilt_index_is_searched_with_its_new_config(es_client, index_names):
    """The config of an index is kept per client; deleted and created again with another config (here 128
    bits), the next call reads the new one instead of failing on the new SimHashes."""
    name = index_names()
    docs = make_docs(6, seed=63)
    _fill(es_client, name, docs)
    assert len(search_diversified(es_client, name, BY_RANK, size=6)["hits"]["hits"]) == 6
    es_client.indices.delete(index=name)
    wide = FingerprintConfig(tokenizer="rjieba", bits=128, hamming_k=5)
    _fill(es_client, name, docs, wide)
    resp = search_diversified(es_client, name, BY_RANK, size=6)
    assert len(resp["hits"]["hits"]) == 6

    async def run():
        from elasticsearch import AsyncElasticsearch

        client = AsyncElasticsearch(es_client.transport.node_pool.get().base_url)
        try:
            first = await async_search_diversified(client, name, BY_RANK, size=6)
            await client.indices.delete(index=name)
            _fill(es_client, name, docs)  # the 64-bit config again
            return first, await async_search_diversified(client, name, BY_RANK, size=6)
        finally:
            await client.close()

    first, again = asyncio.run(run())
    assert len(first["hits"]["hits"]) == len(again["hits"]["hits"]) == 6


def test_from_in_the_body_is_the_offset_of_the_page(es_client, index_names):
    name = index_names()
    docs = make_docs(12, seed=64)
    _fill(es_client, name, docs)
    first = search_diversified(es_client, name, BY_RANK, size=5)
    second = search_diversified(es_client, name, {**BY_RANK, "from": 5}, size=5)
    whole = search_diversified(es_client, name, BY_RANK, size=10)
    ids = [[h["_id"] for h in r["hits"]["hits"]] for r in (first, second, whole)]
    assert ids[0] + ids[1] == ids[2] and not set(ids[0]) & set(ids[1])
    assert second["diversified"]["from"] == 5


@pytest.mark.parametrize("kwargs, message", [
    ({"max_rounds": 0}, "max_rounds must be a whole number from 1"),
    ({"max_rounds": 2.5}, "argument max_rounds must be a whole number, got float 2.5"),
    ({"overfetch": float("inf")}, "overfetch must be a number from 1"),
    ({"overfetch": float("nan")}, "overfetch must be a number from 1"),
    ({"size": 2.5}, "argument size must be a whole number, got float 2.5"),
    ({"size": True}, "argument size must be a whole number, got bool True"),
    ({"size": 0}, "size must be a whole number from 1"),
    ({"size": 20_000}, "size must be a whole number from 1"),
    ({"body": {"from": -1}}, "'from' in the search body must be a whole number >= 0"),
    ({"body": {"from": "10"}}, "'from' in the search body must be a whole number >= 0"),
    ({"body": {"from": 9_999}}, "'from' + size must be at most 10000"),
])
def test_api_misuse_is_a_config_error(es_client, index_names, kwargs, message):
    name = index_names()
    _fill(es_client, name, make_docs(2, seed=65))
    kwargs = dict(kwargs)
    body = kwargs.pop("body", BY_RANK)
    with pytest.raises(ConfigError, match=re.escape(message)):
        search_diversified(es_client, name, body, **kwargs)


def test_a_stored_count_that_is_not_a_number_is_an_input_error():
    from esdedup.search.diversify import diversify

    hits = [{"_id": "a", "_source": {"dedup": {"simhash": "00000000000000ff", "chars": "x"}}},
            {"_id": "b", "_source": {"dedup": {"simhash": "00000000000000fe"}}}]
    with pytest.raises(InputError, match="hit 'a': dedup.chars 'x' is not a whole number"):
        diversify(hits, config=FingerprintConfig(strategy="simhash"))


@pytest.mark.parametrize("meta", ["hello", {}, [], {"config": "bits=64"}, {"config": ["bits"]},
                                  {"config": {"minhash_perm": 100_000_000}},
                                  {"config": {"synonyms_path": "/dev/zero"}}])
def test_hostile_index_metadata_is_a_config_error(es_client, index_names, meta):
    """``_meta.esdedup`` edited by hand: opening the index, and a search over it, are one ConfigError
    (exit 2), neither a traceback nor a hang."""
    name = index_names()
    es_client.indices.create(index=name, mappings={"_meta": {"esdedup": meta}, "properties": {
        "text": {"type": "text"}}})
    store = ElasticStore(es_client, name)
    with pytest.raises(ConfigError) as err:
        store.open(None)
    assert err.value.exit_code == 2 and repr(name) in str(err.value)
    with pytest.raises(ConfigError):
        search_diversified(es_client, name, BY_RANK, size=3)


@pytest.mark.parametrize("key", ["dedup.cluster_id", "dedup.simhash", "dedup.cluster_id.x", "dedup"])
def test_input_keys_under_dedup_are_moved_aside(es_url, es_client, index_names, tmp_path, key):
    """A record whose own keys would land under ``dedup`` (dotted keys are expanded by Elasticsearch): they
    are kept under ``input_fields``, and the document carries one cluster id, ingest's (collapse works)."""
    import json

    from esdedup.api import open_store
    from esdedup.ingest.run import IngestOptions, ingest

    name = index_names()
    docs = make_docs(4, seed=66)
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps({**d, key: "a"} if i < 2 else d, ensure_ascii=False) + "\n"
                            for i, d in enumerate(docs)), "utf-8")
    s = ingest([path], open_store(name, es_url=es_url), CONFIG, IngestOptions(workers=1))
    assert s.error is None and s.indexed == len(docs) and s.failed == 0, s
    es_client.indices.refresh(index=name)
    src = es_client.get(index=name, id=docs[0]["id"])["_source"]
    assert src["input_fields"] == {key: "a"} and (key == "dedup" or key not in src)
    assert src["dedup"]["cluster_id"] == docs[0]["id"]
    resp = es_client.search(index=name, query={"match_all": {}}, collapse={"field": "dedup.cluster_id"}, size=10)
    assert len(resp["hits"]["hits"]) == len(docs)


def test_an_alias_over_several_indexes_is_refused_by_the_store(es_url, es_client, index_names, tmp_path):
    """The store is one index: an alias over two (with the same config) would pair every document with
    itself and open with whichever config comes first. It is refused, naming the indexes."""
    from esdedup.api import open_store

    a, b = index_names(), index_names()
    _fill(es_client, a, make_docs(3, seed=67))
    _fill(es_client, b, make_docs(3, seed=68))
    alias = f"{a}-both"
    es_client.indices.put_alias(index=[a, b], name=alias)
    with pytest.raises(ConfigError, match="names 2 indices .* not one") as err:
        open_store(alias, es_url=es_url).open(None)
    assert a in str(err.value) and b in str(err.value)
    from tests.reliability import run_cli

    # Every command that opens the store, over the alias, and one of them over a comma-separated list and a
    # wildcard (the store decides for every command in one place): exit 2, one line saying why and what to
    # give instead, before any other request.
    records = tmp_path / "more.jsonl"
    records.write_text('{"id": "x", "text": "今天天气很好"}\n', "utf-8")
    commands = (["dups"], ["info"], ["similar", "--id", "d000000"], ["similar", "--text", "今天天气很好"],
                ["ingest", records, "--dead-letter", tmp_path / "dl.jsonl", "--workers", "1"])
    runs = [(command, alias, "names 2 indices") for command in commands]
    runs += [(commands[-1], f"{a},{b}", "a comma-separated list names several indices"),
             (commands[0], "esdedup-nl-*", "a wildcard pattern names several indices")]
    with ThreadPoolExecutor(4) as pool:  # independent commands that write nothing: run side by side
        results = list(pool.map(lambda run: run_cli(*run[0], "--index", run[1], "--es", es_url, timeout=120,
                                                    cwd=tmp_path), runs))
    for (command, name, says), r in zip(runs, results, strict=True):
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and says in lines[0], (command, name, r.stderr[-2000:])
        assert "give the name of one" in lines[0]
    assert es_client.count(index=alias)["count"] == 6  # nothing was written
    assert len(search_diversified(es_client, alias, BY_RANK, size=10)["hits"]["hits"]) == 6  # searches stay open
    es_client.indices.delete_alias(index=b, name=alias)
    assert open_store(alias, es_url=es_url).open(None).config == CONFIG  # an alias over one index is fine


@pytest.mark.parametrize("config", [CONFIG, CONFIG.replace(vector_index="int8_flat")], ids=["default", "vectors"])
def test_dups_write_clusters_mends_documents_with_dotted_dedup_keys(es_url, es_client, index_names, config):
    """Documents stored by an older esdedup with a record's own ``"dedup.cluster_id"`` (Elasticsearch reads it
    as a second cluster id, and ``collapse`` on ``dedup.cluster_id`` fails for every query): ``dups
    --write-clusters`` moves such keys under ``input_fields``, and collapse works again."""
    import elasticsearch

    from tests.reliability import run_cli

    name = index_names()
    docs = make_docs(4, seed=69)
    docs.append({"id": "copy", "text": docs[0]["text"]})  # a near-duplicate pair, d000000 and copy
    _fill(es_client, name, docs, config, cluster_ids={d["id"]: d["id"] for d in docs})
    store = ElasticStore(es_client, name)
    store.open(None)
    before = store.get(["copy", docs[1]["id"]])
    # As the older version wrote them: the record's own dotted key beside the store's dedup object, on a
    # document of the pair and on one alone.
    for doc_id in ("copy", docs[1]["id"]):
        src = es_client.get(index=name, id=doc_id)["_source"]
        if config.stores_vector and "vector" not in src["dedup"]:  # 9.2+ keeps it out of _source: put it back
            src["dedup"]["vector"] = before[doc_id].vector.astype(float).tolist()
        es_client.index(index=name, id=doc_id, document={**src, "dedup.cluster_id": "theirs"}, refresh=True)
    collapse = {"index": name, "query": {"match_all": {}}, "collapse": {"field": "dedup.cluster_id"}, "size": 10}
    with pytest.raises(elasticsearch.BadRequestError):
        es_client.search(**collapse)

    r = run_cli("dups", "--index", name, "--es", es_url, "--write-clusters", timeout=120)
    assert r.returncode == 0 and "dotted dedup keys were moved under input_fields: 2" in r.stderr, r.stderr[-2000:]
    after = store.get(["copy", docs[1]["id"]])
    for doc_id in ("copy", docs[1]["id"]):
        src = es_client.get(index=name, id=doc_id)["_source"]
        assert "dedup.cluster_id" not in src and src["input_fields"] == {"dedup.cluster_id": "theirs"}
        # Written again whole: the fingerprint kept (the vector too, which 9.2+ keeps out of _source).
        assert after[doc_id].simhash == before[doc_id].simhash and after[doc_id].shingles == before[doc_id].shingles
        assert np.allclose(after[doc_id].vector, before[doc_id].vector, atol=1e-5)
        assert config.stores_vector == bool(np.any(after[doc_id].vector))
    got = {h["_id"]: h["fields"]["dedup.cluster_id"] for h in es_client.search(**collapse)["hits"]["hits"]}
    # The pair collapsed into one hit, under its smallest id ("copy" < "d000000"), as dups writes clusters.
    assert len(got) == 4 and ["copy"] in got.values(), got
    assert es_client.get(index=name, id=docs[0]["id"])["_source"]["dedup"]["cluster_id"] == "copy"
    r = run_cli("dups", "--index", name, "--es", es_url, "--write-clusters", timeout=120)
    assert r.returncode == 0 and "dotted" not in r.stderr, r.stderr[-2000:]  # nothing left to mend
