"""The review page over a real Elasticsearch node, at the HTTP level: every page, a label, and what the
index holds afterwards (the page writes only its labels file)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from esdedup.api import open_store
from esdedup.review import Review, create_app
from tests.review_fixtures import ingest_sample

pytestmark = pytest.mark.es


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_every_page_over_elasticsearch(es_client, fresh_index: str, tmp_path: Path) -> None:
    ingest_sample(open_store(fresh_index, client=es_client), tmp_path)
    before = es_client.count(index=fresh_index)["count"]
    labels = tmp_path / "labels.jsonl"
    review = Review(open_store(fresh_index, client=es_client), labels).prepare()
    try:
        with TestClient(create_app(review)) as c:
            overview = _text(c.get("/").text)
            assert "15 documents" in overview and "5 clusters of two or more (10 documents)" in overview
            assert "ElasticStore" in overview and "MinHash LSH keys" in overview
            assert "5 clusters, largest first" in _text(c.get("/clusters").text)
            found = c.get("/clusters", params={"q": "高铁"}).text
            assert 'href="/cluster?id=rail-1"' in found
            cluster = c.get("/cluster", params={"id": "rail-1"})
            assert cluster.status_code == 200 and "<mark>" in cluster.text and "shared LSH keys" in cluster.text
            hostile = c.get("/cluster", params={"id": "x<b>1</b>"}).text
            assert "<script>alert" not in hostile and "&lt;script&gt;" in hostile
            assert "pairs to review" in _text(c.get("/review").text)
            for a, b, label in (("rail-1", "rail-2", "1"), ("rail-1", "rail-2", "0"), ("ev-1", "panda-1", "0")):
                assert c.post("/label", data={"a": a, "b": b, "label": label},
                              follow_redirects=False).status_code == 303
            assert "2 labelled pairs (0 same story)" in _text(c.get("/tuning").text)
            search = _text(c.get("/search", params={"q": "高铁"}).text)
            assert "Raw hits (2)" in search and "diversify(hits): 1 kept" in search
            # Elasticsearch ranks by its own score: whichever of the two comes first, the other duplicates it.
            assert re.search(r"rail-(2 duplicates rail-1|1 duplicates rail-2) ?: decided by (jaccard|containment)", search)
    finally:
        review.close()
    assert [json.loads(x) for x in labels.read_text("utf-8").splitlines()] == [
        {"a": "rail-1", "b": "rail-2", "label": 0}, {"a": "ev-1", "b": "panda-1", "label": 0}]
    es_client.indices.refresh(index=fresh_index)
    assert es_client.count(index=fresh_index)["count"] == before


def test_stored_lone_surrogates_and_absurd_page_numbers_over_elasticsearch(es_client, fresh_index: str,
                                                                           tmp_path: Path) -> None:
    """Another client updates two sources with ``\\ud800`` escapes (Elasticsearch keeps them): every page
    answers, showing U+FFFD; a page number past the end shows the last page."""
    ingest_sample(open_store(fresh_index, client=es_client), tmp_path)
    for doc_id in ("rail-1", "rail-2"):
        es_client.perform_request("POST", f"/{fresh_index}/_update/{doc_id}", params={"refresh": "true"},
                                  headers={"content-type": "application/json", "accept": "application/json"},
                                  body='{"doc": {"title": "坏\\ud800标题 ' + doc_id + '", "text": "今天上午\\udc00，'
                                       '连接两座省会城市的新高铁线路正式开通运营。"}}')
    assert "\ud800" in es_client.get(index=fresh_index, id="rail-1")["_source"]["title"]
    review = Review(open_store(fresh_index, client=es_client), tmp_path / "labels.jsonl").prepare()
    try:
        with TestClient(create_app(review)) as c:
            for target in ("/", "/clusters", "/review", "/tuning"):
                assert c.get(target).status_code == 200, target
            for target in ("/search?q=高铁", "/pair?a=rail-1&b=rail-2", "/cluster?id=rail-1", "/clusters?q=高铁"):
                resp = c.get(target)
                assert resp.status_code == 200 and "坏\ufffd标题 rail-" in resp.text, target
            for page in ("9223372036854775807", "9" * 40, "-1"):
                resp = c.get("/clusters", params={"page": page})
                assert resp.status_code == 200 and "cluster-link" in resp.text, page
                resp = c.get("/cluster", params={"id": "rail-1", "page": page})
                assert resp.status_code == 200 and "rail-2" in resp.text, page
            assert c.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1"},
                          follow_redirects=False).status_code == 303
    finally:
        review.close()
