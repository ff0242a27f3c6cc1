"""Local Elasticsearch nodes for tests and benchmarks, driven through ``scripts/es-local``.

No Docker involved: the script runs the Maven "integ-test-zip" distribution directly on 127.0.0.1
(as an unprivileged user when we are root). Typical use::

    from tests.es_node import LocalCluster

    with LocalCluster(nodes=1) as cluster:      # port=None: picks free ports
        es = cluster.client()
        ...

or ``cluster = LocalCluster(nodes=3)``; ``urls = cluster.start()`` ... ``cluster.kill(1)`` ...
``cluster.restart(1)`` ... ``cluster.stop()``.

With ``watch=True`` (default) the script also leaves a watchdog that stops and purges the nodes
once this Python process has exited, so a killed test/bench run does not leave nodes behind.

Ports: with ``port=None`` a base HTTP port P is picked in ``ESDEDUP_TEST_ES_PORTS`` (default
``9260-9299``) such that P..P+N-1 and the transport ports P+100..P+100+N-1 are free. The chosen
ports are also held under an exclusive ``flock`` in ``/tmp/esdedup-es/locks`` for the lifetime of
the object, so concurrent test sessions on one machine do not pick the same ports.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]

ES_LOCAL = Path(os.environ.get("ESDEDUP_ES_LOCAL", REPO_ROOT / "scripts" / "es-local"))
TRANSPORT_OFFSET = 100  # must match scripts/es-local
LOCK_DIR = Path(os.environ.get("ESDEDUP_ES_LOCK_DIR", "/tmp/esdedup-es/locks"))
#: The server version CI tests with each client major (scripts/es-local pins their checksums).
ES_VERSION_FOR_MAJOR = {8: "8.19.21", 9: "9.2.0"}
#: The OpenSearch version of the OpenSearch nodes the tests start (``ESDEDUP_OS_VERSION`` picks another).
OS_VERSION = os.environ.get("ESDEDUP_OS_VERSION", "").strip() or "2.19.6"


class ESNodeError(RuntimeError):
    """A local node could not be started/stopped; the message carries the script output (log tail)."""


def _port_range() -> range:
    spec = os.environ.get("ESDEDUP_TEST_ES_PORTS", "9260-9299")
    lo, _, hi = spec.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class _PortLease:
    """Exclusive, process-lifetime claim on a set of ports (flock files; released on close/exit)."""

    def __init__(self) -> None:
        self._fds: list[int] = []

    def try_claim(self, ports: list[int]) -> bool:
        _ensure_lock_dir()
        claimed: list[int] = []
        for p in ports:
            try:
                # read-only fds can hold flocks too, so files created by another user work as well
                fd = os.open(LOCK_DIR / f"port-{p}.lock", os.O_RDONLY | os.O_CREAT, 0o666)
            except OSError:
                fd = -1
            if fd < 0 or not _try_flock(fd):
                for g in claimed:
                    os.close(g)
                return False
            claimed.append(fd)
        if not all(_port_free(p) for p in ports):
            for g in claimed:
                os.close(g)
            return False
        self._fds.extend(claimed)
        return True

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        os.close(fd)
        return False


def _ensure_lock_dir() -> None:
    if LOCK_DIR.is_dir():
        return
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    for d in (LOCK_DIR, LOCK_DIR.parent):
        try:
            if d.stat().st_uid == os.getuid():
                d.chmod(0o1777)  # shared by all users of the machine, like /tmp
        except OSError:
            pass


def pick_base_port(nodes: int) -> tuple[int, _PortLease]:
    lease = _PortLease()
    rng = _port_range()
    for base in rng:
        if base + nodes - 1 > rng[-1]:
            break
        ports = [base + i for i in range(nodes)] + [base + TRANSPORT_OFFSET + i for i in range(nodes)]
        if lease.try_claim(ports):
            return base, lease
    raise ESNodeError(
        f"no free block of {nodes} HTTP ports (+{TRANSPORT_OFFSET} transport) in {rng.start}-{rng[-1]} "
        "(set ESDEDUP_TEST_ES_PORTS=LO-HI)"
    )


class LocalCluster:
    """N Elasticsearch nodes on 127.0.0.1 forming one cluster, managed by scripts/es-local."""

    def __init__(
        self,
        nodes: int = 1,
        port: int | None = None,
        name: str | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        version: str | None = None,
        heap: str | None = None,
        java_home: str | None = None,
        timeout: int | None = None,
        watch: bool = True,
        settings: dict[str, object] | None = None,
        plugins: list[str] | None = None,
        engine: str = "elasticsearch",
    ) -> None:
        self.nodes = nodes
        #: ``elasticsearch`` or ``opensearch`` (``scripts/es-local start --engine``)
        self.engine = engine
        #: extra elasticsearch.yml settings of every node (``scripts/es-local start -E KEY=VALUE``)
        self.settings = dict(settings or {})
        #: plugin zips installed into the nodes' distribution (``scripts/es-local start --plugin ZIP``)
        self.plugins = list(plugins or [])
        self.port = port
        self.name = name or f"esdedup-test-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._own_state = state_dir is None
        self.state_dir = (
            Path(state_dir) if state_dir else Path(tempfile.mkdtemp(prefix=f"{self.name}-state-"))
        )
        self.version = version
        self.heap = heap
        self.java_home = java_home
        self.timeout = timeout
        self.watch = watch
        self.urls: list[str] = []
        self._lease: _PortLease | None = None

    # -- plumbing ---------------------------------------------------------------------------

    def _run(
        self,
        *args: str,
        check: bool = True,
        timeout: float | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, ESDEDUP_ES_STATE=str(self.state_dir), **(extra_env or {}))
        cmd = ["bash", str(ES_LOCAL), *args, "--name", self.name]
        proc = subprocess.run(
            cmd, env=env, text=True, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
        if check and proc.returncode != 0:
            raise ESNodeError(
                f"`{' '.join(cmd)}` failed with exit code {proc.returncode}\n"
                f"--- stderr ---\n{proc.stderr.rstrip()}\n--- stdout ---\n{proc.stdout.rstrip()}"
            )
        return proc

    def _script_timeout(self) -> float:
        # generous outer bound: first-time fetch (~30 s) + the script's own health timeout
        return float(self.timeout or int(os.environ.get("ESDEDUP_ES_TIMEOUT", "180"))) + 300.0

    # -- API --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if not self.urls:
            raise ESNodeError("cluster not started")
        return self.urls[0]

    def node_name(self, i: int) -> str:
        """Elasticsearch node.name of node i (scripts/es-local names them <cluster>-<i>)."""
        return f"{self.name}-{i}"

    def start(self) -> list[str]:
        """Start the nodes and wait for yellow/green; returns the HTTP URLs (one per node)."""
        if self.port is None:
            base, self._lease = pick_base_port(self.nodes)
        else:
            base = self.port
        args = ["start", "--nodes", str(self.nodes), "--port", str(base)]
        if self.engine != "elasticsearch":
            args += ["--engine", self.engine, "--version", self.version or OS_VERSION]
        elif self.version:
            args += ["--version", self.version]
        if self.heap:
            args += ["--heap", self.heap]
        if self.java_home:
            args += ["--java-home", self.java_home]
        if self.timeout:
            args += ["--timeout", str(self.timeout)]
        for key, value in self.settings.items():
            args += ["-E", f"{key}={value}"]
        for zip_path in self.plugins:
            args += ["--plugin", str(zip_path)]
        try:
            # the script's watchdog stops the nodes if this process dies without calling stop()
            watch = {"ESDEDUP_ES_WATCH_PID": str(os.getpid())} if self.watch else None
            proc = self._run(*args, timeout=self._script_timeout(), extra_env=watch)
        except BaseException:
            # e.g. TimeoutExpired/KeyboardInterrupt killed the script mid-wait: make sure no node
            # keeps running (logs are kept for inspection)
            if (self.state_dir / "cluster.env").exists():
                self._run("stop", check=False, timeout=120)
            self._release()
            raise
        self.port = base
        self.urls = [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("http")]
        if len(self.urls) != self.nodes:
            raise ESNodeError(
                f"es-local start printed {self.urls!r}, expected {self.nodes} URL(s)\n{proc.stderr}"
            )
        return self.urls

    def stop(self, purge: bool = True) -> None:
        """Stop all nodes. purge=True also deletes logs, work and state dirs."""
        try:
            if (self.state_dir / "cluster.env").exists():
                self._run("stop", *(["--purge"] if purge else []), timeout=180)
            if purge and self._own_state:
                shutil.rmtree(self.state_dir, ignore_errors=True)
        finally:
            self._release()

    def kill(self, i: int) -> None:
        """SIGKILL node i (0-based)."""
        self._run("kill", str(i), timeout=60)

    def restart(self, i: int) -> str:
        """(Re)start node i with the same data dir and ports; waits until it has rejoined."""
        proc = self._run("restart", str(i), timeout=self._script_timeout())
        return proc.stdout.strip().splitlines()[-1]

    def status(self) -> str:
        proc = self._run("status", check=False, timeout=60)
        return proc.stdout + proc.stderr

    def alive(self) -> list[bool]:
        """Per node: is its process still running (from `es-local status`)."""
        out = self._run("status", check=False, timeout=60).stdout.splitlines()
        flags = {}
        for line in out:
            parts = line.split()
            if len(parts) >= 5 and parts[0].isdigit():
                flags[int(parts[0])] = parts[4] == "up"
        return [flags.get(i, False) for i in range(self.nodes)]

    def log_tail(self, i: int = 0, lines: int = 80) -> str:
        proc = self._run("logs", str(i), "-n", str(lines), check=False, timeout=30)
        return proc.stdout if proc.returncode == 0 else proc.stderr

    def client(self, urls: list[str] | None = None, **kwargs: Any):  # -> elasticsearch.Elasticsearch
        if self.engine == "opensearch":  # opensearch-py's client: its own arguments
            from opensearchpy import OpenSearch

            return OpenSearch(urls or self.urls, timeout=kwargs.pop("request_timeout", 60), **kwargs)
        from elasticsearch import Elasticsearch

        kwargs.setdefault("request_timeout", 60)
        return Elasticsearch(urls or self.urls, **kwargs)

    def _release(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalCluster(name={self.name!r}, nodes={self.nodes}, urls={self.urls!r})"


class EarlyStarts:
    """Nodes the selected tests will need, started in a background thread as soon as collection knows which
    (``begin``), so that their start-ups (25-55 s each on 2 cores) overlap the tests that run before them.

    A node fixture registers how its node is made (``register(fixture_name, start)``: ``start`` returns a started
    LocalCluster, or raises as the fixture would) and takes it with ``take(fixture_name)``: that waits for the
    background start, or starts the node itself when the background thread has not begun it yet, and raises what the
    start raised. The node then belongs to the fixture, which stops it (``stop_later`` stops it in the background;
    ``close``, at the end of the session, waits for those stops and stops the nodes started but never taken).

    One background start at a time, in order of first use, and at most ``ahead`` nodes started and not taken yet:
    all the nodes of a full run would not fit in memory at once beside a second test pass."""

    def __init__(self, ahead: int = 2) -> None:
        self.ahead = ahead
        self._starts: dict[str, Callable[[], LocalCluster]] = {}
        self._results: dict[str, Future[LocalCluster]] = {}
        self._claimed: set[str] = set()  # starts begun (by the background thread or by take)
        self._untaken: set[str] = set()  # started in the background, not taken yet
        self._closing = False
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        #: per node fixture taken: (seconds its start took, seconds the fixture waited for it)
        self.timings: dict[str, tuple[float, float]] = {}
        self._start_seconds: dict[str, float] = {}

    def register(self, name: str, start: Callable[[], LocalCluster]) -> None:
        self._starts[name] = start

    def registered(self) -> set[str]:
        return set(self._starts)

    def begin(self, names: list[str]) -> None:
        """Start the registered nodes among ``names`` (in that order) in a background thread."""
        planned = [n for n in dict.fromkeys(names) if n in self._starts]
        if planned:
            self._spawn(self._start_in_order, planned)

    def take(self, name: str) -> LocalCluster:
        with self._cond:
            result = self._results.setdefault(name, Future())
            mine = name not in self._claimed
            self._claimed.add(name)
        t0 = time.monotonic()
        if mine:
            self._run_start(name, result, background=False)
        try:
            return result.result()
        finally:
            with self._cond:
                self._untaken.discard(name)
                self._cond.notify_all()
                self.timings[name] = (self._start_seconds.get(name, 0.0), time.monotonic() - t0)

    def stop_later(self, cluster: LocalCluster, purge: bool = True) -> None:
        self._spawn(cluster.stop, purge)

    @contextlib.contextmanager
    def held(self, name: str) -> Iterator[LocalCluster]:
        """The node of fixture ``name`` for as long as the fixture holds it (``take``), stopped in the background
        after (``stop_later``; its data and logs purged unless ESDEDUP_TEST_KEEP_ES_LOGS asks to keep them)."""
        cluster = self.take(name)
        try:
            yield cluster
        finally:
            self.stop_later(cluster, purge=not keep_logs())

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()  # a start under way ends first: its nodes would outlive a process that has exited
        for name in sorted(self._untaken):
            self._results[name].result().stop()
        self._untaken.clear()
        self._threads.clear()

    def _spawn(self, target: Callable[..., object], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=f"es-node-{target.__name__}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _start_in_order(self, names: list[str]) -> None:
        for name in names:
            with self._cond:
                self._cond.wait_for(lambda: self._closing or len(self._untaken) < self.ahead)
                if self._closing:
                    return
                if name in self._claimed:
                    continue
                self._claimed.add(name)
                result = self._results.setdefault(name, Future())
            self._run_start(name, result, background=True)

    def _run_start(self, name: str, result: Future[LocalCluster], background: bool) -> None:
        t0 = time.monotonic()
        try:
            cluster = self._starts[name]()
        except BaseException as exc:  # pytest.fail's Failed too: take() raises it again in the fixture
            result.set_exception(exc)
            return
        finally:
            self._start_seconds[name] = time.monotonic() - t0
        with self._cond:
            if background:
                self._untaken.add(name)
            result.set_result(cluster)


def keep_logs() -> bool:
    """ESDEDUP_TEST_KEEP_ES_LOGS=1 keeps the logs (and data) of the nodes the tests started."""
    return os.environ.get("ESDEDUP_TEST_KEEP_ES_LOGS", "") not in ("", "0", "false", "no")


def given_url(variable: str) -> str | None:
    """The URL of a running node that environment ``variable`` names, instead of a node the tests start."""
    url = os.environ.get(variable, "").strip()
    return url.rstrip("/") if url else None


#: The node fixtures' early starts (tests/conftest.py begins them once collection is done).
EARLY_STARTS = EarlyStarts()
