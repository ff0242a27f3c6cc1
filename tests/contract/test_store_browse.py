"""One contract, two stores, for what a person browsing an index reads (the review page): clusters largest
first and paged, their size histogram, the sizes of named clusters, the most shared band and LSH key
values, a text search and a random sample. Every test runs on the embedded store and on a real node."""
from __future__ import annotations

import uuid

import pytest

from esdedup import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.schema import content_sha1
from esdedup.store.base import ClusterSize, NewDoc, Store
from esdedup.store.elastic import keys as elastic_keys
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore
from tests.engines import BACKENDS, server_client

CONFIG = FingerprintConfig(tokenizer="rjieba")
TEXTS = ["床前明月光，疑是地上霜。举头望明月，低头思故乡。" * 3,
         "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。" * 3,
         "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。" * 3,
         "The quick brown fox jumps over the lazy dog near the river bank today.",
         "千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。" * 3]
#: cluster id -> its members (the representative first): sizes 4, 3, 2, 2 and one document alone.
CLUSTERS = {"a0": ["a0", "a1", "a2", "a3"], "b0": ["b0", "b1", "b2"], "c0": ["c0", "c1"], "d0": ["d0", "d1"],
            "e0": ["e0"]}


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    """A store of one backend holding `CLUSTERS` (each cluster's members share its text), dropped afterwards."""
    if request.param == "local":
        s: Store = LocalStore(f"b-{uuid.uuid4().hex[:8]}", tmp_path / "data")
    else:
        s = ElasticStore(server_client(request), f"esdedup-browse-{uuid.uuid4().hex[:10]}",
                         shards=2, replicas=0)
    s.open(CONFIG)
    fps = Fingerprinter(CONFIG).fingerprint_many(TEXTS)
    docs, seq = [], 0
    for k, (cid, members) in enumerate(CLUSTERS.items()):
        for m in members:
            seq += 1
            src = {"id": m, "title": f"<b>title {m}</b>", "text": TEXTS[k]}
            docs.append(NewDoc(m, fps[k], src, content_sha1(TEXTS[k]), cid, None if m == cid else cid, seq=seq,
                               cluster_seq=seq - members.index(m)))
    assert all(r.ok for r in s.write(docs))
    s.refresh()
    yield s
    s.drop()


def test_clusters_largest_first_paged_with_their_histogram(store):
    assert store.cluster_page(offset=0, size=10) == [ClusterSize("a0", 4), ClusterSize("b0", 3),
                                                     ClusterSize("c0", 2), ClusterSize("d0", 2)]
    assert store.cluster_page(offset=1, size=2) == [ClusterSize("b0", 3), ClusterSize("c0", 2)]
    assert store.cluster_page(offset=10, size=5) == []
    s = store.cluster_summary()
    assert (s.clusters, s.clustered, s.sizes, s.exact) == (4, 11, [(2, 2), (3, 1), (4, 1)], True)
    assert store.cluster_sizes(["b0", "e0", "nope"]) == {"b0": 3, "e0": 1}


@pytest.mark.es
def test_pages_past_one_aggregation_come_from_the_listing_of_every_cluster(es_client, tmp_path, monkeypatch):
    """An aggregation lists the largest clusters only (60,000 on a real index; 2 here): a deeper page is read
    from every cluster in the same order, and is read again once the labels change."""
    from esdedup.store.elastic import browse

    store = ElasticStore(es_client, f"esdedup-browse-{uuid.uuid4().hex[:10]}", shards=2, replicas=0)
    store.open(CONFIG)
    try:
        fps = Fingerprinter(CONFIG).fingerprint_many(TEXTS)
        docs = [NewDoc(m, fps[k], {"text": TEXTS[k]}, content_sha1(TEXTS[k]), cid, None if m == cid else cid, seq=j)
                for j, (k, (cid, members)) in enumerate((k, kv) for k, kv in enumerate(CLUSTERS.items()))
                for m in members]
        assert all(r.ok for r in store.write(docs))
        store.refresh()
        whole = store.cluster_page(offset=0, size=10)
        assert browse.every_cluster(store.index) == whole == [
            ClusterSize("a0", 4), ClusterSize("b0", 3), ClusterSize("c0", 2), ClusterSize("d0", 2)]
        monkeypatch.setattr(browse, "MAX_CLUSTER_BUCKETS", 2)
        assert store.cluster_page(offset=0, size=2) == whole[:2]
        assert store.cluster_page(offset=1, size=2) == whole[1:3]
        assert store.cluster_page(offset=2, size=5) == whole[2:]
        assert store.relabel({"a3": (99, "a3")}) == 1
        store.refresh()
        assert store.cluster_page(offset=0, size=3) == [ClusterSize("a0", 3), ClusterSize("b0", 3), ClusterSize("c0", 2)]
    finally:
        store.drop()


