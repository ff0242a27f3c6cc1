"""Security against a real TLS endpoint: nginx (Debian's package) terminates TLS in front of the test node,
with basic auth, an API-key check and, on a second port, client-certificate verification.

The fixture makes a throwaway CA, server and client certificates with the openssl CLI and an htpasswd
file (``openssl passwd -apr1``), starts nginx on loopback ports and stops it after the module. Cases: the
right password and CA work (options, environment, config file); a wrong password, an untrusted certificate
or a missing client certificate exit 3 with one clear line; --no-verify-certs works and warns. Secrets never
appear in any output, -v logging included. Index names are validated, and user text never becomes query
syntax or a request path.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.reliability import last_json, make_docs, run_cli, write_jsonl

pytestmark = pytest.mark.es

USER = "esdedup-user"
PASSWORD = "Pw-9f3c1e7a5b"
WRONG_PASSWORD = "Wrong-4d2a8c6e0f"
API_KEY = base64.b64encode(b"key-id-1:Sekret-api-key-77aa").decode()
WRONG_API_KEY = base64.b64encode(b"key-id-1:Bad-api-key-55bb").decode()
SECRETS = (PASSWORD, WRONG_PASSWORD, API_KEY, WRONG_API_KEY, "Sekret-api-key-77aa", "Bad-api-key-55bb")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"openssl {' '.join(args)}:\n{r.stderr}"


def _make_pki(d: Path) -> None:
    """CA, server certificate for 127.0.0.1/localhost, and a client CA with one client certificate."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "client-ca"):
        _openssl("req", "-x509", *ec, "-keyout", f"{ca}.key", "-out", f"{ca}.crt", "-days", "2",
                 "-subj", f"/CN=esdedup throwaway {ca}", cwd=d)
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                                  "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
                                  "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    (d / "client.ext").write_text("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
                                  "extendedKeyUsage=clientAuth\nsubjectKeyIdentifier=hash\n"
                                  "authorityKeyIdentifier=keyid\n")
    for name, ca in (("server", "ca"), ("client", "client-ca")):
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
                 "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=d)


@dataclass
class Proxy:
    dir: Path
    url: str  # TLS + basic auth
    apikey_url: str  # TLS + API key
    mtls_url: str  # TLS + client certificate + basic auth
    ca: str
    client_cert: str
    client_key: str


NGINX_CONF = """
worker_processes 1;
{user}
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    client_max_body_size 200m;
    ssl_certificate {d}/server.crt;
    ssl_certificate_key {d}/server.key;
    upstream es {{ server {upstream}; keepalive 8; }}
    server {{
        listen 127.0.0.1:{port} ssl;
        auth_basic "esdedup test";
        auth_basic_user_file {d}/htpasswd;
        location / {{
            proxy_pass http://es;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "";
        }}
    }}
    server {{
        listen 127.0.0.1:{apikey_port} ssl;
        location / {{
            if ($http_authorization != "ApiKey {api_key}") {{ return 401; }}
            proxy_pass http://es;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "";
        }}
    }}
    server {{
        listen 127.0.0.1:{mtls_port} ssl;
        ssl_client_certificate {d}/client-ca.crt;
        ssl_verify_client on;
        auth_basic "esdedup test";
        auth_basic_user_file {d}/htpasswd;
        location / {{
            proxy_pass http://es;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "";
        }}
    }}
}}
"""


