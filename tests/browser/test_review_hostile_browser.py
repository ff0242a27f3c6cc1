"""The review page in a real browser (Debian's chromium) against a hostile site and a failing labels file, on
the embedded store: a name rebound to 127.0.0.1 gets nothing, a token login never leaves the site, a label the
file did not take is shown as not saved, and text UTF-8 cannot carry is shown as U+FFFD."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

from esdedup.api import open_store
from esdedup.review import Review
from tests.browser.browser import chromium_page, screenshot, served
from tests.review_fixtures import ingest_sample

TOKEN = "a-token-for-the-hostile-browser-test"
#: What a DNS rebinding attack makes of a name the attacker owns: it resolves to this machine's loopback address.
REBIND = ["--host-resolver-rules=MAP rebind.test 127.0.0.1, MAP evil.example 127.0.0.1"]


def _review(tmp_path: Path, labels: Path) -> Review:
    ingest_sample(open_store("news", data_dir=tmp_path / "data"), tmp_path, hostile=False)
    return Review(open_store("news", data_dir=tmp_path / "data"), labels).prepare()


def test_a_name_rebound_to_loopback_gets_nothing_and_the_real_address_everything(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    review = _review(tmp_path, tmp_path / "labels.jsonl")
    try:
        with served(review) as url, chromium_page(REBIND) as page:
            port = urlsplit(url).port
            for path in ("/", "/search?q=高铁", "/pair?a=rail-1&b=rail-2", "/static/review.css"):
                resp = page.goto(f"http://rebind.test:{port}{path}")
                assert resp is not None and resp.status == 403, path
                assert "新高铁" not in page.content()
            # The attacker's page (same origin as the rebound name) posts a label: refused, nothing written.
            status = page.evaluate("""async () => (await fetch('/label', {method: 'POST', headers:
                {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'a=rail-1&b=rail-2&label=0'})).status""")
            assert status == 403
            assert not review.labels.path.exists()
            for base in (f"http://localhost:{port}", f"http://127.0.0.1:{port}"):
                page.goto(f"{base}/pair?a=rail-1&b=rail-2")
                expect(page.locator("h1")).to_have_text("Pair")
            page.click("#label-same")
            expect(page.locator("#labelled-count")).to_have_text("1 labelled")
    finally:
        review.close()


def test_a_token_login_never_redirects_off_the_site(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    review = _review(tmp_path, tmp_path / "labels.jsonl")
    try:
        with served(review, token=TOKEN) as url, chromium_page(REBIND) as page:
            site = urlsplit(url).netloc
            for path in ("//evil.example/", "/%2F%2Fevil.example/", "/\\evil.example/", "/%5Cevil.example/",
                         "/%09/evil.example/"):
                page.context.clear_cookies()
                page.goto(f"http://{site}{path}?token={TOKEN}")
                assert urlsplit(page.url).netloc == site, (path, page.url)
            page.goto(f"http://{site}/clusters?token={TOKEN}")
            assert page.url == f"http://{site}/clusters"
            expect(page.locator("h1")).to_have_text("Clusters")
    finally:
        review.close()


def test_a_label_the_file_did_not_take_is_shown_as_not_saved(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    labels = tmp_path / "labels" / "labels.jsonl"
    labels.parent.mkdir()
    review = _review(tmp_path, labels)
    folder, moved = labels.parent, tmp_path / "moved"
    try:
        with served(review) as url, chromium_page() as page:
            page.goto(f"{url}pair?a=rail-1&b=rail-2")
            expect(page.locator("#current-label")).to_have_text("not labelled yet")
            folder.rename(moved)
            folder.write_text("the labels folder is a file now")  # no write of the labels file can succeed
            page.click("#label-same")
            expect(page.locator("#error-title")).to_have_text("Label not saved")
            expect(page.locator("#error-message")).to_contain_text("The label was not saved: cannot write labels file")
            expect(page.locator("#labelled-count")).to_have_text("0 labelled")
            screenshot(page, "label-not-saved")
            page.click("#error-back")
            expect(page.locator("#current-label")).to_have_text("not labelled yet")
            expect(page.locator("#labelled-count")).to_have_text("0 labelled")
            page.click("#nav-tuning")
            expect(page.locator("#tuning-summary")).to_contain_text("0 labelled pairs")
            folder.unlink()
            moved.rename(folder)  # the folder back: the same click saves
            page.goto(f"{url}pair?a=rail-1&b=rail-2")
            page.click("#label-same")
            expect(page.locator("#current-label")).to_have_text("labelled: same story")
            expect(page.locator("#labelled-count")).to_have_text("1 labelled")
    finally:
        review.close()
    assert [json.loads(x) for x in labels.read_text("utf-8").splitlines()] == [{"a": "rail-1", "b": "rail-2", "label": 1}]


def test_text_with_a_lone_surrogate_is_shown_on_every_page(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    ingest_sample(open_store("news", data_dir=tmp_path / "data"), tmp_path, hostile=False)
    db = sqlite3.connect(tmp_path / "data" / "news.sqlite")  # another client's write: JSON with \ud800 escapes
    for doc_id in ("rail-1", "rail-2"):
        src = json.loads(db.execute("SELECT source FROM docs WHERE id = ?", (doc_id,)).fetchone()[0])
        src["title"] = f"坏\ud800标题 {doc_id}"
        db.execute("UPDATE docs SET source = ? WHERE id = ?", (json.dumps(src), doc_id))
    db.commit()
    db.close()
    review = Review(open_store("news", data_dir=tmp_path / "data"), tmp_path / "labels.jsonl").prepare()
    try:
        with served(review) as url, chromium_page() as page:
            page.goto(f"{url}search?q=高铁")
            expect(page.locator("#raw-hits li")).to_have_count(2)
            expect(page.locator("#raw-hits")).to_contain_text("坏\ufffd标题 rail-")
            page.click("#dropped-hits a.dup-link")
            expect(page.locator("h1")).to_have_text("Pair")
            expect(page.locator(".pair")).to_contain_text("坏\ufffd标题 rail-1")
            page.click("#label-different")
            expect(page.locator("#labelled-count")).to_have_text("1 labelled")
    finally:
        review.close()
