"""A fingerprint worker of `esdedup ingest` killed from outside (SIGKILL: the out-of-memory killer, an operator),
while it fingerprints or halfway through sending a batch's result back: the run ends within seconds with one
`Error:` line naming the worker, the signal and the likely cause, its counts add up, and `--resume` ends with
the documents an uninterrupted run stores. The CLI runs as a real subprocess, the worker gets a real SIGKILL.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from esdedup.store.local import LocalStore
from tests.reliability import (
    child_pids,
    in_kernel,
    last_json,
    make_docs,
    run_cli,
    running,
    start_cli,
    stop_a_worker_while_it_sends_a_result,
    wait_for,
    wait_or_dump,
    write_jsonl,
)

N = 30_000
#: The Error line of a run whose worker was killed (the pid and the counts are read from it).
KILLED = re.compile(r"Error: fingerprint worker process (\d+) was killed by signal 9 \(SIGKILL\), most likely by the "
                    r"kernel's out-of-memory killer .*; read (\d+) = indexed (\d+) \+ skipped (\d+) \+ failed (\d+); "
                    r"(\d+) more records read were not written \(a resumed run reads them again\); the other worker "
                    r"processes were stopped; rerun the same command with --resume .*")


def _docs() -> list[dict[str, str]]:
    """Distinct articles, every 40th one a near-copy of one 1,000 records earlier (another batch, often another
    side of the kill), so that the resumed run must label against what the killed one wrote."""
    docs = make_docs(N, seed=64)
    for i in range(1000, N, 40):
        docs[i]["text"] = docs[i - 1000]["text"] + "（转载）"
    return docs


def _stored(data: Path, index: str) -> dict[str, Any]:
    """What the store holds of each document, less its write time (another run, another clock)."""
    store = LocalStore(index, data)
    store.open(None, create=False)
    try:
        docs = {d.id: (d.simhash, d.empty, d.tokens, d.chars, d.cluster_id, d.duplicate_of, d.shingles,
                       d.content_sha1, None if d.minhash is None else d.minhash.tobytes())
                for batch in store.scan() for d in batch}
        return {"docs": docs, "labels": store.labels()}
    finally:
        store.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The input, and what an uninterrupted run of it stores."""
    tmp = tmp_path_factory.mktemp("worker-death")
    path = write_jsonl(tmp / "in.jsonl", _docs())
    r = run_cli("ingest", path, "--index", "whole", "--data-dir", tmp / "data", "--tokenizer", "rjieba",
                "--workers", "2", "--checkpoint", tmp / "ck.json", "--dead-letter", tmp / "dl.jsonl", "--json",
                timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    whole = _stored(tmp / "data", "whole")
    assert len(whole["docs"]) == N and len(set(whole["labels"].values())) < N  # near-copies were labelled
    return path, whole


def _args(tmp_path: Path, corpus_path: Path) -> tuple[object, ...]:
    return ("ingest", corpus_path, "--index", "killed", "--data-dir", tmp_path / "data", "--tokenizer", "rjieba",
            "--workers", "2", "--checkpoint", tmp_path / "ck.json", "--dead-letter", tmp_path / "dl.jsonl", "--json")


def _ends_with_one_line_then_resumes(tmp_path: Path, corpus: tuple[Path, dict[str, Any]], killed: int,
                                     workers: list[int], code: int) -> None:
    err = (tmp_path / "err").read_text()
    assert code == 4, err[-3000:]
    [line] = err.splitlines()
    m = KILLED.fullmatch(line)
    assert m, line
    assert int(m.group(1)) == killed
    read, indexed, skipped, failed, unwritten = map(int, m.groups()[1:])
    assert read == indexed + skipped + failed and failed == 0 and read + unwritten <= N
    assert not any(map(running, workers)), [p for p in workers if running(p)]  # the other worker ended too
    assert len(_stored(tmp_path / "data", "killed")["docs"]) == indexed  # the batches written are kept
    r = run_cli(*_args(tmp_path, corpus[0]), "--resume", timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert last_json(r.stdout)["read"] == N - read  # the records not written are read again, no others
    assert _stored(tmp_path / "data", "killed") == corpus[1]


def _started(tmp_path: Path, corpus_path: Path) -> Any:
    return start_cli(*_args(tmp_path, corpus_path), stdout=tmp_path / "out", stderr=tmp_path / "err")


def _first_batch_written(proc: Any, ck: Path) -> list[int]:
    wait_for(lambda: ck.exists() and len(child_pids(proc.pid)) >= 2, timeout=300, interval=0.1,
             what="the first batch written, with its workers running")
    return child_pids(proc.pid)


def _kill_a_worker(tmp_path, corpus, choose) -> None:
    """Start an ingest, SIGKILL the worker ``choose(proc, workers)`` names once the first batch is written, and
    check how the run ends and how ``--resume`` finishes it."""
    proc = _started(tmp_path, corpus[0])
    workers: list[int] = []
    try:
        workers = _first_batch_written(proc, tmp_path / "ck.json")
        victim = choose(proc, workers)
        os.kill(victim, signal.SIGKILL)
        code = wait_or_dump(proc, 60, tmp_path / "err")
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    _ends_with_one_line_then_resumes(tmp_path, corpus, victim, workers, code)


def test_a_worker_killed_while_it_fingerprints_ends_the_run_with_one_line(tmp_path, corpus):
    def not_sending(proc, workers):
        deadline = time.monotonic() + 60
        while in_kernel(workers[0], "pipe_write") and time.monotonic() < deadline:  # not sending: the plain case
            time.sleep(0.01)
        return workers[0]

    _kill_a_worker(tmp_path, corpus, not_sending)


def test_a_worker_killed_halfway_through_sending_its_result_back_ends_the_run_with_one_line(tmp_path, corpus):
    """The pool's result thread has read part of the killed worker's message and waits for the rest, which never
    comes (the other worker and this process hold the pipe's write end): the run must notice the death itself,
    and release that thread, or neither the run nor the process's exit would ever end."""
    _kill_a_worker(tmp_path, corpus,
                   lambda proc, workers: stop_a_worker_while_it_sends_a_result(proc, time.monotonic() + 120))