@pytest.fixture(scope="module")
def proxy(es_url, tmp_path_factory):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        pytest.fail("nginx is not installed (scripts/setup installs it: apt-get install -y nginx)", pytrace=False)
    d = tmp_path_factory.mktemp("nginx")
    (d / "tmp").mkdir()
    _make_pki(d)
    hashed = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"], input=PASSWORD, capture_output=True,
                            text=True, check=True).stdout.strip()
    (d / "htpasswd").write_text(f"{USER}:{hashed}\n")
    ports = [_free_port() for _ in range(3)]
    upstream = es_url.split("://", 1)[1].rstrip("/")
    conf = NGINX_CONF.format(d=d, upstream=upstream, port=ports[0], apikey_port=ports[1], mtls_port=ports[2],
                             api_key=API_KEY, user="user root root;" if os.geteuid() == 0 else "")
    (d / "nginx.conf").write_text(conf)
    proc = subprocess.Popen([nginx, "-p", str(d), "-c", str(d / "nginx.conf"), "-e", str(d / "error.log"),
                             "-g", "daemon off;"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"nginx exited: {proc.stderr.read().decode()}\n{(d / 'error.log').read_text()}",
                            pytrace=False)
            try:
                for p in ports:
                    socket.create_connection(("127.0.0.1", p), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("nginx did not listen within 30 s", pytrace=False)
                time.sleep(0.1)
        yield Proxy(d, f"https://127.0.0.1:{ports[0]}", f"https://127.0.0.1:{ports[1]}",
                    f"https://127.0.0.1:{ports[2]}", str(d / "ca.crt"), str(d / "client.crt"), str(d / "client.key"))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[dict[str, str]]]:
    docs = make_docs(40, seed=61)
    path = tmp_path_factory.mktemp("sec") / "docs.jsonl"
    write_jsonl(path, docs)
    return path, docs


def _ingest(url: str, index: str, corpus_path: Path, tmp: Path, *extra: object, env: dict[str, str] | None = None):
    return run_cli("ingest", corpus_path, "--index", index, "--es", url, "--tokenizer", "rjieba", "--json",
                   "--workers", "1", "--dead-letter", tmp / "dl.jsonl", "--checkpoint", tmp / "ck.json",
                   *extra, env=env, timeout=300)


def _assert_clean(r: subprocess.CompletedProcess[str]) -> str:
    """No secret anywhere in stdout or stderr, no stack trace; returns all output."""
    out = r.stdout + r.stderr
    for s in SECRETS:
        assert s not in out, f"secret {s[:4]}... printed:\n{out[-3000:]}"
    assert "Traceback" not in out, out[-3000:]
    return out


def _error_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("Error:")]
    assert len(lines) == 1, r.stderr[-3000:]
    return lines[0]


def _ok(r: subprocess.CompletedProcess[str], n: int) -> dict:
    _assert_clean(r)
    assert r.returncode == 0, r.stderr[-3000:]
    s = last_json(r.stdout)
    assert s["indexed"] == n and s["failed"] == 0, s
    return s


# -- working setups -------------------------------------------------------------------------------------
def test_password_and_ca_from_options_and_environment(proxy, corpus, fresh_index, tmp_path):
    path, docs = corpus
    r = _ingest(proxy.url, fresh_index, path, tmp_path, "--ca-certs", proxy.ca,
                env={"ESDEDUP_ES_USER": USER, "ESDEDUP_ES_PASSWORD": PASSWORD})
    _ok(r, len(docs))
    # The URL from the environment as well, the CA too; similar answers through the proxy.
    r = run_cli("similar", "--index", fresh_index, "--text", docs[3]["text"], "--json",
                env={"ESDEDUP_ES_URL": proxy.url, "ESDEDUP_ES_CA_CERTS": proxy.ca, "ESDEDUP_ES_USER": USER,
                     "ESDEDUP_ES_PASSWORD": PASSWORD})
    _assert_clean(r)
    assert r.returncode == 0 and json.loads(r.stdout)["matches"][0]["id"] == docs[3]["id"], r.stderr[-2000:]


def test_credentials_in_the_url_are_used_and_never_shown(proxy, corpus, fresh_index, tmp_path):
    path, docs = corpus
    url = proxy.url.replace("https://", f"https://{USER}:{PASSWORD}@")
    _ok(_ingest(url, fresh_index, path, tmp_path, "--ca-certs", proxy.ca), len(docs))
    r = run_cli("-v", "similar", "--index", fresh_index, "--es", url, "--ca-certs", proxy.ca,
                "--text", docs[0]["text"], "--explain")
    out = _assert_clean(r)
    assert r.returncode == 0 and docs[0]["id"] in r.stdout, out[-2000:]
    # Several nodes, comma-separated (here the proxy by address and by name), the credentials in one of them.
    by_name = proxy.url.replace("127.0.0.1", "localhost")
    r = run_cli("-v", "similar", "--index", fresh_index, "--es", f"{by_name},{url}", "--ca-certs", proxy.ca,
                "--text", docs[0]["text"], "--json")
    out = _assert_clean(r)
    assert r.returncode == 0 and docs[0]["id"] in [m["id"] for m in json.loads(r.stdout)["matches"]], out[-2000:]


