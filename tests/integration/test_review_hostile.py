"""The review page against a hostile web page and a careless user, on the embedded store, served by uvicorn
on a real loopback port (and the `esdedup review` command as a real process): the Host check that stops DNS
rebinding, one owner per labels file, a label the file did not take, the labels path checked at the start,
stored text UTF-8 cannot carry, odd tokens and page numbers, and every redirect target."""
from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from starlette.testclient import TestClient

from esdedup.api import open_store
from esdedup.errors import ConfigError, OutputError
from esdedup.review import Review, Server, check_listen, create_app
from esdedup.review.labels import LabelsFile
from tests.browser.browser import served
from tests.reliability import cli_cmd, cli_env, run_cli, start_cli, wait_for
from tests.review_fixtures import ingest_sample

TOKEN = "t0ken-for-the-hostile-review-tests"
#: Every route of the app, with a request that reads something (GET) or writes a label (POST).
ROUTES = ["/", "/clusters", "/clusters?q=%E9%AB%98%E9%93%81", "/cluster?id=rail-1", "/pair?a=rail-1&b=rail-2",
          "/review", "/tuning", "/search?q=%E9%AB%98%E9%93%81", "/static/review.css", "/static/review.js", "/nope"]
LABEL = "a=rail-1&b=rail-2&label=1"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("review-hostile")
    ingest_sample(open_store("news", data_dir=folder / "data"), folder)
    return folder / "data"


@pytest.fixture
def review(data_dir: Path, tmp_path: Path) -> Iterator[Review]:
    r = Review(open_store("news", data_dir=data_dir), tmp_path / "labels.jsonl").prepare()
    yield r
    r.close()


def _request(address: str, port: int, method: str, target: str, host: str | None,
             headers: dict[str, str] | None = None, body: str | None = None) -> tuple[int, str | None, str]:
    """One request with exactly the ``Host`` header given (none when None): status, Location, body."""
    conn = http.client.HTTPConnection(address, port, timeout=60)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        if host is not None:
            conn.putheader("Host", host)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        data = body.encode() if body is not None else None
        if data is not None:
            conn.putheader("Content-Type", "application/x-www-form-urlencoded")
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        resp = conn.getresponse()
        return resp.status, resp.getheader("location"), resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


# -- DNS rebinding ------------------------------------------------------------------------------------------
def test_without_a_token_only_the_listening_address_is_answered_on_every_route(review: Review) -> None:
    with served(review) as url:
        port = urlsplit(url).port
        assert port
        for name in ("evil.example", "127.0.0.1.evil.example", "localhost.", "127.0.0.2", "[::1]", "0.0.0.0",
                     "localhost:80@evil.example"):
            host = f"{name}:{port}"
            for target in ROUTES:
                status, _, body = _request("127.0.0.1", port, "GET", target, host)
                assert status == 403 and "新高铁" not in body, (host, target, status)
            status, _, _ = _request("127.0.0.1", port, "POST", "/label", host, {"Origin": f"http://{host}"}, LABEL)
            assert status == 403, host
        for host in ("127.0.0.1", "localhost", f"127.0.0.1:{port + 1}", f"localhost:{port}0", None, ""):
            assert _request("127.0.0.1", port, "GET", "/", host)[0] in (400, 403), host  # none: uvicorn's 400
        assert not review.labels.path.exists()
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}"):
            for target in ROUTES[:-1]:
                assert _request("127.0.0.1", port, "GET", target, host)[0] == 200, (host, target)
        status, location, _ = _request("127.0.0.1", port, "POST", "/label", f"localhost:{port}",
                                       {"Origin": f"http://localhost:{port}"}, LABEL)
        assert status == 303 and location == "/review"
        assert len(review.labels) == 1
    with served(review, token=TOKEN) as url:  # with a token (needed beyond loopback), any name it is reached by
        port = urlsplit(url).port
        assert port
        assert _request("127.0.0.1", port, "GET", "/", "review.example:443")[0] == 401
        assert _request("127.0.0.1", port, "GET", "/", "review.example:443",
                        {"Authorization": f"Bearer {TOKEN}"})[0] == 200


