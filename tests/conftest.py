"""Shared pytest fixtures: a real Elasticsearch for the integration tests.

Where ``es_url`` / ``es_client`` come from, first match wins:

1. ``ESDEDUP_TEST_ES_URL`` (e.g. ``http://127.0.0.1:9250``): an already running node/cluster.
2. A Docker engine answers (or ``ESDEDUP_TEST_ES_BACKEND=docker``): testcontainers'
   ElasticSearchContainer with image ``ESDEDUP_TEST_ES_IMAGE``
   (default ``docker.elastic.co/elasticsearch/elasticsearch:<ESDEDUP_ES_VERSION or 8.19.21>``).
3. Otherwise (or ``ESDEDUP_TEST_ES_BACKEND=local``): a local node started through
   ``scripts/es-local`` (see tests/es_node.py) on free ports with a unique cluster name, stopped
   at the end of the session.

The nodes start only when a selected test needs them, but early: once collection is done, in a background
thread, one after another in the order the tests first need them (tests/es_node.py, EarlyStarts; the test
modules' own node fixtures too), while the modules without an ``es`` test run first. They never skip: when a
node cannot be started the requesting tests error out with the node's log tail.

``cluster3`` always uses a 3-node local cluster (it kills and restarts nodes).
``ESDEDUP_ES_VERSION`` picks the Elasticsearch version of every local node and of the Docker image; by
default the version CI runs with the installed ``elasticsearch`` client's major: 8.19.21 with the 8.x
client, 9.2.0 with the 9.x client. Client and server majors must match (the session fails at once, naming
the pip command, when they do not).
Set ``ESDEDUP_TEST_KEEP_ES_LOGS=1`` to keep the local nodes' logs after the session. What a run keeps by default
(``ESDEDUP_DATA_DIR``: a `label` run's checkpoint, a store opened without a data folder) goes to a folder of the
test run, removed at its end: a test never writes to the data folder of the user running it.

OpenSearch (``os_url`` / ``os_client``, the tests marked ``opensearch``): ``ESDEDUP_TEST_OS_URL``, else a local
OpenSearch node started the same way (``scripts/es-local start --engine opensearch``, version
``ESDEDUP_OS_VERSION`` or 2.19.6); never skipped either.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

try:  # `python -m pytest` from the repo root: tests/ is importable as a (namespace) package
    from tests.es_node import (
        EARLY_STARTS,
        ES_VERSION_FOR_MAJOR,
        OS_VERSION,
        ESNodeError,
        LocalCluster,
        given_url,
    )
except ImportError:  # plain `pytest`: pytest puts tests/ itself on sys.path (rootdir conftest)
    from es_node import (  # type: ignore[no-redef]
        EARLY_STARTS,
        ES_VERSION_FOR_MAJOR,
        OS_VERSION,
        ESNodeError,
        LocalCluster,
        given_url,
    )

from hypothesis import settings

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

# Hypothesis fails an example that takes over 200 ms by default: a timing assert, which a loaded 2-core machine
# (the test passes CI runs beside each other) fails on a pure function now and then. What a property test
# checks is the property.
settings.register_profile("esdedup", deadline=None)
settings.load_profile("esdedup")

DEFAULT_ES_VERSION = ES_VERSION_FOR_MAJOR[8]


def es_version() -> str:
    """The server version the fixtures start: ``ESDEDUP_ES_VERSION``, else the one CI runs with the
    installed client's major (a fresh ``pip install`` may bring either)."""
    chosen = os.environ.get("ESDEDUP_ES_VERSION", "").strip()
    if chosen:
        return chosen
    try:
        from importlib.metadata import version

        return ES_VERSION_FOR_MAJOR.get(int(version("elasticsearch").split(".")[0]), DEFAULT_ES_VERSION)
    except Exception:  # no client installed: the es tests fail on their own import
        return DEFAULT_ES_VERSION


#: The JVM options of every node the tests start (scripts/es-local's ESDEDUP_ES_JAVA_OPTS), unless it is set: the
#: JIT's first tier only. A test node lives for minutes and its requests are small; the optimising compiler's
#: threads cost a node about twice the CPU (to start: 19 s against 10; a contract-test workload: 33 s against 13,
#: measured here) on the two cores the tests share with it. The benchmarks' nodes (bench/) keep both tiers.
TEST_NODE_JAVA_OPTS = "-XX:TieredStopAtLevel=1"


#: The data folder `pytest_configure` made (removed with what the tests left in it at the end).
_SESSION_DATA_DIR: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # Every node a test starts (tests/es_node.py, scripts/es-local) gets the same version.
    os.environ["ESDEDUP_ES_VERSION"] = es_version()
    os.environ.setdefault("ESDEDUP_ES_JAVA_OPTS", TEST_NODE_JAVA_OPTS)
    # What a test's run keeps by default (a `label` run's checkpoint, a store without --data-dir) goes to a
    # folder of the test run, never to the user's own data folder; a test that needs its own sets it.
    _SESSION_DATA_DIR.append(tempfile.mkdtemp(prefix="esdedup-tests-data-"))
    os.environ["ESDEDUP_DATA_DIR"] = _SESSION_DATA_DIR[-1]


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _SESSION_DATA_DIR:
        shutil.rmtree(folder, ignore_errors=True)