def test_config_file_with_password_and_with_api_key(proxy, corpus, fresh_index, tmp_path):
    path, docs = corpus
    conf = tmp_path / "config.json"
    conf.write_text(json.dumps({"es_url": proxy.url, "username": USER, "password": PASSWORD,
                                "ca_certs": proxy.ca}))
    r = run_cli("ingest", path, "--index", fresh_index, "--tokenizer", "rjieba", "--json", "--workers", "1",
                "--dead-letter", tmp_path / "dl.jsonl", "--checkpoint", tmp_path / "ck.json",
                env={"ESDEDUP_CONFIG": str(conf)})
    _ok(r, len(docs))
    conf.write_text(json.dumps({"es_url": proxy.apikey_url, "api_key": API_KEY, "ca_certs": proxy.ca}))
    r = run_cli("info", "--index", fresh_index, "--json", env={"ESDEDUP_CONFIG": str(conf)})
    _assert_clean(r)
    assert r.returncode == 0 and json.loads(r.stdout)["documents"] == len(docs), r.stderr[-2000:]


def test_api_key_from_the_environment(proxy, corpus, fresh_index, tmp_path):
    path, docs = corpus
    env = {"ESDEDUP_ES_API_KEY": API_KEY}
    _ok(_ingest(proxy.apikey_url, fresh_index, path, tmp_path, "--ca-certs", proxy.ca, env=env), len(docs))
    # A wrong key: 401, exit 3, and neither key is printed, not even by -v logging.
    r = run_cli("-v", "similar", "--index", fresh_index, "--es", proxy.apikey_url, "--ca-certs", proxy.ca,
                "--text", docs[0]["text"], env={"ESDEDUP_ES_API_KEY": WRONG_API_KEY})
    _assert_clean(r)
    assert r.returncode == 3 and "401" in _error_line(r), r.stderr[-2000:]


def test_no_verify_certs_works_and_warns(proxy, corpus, fresh_index, tmp_path):
    path, docs = corpus
    r = _ingest(proxy.url, fresh_index, path, tmp_path, "--no-verify-certs",
                env={"ESDEDUP_ES_USER": USER, "ESDEDUP_ES_PASSWORD": PASSWORD})
    _ok(r, len(docs))
    assert "TLS certificate verification is OFF" in r.stderr, r.stderr[-2000:]


def test_client_certificate(proxy, corpus, fresh_index, tmp_path):
    path, docs = corpus
    env = {"ESDEDUP_ES_USER": USER, "ESDEDUP_ES_PASSWORD": PASSWORD}
    r = _ingest(proxy.mtls_url, fresh_index, path, tmp_path, "--ca-certs", proxy.ca, "--client-cert",
                proxy.client_cert, "--client-key", proxy.client_key, env=env)
    _ok(r, len(docs))
    r = _ingest(proxy.mtls_url, fresh_index, path, tmp_path / "x", "--ca-certs", proxy.ca, env=env)
    _assert_clean(r)
    line = _error_line(r)
    assert r.returncode == 3 and "client certificate" in line and "--client-cert and --client-key" in line, line


# -- failures: exit 3 with one clear line, no secret -------------------------------------------------------
def test_wrong_password_is_a_clear_401(proxy, corpus, fresh_index, tmp_path):
    path, _ = corpus
    url = proxy.url.replace("https://", f"https://{USER}:{WRONG_PASSWORD}@")
    r = run_cli("-v", "ingest", path, "--index", fresh_index, "--es", url, "--ca-certs", proxy.ca,
                "--tokenizer", "rjieba", "--workers", "1", "--dead-letter", tmp_path / "dl.jsonl",
                "--checkpoint", tmp_path / "ck.json")
    _assert_clean(r)
    line = _error_line(r)
    assert r.returncode == 3 and "401" in line and "credentials" in line, line
    assert proxy.url.split("://")[1] in line  # names the server (without the credentials)


