"""Helpers shared by the reliability tests (tests/integration/test_faults.py, test_bad_input.py,
test_security.py) and bench/load.py.

* `write_corpus`: a deterministic JSONL corpus of distinct articles. Unlike tests/corpus.py (30 sentences
  recombined, so a large corpus is full of chance near-duplicates that make every lookup crowded), the text
  here is random runs of common Han characters: every document is unique, lookups stay cheap and 50,000
  documents ingest in minutes on two cores.
* `run_cli` / `start_cli`: ``python -m esdedup ...`` as a real subprocess (so a test can kill it or the node
  under it and read its exit code, stdout and stderr).
* `killed_on_exit`: the processes a test starts, none left running when it ends.
* `wait_or_dump`: wait for a `start_cli` process to end; when it does not, the assertion carries a stack dump of
  every thread of it and of its worker processes (a hang seen once in CI is diagnosed from CI's log).
* `stop_a_worker_while_it_sends_a_result`: an ingest worker caught and frozen (SIGSTOP) halfway through
  sending a batch's result back; `in_kernel`, `pending_signal`, `running`: what a test reads of a process in /proc.
* `index_ids`: every id of an index, via a point in time (works past 10,000 hits).
* `open_files_in`: what this process holds open under a folder (a spilled temporary file is gone or not).
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]

# Han characters U+4E00.. that every CJK tokenizer handles (a fixed block keeps the output stable).
_HAN = [chr(c) for c in range(0x4E00, 0x4E00 + 2500)]
_PUNCT = "，，，。"


def make_text(rng: random.Random, clauses: tuple[int, int] = (5, 9)) -> str:
    parts = []
    for _ in range(rng.randint(*clauses)):
        parts.append("".join(rng.choice(_HAN) for _ in range(rng.randint(8, 18))))
        parts.append(rng.choice(_PUNCT))
    return "".join(parts)


def make_docs(n: int, *, seed: int = 1, prefix: str = "d", start: int = 0) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{"id": f"{prefix}{i:06d}", "text": make_text(rng)} for i in range(start, start + n)]


def write_jsonl(path: Path, docs: Iterable[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    return path


def write_corpus(path: Path, n: int, *, seed: int = 1, prefix: str = "d", start: int = 0) -> list[dict[str, str]]:
    docs = make_docs(n, seed=seed, prefix=prefix, start=start)
    write_jsonl(path, docs)
    return docs


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: no ESDEDUP_* settings leaking in from the caller but its data
    folder (the test run's, tests/conftest.py, or the test's own: never the user's), no config file from
    the home directory, the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESDEDUP_") or k == "ESDEDUP_DATA_DIR"}
    env["ESDEDUP_CONFIG"] = str(REPO_ROOT / ".no-esdedup-config.json")  # never exists
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def cli_cmd(*args: object, module: str = "esdedup") -> list[str]:
    """``python -m esdedup ARGS`` (``module``: esdedup_cli, as the ``esdedup`` command starts)."""
    return [sys.executable, "-m", module, *(str(a) for a in args)]


def run_cli(*args: object, env: dict[str, str] | None = None, timeout: float = 600,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli_cmd(*args), env=cli_env(env), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, cwd=cwd)


def _child_setup() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # `wait_or_dump` aborts a hung CLI for its stack dump: no core file for it in the test's working directory.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def start_cli(*args: object, stdout: Path, stderr: Path, env: dict[str, str] | None = None,
              cwd: Path | None = None, new_session: bool = False, module: str = "esdedup") -> subprocess.Popen[bytes]:
    """Start the CLI in the background with stdout/stderr going to files (no pipe to fill up).
    ``new_session``: in a process group of its own, so ``os.killpg(p.pid, ...)`` reaches its workers;
    ``module``: as `cli_cmd`.

    The CLI gets SIGINT's default action, as a program started from a terminal has: a test suite run in the
    background of a non-interactive shell (`cmd &`, as CI scripts do) inherits SIGINT *ignored*, the CLI
    would inherit that too, and a test's Ctrl-C would then be lost. It runs with Python's faulthandler on
    (``PYTHONFAULTHANDLER``; its worker processes inherit it), so that `wait_or_dump` can have it print the
    stack of every thread."""
    out = open(stdout, "wb")
    err = open(stderr, "wb")
    try:
        return subprocess.Popen(cli_cmd(*args, module=module), env=cli_env({"PYTHONFAULTHANDLER": "1", **(env or {})}), stdout=out,
                                stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=new_session,
                                preexec_fn=_child_setup)
    finally:
        out.close()
        err.close()


@contextlib.contextmanager
def killed_on_exit(procs: Sequence[subprocess.Popen[Any]]):
    """``procs`` while the block runs; any still running when it ends (a failed assertion, a timeout) killed
    and reaped, so that no test leaves a process behind."""
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (an ingest's worker processes)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def wait_or_dump(proc: subprocess.Popen[bytes], timeout: float, stderr: Path) -> int:
    """``proc.wait(timeout)`` for a `start_cli` process whose stderr goes to ``stderr``. When it has not ended by
    then, it and its child processes get SIGABRT, which the faulthandler `start_cli` turns on answers with
    the Python stack of every thread on stderr (the parent first: its state is what a hang is about; a
    stopped child answers only if continued), then SIGKILL; the AssertionError carries the end of
    ``stderr``, dumps included. A hang seen only on a busy CI machine is diagnosed from CI's log."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    children = child_pids(proc.pid)
    for pid in (proc.pid, *children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGABRT)
    deadline = time.monotonic() + 10  # the dumps are written before each process ends
    while time.monotonic() < deadline and (proc.poll() is None or any(running(pid) for pid in children)):
        time.sleep(0.1)
    for pid in (proc.pid, *children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()
    text = stderr.read_text(errors="replace")
    raise AssertionError(f"the CLI (pid {proc.pid}, child processes {children}) had not ended {timeout:.0f}s after "
                         f"it was asked to; the end of its stderr, with the stack of every thread of each (SIGABRT "
                         f"to faulthandler):\n{text[-20000:]}")


def running(pid: int) -> bool:
    """Whether the process exists and has not ended (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def in_kernel(pid: int, what: str, *, thread: bool = False) -> bool:
    """Whether a process (``thread``: any of its threads) is blocked in the kernel function ``what`` (a pipe's
    read or write: ``pipe_read`` and ``anon_pipe_read`` as kernels name it)."""
    paths = list(Path(f"/proc/{pid}/task").glob("*/wchan")) if thread else [Path(f"/proc/{pid}/wchan")]
    for path in paths:
        with contextlib.suppress(OSError):
            if path.read_text().endswith(what):
                return True
    return False


def pending_signal(pid: int, signum: int) -> bool:
    """Whether ``signum`` waits to be delivered to the process (a stopped one takes it when continued)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    masks = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(mask >> (signum - 1) & 1 for mask in masks)


def _keeps_reading(pid: int) -> bool:
    """Whether a thread of the process is in a pipe's read at each of 5 looks over a second."""
    for _ in range(5):
        if not in_kernel(pid, "pipe_read", thread=True):
            return False
        time.sleep(0.2)
    return True


def stop_a_worker_while_it_sends_a_result(proc: subprocess.Popen[bytes], deadline: float) -> int:
    """SIGSTOP an ingest worker caught halfway through sending a batch's result back (megabytes through a pipe
    of 64 KiB), with the parent holding part of it: what a worker the scheduler does not run for a while on a
    busy machine looks like. Returns the stopped worker."""
    while time.monotonic() < deadline and proc.poll() is None:
        for pid in child_pids(proc.pid):
            if in_kernel(pid, "pipe_write"):
                os.kill(pid, signal.SIGSTOP)
                # The parent reads what is in the pipe, then waits for the rest, for as long as the worker is
                # stopped (a read of the other worker's result is over in a moment).
                time.sleep(0.3)
                if _keeps_reading(proc.pid):
                    return pid
                os.kill(pid, signal.SIGCONT)  # it had finished: try again
        time.sleep(0.001)
    raise AssertionError("never caught a worker sending a result back")


def last_json(stdout: str) -> dict[str, Any]:
    """The JSON summary: the last line of stdout that parses as a JSON object."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise AssertionError(f"no JSON summary in stdout:\n{stdout[-2000:]}")


def balanced(s: dict[str, Any]) -> bool:
    return s["read"] == s["indexed"] + s["skipped"] + s["failed"]


def wait_for(predicate, timeout: float, interval: float = 0.5, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def index_ids(client: Any, index: str) -> list[str]:
    """Every document id of ``index`` (point in time + search_after, ids only)."""
    client.indices.refresh(index=index)
    pit = client.open_point_in_time(index=index, keep_alive="2m")["id"]
    ids: list[str] = []
    after: Sequence[Any] | None = None
    try:
        while True:
            body: dict[str, Any] = {"size": 10000, "pit": {"id": pit, "keep_alive": "2m"},
                                    "sort": [{"_shard_doc": "asc"}], "_source": False, "track_total_hits": False}
            if after is not None:
                body["search_after"] = after
            resp = client.search(**body)
            hits = resp["hits"]["hits"]
            if not hits:
                return ids
            pit = resp.get("pit_id", pit)
            ids.extend(h["_id"] for h in hits)
            after = hits[-1]["sort"]
    finally:
        client.close_point_in_time(id=pit)


def dead_letters(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def report(name: str, data: dict[str, Any]) -> None:
    """Append one JSON line of measured numbers to $ESDEDUP_RELIABILITY_LOG (when set): the source of
    the figures in RELIABILITY.md."""
    path = os.environ.get("ESDEDUP_RELIABILITY_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"test": name, "at": time.strftime("%Y-%m-%d %H:%M:%S"), **data},
                                ensure_ascii=False, default=str) + "\n")


def open_files_in(directory: Path) -> list[str]:
    """What this process holds open under ``directory`` (a file without a name shows as ``... (deleted)``)."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            held.append(target)
    return held
