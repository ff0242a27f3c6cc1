"""The review page over the embedded store, at the HTTP level (Starlette's TestClient): every page, the
labels file round trip, escaping, and the listening rule."""
from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from esdedup.api import open_store
from esdedup.errors import ConfigError
from esdedup.quality.evaluate import read_labels
from esdedup.review import Review, create_app
from esdedup.review.serve import check_listen, is_loopback
from esdedup.store.local.texts import texts_path
from tests.review_fixtures import ingest_sample

TOKEN = "t0ken-for-the-review-tests"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("review-store")
    store = open_store("news", data_dir=folder)
    ingest_sample(store, folder)
    return folder


def _review(data_dir: Path, labels: Path, **kwargs) -> Review:
    return Review(open_store("news", data_dir=data_dir), labels, **kwargs).prepare()


@pytest.fixture
def review(data_dir: Path, tmp_path: Path) -> Iterator[Review]:
    r = _review(data_dir, tmp_path / "labels.jsonl",
                apply_command=lambda t: [f"apply jaccard={t.jaccard} containment={t.containment}"])
    yield r
    r.close()


@pytest.fixture
def client(review: Review) -> Iterator[TestClient]:
    with TestClient(create_app(review)) as c:
        yield c


def _text(html: str) -> str:
    """What a person reads: the page without its tags, whitespace folded."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_overview_shows_counts_rule_config_and_charts(client: TestClient) -> None:
    resp = client.get("/")
    assert resp.status_code == 200
    text = _text(resp.text)
    assert "15 documents" in text
    assert "5 clusters of two or more (10 documents)" in text
    assert "Jaccard ≥ 0.5 or containment ≥ 0.8" in text
    assert "Clusters by size" in text and "Jaccard of candidate pairs" in text
    assert "threshold 0.5" in text  # the threshold drawn on the Jaccard histogram
    assert "SimHash band keys" in text and "MinHash LSH keys" in text
    assert resp.text.count("<svg") >= 3
    assert "default-src 'self'" in resp.headers["content-security-policy"]


def test_clusters_are_listed_largest_first_and_searchable(client: TestClient) -> None:
    text = _text(client.get("/clusters").text)
    assert "5 clusters, largest first" in text
    for query, cluster in (("rail-2", "rail-1"), ("高铁", "rail-1"), ("大熊猫", "panda-1"), ("PANDA-2", "panda-1")):
        page = client.get("/clusters", params={"q": query}).text
        assert f'href="/cluster?id={cluster}"' in page, query
        assert "1 cluster holding" in _text(page), query
    assert "0 clusters holding" in _text(client.get("/clusters", params={"q": "不存在的词"}).text)


def test_a_cluster_shows_each_member_beside_the_representative(client: TestClient) -> None:
    resp = client.get("/cluster", params={"id": "rail-1"})
    assert resp.status_code == 200
    text = _text(resp.text)
    assert "2 documents" in text and "rail-2" in text
    assert "verdict near-duplicate" in text and re.search(r"decided by (jaccard|containment)", text)
    assert "<mark>" in resp.text  # the characters that differ are marked
    assert "shared LSH keys" in text
    assert client.get("/cluster", params={"id": "no-such"}).status_code == 404
    assert client.get("/cluster").status_code == 400


def test_every_id_title_and_text_is_escaped(client: TestClient) -> None:
    pages = [client.get("/clusters", params={"q": "x<b>"}).text,
             client.get("/cluster", params={"id": "x<b>1</b>"}).text,
             client.get("/pair", params={"a": "x<b>1</b>", "b": "x<b>2</b>"}).text,
             client.get("/search", params={"q": "台胞证"}).text,
             client.get("/cluster", params={"id": "<script>alert(1)</script>"}).text]
    for html in pages:
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>1</b>" not in html
        assert "<i>twin" not in html
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt;" in pages[1]


def test_pair_page_and_labels_by_button(client: TestClient, review: Review) -> None:
    resp = client.get("/pair", params={"a": "rail-1", "b": "rail-2"})
    assert resp.status_code == 200 and "not labelled yet" in resp.text
    saved = client.post("/label", data={"a": "rail-2", "b": "rail-1", "label": "1", "next": "/pair?a=rail-1&b=rail-2"},
                        follow_redirects=False)
    assert saved.status_code == 303 and saved.headers["location"] == "/pair?a=rail-1&b=rail-2"
    assert "labelled: same story" in client.get(saved.headers["location"]).text
    lines = review.labels.path.read_text("utf-8").splitlines()
    assert [json.loads(x) for x in lines] == [{"a": "rail-1", "b": "rail-2", "label": 1}]
    assert client.get("/pair", params={"a": "rail-1", "b": "nope"}).status_code == 404


def test_labels_file_round_trip_one_label_per_pair_last_wins(data_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    first = _review(data_dir, path)
    with TestClient(create_app(first)) as c:
        for a, b, label in (("rail-1", "rail-2", "1"), ("panda-1", "rail-1", "0"), ("rail-2", "rail-1", "0"),
                            ("rail-1", "rail-2", "1"), ("ev-1", "ev-2", "1"), ("ev-2", "ev-1", "0")):
            assert c.post("/label", data={"a": a, "b": b, "label": label}, follow_redirects=False).status_code == 303
    first.close()
    rows = [json.loads(x) for x in path.read_text("utf-8").splitlines()]
    assert rows == [{"a": "rail-1", "b": "rail-2", "label": 1}, {"a": "panda-1", "b": "rail-1", "label": 0},
                    {"a": "ev-1", "b": "ev-2", "label": 0}]
    # What eval reads, unchanged.
    assert {(x.a, x.b, x.label) for x in read_labels(path)} == {("rail-1", "rail-2", 1), ("panda-1", "rail-1", 0),
                                                               ("ev-1", "ev-2", 0)}
    again = _review(data_dir, path)  # a restart reads the labels back
    with TestClient(create_app(again)) as c:
        assert "labelled: different" in c.get("/pair", params={"a": "ev-2", "b": "ev-1"}).text
        assert "3 labelled" in c.get("/").text
    again.close()


def test_bad_labels_are_refused_and_nothing_is_written(client: TestClient, review: Review) -> None:
    for data in ({"a": "rail-1", "b": "rail-2", "label": "2"}, {"a": "rail-1", "label": "1"},
                 {"a": "rail-1", "b": "rail-1", "label": "1"}):
        assert client.post("/label", data=data).status_code == 400, data
    assert client.post("/label", data={"a": "rail-1", "b": "missing", "label": "1"}).status_code == 404
    assert client.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1"},
                       headers={"Origin": "http://evil.example"}).status_code == 403
    assert not review.labels.path.exists()
    with pytest.raises(ConfigError, match="0 .different. or 1"):
        review.labels.set("a", "b", 3)


def test_a_label_redirects_only_inside_the_app(client: TestClient) -> None:
    for target in ("https://evil.example/", "//evil.example/x", "javascript:alert(1)"):
        resp = client.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1", "next": target},
                           follow_redirects=False)
        assert resp.headers["location"] == "/review", target


def test_review_queue_offers_unlabelled_teaching_pairs(client: TestClient) -> None:
    page = _text(client.get("/review").text)
    assert "pairs to review" in page and "threshold" in page
    left = int(re.search(r"(\d+) pairs? to review", page).group(1))  # type: ignore[union-attr]
    first = re.search(r'name="a" value="([^"]+)".*?name="b" value="([^"]+)"', client.get("/review").text, re.S)
    assert first
    client.post("/label", data={"a": first.group(1), "b": first.group(2), "label": "1", "next": "/review"})
    after = _text(client.get("/review").text)
    assert (f"{left - 1} pair" in after) if left > 1 else "Nothing left to review" in after


def test_tuning_scores_the_labels_and_prints_the_command(client: TestClient) -> None:
    assert "No labels yet" in _text(client.get("/tuning").text)
    for a, b, label in (("rail-1", "rail-2", "1"), ("ev-1", "ev-2", "1"), ("panda-1", "panda-2", "1"),
                        ("rain-1", "rain-2", "0"), ("rail-1", "panda-1", "0")):
        client.post("/label", data={"a": a, "b": b, "label": label})
    resp = client.get("/tuning")
    text = _text(resp.text)
    assert "5 labelled pairs (3 same story), 4 of them candidates" in text
    assert "precision" in text and "F1" in text and "best" in text
    assert re.search(r"apply jaccard=[0-9.]+ containment=", text)
    assert resp.text.count("<polyline") >= 9  # precision, recall and F1 over each threshold


def test_search_shows_raw_hits_beside_the_diversified_ones(client: TestClient) -> None:
    text = _text(client.get("/search", params={"q": "高铁"}).text)
    assert "Raw hits (2)" in text and "diversify(hits): 1 kept" in text and "Dropped (1)" in text
    assert re.search(r"rail-2 duplicates rail-1 ?: decided by (jaccard|containment) \d\.\d{4}", text)
    assert "Raw hits (0)" in _text(client.get("/search", params={"q": "不存在的词"}).text)


def test_the_review_brings_the_text_index_up_to_date_as_it_starts(tmp_path: Path) -> None:
    """Ingest writes no text index; the review's start brings it up to date in the background, before any
    search asks for it."""
    store = open_store("news", data_dir=tmp_path)
    ingest_sample(store, tmp_path)
    index_file = texts_path(tmp_path / "news.sqlite")
    assert not index_file.exists()
    db = sqlite3.connect(tmp_path / "news.sqlite")
    written = db.execute("SELECT MAX(seq) FROM docs").fetchone()[0]
    db.close()
    review = _review(tmp_path, tmp_path / "labels.jsonl")
    try:
        deadline = time.monotonic() + 60
        while _indexed_up_to(index_file) < written and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _indexed_up_to(index_file) == written
    finally:
        review.close()


def _indexed_up_to(index_file: Path) -> int:
    """The last ``seq`` the text index file holds every document up to (0: none yet)."""
    if not index_file.exists():
        return 0
    db = sqlite3.connect(index_file)
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'indexed'").fetchone()
    except sqlite3.OperationalError:  # made, its tables not yet
        return 0
    finally:
        db.close()
    return int(row[0]) if row else 0


def test_the_listening_rule() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert is_loopback(host)
        check_listen(host, None)
    for host in ("0.0.0.0", "192.168.1.10", "::", "example.org"):
        assert not is_loopback(host)
        with pytest.raises(ConfigError, match="only with an access token"):
            check_listen(host, None)
        check_listen(host, TOKEN)
    with pytest.raises(ConfigError, match="at least 16"):
        check_listen("0.0.0.0", "short")


def test_with_a_token_every_request_without_it_is_refused(review: Review) -> None:
    with TestClient(create_app(review, token=TOKEN)) as c:
        for path in ("/", "/clusters", "/cluster?id=rail-1", "/pair?a=rail-1&b=rail-2", "/review", "/tuning",
                     "/search?q=x", "/static/review.css", "/nope"):
            assert c.get(path).status_code == 401, path
            assert c.get(path, headers={"Authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
        assert c.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1"}).status_code == 401
        assert not review.labels.path.exists()
        assert c.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        first = c.get(f"/clusters?q=rail&token={TOKEN}", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/clusters?q=rail"
        assert TOKEN not in first.headers["location"]
        assert c.get("/tuning").status_code == 200  # the cookie the first request set
        c.cookies.clear()
        assert c.get("/tuning").status_code == 401


def test_the_cli_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    from esdedup_cli.main import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["review", "--index", "news", "--data-dir", str(tmp_path), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "only with an access token" in result.output and "--token" in result.output


def test_clusters_and_members_are_paged(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from esdedup.review import pages

    monkeypatch.setattr(pages, "CLUSTERS_PER_PAGE", 2)
    seen = []
    for page in range(3):
        html = client.get("/clusters", params={"page": page}).text
        seen += re.findall(r'href="/cluster\?id=([^"]+)"', html)
        assert f"page {page + 1} of 3" in html
    assert len(seen) == len(set(seen)) == 5
    assert 'href="/clusters?page=1"' in client.get("/clusters").text
    found = client.get("/clusters", params={"q": "的", "page": 1}).text  # a character most texts hold
    assert 'href="/clusters?page=0&amp;q=%E7%9A%84"' in found
    monkeypatch.setattr(pages, "MEMBERS_PER_PAGE", 1)
    assert "page 1 of 1" not in client.get("/cluster", params={"id": "rail-1"}).text  # one member: no pager


def test_the_survey_reads_at_most_max_pairs(data_dir: Path) -> None:
    from esdedup.match.thresholds import Thresholds
    from esdedup.review.survey import survey

    store = open_store("news", data_dir=data_dir)
    try:
        t = Thresholds.from_config(store.open(None, create=False).config)
        whole, part = survey(store, t), survey(store, t, max_pairs=2)
    finally:
        store.close()
    assert whole.pairs == 5 and not whole.truncated
    assert part.pairs == 2 and part.truncated
    assert sum(part.histograms["jaccard"].counts) == 2


def test_above_the_full_survey_size_no_page_reads_every_document(data_dir: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``full_survey_max`` documents the start and every page use the store's paged queries and a
    sample of documents: a scan of the store, or an all-pairs pass, fails the test."""
    from esdedup.store.local import LocalStore

    def refused(*args, **kwargs):
        raise AssertionError("the review read every document")

    monkeypatch.setattr(LocalStore, "scan", refused)
    monkeypatch.setattr(LocalStore, "key_batches", refused)
    r = _review(data_dir, tmp_path / "labels.jsonl", full_survey_max=5, sample_docs=15)
    try:
        assert r.survey.sampled == 15 and r.survey.pairs == 5  # every document sampled: every candidate pair
        with TestClient(create_app(r)) as c:
            overview = _text(c.get("/").text)
            assert "5 candidate pairs of 15 documents chosen at random" in overview
            assert "The measures' charts and the review queue come from a sample" in overview
            first = c.get("/review").text
            pair = re.search(r'name="a" value="([^"]+)".*?name="b" value="([^"]+)"', first, re.S)
            assert pair is not None
            pages = ["/clusters", "/clusters?page=1", "/cluster?id=rail-1", "/tuning", "/search?q=高铁",
                     "/clusters?q=大熊猫", f"/pair?a={pair[1]}&b={pair[2]}"]
            for url in pages:
                assert c.get(url).status_code == 200, url
    finally:
        r.close()


def test_the_search_page_says_how_many_documents_match(client: TestClient) -> None:
    text = _text(client.get("/search", params={"q": "高铁"}).text)
    assert re.search(r"\d+ documents? match", text)
    assert "this index has no text index" not in text
