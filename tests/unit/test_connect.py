"""Connection settings: several node URLs, credentials moved out of URLs, clear errors."""
from __future__ import annotations

import pytest

from esdedup.errors import ConfigError
from esdedup.es.connect import make_client, resolve_settings


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch, tmp_path):
    for name in ("ESDEDUP_ES_URL", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD", "ESDEDUP_ES_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ESDEDUP_CONFIG", str(tmp_path / "none.json"))


def test_several_urls_become_several_hosts_without_credentials():
    s = resolve_settings("https://u:p%40ss@a:9200, https://b:9201/")
    assert s is not None
    assert s.hosts == ["https://a:9200", "https://b:9201"]
    assert s.display_url == "https://a:9200,https://b:9201" and "p@ss" not in repr(s)
    assert (s.username, s.password) == ("u", "p@ss")
    client = make_client(s)
    assert len(client.transport.node_pool.all()) == 2


@pytest.mark.parametrize("url, message", [
    ("http://a:1,https://b:2", "mix http and https"),
    ("https://u:x@a:1,https://v:y@b:2", "different credentials"),
    ("http://a:1,ftp://b", "several: comma-separated"),
])
def test_inconsistent_urls_are_refused(url, message):
    with pytest.raises(ConfigError, match=message):
        resolve_settings(url)


def test_a_password_in_a_bad_url_is_not_echoed():
    with pytest.raises(ConfigError) as err:
        resolve_settings("http://a:1,ftp://u:s3cret@b")
    assert "s3cret" not in str(err.value)


@pytest.mark.parametrize("url, why", [
    ("http://127.0.0.1:99999", "port out of range 0-65535"),
    ("http://127.0.0.1:abc", "port could not be cast to integer value as 'abc'"),
    ("http://127.0.0.1:0", "port 0"),
    ("http://[::1", "invalid IPv6 URL"),
    ("https://u:s3cret@[::1", "invalid IPv6 URL"),
    ("alice:s3cret@127.0.0.1:1", "no http:// or https:// before the host"),
    ("alice:s3/cr@t@127.0.0.1:1", "no http:// or https:// before the host"),
    ("localhost:9200", "no http:// or https:// before the host"),
    ("ftp://u:s3cret@b", "the scheme is 'ftp'"),
    ("http://:9200", "no host"),
])
def test_a_malformed_url_is_a_config_error_without_its_password(url, why):
    with pytest.raises(ConfigError) as err:
        resolve_settings(url)
    message = str(err.value)
    assert message.endswith(f": {why}"), message
    assert "s3cret" not in message and "s3/cr@t" not in message and "cr@t" not in message


def test_credentials_leave_an_ipv6_url_with_its_brackets():
    s = resolve_settings("https://u:p%40ss@[::1]:9200")
    assert s is not None and s.hosts == ["https://[::1]:9200"] and s.password == "p@ss"


def test_a_node_named_twice_is_one_node():
    s = resolve_settings("http://a:1,http://a:1/")
    assert s is not None and s.hosts == ["http://a:1"]


# -- open_store takes the settings whole -------------------------------------------------------------------
def test_open_store_takes_connection_settings(tmp_path):
    from esdedup.api import open_store
    from esdedup.store.elastic.store import ElasticStore
    from esdedup.store.local import LocalStore

    settings = resolve_settings("https://u:s3cret@127.0.0.1:1", ca_certs=str(tmp_path / "ca.pem"))
    store = open_store("news", connection=settings)  # not opened: nothing is sent
    assert isinstance(store, ElasticStore) and store.display_url == "https://127.0.0.1:1"
    assert "s3cret" in store.secrets and store.client.transport.node_pool.all()[0].config.ca_certs.endswith("ca.pem")
    assert isinstance(open_store("news", data_dir=tmp_path), LocalStore)  # no server named anywhere
    with pytest.raises(ConfigError, match="one of client, connection and es_url"):
        open_store("news", connection=settings, es_url="http://127.0.0.1:2")


def test_both_stores_validate_names_and_report_mismatches_with_one_helper():
    """The Elasticsearch store takes them from the store's names module, not from the SQLite store."""
    from esdedup.store import names
    from esdedup.store.elastic import index as elastic
    from esdedup.store.local import store as local
    assert elastic.validate_name is names.validate_name is local.validate_name
    assert elastic.mismatch_error is names.mismatch_error is local.mismatch_error


# -- a server that is not Elasticsearch -----------------------------------------------------------------------
@pytest.fixture
def not_elasticsearch():
    """Servers on free local ports that are not Elasticsearch: ``html`` (a web server's page, 200), ``html404``
    (its 404 page), ``empty`` (claims to be Elasticsearch 8.19 and answers ``{}`` to everything else) and
    ``silent`` (accepts connections, never answers)."""
    import http.server
    import json as json_
    import socket
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        mode = "html"

        def _answer(self):
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            if self.mode.startswith("html"):
                body = ("<html><head><title>Welcome to nginx!</title></head><body>" + "<p>It works.</p>" * 500
                        + "</body></html>").encode()
                self.send_response(404 if self.mode == "html404" else 200)
                self.send_header("content-type", "text/html")
            else:
                claims = {"version": {"number": "8.19.21"}, "tagline": "You Know, for Search"}
                body = json_.dumps(claims if self.path.split("?")[0] == "/" else {}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("X-Elastic-Product", "Elasticsearch")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _answer

        def log_message(self, *args):
            pass

    servers, silent = [], []
    urls = {}
    for mode in ("html", "html404", "empty"):
        handler = type(f"Page_{mode}", (Page,), {"mode": mode})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        urls[mode] = f"http://127.0.0.1:{server.server_address[1]}"
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    silent.append(sock)
    urls["silent"] = f"http://127.0.0.1:{sock.getsockname()[1]}"
    yield urls
    for server in servers:
        server.shutdown()
        server.server_close()
    sock.close()


@pytest.mark.parametrize("mode", ["html", "html404", "empty"])
def test_a_server_that_is_not_elasticsearch_is_one_short_error(not_elasticsearch, mode):
    from esdedup.api import open_store
    from esdedup.errors import NotElasticsearch

    store = open_store("news", es_url=not_elasticsearch[mode])
    with pytest.raises(NotElasticsearch) as err:
        store.open(None)
    message = str(err.value)
    assert err.value.exit_code == 3
    assert "is not Elasticsearch" in message and "check the URL and port" in message
    assert len(message) < 300 and "\n" not in message and "It works" not in message, message


def test_a_server_that_never_answers_is_a_short_error_within_the_timeout(not_elasticsearch):
    import time

    from esdedup.api import open_store
    from esdedup.errors import NoAnswer

    store = open_store("news", connection=resolve_settings(not_elasticsearch["silent"], request_timeout=1.5))
    started = time.monotonic()
    with pytest.raises(NoAnswer, match="did not answer within 1.5 s") as err:
        store.open(None)
    assert time.monotonic() - started < 10 and err.value.exit_code == 3


def test_the_first_request_waits_its_own_bound_whatever_the_longer_request_timeout(not_elasticsearch, monkeypatch):
    """The first request to a server waits `FIRST_ANSWER_TIMEOUT` (10 s, what docs/cli.md says; 1 s here, so
    that the test takes a second) even when the request timeout is the default 30 s."""
    import time

    from esdedup.api import open_store
    from esdedup.errors import NoAnswer
    from esdedup.es import versions

    assert versions.FIRST_ANSWER_TIMEOUT == 10.0
    monkeypatch.setattr(versions, "FIRST_ANSWER_TIMEOUT", 1.0)
    settings = resolve_settings(not_elasticsearch["silent"])
    assert settings.request_timeout == 30.0
    store = open_store("news", connection=settings)
    started = time.monotonic()
    with pytest.raises(NoAnswer, match="did not answer within 1 s"):
        store.open(None)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf", "100000"])
def test_a_bad_request_timeout_is_refused(monkeypatch, value):
    monkeypatch.setenv("ESDEDUP_ES_TIMEOUT", value)
    with pytest.raises(ConfigError, match="request timeout must be a number of seconds"):
        resolve_settings("http://127.0.0.1:9200")


def test_the_request_timeout_comes_from_the_argument_the_environment_or_the_default(monkeypatch):
    assert resolve_settings("http://a:1").request_timeout == 30.0
    monkeypatch.setenv("ESDEDUP_ES_TIMEOUT", "12.5")
    assert resolve_settings("http://a:1").request_timeout == 12.5
    assert resolve_settings("http://a:1", request_timeout=3).request_timeout == 3.0


def test_a_settings_file_that_is_a_device_is_refused(monkeypatch):
    monkeypatch.setenv("ESDEDUP_CONFIG", "/dev/zero")
    with pytest.raises(ConfigError, match="not a regular file"):
        resolve_settings("http://127.0.0.1:9200")


@pytest.mark.parametrize("mode", ["html404", "empty", "silent"])
def test_the_cli_says_one_short_line_and_exits_3_for_a_server_that_is_not_elasticsearch(not_elasticsearch, mode):
    from esdedup_cli.main import app
    from typer.testing import CliRunner

    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        runner = CliRunner()
    result = runner.invoke(app, ["similar", "--index", "news", "--text", "今天天气很好", "--es",
                                 not_elasticsearch[mode], "--es-timeout", "2"])
    assert result.exit_code == 3, (result.exit_code, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and len(lines[0]) < 400, result.stderr
    assert "Traceback" not in result.stderr and "It works" not in result.stderr