def test_the_summary_follows_a_change_of_labels(store):
    assert store.cluster_summary().clusters == 4
    assert store.relabel({"d1": (13, "d1")}) == 1
    store.refresh()
    assert store.cluster_summary().clusters == 3
    assert [c.cluster_id for c in store.cluster_page(offset=0, size=10)] == ["a0", "b0", "c0"]


@pytest.mark.parametrize("distinct_a_request", [None, 5])
def test_top_keys_of_each_kind(store, monkeypatch, distinct_a_request):
    """``distinct_a_request``: Elasticsearch counts each key field in parts of that many distinct values (a shard
    holds a bucket for each value it counts), whose most held values are merged."""
    if distinct_a_request is not None:
        monkeypatch.setattr(elastic_keys, "DISTINCT_A_REQUEST", distinct_a_request)
    fps = Fingerprinter(CONFIG).fingerprint_many(TEXTS)
    held: dict[tuple[bool, str], int] = {}
    for k, members in enumerate(CLUSTERS.values()):
        for key in fps[k].bands:
            held[(False, key)] = held.get((False, key), 0) + len(members)
        for key in fps[k].lsh:
            held[(True, str(key))] = held.get((True, str(key)), 0) + len(members)
    for lsh in (False, True):
        want = sorted(((key, n) for (kind, key), n in held.items() if kind == lsh and n >= 2),
                      key=lambda kn: (-kn[1], kn[0]))
        top = store.top_keys(lsh=lsh, limit=3)
        got = top.values
        assert top.sampled is None
        # Counts as they should be; among equal counts either store may cut at other values (Elasticsearch
        # orders the numeric LSH keys as numbers).
        assert [n for _, n in got] == [n for _, n in want[:3]] and set(got) <= set(want)
    assert store.top_keys(lsh=True, limit=3).values  # the default config gives every text a signature, so LSH keys


def test_search_by_text_in_sequence_by_word_and_by_id(store):
    page = store.search_text("明月", size=10)
    assert sorted(h.id for h in page.hits) == ["a0", "a1", "a2", "a3"] and page.total == 4
    assert page.hits[0].source["text"] == TEXTS[0] and {h.cluster_id for h in page.hits} == {"a0"}
    assert store.search_text("月明", size=10).hits == [] or all(h.id.startswith("a") for h in
                                                               store.search_text("月明", size=10).hits)
    assert [h.id for h in store.search_text("黄河入海", size=10).hits] == ["b0", "b1", "b2"] or sorted(
        h.id for h in store.search_text("黄河入海", size=10).hits) == ["b0", "b1", "b2"]
    assert sorted(h.id for h in store.search_text("brown fox", size=10).hits) == ["d0", "d1"]
    assert sorted(h.id for h in store.search_text("海明", size=10).hits) == []
    by_id = store.search_text("e0", size=10)
    assert "e0" in [h.id for h in by_id.hits]
    two = store.search_text("明月", offset=2, size=2)
    assert len(two.hits) == 2 and not {h.id for h in two.hits} & {h.id for h in store.search_text("明月", size=2).hits}
    assert store.search_text("   ", size=10).hits == []
    assert store.search_text('"<script>', size=10).hits == []


def test_a_text_search_finds_each_id_s_last_written_text(store):
    """An id written twice in one batch keeps its second text, a stored id written again its new one: the
    text search finds those and not the texts they replaced."""
    texts = ["大漠孤烟直，长河落日圆。" * 3, "会当凌绝顶，一览众山小。" * 3, "两个黄鹂鸣翠柳，一行白鹭上青天。" * 3]
    fps = Fingerprinter(CONFIG).fingerprint_many(texts)
    docs = [NewDoc(i, fps[k], {"id": i, "title": "t", "text": texts[k]}, content_sha1(texts[k]), i, None, seq=100 + n,
                   cluster_seq=100 + n) for n, (i, k) in enumerate([("x", 0), ("x", 1), ("a0", 2)])]
    assert all(r.ok for r in store.write(docs))
    store.refresh()
    assert [h.id for h in store.search_text("孤烟", size=10).hits] == []
    assert [h.id for h in store.search_text("凌绝顶", size=10).hits] == ["x"]
    assert [h.id for h in store.search_text("黄鹂", size=10).hits] == ["a0"]
    assert sorted(h.id for h in store.search_text("明月", size=10).hits) == ["a1", "a2", "a3"]