_ES_FIXTURES = {"es_url", "es_client", "fresh_index"}
_OS_FIXTURES = {"os_url", "os_client"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests using the ES fixtures get the ``es`` marker (and ``cluster3``) even if not decorated,
    so ``-m "not es"`` reliably deselects everything that needs a node. Then the modules without an ``es`` test
    run first: the nodes start in the background meanwhile (pytest_collection_finish)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & _OS_FIXTURES:
            item.add_marker(pytest.mark.opensearch)
        if item.get_closest_marker("opensearch"):
            item.add_marker(pytest.mark.es)  # needs a node: `-m "not es"` deselects it too
        if names & _ES_FIXTURES or "cluster3" in names:
            item.add_marker(pytest.mark.es)
        if "cluster3" in names:
            item.add_marker(pytest.mark.cluster3)
    with_es = {item.path for item in items if item.get_closest_marker("es")}
    items.sort(key=lambda item: item.path in with_es)  # stable: each group keeps its order, a module stays whole


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the nodes the selected tests need now, in the background, in the order the tests first need them
    (tests/es_node.py, EarlyStarts): each start-up overlaps the tests that run before its node is used."""
    if session.config.option.collectonly:
        return
    dedicated = EARLY_STARTS.registered() - {"es_url", "os_url"}
    order: list[str] = []
    for item in session.items:
        names = [n for n in getattr(item, "fixturenames", ()) if n in dedicated]
        if item.get_closest_marker("opensearch"):
            # the OpenSearch node (the contract tests ask for it unseen); a test with a node of its own (the
            # plugin's) needs it only when it names it
            if not names or "os_url" in getattr(item, "fixturenames", ()):
                names.insert(0, "os_url")
            if "es_url" not in getattr(item, "fixturenames", ()):
                order += names
                continue
        # an `es` test asking for no node fixture of its own gets the session node (the contract tests ask for
        # it with getfixturevalue, invisible here)
        if "es_url" in getattr(item, "fixturenames", ()) or (item.get_closest_marker("es") and not names):
            names.insert(0, "es_url")
        order += names
    skip = {"es_url"} if not _session_node_is_local() else set()
    if os.environ.get("ESDEDUP_TEST_OS_URL", "").strip():
        skip.add("os_url")
    EARLY_STARTS.begin([n for n in order if n not in skip])


def pytest_sessionfinish() -> None:
    EARLY_STARTS.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How long each node fixture's start took and how long its tests waited for it (the rest overlapped)."""
    if EARLY_STARTS.timings:
        terminalreporter.write_line("node start-ups: " + ", ".join(
            f"{name} {started:.0f} s (waited {waited:.0f} s)"
            for name, (started, waited) in EARLY_STARTS.timings.items()))


def _session_node_is_local() -> bool:
    if os.environ.get("ESDEDUP_TEST_ES_URL", "").strip():
        return False
    backend = os.environ.get("ESDEDUP_TEST_ES_BACKEND", "auto").lower()
    return backend == "local" or (backend == "auto" and not _docker_available())


@functools.cache
def _docker_available(timeout: float = 2.0) -> bool:
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _start_local(nodes: int, what: str, engine: str = "elasticsearch") -> LocalCluster:
    cluster = (LocalCluster(nodes=nodes, version=es_version()) if engine == "elasticsearch"
               else LocalCluster(nodes=nodes, engine=engine, version=OS_VERSION))
    try:
        cluster.start()
        return cluster
    except (ESNodeError, OSError, subprocess.SubprocessError) as exc:
        error = str(exc)
    try:
        cluster.stop(purge=False)  # the script already stopped the nodes (logs kept); releases the ports
    except Exception:
        pass
    pytest.fail(
        f"could not start the local {'Elasticsearch' if engine == 'elasticsearch' else 'OpenSearch'} {what} via "
        "scripts/es-local "
        f"(set ESDEDUP_TEST_ES_URL to use a running node instead):\n{error}",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def es_url() -> Iterator[str]:
    url = given_url("ESDEDUP_TEST_ES_URL")
    if url:
        yield url
        return

    backend = os.environ.get("ESDEDUP_TEST_ES_BACKEND", "auto").lower()
    if backend not in ("auto", "docker", "local"):
        pytest.fail(f"ESDEDUP_TEST_ES_BACKEND must be auto, docker or local, not {backend!r}", pytrace=False)

    if backend == "docker" or (backend == "auto" and _docker_available()):
        from testcontainers.community.elasticsearch import ElasticSearchContainer

        image = os.environ.get(
            "ESDEDUP_TEST_ES_IMAGE", f"docker.elastic.co/elasticsearch/elasticsearch:{es_version()}"
        )
        container = ElasticSearchContainer(image, mem_limit="2G")
        container.with_env("ES_JAVA_OPTS", "-Xms1g -Xmx1g")
        container.start()
        try:
            yield f"http://{container.get_container_host_ip()}:{container.get_exposed_port(container.port)}"
        finally:
            container.stop()
        return

    with EARLY_STARTS.held("es_url") as cluster:
        yield cluster.url


@pytest.fixture(scope="session")
def es_client(es_url: str) -> Iterator[Elasticsearch]:
    from elasticsearch import Elasticsearch

    from esdedup.errors import ClientVersionMismatch
    from esdedup.es import versions as versions
    client = Elasticsearch(es_url, request_timeout=60)
    try:
        versions.check_server(client, f"the test cluster at {es_url}")
    except ClientVersionMismatch as exc:
        client.close()
        pytest.fail(f"{exc} (or pick the server with ESDEDUP_ES_VERSION)", pytrace=False)
    health = client.cluster.health(wait_for_status="yellow", timeout="60s")
    assert health["status"] in ("yellow", "green"), f"cluster at {es_url} is {health['status']}"
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def fresh_index(es_client: Elasticsearch) -> Iterator[str]:
    """A unique (not yet existing) index name; the index is deleted after the test."""
    name = f"esdedup-test-{uuid.uuid4().hex[:12]}"
    yield name
    es_client.options(ignore_status=404).indices.delete(index=name)


EARLY_STARTS.register("es_url", lambda: _start_local(1, "test node"))
EARLY_STARTS.register("_cluster3_session", lambda: _start_local(3, "3-node cluster"))
EARLY_STARTS.register("os_url", lambda: _start_local(1, "test node", engine="opensearch"))


@pytest.fixture(scope="session")
def os_url() -> Iterator[str]:
    """An OpenSearch node: ``ESDEDUP_TEST_OS_URL``, else a local one (scripts/es-local --engine opensearch)."""
    url = given_url("ESDEDUP_TEST_OS_URL")
    if url:
        yield url
        return
    with EARLY_STARTS.held("os_url") as cluster:
        yield cluster.url


@pytest.fixture(scope="session")
def os_client(os_url: str) -> Iterator[Any]:
    """An opensearch-py client of the OpenSearch node (opensearch-py is a test dependency: never skipped)."""
    from opensearchpy import OpenSearch

    client = OpenSearch(os_url, timeout=60)
    health = client.cluster.health(wait_for_status="yellow")  # waits 30 s at most
    assert health["status"] in ("yellow", "green"), f"OpenSearch node at {os_url} is {health['status']}"
    try:
        yield client
    finally:
        client.close()


@dataclass
class Cluster3:
    """Handle on the 3-node local cluster: client over all nodes plus node kill/restart."""

    cluster: LocalCluster
    client: Elasticsearch
    urls: list[str] = field(default_factory=list)

    def client_for(self, *nodes: int, **kwargs: object) -> Elasticsearch:
        """A client talking only to the given node indices (e.g. the survivors of a kill)."""
        return self.cluster.client([self.urls[i] for i in nodes], **kwargs)

    def kill(self, i: int) -> None:
        self.cluster.kill(i)

    def restart(self, i: int) -> str:
        return self.cluster.restart(i)

    def log_tail(self, i: int, lines: int = 80) -> str:
        return self.cluster.log_tail(i, lines)

    def alive(self) -> list[bool]:
        return self.cluster.alive()

    def ensure_all_up(self) -> None:
        for i, up in enumerate(self.alive()):
            if not up:
                self.restart(i)


@pytest.fixture(scope="session")
def _cluster3_session() -> Iterator[Cluster3]:
    with EARLY_STARTS.held("_cluster3_session") as cluster:
        client = cluster.client(max_retries=3, retry_on_timeout=True)
        try:
            yield Cluster3(cluster=cluster, client=client, urls=list(cluster.urls))
        finally:
            client.close()


@pytest.fixture
def cluster3(_cluster3_session: Cluster3) -> Iterator[Cluster3]:
    """The 3-node cluster; nodes a test killed are restarted after it."""
    yield _cluster3_session
    _cluster3_session.ensure_all_up()


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No server configured anywhere, a scratch data dir and working directory."""
    for var in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD",
                "ESDEDUP_ES_CA_CERTS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ESDEDUP_CONFIG", str(tmp_path / "no-config.json"))
    monkeypatch.setenv("ESDEDUP_DATA_DIR", str(tmp_path / "default-data"))
    monkeypatch.chdir(tmp_path)
    return tmp_path
