"""The review page in a real browser (Debian's chromium), on the embedded store and on a real
Elasticsearch node: overview -> cluster -> label (button and keyboard) -> tuning -> search."""
from __future__ import annotations

from pathlib import Path

import pytest
from esdedup_cli.common import Connection
from esdedup_cli.review import apply_commands

from esdedup.api import open_store
from esdedup.review import Review
from esdedup.store.base import Store
from tests.browser.browser import chromium_page, served
from tests.browser.walk import walk
from tests.review_fixtures import ingest_sample


def test_without_chromium_the_browser_tests_fail_in_ci_and_skip_elsewhere(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    monkeypatch.setenv("ESDEDUP_TEST_CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must run in CI"), chromium_page():
        pass
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no chromium"), chromium_page():
        pass


def _walk_the_sample(store: Store, connection: Connection, tmp_path: Path) -> None:
    """The README's sample in ``store`` (reached again by ``connection``), walked in the browser."""
    labels = tmp_path / "labels.jsonl"
    review = Review(store, labels, apply_command=apply_commands(store.name, connection, labels)).prepare()
    try:
        with served(review) as url, chromium_page() as page:
            walk(page, url, labels, documents=13)
    finally:
        review.close()


def test_the_walk_on_the_embedded_store(tmp_path: Path) -> None:
    ingest_sample(open_store("news", data_dir=tmp_path / "data"), tmp_path, hostile=False)
    _walk_the_sample(open_store("news", data_dir=tmp_path / "data"), Connection(data_dir=tmp_path / "data"), tmp_path)


def test_a_token_guards_every_page_in_the_browser(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    ingest_sample(open_store("news", data_dir=tmp_path / "data"), tmp_path, hostile=False)
    store = open_store("news", data_dir=tmp_path / "data")
    review = Review(store, tmp_path / "labels.jsonl").prepare()
    token = "a-token-for-the-browser-test"
    try:
        with served(review, token=token) as url, chromium_page() as page:
            resp = page.goto(url)
            assert resp is not None and resp.status == 401
            page.goto(f"{url}clusters?token={token}")
            assert page.url == f"{url}clusters"  # the token left the address bar for a cookie
            expect(page.locator("h1")).to_have_text("Clusters")
            page.click("#nav-overview")
            expect(page.locator("#stat-documents")).to_have_text("13")
    finally:
        review.close()


@pytest.mark.es
def test_the_walk_on_elasticsearch(es_client, fresh_index: str, tmp_path: Path) -> None:
    store = open_store(fresh_index, client=es_client)
    ingest_sample(store, tmp_path, hostile=False)
    _walk_the_sample(store, Connection(es="http://127.0.0.1:9200"), tmp_path)
