"""SIGTERM to a running `esdedup ingest`: the worker processes go with it, the run says what it
wrote and what it read but did not write, and a resumed run finishes the job. The CLI runs as a real
subprocess; no mocks.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

import pytest

from esdedup.store.local import LocalStore
from tests.reliability import (
    child_pids,
    last_json,
    pending_signal,
    run_cli,
    running,
    start_cli,
    stop_a_worker_while_it_sends_a_result,
    wait_for,
    wait_or_dump,
    write_corpus,
)


def test_sigterm_stops_the_workers_and_accounts_for_the_records_in_flight(tmp_path):
    data, ck = tmp_path / "data", tmp_path / "ck.json"
    docs = write_corpus(tmp_path / "in.jsonl", 30_000, seed=61)
    args = ("ingest", tmp_path / "in.jsonl", "--index", "term", "--data-dir", data, "--tokenizer", "rjieba",
            "--workers", "2", "--checkpoint", ck, "--dead-letter", tmp_path / "dl.jsonl", "--json")
    proc = start_cli(*args, stdout=tmp_path / "out", stderr=tmp_path / "err")
    try:
        wait_for(lambda: ck.exists() and len(child_pids(proc.pid)) >= 2, timeout=300, interval=0.2,
                 what="the first batch written, with its workers running")
        workers = child_pids(proc.pid)
        proc.send_signal(signal.SIGTERM)  # to the ingest parent only, not its process group
        code = wait_or_dump(proc, 120, tmp_path / "err")
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (tmp_path / "err").read_text()
    assert code == 143, err[-3000:]
    assert "more records read were not written" in err
    deadline = time.monotonic() + 20
    while any(map(running, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(running, workers)), [p for p in workers if running(p)]
    _resume_writes_the_rest(err, args, docs, LocalStore("term", data))


def _catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler of its own for ``signum``."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    [mask] = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:")]
    return bool(mask >> (signum - 1) & 1)


@pytest.mark.parametrize("module", ["esdedup", "esdedup_cli"])
def test_sigterm_from_the_first_line_of_the_command_ends_it_with_one_line(tmp_path, module):
    """SIGTERM while the command starts (its imports take a second on a busy machine, then it opens the store)
    ends it as one during the run does: one line, exit 143, saying nothing was read (before, the default action
    ended it without a word). It is taken from the command's first line, once the interpreter runs our code
    (``python -m esdedup`` imports the library package before that, ``python -m esdedup_cli`` and the
    ``esdedup`` command do not); each moment is counted from there."""
    write_corpus(tmp_path / "in.jsonl", 30000, seed=65)  # still running 0.6 s in, on a quiet machine
    before = re.compile(r"Error: stopped by SIGTERM before the run read anything: nothing was read or written")
    during = re.compile(r"Error: stopped by SIGTERM: read (\d+) = indexed (\d+) \+ skipped (\d+) \+ failed (\d+); \d+ "
                        r"more records read were not written \(a resumed run reads them again\); the worker processes "
                        r"were stopped")
    lines = {}
    for delay in (0.0, 0.2, 0.6):
        proc = start_cli("ingest", tmp_path / "in.jsonl", "--index", "early", "--data-dir", tmp_path / "data",
                         "--tokenizer", "rjieba", "--workers", "2", "--checkpoint", tmp_path / "ck.json", "--json",
                         stdout=tmp_path / "out", stderr=tmp_path / "err", module=module)
        try:
            wait_for(lambda p=proc: _catches(p.pid, signal.SIGTERM) or p.poll() is not None, timeout=120,
                     interval=0.002, what="SIGTERM taken")
            time.sleep(delay)
            proc.send_signal(signal.SIGTERM)
            code = wait_or_dump(proc, 60, tmp_path / "err")
        finally:
            if proc.poll() is None:
                proc.kill()
        err = (tmp_path / "err").read_text()
        assert code == 143, (delay, err[-3000:])
        [line] = err.splitlines()
        m = during.fullmatch(line)
        assert before.fullmatch(line) or (m and int(m[1]) == sum(map(int, m.groups()[1:]))), (delay, line)
        lines[delay] = line
    assert before.fullmatch(lines[0.0]), lines  # taken before the run started: it read nothing


def _resume_writes_the_rest(err: str, args: tuple, docs: list, store: LocalStore) -> None:
    """A run stopped by SIGTERM said so in one line; resumed, it reads exactly the records it had not
    written (nothing read twice, nothing lost) and the store ends with every record."""
    assert "Traceback" not in err and err.startswith("Error: stopped by SIGTERM: read "), err[-3000:]
    first_read = int(err.split("read ", 1)[1].split()[0])
    r = run_cli(*args, "--resume", timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert last_json(r.stdout)["read"] == len(docs) - first_read
    store.open(None, create=False)
    assert store.count() == len(docs)
    store.close()


def test_ctrl_c_reports_like_sigterm(tmp_path):
    """Ctrl-C (SIGINT to the whole foreground process group, as a terminal sends it) ends the run the way SIGTERM
    does: after the batch it is writing, one line with the counts and what a resumed run reads again, exit 130."""
    import os

    data, ck = tmp_path / "data", tmp_path / "ck.json"
    docs = write_corpus(tmp_path / "in.jsonl", 30_000, seed=62)
    args = ("ingest", tmp_path / "in.jsonl", "--index", "int", "--data-dir", data, "--tokenizer", "rjieba",
            "--workers", "2", "--checkpoint", ck, "--dead-letter", tmp_path / "dl.jsonl", "--json")
    proc = start_cli(*args, stdout=tmp_path / "out", stderr=tmp_path / "err", new_session=True)
    try:
        wait_for(lambda: ck.exists() and len(child_pids(proc.pid)) >= 2, timeout=300, interval=0.2,
                 what="the first batch written, with its workers running")
        workers = child_pids(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        code = wait_or_dump(proc, 120, tmp_path / "err")
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (tmp_path / "err").read_text()
    assert code == 130, err[-3000:]
    [line] = err.splitlines()
    assert re.fullmatch(r"Error: stopped by SIGINT: read (\d+) = indexed \d+ \+ skipped \d+ \+ failed \d+; \d+ more "
                        r"records read were not written \(a resumed run reads them again\); the worker processes "
                        r"were stopped", line), line
    first_read = int(line.split("read ", 1)[1].split()[0])
    deadline = time.monotonic() + 20
    while any(map(running, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(running, workers)), [p for p in workers if running(p)]
    r = run_cli(*args, "--resume", timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert last_json(r.stdout)["read"] == len(docs) - first_read


def test_sigterm_while_a_worker_sends_its_result_back(tmp_path):
    """SIGTERM while a worker is halfway through sending a batch's fingerprints back (on a busy machine a
    worker often is: a result is megabytes, and the parent reads it as fast as it gets the CPU). The run
    stops as always, and ends: it never kills a worker in the middle of a result, which would leave the
    process pool's result thread waiting for the rest of it, and the exit waiting for that thread, for ever."""
    data, ck = tmp_path / "data", tmp_path / "ck.json"
    docs = write_corpus(tmp_path / "in.jsonl", 30_000, seed=63)
    args = ("ingest", tmp_path / "in.jsonl", "--index", "mid", "--data-dir", data, "--tokenizer", "rjieba",
            "--workers", "2", "--checkpoint", ck, "--dead-letter", tmp_path / "dl.jsonl", "--json")
    proc = start_cli(*args, stdout=tmp_path / "out", stderr=tmp_path / "err")
    workers: list[int] = []
    try:
        wait_for(lambda: ck.exists() and len(child_pids(proc.pid)) >= 2, timeout=300, interval=0.1,
                 what="the first batch written, with its workers running")
        workers = child_pids(proc.pid)
        stopped = stop_a_worker_while_it_sends_a_result(proc, time.monotonic() + 120)
        proc.send_signal(signal.SIGTERM)
        # The run stops its workers now. A stopped worker goes on only when continued, as the scheduler would
        # continue it: once a run that kills its workers has sent it SIGTERM (which then ends it), or after a
        # while for a run that waits for it.
        deadline = time.monotonic() + 10
        while not pending_signal(stopped, signal.SIGTERM) and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.kill(stopped, signal.SIGCONT)
        code = wait_or_dump(proc, 120, tmp_path / "err")
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in workers:  # never leave one behind, stopped or not, for the rest of the suite
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    err = (tmp_path / "err").read_text()
    assert code == 143, err[-3000:]
    _resume_writes_the_rest(err, args, docs, LocalStore("mid", data))