def test_untrusted_certificate_is_a_clear_tls_error(proxy, corpus, fresh_index, tmp_path):
    path, _ = corpus
    r = run_cli("-v", "ingest", path, "--index", fresh_index, "--es", proxy.url, "--tokenizer", "rjieba",
                "--workers", "1", "--dead-letter", tmp_path / "dl.jsonl", "--checkpoint", tmp_path / "ck.json",
                env={"ESDEDUP_ES_USER": USER, "ESDEDUP_ES_PASSWORD": PASSWORD})
    _assert_clean(r)
    line = _error_line(r)
    assert r.returncode == 3 and "certificate verify failed" in line and "--ca-certs" in line, line


# -- names and user text ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["UPPER", "a/b", "_hidden", "-dash", "..", "a*b", "a b", "x" * 256, "a,b",
                                  "a?b", "a#b", "%2e%2e", "abc\n"])
def test_invalid_index_names_exit_2(name, es_url, tmp_path):
    from esdedup_cli.main import app
    from typer.testing import CliRunner

    for cmd in ("info", "similar", "dups"):
        for where in (("--es", es_url), ("--data-dir", str(tmp_path / "data"))):
            extra = ("--text", "文本") if cmd == "similar" else ()
            r = CliRunner().invoke(app, [cmd, "--index", name, *where, *extra])
            assert r.exit_code == 2 and "invalid index name" in r.stderr, (name, cmd, where, r.output[-1000:])
            assert r.exception is None or isinstance(r.exception, SystemExit)


@pytest.mark.parametrize("url", [f"esdedup-user:{PASSWORD}@127.0.0.1:1", f"esdedup-user:{PASSWORD}@127.0.0.1:99999",
                                 f"https://esdedup-user:{PASSWORD}@[::1", f"http://esdedup-user:{PASSWORD}@127.0.0.1:x"])
def test_a_malformed_server_url_is_one_line_without_its_password(url, tmp_path):
    """No scheme, a port out of range or not a number, an unclosed IPv6 bracket: exit 2 before any request,
    one line, and the password in the URL nowhere (-v logging included). Needs no server."""
    for args in (("-v", "info", "--index", "x"), ("ingest", tmp_path, "--index", "x", "--workers", "1")):
        r = run_cli(*args, "--es", url, cwd=tmp_path)
        _assert_clean(r)
        assert r.returncode == 2, r.stderr[-2000:]
        assert "Elasticsearch URL must look like http(s)://host:port" in _error_line(r)


def test_user_text_is_never_query_syntax_or_a_path(es_url, es_client, fresh_index, tmp_path):
    docs = make_docs(20, seed=62)
    weird = ["../../_cluster/settings", "a/b?c=d#e", "%2F_search", "*", "_all", "id with spaces", "引号\"和'"]
    for i, w in enumerate(weird):
        docs[i]["id"] = w
    path = write_jsonl(tmp_path / "docs.jsonl", docs)
    r = run_cli("ingest", path, "--index", fresh_index, "--es", es_url, "--tokenizer", "rjieba", "--json",
                "--workers", "1", "--dead-letter", tmp_path / "dl.jsonl", "--checkpoint", tmp_path / "ck.json")
    assert r.returncode == 0, r.stderr[-2000:]
    es_client.indices.refresh(index=fresh_index)
    got = es_client.mget(index=fresh_index, ids=weird)["docs"]
    assert all(d["found"] for d in got), got
    from esdedup_cli.main import app
    from typer.testing import CliRunner

    def similar(*args: str):
        return CliRunner().invoke(app, ["similar", "--index", fresh_index, "--es", es_url, "--json", *args])

    # Every odd id is fetched through the path-built GET as itself (its text found, no other endpoint).
    for doc in docs[: len(weird)]:
        r = similar("--id", doc["id"])
        assert r.exit_code == 0, (doc["id"], r.output[-1000:])
        assert json.loads(r.stdout)["query"]["id"] == doc["id"]
    # Query syntax in the text is just text: no match-all, no wildcard.
    for text in ("*", "*:*", '{"query": {"match_all": {}}}', "text:* OR id:*"):
        r = similar("--text", text)
        assert r.exit_code == 0 and json.loads(r.stdout)["matches"] == [], (text, r.output[-1000:])
    # An id that is a path elsewhere is just a missing document.
    r = similar("--id", "../" + fresh_index + "/_doc/x")
    assert r.exit_code == 2 and "no document" in r.stderr, r.output[-1000:]