def test_a_text_search_prepared_ahead_finds_what_was_written_before_and_after(store):
    """`prepare_text_search` returns without waiting; a search after it finds the documents written before
    it and those written while it prepared, not a text replaced since."""
    store.prepare_text_search()
    texts = ["大漠孤烟直，长河落日圆。" * 3, "会当凌绝顶，一览众山小。" * 3]
    fps = Fingerprinter(CONFIG).fingerprint_many(texts)
    assert all(r.ok for r in store.write([
        NewDoc(i, fps[k], {"id": i, "title": "t", "text": texts[k]}, content_sha1(texts[k]), i, None, seq=100 + k,
               cluster_seq=100 + k) for k, i in enumerate(["y", "b0"])]))
    store.refresh()
    assert sorted(h.id for h in store.search_text("明月", size=10).hits) == ["a0", "a1", "a2", "a3"]
    assert [h.id for h in store.search_text("孤烟", size=10).hits] == ["y"]
    assert [h.id for h in store.search_text("凌绝顶", size=10).hits] == ["b0"]
    assert sorted(h.id for h in store.search_text("黄河入海", size=10).hits) == ["b1", "b2"]


def test_sample_is_random_bounded_and_repeatable(store):
    got = store.sample(5, seed=3)
    assert 1 <= len(got) <= 5 and len({d.id for d in got}) == len(got)
    assert {d.id for d in got} <= {m for ms in CLUSTERS.values() for m in ms}
    assert [d.id for d in store.sample(5, seed=3)] == [d.id for d in got]
    assert len(store.sample(100, seed=1)) == 12


def test_without_a_text_index_the_local_store_reads_a_bounded_number_and_says_so(tmp_path, monkeypatch):
    """A file that has no text index and cannot get one (read-only, written before it) is searched by
    reading at most `SCAN_LIMIT` documents in write order, and the answer says how many were read."""
    from esdedup.store.local import texts

    s = LocalStore("ro", tmp_path)
    s.open(CONFIG)
    fps = Fingerprinter(CONFIG).fingerprint_many(TEXTS)
    assert all(r.ok for r in s.write(NewDoc(f"d{k}", fp, {"text": TEXTS[k]}, content_sha1(TEXTS[k]))
                                     for k, fp in enumerate(fps)))
    monkeypatch.setattr(texts, "SCAN_LIMIT", 3)
    s._texts.unavailable = True
    page = s.search_text("黄河", size=10)
    assert ([h.id for h in page.hits], page.searched) == (["d1"], 3)
    assert s.search_text("独钓寒江", size=10).hits == []  # the fifth document: beyond the three read
    s.close()


def test_a_large_local_store_chooses_its_top_keys_among_a_sample(tmp_path, monkeypatch):
    """Above `TOP_KEYS_EXACT_MAX` documents the embedded store chooses the values among those of a sample of
    documents and counts each exactly: with every document in the sample, the answer is the exact one."""
    from esdedup.store.local import keys

    s = LocalStore("top", tmp_path)
    s.open(CONFIG)
    fps = Fingerprinter(CONFIG).fingerprint_many(TEXTS)
    assert all(r.ok for r in s.write(NewDoc(f"d{k}-{i}", fp, {"text": TEXTS[k]}, content_sha1(TEXTS[k]))
                                     for k, fp in enumerate(fps) for i in range(k + 1)))
    exact = s.top_keys(lsh=True, limit=5)
    monkeypatch.setattr(keys, "TOP_KEYS_EXACT_MAX", 0)
    monkeypatch.setattr(keys, "TOP_KEYS_SAMPLE", 100)
    s.close()
    sampled = LocalStore("top", tmp_path)
    sampled.open(None, create=False)
    got = sampled.top_keys(lsh=True, limit=5)
    assert exact.sampled is None and got.sampled == 15 and got.values == exact.values
    assert [n for _, n in got.values] == [5] * 5
    sampled.close()


def test_a_large_deferred_key_indexing_says_why_the_command_waits(tmp_path, monkeypatch, caplog):
    """An ingest that writes alone leaves its keys to the first read of them (here `dups --lsh-join store`'s):
    above `NOTICE_DOCS` documents that read says what it is doing (a minute or more at a million documents),
    once; below it, nothing."""
    import logging

    from esdedup.ingest import IngestOptions, ingest
    from esdedup.match.pairs import find_pairs
    from esdedup.store.local import keys

    path = tmp_path / "poems.jsonl"
    path.write_text("".join(f'{{"id": "p{i}", "text": "{TEXTS[i % 3]}{i}"}}\n' for i in range(30)), "utf-8")
    for notice, said in ((1000, False), (5, True)):
        monkeypatch.setattr(keys, "NOTICE_DOCS", notice)
        data = tmp_path / f"data-{notice}"
        store = LocalStore("poems", data)
        assert ingest([path], store, CONFIG, IngestOptions(workers=1)).ok
        store.close()
        store = LocalStore("poems", data)
        store.open(None, create=False)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="esdedup.store.local.keys"):
            pairs = list(find_pairs(store, in_memory=False))
            again = list(find_pairs(store, in_memory=False))
        notes = [r.getMessage() for r in caplog.records]
        assert pairs and again == pairs
        assert bool(notes) is said, notes
        assert all(n.startswith("indexing the ") and "keys of up to 30 documents" in n for n in notes), notes
        assert len(notes) == len(set(notes)), notes  # each table once, not again on the second lookup
        store.close()