@pytest.mark.parametrize("native", ["1", "0"])
def test_after_sigkill_the_workers_end_and_a_resume_runs_at_once(tmp_path, native):
    """``kill -9`` of an ingest: the kernel's parent-death signal ends its worker processes (they must not keep
    the handler the parent set for SIGTERM, which only asks the run to stop), so nothing keeps the checkpoint's
    lock and a resumed run started right away runs, and finishes the job."""
    data, ck = tmp_path / "data", tmp_path / "ck.json"
    docs = write_corpus(tmp_path / "in.jsonl", 12_000, seed=62)
    env = {"ESDEDUP_NATIVE": native}
    args = ("ingest", tmp_path / "in.jsonl", "--index", "killed", "--data-dir", data, "--tokenizer", "rjieba",
            "--workers", "2", "--checkpoint", ck, "--dead-letter", tmp_path / "dl.jsonl", "--json")
    proc = start_cli(*args, stdout=tmp_path / "out", stderr=tmp_path / "err", env=env)
    try:
        wait_for(lambda: ck.exists() and len(child_pids(proc.pid)) >= 2, timeout=300, interval=0.1,
                 what="the first batch written, with its workers running")
        workers = child_pids(proc.pid)
        proc.kill()  # SIGKILL to the ingest parent only: no handler of its own runs
        wait_or_dump(proc, 60, tmp_path / "err")
    finally:
        if proc.poll() is None:
            proc.kill()
    try:
        deadline = time.monotonic() + 10
        while any(map(running, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(running, workers)), [p for p in workers if running(p)]
    finally:
        for pid in workers:  # never leave one behind for the rest of the suite
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    r = run_cli(*args, "--resume", env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "in use by another ingest" not in r.stderr
    store = LocalStore("killed", data)
    store.open(None, create=False)
    assert store.count() == len(docs)
    store.close()
