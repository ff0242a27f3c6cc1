"""scripts/es-local before any node runs: which JDK it picks per Elasticsearch major, and what it refuses.

Real JDKs of this machine and the real script; no node is started (starting one is every es test's job).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.es_node import ES_LOCAL

JVM_DIRS = ("/usr/lib/jvm", "/usr/java", "/opt/java")


def _es_local(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ES_LOCAL), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _java_major(jdk: Path) -> int:
    release = (jdk / "release").read_text("utf-8", "replace")
    version = re.search(r'^JAVA_VERSION="([^"]+)"', release, flags=re.M).group(1)  # type: ignore[union-attr]
    version = version.removeprefix("1.")
    return int(re.match(r"\d+", version).group(0))  # type: ignore[union-attr]


def _installed_jdks() -> dict[Path, int]:
    found = {}
    for d in JVM_DIRS:
        for jdk in sorted(Path(d).glob("*")) if Path(d).is_dir() else ():
            if (jdk / "bin" / "java").is_file() and (jdk / "release").is_file() and not jdk.is_symlink():
                found[jdk] = _java_major(jdk)
    return found


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESDEDUP_") and k != "JAVA_HOME"}
    env.update(ESDEDUP_ES_CACHE=str(tmp / "cache"), ESDEDUP_ES_STATE=str(tmp / "state"), **extra)
    return env


def _path_without_java(tmp: Path) -> str:
    """A PATH holding every command of the current PATH except `java` (links to the real tools)."""
    bindir = tmp / "bin"
    bindir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        for tool in Path(d).iterdir() if Path(d).is_dir() else ():
            link = bindir / tool.name
            if tool.name != "java" and not link.exists() and os.access(tool, os.X_OK):
                link.symlink_to(tool)
    return str(bindir)


def test_9x_runs_on_the_newest_jdk_21_or_later_it_finds(tmp_path: Path) -> None:
    jdks = _installed_jdks()
    new_enough = {j: m for j, m in jdks.items() if m >= 21}
    assert new_enough, f"CI runs Elasticsearch 9.x: it needs a JDK 21+ under {JVM_DIRS}, found {jdks}"
    env = _env(tmp_path, PATH=_path_without_java(tmp_path))
    r = _es_local("java", "--version", "9.2.0", env=env)
    assert r.returncode == 0, r.stderr
    chosen = Path(r.stdout.strip())
    assert new_enough.get(chosen) == max(new_enough.values()), (chosen, jdks)


def test_no_jdk_new_enough_is_one_error_naming_where_it_looked(tmp_path: Path) -> None:
    old = {j: m for j, m in _installed_jdks().items() if m < 21}
    jvm_dir = tmp_path / "jvm"
    jvm_dir.mkdir()
    for jdk in old:  # only the old JDKs of this machine where the script looks
        (jvm_dir / jdk.name).symlink_to(jdk)
    env = _env(tmp_path, PATH=_path_without_java(tmp_path), ESDEDUP_JVM_DIRS=str(jvm_dir))
    r = _es_local("java", "--version", "9.2.0", env=env)
    assert r.returncode == 1 and r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert line.startswith("es-local: error: Elasticsearch 9.2.0 needs Java 21 or newer and none was found: "
                           f"looked at JAVA_HOME (unset), the java on PATH (none) and the JDKs under {jvm_dir}; ")
    for jdk, major in old.items():
        assert f"{jvm_dir / jdk.name} (Java {major})" in line
    assert line.endswith("Install a JDK 21+ or give one with --java-home DIR or ESDEDUP_ES_JAVA_HOME")

    if old:  # an explicit JDK that is too old is refused too, not silently replaced
        jdk, major = next(iter(old.items()))
        r = _es_local("java", "--version", "9.2.0", "--java-home", str(jdk), env=_env(tmp_path))
        assert r.returncode == 1
        assert f"needs Java 21 or newer; {jdk} (from --java-home or ESDEDUP_ES_JAVA_HOME) is Java {major}" in r.stderr
        r = _es_local("java", "--version", "8.19.21", "--java-home", str(jdk), env=_env(tmp_path))
        expected = (0, str(jdk)) if major >= 17 else (1, "")  # 8.x runs on Java 17+
        assert (r.returncode, r.stdout.strip()) == expected, r.stderr


@pytest.mark.parametrize(("version", "message"), [
    ("9.2", "bad version '9.2': give an exact version such as 8.19.21 or 9.2.0 (9.x versions on Maven Central: "
            "9.0.0 9.0.1 9.1.0 9.1.5 9.2.0)"),
    ("9.1.5", "Elasticsearch 9.1.5: Maven Central publishes no checksum beside the 9.x zips and this script "
              "pins only 9.2.0; check the zip yourself and give its SHA-1 as ESDEDUP_ES_SHA1 (9.x versions on "
              "Maven Central: 9.0.0 9.0.1 9.1.0 9.1.5 9.2.0)"),
])
def test_fetch_refuses_before_downloading(tmp_path: Path, version: str, message: str) -> None:
    r = _es_local("fetch", "--version", version, env=_env(tmp_path), timeout=30)
    assert (r.returncode, r.stderr.strip()) == (1, f"es-local: error: {message}")
    assert not any((tmp_path / "cache").rglob("*.zip"))


def test_a_zip_with_another_checksum_is_not_unpacked(tmp_path: Path) -> None:
    env = _env(tmp_path, ESDEDUP_ES_SHA1="0" * 40)
    r = _es_local("fetch", "--version", "8.19.21", env=env, timeout=600)
    assert r.returncode == 1
    assert re.search(r"es-local: error: sha1 mismatch for \S+/elasticsearch-8\.19\.21\.zip: expected 0{40}, "
                     r"got 8861771bbfe2fab12ccc386bc8b4c5c6f9619865$", r.stderr.strip()), r.stderr
    assert not (tmp_path / "cache" / "elasticsearch-8.19.21").exists()


def _client_version() -> str:
    from importlib.metadata import version

    return version("elasticsearch")


@pytest.mark.parametrize("client", ["installed", "9.5.1", "none"])
def test_without_a_version_the_server_follows_the_installed_client(tmp_path: Path, client: str) -> None:
    """No --version and no ESDEDUP_ES_VERSION: the server of the installed Python client's major, said on one
    line (the client a plain install brings and the server es-local starts agree)."""
    if client == "installed":
        python, client = sys.executable, _client_version()
    elif client == "none":
        python = str(tmp_path / "python-without-client")
        Path(python).write_text("#!/bin/sh\nexit 1\n")
        Path(python).chmod(0o755)
    else:  # another major than this venv's: a Python that answers with that client version
        python = str(tmp_path / "python-with-client")
        Path(python).write_text(f"#!/bin/sh\necho {client}\n")
        Path(python).chmod(0o755)
    r = _es_local("java", env=_env(tmp_path, ESDEDUP_PYTHON=python))
    assert r.returncode == 0, r.stderr
    server = {"8": "8.19.21", "9": "9.2.0"}.get(client.split(".")[0])
    said = [line for line in r.stderr.splitlines() if not line.startswith("es-local: Elasticsearch 9.2.0 needs")]
    if server is None:
        assert said == ["es-local: Elasticsearch 8.19.21: no Python client elasticsearch found; install one of the "
                        "same major (--version V for another server)"]
    else:
        assert said == [f"es-local: Elasticsearch {server}, for the installed Python client elasticsearch {client} "
                        "(--version V for another)"]
    assert _java_major(Path(r.stdout.strip())) >= (21 if server == "9.2.0" else 17)
    pinned = _es_local("java", "--version", "8.19.21", env=_env(tmp_path, ESDEDUP_PYTHON=python))
    assert pinned.returncode == 0 and "for the installed Python client" not in pinned.stderr


def test_stop_keeps_the_data_and_start_runs_on_it_until_purge(tmp_path: Path) -> None:
    """`stop` then `start` (the plugin walkthrough restarts a node so) keeps every index; `stop --purge` deletes
    the data."""
    import json
    import urllib.request

    from tests.es_node import LocalCluster

    def call(url: str, method: str = "GET", body: object = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())

    cluster = LocalCluster(state_dir=tmp_path / "state")
    cluster.start()
    try:
        call(f"{cluster.url}/kept/_doc/1?refresh=true", "PUT", {"text": "一篇文章"})
        cluster.stop(purge=False)
        env = dict(line.split("=", 1) for line in (tmp_path / "state" / "cluster.env").read_text().splitlines())
        work = Path(env["WORK"])
        assert any((work / "node-0" / "data").iterdir())
        cluster.start()
        assert call(f"{cluster.url}/kept/_doc/1")["_source"] == {"text": "一篇文章"}
    finally:
        cluster.stop(purge=True)
    assert not work.exists()


@pytest.mark.parametrize(("version", "least"), [("2.19.6", 11), ("3.6.0", 21)])
def test_opensearch_runs_on_the_jdk_its_major_needs(tmp_path: Path, version: str, least: int) -> None:
    """OpenSearch 2.x runs on Java 11+, 3.x on Java 21+ (the Temurin 25 JDK here): the first JDK new enough."""
    r = _es_local("java", "--engine", "opensearch", "--version", version, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert _java_major(Path(r.stdout.strip())) >= least
    assert "Elasticsearch" not in r.stderr  # every message names the engine asked for


def test_an_opensearch_zip_is_checked_against_the_sha1_maven_central_publishes(tmp_path: Path) -> None:
    """No pinned checksum for OpenSearch: the .sha1 published beside the zip is the one checked (a zip of
    another checksum, here forced by ESDEDUP_ES_SHA1, is not unpacked)."""
    env = _env(tmp_path, ESDEDUP_ES_SHA1="0" * 40)
    r = _es_local("fetch", "--engine", "opensearch", "--version", "2.19.6", env=env, timeout=600)
    assert r.returncode == 1
    assert re.search(r"es-local: error: sha1 mismatch for \S+/opensearch-2\.19\.6\.zip: expected 0{40}, "
                     r"got 8e071b0fee7911b226f68bdead8946002e6b6e36$", r.stderr.strip()), r.stderr
    assert not (tmp_path / "cache" / "opensearch-2.19.6").exists()
    r = _es_local("fetch", "--engine", "opensearch", "--version", "2.19.6", env=_env(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr
    assert "es-local: sha1 8e071b0fee7911b226f68bdead8946002e6b6e36 verified" in r.stderr
    assert (Path(r.stdout.strip()) / "bin" / "opensearch").is_file()


def test_an_unknown_engine_is_refused(tmp_path: Path) -> None:
    r = _es_local("java", "--engine", "solr", env=_env(tmp_path))
    assert (r.returncode, r.stderr.strip()) == (1, "es-local: error: bad engine 'solr': expected elasticsearch or "
                                                   "opensearch")