def test_on_ipv6_loopback_the_bracketed_address_is_answered(review: Review) -> None:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    server = Server(create_app(review), host="::1", port=0)
    server.start()
    try:
        port = server.port
        assert server.url == f"http://[::1]:{port}/"
        for host in (f"[::1]:{port}", f"[0:0:0:0:0:0:0:1]:{port}", f"localhost:{port}"):
            assert _request("::1", port, "GET", "/", host)[0] == 200, host
        for host in (f"evil.example:{port}", f"127.0.0.1:{port}", f"[::1]:{port + 1}", f"::1:{port}", "[::1"):
            assert _request("::1", port, "GET", "/clusters", host)[0] == 403, host
    finally:
        server.stop()


# -- redirects --------------------------------------------------------------------------------------------
#: Paths a token login may arrive at that a browser, sent to them as they are, would take for another site.
LOGIN_PATHS = ["//evil.example/", "///evil.example/", "/%2F%2Fevil.example/", "/%2f/evil.example/", "/\\evil.example/",
               "/%5Cevil.example/", "/%5C%5Cevil.example/", "/%09/evil.example/", "/%0a/evil.example/",
               "//evil.example/clusters"]
#: ``next`` values a label form or a pair link may carry.
NEXT_TARGETS = ["//evil.example/", "/\\evil.example", "\\\\evil.example", "/\t/evil.example", "/\n/evil.example",
                "https://evil.example/", "javascript:alert(1)", "/\\/evil.example", " //evil.example", "\x0b//evil"]


def test_no_redirect_leaves_the_site(review: Review) -> None:
    """The token login's redirect (from the path the browser sent, encoded or not), the label's ``next``
    and the ``next`` the pair page passes on to its form."""
    with served(review, token=TOKEN) as url:
        port = urlsplit(url).port
        assert port
        for path in LOGIN_PATHS:
            status, location, _ = _request("127.0.0.1", port, "GET", f"{path}?token={TOKEN}&q=x", f"127.0.0.1:{port}")
            assert status == 303 and location is not None, path
            assert TOKEN not in location
            resolved = urlsplit(urljoin(url, location))
            assert resolved.netloc == f"127.0.0.1:{port}" and location.startswith("/"), (path, location)
            assert not re.match(r"/[/\\]", location) and not re.search(r"[\t\r\n\\]", location), (path, location)
    with TestClient(create_app(review)) as c:
        for target in NEXT_TARGETS:
            resp = c.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1", "next": target},
                          follow_redirects=False)
            assert resp.status_code == 303 and resp.headers["location"] == "/review", target
            page = c.get("/pair", params={"a": "rail-1", "b": "rail-2", "next": target}).text
            field = re.search(r'name="next" value="([^"]*)"', page)
            assert field is not None and field.group(1).startswith("/pair?"), (target, field)
        ok = c.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1", "next": "/cluster?id=rail-1"},
                    follow_redirects=False)
        assert ok.headers["location"] == "/cluster?id=rail-1"


