"""One near-duplicate answer everywhere, on a real node: for every pair `dups` reports on an ingest-labelled
index of short and long texts, `diversify(hits)`, `search_diversified` and Elasticsearch's `collapse` on
`dedup.cluster_id` keep one of the two, with all their defaults (no threshold anywhere)."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from esdedup import diversify
from esdedup.api import all_pairs
from esdedup.ingest import IngestOptions, ingest
from esdedup.search.paging import index_config, search_diversified
from esdedup.store.elastic.store import ElasticStore
from tests.corpus import make_corpus

pytestmark = pytest.mark.es


@pytest.fixture(scope="module")
def labelled(es_client, tmp_path_factory):
    """An index ingested in label mode (default config): short texts (1-3 sentences, under 200
    characters) and long ones (8-14 sentences), each with planted near-duplicates; and its dups pairs."""
    short, _ = make_corpus(300, 70, seed=21, sentences=(1, 3))
    long, _ = make_corpus(150, 40, seed=22, sentences=(8, 14))
    docs = [{**d, "id": "s" + d["id"]} for d in short] + [{**d, "id": "l" + d["id"]} for d in long]
    work = tmp_path_factory.mktemp("one-answer")
    path = work / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    index = "esdedup-one-answer"
    store = ElasticStore(es_client, index, shards=2, replicas=0)
    store.drop()
    summary = ingest([path], store, None, IngestOptions(workers=1, dead_letter=work / "dl.jsonl"))
    assert summary.ok and summary.indexed == len(docs)
    report = all_pairs(store)
    yield index, report.pairs
    store.drop()


#: Searches a `_msearch` request of `_searches` holds at most (the module's pairs number in the thousands).
MSEARCH_BATCH = 500


def _searches(es_client, index, pairs, **body):
    """The search response for each pair's two ids (``body``: more of the search body), sent in `_msearch`
    requests of `MSEARCH_BATCH` searches."""
    out = []
    for start in range(0, len(pairs), MSEARCH_BATCH):
        searches = []
        for pair in pairs[start:start + MSEARCH_BATCH]:
            searches += [{"index": index}, {"query": {"ids": {"values": [pair.a, pair.b]}}, "sort": ["_doc"], **body}]
        responses = es_client.msearch(searches=searches)["responses"]
        assert all("error" not in r for r in responses), [r["error"] for r in responses if "error" in r][:3]
        out += responses
    return out


def test_dups_finds_short_and_long_pairs(labelled):
    _, pairs = labelled
    assert sum(p.a.startswith("s") for p in pairs) >= 50 and sum(p.a.startswith("l") for p in pairs) >= 30


def test_diversify_keeps_one_of_every_pair_dups_reports(es_client, labelled):
    index, pairs = labelled
    config = index_config(es_client, index)
    kept_both = [p for p, resp in zip(pairs, _searches(es_client, index, pairs), strict=True)
                 if len(diversify(resp["hits"]["hits"], config=config)) != 1]
    assert kept_both == []


def test_search_diversified_keeps_one_of_every_pair_with_no_arguments(es_client, labelled):
    index, pairs = labelled

    def hits(p):
        return search_diversified(es_client, index, {"query": {"ids": {"values": [p.a, p.b]}}}, size=2)["hits"]["hits"]

    # A search backend calls it from several threads at once; the pairs number in the thousands, one call each.
    with ThreadPoolExecutor(4) as pool:
        kept_both = [p for p, found in zip(pairs, pool.map(hits, pairs), strict=True) if len(found) != 1]
    assert kept_both == []


def test_collapse_on_cluster_id_keeps_one_of_every_pair_right_after_ingest(es_client, labelled):
    index, pairs = labelled
    kept_both = [p for p, resp in zip(pairs, _searches(es_client, index, pairs, collapse={"field": "dedup.cluster_id"}),
                                      strict=True)
                 if len(resp["hits"]["hits"]) != 1]
    assert kept_both == []


def test_search_diversified_asks_only_for_the_small_dedup_fields(es_client, labelled):
    index, _ = labelled
    resp = search_diversified(es_client, index, {"query": {"match": {"text": "经济"}}}, size=20)
    assert resp["hits"]["hits"]
    for hit in resp["hits"]["hits"]:
        dedup = hit["_source"].get("dedup", {})
        assert not any(k.startswith(("band_", "lsh_")) or k == "vector" for k in dedup), sorted(dedup)
        assert "text" in hit["_source"]
    # A caller that names its own _source gets exactly that back: the signature the rule read is taken out.
    resp = search_diversified(es_client, index, {"query": {"match": {"text": "经济"}}, "_source": ["id"]}, size=5)
    assert all(set(h["_source"]) == {"id"} for h in resp["hits"]["hits"])