# -- tokens and page numbers ------------------------------------------------------------------------------
def test_a_token_that_cannot_travel_in_a_url_and_cookie_is_refused_at_the_start(review: Review, data_dir: Path,
                                                                                tmp_path: Path) -> None:
    for token in ("tökentökentökentöken", "токентокентокентокен", "令牌令牌令牌令牌令牌令牌令牌令牌",
                  "a-token with spaces-1234", "a+token/that=is+base64==", "token;path=/;domain=x"):
        with pytest.raises(ConfigError, match="only ASCII letters, digits"):
            check_listen("127.0.0.1", token)
        with pytest.raises(ConfigError, match="only ASCII letters, digits"):
            create_app(review, token=token)
    for env, flag in (({}, ["--token", "tökentökentökentöken"]), ({"ESDEDUP_REVIEW_TOKEN": "令牌令牌令牌令牌令牌令牌令牌令牌"}, [])):
        try:
            r = run_cli("review", "--index", "news", "--data-dir", data_dir, "--port", "0", "--labels",
                        tmp_path / "l.jsonl", *flag, env=env, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"review started serving with the token {flag or env}")
        assert r.returncode == 2, (flag, env, r.stdout, r.stderr)
        assert "only ASCII letters, digits" in r.stderr and "Traceback" not in r.stderr
        assert "http://" not in r.stdout
    token = "Az09-._~Az09-._~Az09"  # every character a token may hold
    with TestClient(create_app(review, token=token)) as c:
        first = c.get(f"/tuning?token={token}", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/tuning"
        assert c.get("/tuning").status_code == 200


def test_absurd_page_numbers_show_the_last_page(review: Review) -> None:
    with TestClient(create_app(review)) as c:
        last = c.get("/clusters").text
        for page in ("9223372036854775807", "9" * 40, "1" + "0" * 5000, "-9223372036854775809", "1e9", "0x10", "NaN"):
            resp = c.get("/clusters", params={"page": page})
            assert resp.status_code == 200, page
            assert "page 1 of" in resp.text or resp.text == last, page
            cluster = c.get("/cluster", params={"id": "rail-1", "page": page})
            assert cluster.status_code == 200 and "rail-2" in cluster.text, page
            found = c.get("/clusters", params={"q": "高铁", "page": page})
            assert found.status_code == 200 and "rail-1" in found.text, page


# -- stored text that UTF-8 cannot carry ----------------------------------------------------------------------
def test_a_lone_surrogate_in_a_stored_document_breaks_no_page(tmp_path: Path) -> None:
    """Another client wrote ``\\ud800`` escapes into the stored sources (the embedded store's JSON): every page
    answers, the character shown as U+FFFD."""
    ingest_sample(open_store("news", data_dir=tmp_path / "data"), tmp_path)
    db = sqlite3.connect(tmp_path / "data" / "news.sqlite")
    for doc_id in ("rail-1", "rail-2"):
        src = json.loads(db.execute("SELECT source FROM docs WHERE id = ?", (doc_id,)).fetchone()[0])
        src["title"] = "坏\ud800标题"
        src["text"] = src["text"][:12] + "\udc00" + src["text"][12:]
        db.execute("UPDATE docs SET source = ? WHERE id = ?", (json.dumps(src), doc_id))
    db.commit()
    db.close()
    review = Review(open_store("news", data_dir=tmp_path / "data"), tmp_path / "labels.jsonl").prepare()
    try:
        with TestClient(create_app(review)) as c:
            for target in ROUTES[:-3]:
                resp = c.get(target)
                assert resp.status_code == 200, target
            for target in ("/search?q=高铁", "/pair?a=rail-1&b=rail-2", "/cluster?id=rail-1", "/clusters?q=高铁"):
                assert "坏\ufffd标题" in c.get(target).text, target
            assert c.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1"},
                          follow_redirects=False).status_code == 303
    finally:
        review.close()


# -- labels file: one owner -----------------------------------------------------------------------------
def test_a_second_writer_of_a_labels_file_is_refused_naming_the_file_and_the_owner(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    first = LabelsFile(path, who="a review page of index news")
    try:
        first.set("a", "b", 1)
        link = tmp_path / "other-name.jsonl"
        link.symlink_to(path)
        for other in (path, link, tmp_path / "." / "labels.jsonl"):
            with pytest.raises(ConfigError) as err:
                LabelsFile(other)
            assert str(path) in str(err.value) and f"process {os.getpid()}, a review page of index news" in str(err.value)
        first.set("a", "c", 0)
    finally:
        first.close()
    assert not path.with_name("labels.jsonl.lock").exists()  # removed with its owner's end
    again = LabelsFile(path)  # released: the next owner reads every label
    assert again.get("a", "b") == 1 and again.get("c", "a") == 0
    again.close()


def test_a_labels_file_with_another_hard_link_is_refused_by_every_writer(tmp_path: Path) -> None:
    """A hard link is a name the lock beside the other name does not guard, and a write (a rename) would part
    the two: a review on either name, `synth` (`owned_labels`), and an owner whose file gained a link since it
    started are refused, naming the count and the fix; neither name loses a label."""
    path, hard = tmp_path / "labels.jsonl", tmp_path / "hard.jsonl"
    first = LabelsFile(path)
    try:
        first.set("a", "b", 1)
        os.link(path, hard)
        with pytest.raises(OutputError, match="has 2 hard links"):
            first.set("a", "c", 0)
        assert first.get("a", "c") is None
    finally:
        first.close()
    def synth(name: Path) -> None:
        from esdedup.quality.labelsfile import owned_labels

        with owned_labels(name, "esdedup synth writing it"):
            pass

    for name in (path, hard):
        for writer in (LabelsFile, synth):
            with pytest.raises(ConfigError) as err:
                writer(name)
            assert f"labels file {name} has 2 hard links" in str(err.value)
            assert "give a copy of it (cp), not a hard link" in str(err.value)
    assert path.read_text("utf-8") == hard.read_text("utf-8") == '{"a": "a", "b": "b", "label": 1}\n'
    assert os.stat(path).st_ino == os.stat(hard).st_ino
    hard.unlink()
    again = LabelsFile(path)  # one name again: written as before
    again.set("a", "c", 0)
    again.close()


def _start_review(data_dir: Path, labels: Path, tmp_path: Path, name: str) -> tuple[subprocess.Popen[bytes], str]:
    proc = start_cli("review", "--index", "news", "--data-dir", data_dir, "--port", "0", "--labels", labels,
                     stdout=tmp_path / f"{name}.out", stderr=tmp_path / f"{name}.err")

    def url() -> str | None:
        if proc.poll() is not None:
            raise AssertionError(f"review exited {proc.returncode}: {(tmp_path / f'{name}.err').read_text()}")
        m = re.search(r"http://\S+", (tmp_path / f"{name}.out").read_text())
        return m.group(0) if m else None

    return proc, wait_for(url, 180, 0.1, "the review's URL")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def test_two_review_processes_on_one_labels_file_the_second_is_refused(data_dir: Path, tmp_path: Path) -> None:
    labels = tmp_path / "news.labels.jsonl"
    first, url = _start_review(data_dir, labels, tmp_path, "first")
    second: subprocess.Popen[bytes] | None = None
    try:
        # Answers at once: the URL is printed only once the port is bound and listening.
        port = urlsplit(url).port
        assert port
        status, _, _ = _request("127.0.0.1", port, "POST", "/label", f"127.0.0.1:{port}", None, LABEL)
        assert status == 303
        link = tmp_path / "link.jsonl"
        link.symlink_to(labels)
        for path in (labels, link):
            second = subprocess.Popen(cli_cmd("review", "--index", "news", "--data-dir", data_dir, "--port", "0",
                                              "--labels", path), env=cli_env(), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out, err = second.communicate(timeout=120)
            assert second.returncode == 2, (out, err)
            assert f"labels file {labels} is in use by process {first.pid}" in err, err
            assert err.count("Error:") == 1 and "http://" not in out
        synth = run_cli("synth", Path(__file__).resolve().parents[2] / "examples" / "news.jsonl", "--docs-out",
                        tmp_path / "docs.jsonl", "--labels-out", labels, "--sources", "3", timeout=300)
        assert synth.returncode == 2 and f"is in use by process {first.pid}" in synth.stderr, synth.stderr
        assert [json.loads(x) for x in labels.read_text("utf-8").splitlines()] == [
            {"a": "rail-1", "b": "rail-2", "label": 1}]
        # A hard link is another name the lock does not guard: a review given it is refused as well.
        hard = tmp_path / "hard.jsonl"
        os.link(labels, hard)
        second = subprocess.Popen(cli_cmd("review", "--index", "news", "--data-dir", data_dir, "--port", "0",
                                          "--labels", hard), env=cli_env(), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = second.communicate(timeout=120)
        assert second.returncode == 2 and err.count("Error:") == 1 and "http://" not in out, (out, err)
        assert f"labels file {hard} has 2 hard links" in " ".join(err.split()), err
        hard.unlink()
    finally:
        _stop(first)
        if second is not None and second.poll() is None:
            second.kill()
    # A killed owner leaves no lock behind.
    third, _ = _start_review(data_dir, labels, tmp_path, "third")
    third.kill()
    third.wait(30)
    fourth, _ = _start_review(data_dir, labels, tmp_path, "fourth")
    _stop(fourth)


def test_the_url_is_printed_only_once_the_port_is_taken(data_dir: Path, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = run_cli("review", "--index", "news", "--data-dir", data_dir, "--port", port, "--labels",
                    tmp_path / "l.jsonl", timeout=180)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "http://" not in r.stdout
    assert f"Error: the review page cannot listen on http://127.0.0.1:{port}/" in r.stderr
    assert "Traceback" not in r.stderr


# -- labels file: checked at the start -------------------------------------------------------------------
def _unprivileged(cmd: list[str]) -> list[str]:
    """As root, drop the capability that lets root write into read-only folders."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root needs setpriv (util-linux) to make read-only folders read-only")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", *cmd]


def test_a_labels_path_that_cannot_be_written_is_refused_at_the_start(data_dir: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    read_only.chmod(0o555)
    unreadable = tmp_path / "unreadable.jsonl"
    unreadable.write_text('{"a": "rail-1", "b": "rail-2", "label": 1}\n', "utf-8")
    unreadable.chmod(0o200)
    cases = {a_file / "labels.jsonl": "cannot make its folder", folder: "is not a regular file",
             fifo: "is not a regular file", read_only / "labels.jsonl": "cannot be written: Permission denied",
             unreadable: "not readable"}  # said by the option's own check, before ours ("cannot be read")
    try:
        for path, reason in cases.items():
            cmd = cli_cmd("review", "--index", "news", "--data-dir", data_dir, "--port", "0", "--labels", path)
            try:
                r = subprocess.run(_unprivileged(cmd), env=cli_env(), capture_output=True, text=True, timeout=60,
                                   stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                pytest.fail(f"review started serving with labels file {path}")
            assert r.returncode == 2, (path, r.stdout, r.stderr)
            assert reason in r.stderr and r.stderr.count("Error:") == 1 and "Traceback" not in r.stderr, r.stderr
            assert "http://" not in r.stdout
    finally:
        read_only.chmod(0o755)


def test_a_labels_file_that_is_not_utf8_is_one_error_line_in_review_and_eval(data_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "labels.jsonl"
    bad.write_bytes(b'{"a": "rail-1", "b": "rail-2", "label": 1}\n{"a": "\xb8\xdf\xcc\xfa", "b": "x", "label": 0}\n')
    before = bad.read_bytes()
    for args in (["review", "--index", "news", "--data-dir", data_dir, "--port", "0", "--labels", bad],
                 ["eval", "--index", "news", "--data-dir", data_dir, "--pairs", bad]):
        try:
            r = run_cli(*args, timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{args[0]} went on with a labels file that is not UTF-8")
        assert r.returncode == 2, (args[0], r.stdout, r.stderr)
        assert r.stderr.strip().splitlines()[-1] == f"Error: labels file {bad} is not UTF-8 text (line 2, byte 50): " \
                                                    "a labels file is JSON lines in UTF-8", r.stderr
        assert "Traceback" not in r.stderr and "http://" not in r.stdout
    assert bad.read_bytes() == before


def test_a_labels_path_that_is_a_symlink_is_written_through(data_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "kept" / "labels.jsonl"
    target.parent.mkdir()
    target.write_text('{"a": "ev-1", "b": "ev-2", "label": 1}\n', "utf-8")
    target.chmod(0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    r = Review(open_store("news", data_dir=data_dir), link).prepare()
    try:
        with TestClient(create_app(r)) as c:
            assert c.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "0"},
                          follow_redirects=False).status_code == 303
    finally:
        r.close()
    assert link.is_symlink() and link.resolve() == target
    assert [json.loads(x) for x in target.read_text("utf-8").splitlines()] == [
        {"a": "ev-1", "b": "ev-2", "label": 1}, {"a": "rail-1", "b": "rail-2", "label": 0}]
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["labels.jsonl"]  # no lock, no temporary file left


# -- a label the file did not take ----------------------------------------------------------------------------
def test_a_label_the_file_did_not_take_is_not_shown_counted_or_tuned_on(data_dir: Path, tmp_path: Path) -> None:
    review = Review(open_store("news", data_dir=data_dir), tmp_path / "labels" / "labels.jsonl").prepare()
    with TestClient(create_app(review)) as c:
        assert c.post("/label", data={"a": "ev-1", "b": "ev-2", "label": "1"}, follow_redirects=False).status_code == 303
        folder = review.labels.path.parent
        kept = folder.with_name(folder.name + "-moved")
        folder.rename(kept)
        folder.write_text("the labels folder is now a file")  # every write of the labels file fails from now on
        try:
            resp = c.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1",
                                          "next": "/pair?a=rail-1&b=rail-2"}, follow_redirects=False)
            assert resp.status_code == 500
            assert "The label was not saved: cannot write labels file" in resp.text
            assert 'href="/pair?a=rail-1&amp;b=rail-2"' in resp.text and "1 labelled" in resp.text
            assert "not labelled yet" in c.get("/pair", params={"a": "rail-1", "b": "rail-2"}).text
            assert "1 labelled pair (1 same story)" in c.get("/tuning").text
            assert len(review.labels) == 1 and review.labels.get("rail-1", "rail-2") is None
        finally:
            folder.unlink()
            kept.rename(folder)
    review.close()
    assert [json.loads(x) for x in review.labels.path.read_text("utf-8").splitlines()] == [
        {"a": "ev-1", "b": "ev-2", "label": 1}]
