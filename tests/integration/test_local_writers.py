"""Several processes on one embedded store, with no traceback anywhere: two ingests into
one ``--data-dir`` both succeed with the labels of one ingest; `dups`, `info` and `similar` work during an
ingest and on a store that cannot be written. The CLI runs as a real subprocess; no mocks.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from esdedup.errors import ConfigError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest import IngestOptions, ingest
from esdedup.store.local import LocalStore
from esdedup.util.filelock import FileLock
from tests.reliability import (
    cli_cmd,
    cli_env,
    killed_on_exit,
    last_json,
    run_cli,
    start_cli,
    wait_for,
    write_corpus,
)
from tests.writers import inconsistencies, partition, planted_corpus, split_across, write_parts

CONFIG = FingerprintConfig(tokenizer="rjieba")


def _labels(data: Path, index: str) -> dict[str, dict]:
    db = sqlite3.connect(data / f"{index}.sqlite")
    try:
        rows = db.execute("SELECT id, cluster_id, duplicate_of, wseq, cluster_seq FROM docs").fetchall()
    finally:
        db.close()
    return {i: {"cluster_id": c, "duplicate_of": d, "seq": s, "cluster_seq": cs} for i, c, d, s, cs in rows}


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text and "database is locked" not in text, text[-3000:]


def test_two_ingests_into_one_data_dir_label_like_one(tmp_path):
    docs, pairs = planted_corpus(n_long=150, n_short=150, variants=40)
    paths = write_parts(split_across(docs, pairs, 2), tmp_path)
    data = tmp_path / "data"
    reference = LocalStore("ref", data)
    assert ingest(paths, reference, CONFIG, IngestOptions(workers=1)).ok
    reference.close()
    procs = [start_cli("ingest", p, "--index", "both", "--data-dir", data, "--tokenizer", "rjieba", "--json",
                       "--workers", "1", "--checkpoint", tmp_path / f"ck{k}.json", "--dead-letter",
                       tmp_path / f"dl{k}.jsonl", stdout=tmp_path / f"out{k}", stderr=tmp_path / f"err{k}")
             for k, p in enumerate(paths)]
    for k, p in enumerate(procs):
        assert p.wait(timeout=600) == 0, (tmp_path / f"err{k}").read_text()[-3000:]
        _no_traceback((tmp_path / f"err{k}").read_text())
        s = last_json((tmp_path / f"out{k}").read_text())
        assert s["read"] == s["indexed"] and s["failed"] == 0, s
    labels = _labels(data, "both")
    assert set(labels) == {d["id"] for d in docs}
    assert inconsistencies(labels) == []
    assert partition(labels) == partition(_labels(data, "ref"))


def test_a_checkpoint_in_use_by_a_running_ingest_is_refused(tmp_path):
    path = tmp_path / "a.jsonl"
    write_corpus(path, 5)
    ck = tmp_path / "ck.json"
    with FileLock(tmp_path / "ck.json.lock", busy=ConfigError("held")):  # what a running ingest holds
        with pytest.raises(ConfigError, match="checkpoint .* is in use by another ingest .* of its own"):
            ingest([path], LocalStore("x", tmp_path / "data"), CONFIG, IngestOptions(workers=1, checkpoint=ck))
    assert ingest([path], LocalStore("x", tmp_path / "data"), CONFIG, IngestOptions(workers=1, checkpoint=ck)).ok


def test_dups_info_and_similar_during_an_ingest(tmp_path):
    data = tmp_path / "data"
    path, first = tmp_path / "big.jsonl", tmp_path / "first.jsonl"
    write_corpus(path, 6000, seed=3)
    write_corpus(first, 50, prefix="f")
    assert run_cli("ingest", first, "--index", "busy", "--data-dir", data, "--tokenizer", "rjieba", "--workers",
                   "1").returncode == 0
    proc = start_cli("ingest", path, "--index", "busy", "--data-dir", data, "--tokenizer", "rjieba", "--workers", "1",
                     "--checkpoint", tmp_path / "ck.json", stdout=tmp_path / "out", stderr=tmp_path / "err")
    readers = (("dups",), ("info",), ("similar", "--text", "一丁七万丈三上下丌不与丐丑专且丕世丘丙业丛东"))

    def read_all() -> None:
        for args in readers:
            r = run_cli(*args, "--index", "busy", "--data-dir", data)
            _no_traceback(r.stderr)
            assert r.returncode == 0, r.stderr[-2000:]

    try:
        wait_for(lambda: _stored(data / "busy.sqlite") > 50, 120, 0.05, "the second ingest's first batch")
        # Each reader once while the ingest is held in the middle of its run (its run, checkpoint and window
        # open), however fast it is; then again and again while it writes, as long as it does.
        _paused_outside_the_store(proc, data, "busy")
        read_all()
        assert proc.poll() is None, "the ingest ended while it was held"
        os.kill(proc.pid, signal.SIGCONT)
        while proc.poll() is None:
            read_all()
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=600) == 0, (tmp_path / "err").read_text()[-3000:]
    _no_traceback((tmp_path / "err").read_text())
    assert _stored(data / "busy.sqlite") == 6050


def _stored(path: Path) -> int:
    """How many documents an embedded store's file holds (0 before it has its tables)."""
    db = sqlite3.connect(path, timeout=5)
    try:
        return db.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def _unprivileged(cmd: list[str]) -> list[str]:
    """As root, drop the capability that lets root write read-only files."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root needs setpriv (util-linux) to make read-only files read-only")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", *cmd]


@pytest.mark.parametrize("folder_too", [False, True], ids=["file", "file-and-folder"])
def test_dups_info_and_similar_on_a_read_only_store(tmp_path, folder_too):
    """Right after an ingest no band key is indexed yet (keys are indexed lazily by the first read): a
    read-only store indexes them in memory instead of failing."""
    data = tmp_path / "data"
    docs, pairs = planted_corpus(n_long=60, n_short=60, variants=20)
    path = write_parts([docs], tmp_path)[0]
    assert run_cli("ingest", path, "--index", "ro", "--data-dir", data, "--tokenizer", "rjieba", "--workers",
                   "1").returncode == 0
    writable = tmp_path / "copy"
    shutil.copytree(data, writable)
    expected = run_cli("dups", "--index", "ro", "--data-dir", writable)
    assert expected.returncode == 0 and expected.stdout.count('"a"') >= len(pairs) // 2

    for f in data.iterdir():
        f.chmod(0o444)
    if folder_too:
        data.chmod(0o555)
    try:
        for args, check in ((("dups",), lambda out: out == expected.stdout), (("info", "--json"), lambda out:
                            json.loads(out)["documents"] == len(docs)),
                            (("similar", "--text", docs[0]["text"], "--json"), lambda out:
                             docs[0]["id"] in out)):
            r = subprocess.run(_unprivileged(cli_cmd(*args, "--index", "ro", "--data-dir", data)), env=cli_env(),
                               capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
            _no_traceback(r.stderr)
            assert r.returncode == 0, (args, r.stderr[-2000:])
            assert check(r.stdout), (args, r.stdout[-2000:])
        # Writing is refused in one line.
        r = subprocess.run(_unprivileged(cli_cmd("ingest", path, "--index", "ro", "--data-dir", data, "--workers", "1",
                                                 "--checkpoint", tmp_path / "ck.json", "--dead-letter",
                                                 tmp_path / "dl.jsonl")),
                           env=cli_env(), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        _no_traceback(r.stderr)
        assert r.returncode != 0 and r.stderr.startswith("Error: ") and len(r.stderr.splitlines()) == 1, r.stderr
    finally:
        data.chmod(0o755)
        for f in data.iterdir():
            f.chmod(0o644)


def _held_locks(folder: Path) -> list[Path]:
    """The lock files under ``folder`` that a running process holds."""
    held = []
    for lock in folder.glob("*.lock") if folder.is_dir() else ():
        try:
            FileLock(lock, busy=ConfigError("held")).acquire().release()
        except ConfigError:
            held.append(lock)
    return held


def _store_is_free(data: Path, index: str) -> bool:
    """Whether no process holds the embedded store's batch lock or SQLite's own write lock (asked without
    waiting)."""
    try:
        FileLock(data / f"{index}.sqlite.lock", busy=ConfigError("held")).acquire().release()
    except ConfigError:
        return False
    db = sqlite3.connect(data / f"{index}.sqlite", timeout=0, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        db.close()


def _paused_outside_the_store(proc: subprocess.Popen[bytes], data: Path, index: str, seconds: float = 120) -> None:
    """Stop ``proc`` (SIGSTOP) at a moment it holds neither of the store's write locks, so that it stays
    running, with its checkpoint held, while other writers take the store (resumed with SIGCONT)."""
    deadline = time.monotonic() + seconds
    while True:
        os.kill(proc.pid, signal.SIGSTOP)
        if _store_is_free(data, index):
            return
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.poll() is None and time.monotonic() < deadline, f"the store {index} stayed locked or {proc} ended"
        time.sleep(0.02)


def test_writers_over_other_inputs_with_default_checkpoints_run_at_once(tmp_path):
    """Without --checkpoint, an ingest of other files into the index another ingest is writing runs beside it
    and the two label like one run; the same inputs (in another spelling) at once are refused."""
    docs, pairs = planted_corpus(n_long=80, n_short=80, variants=30)
    parts = split_across(docs, pairs, 2)
    filler = [{"id": f"f{i:05d}", "text": f"{i}号" + d["text"]} for i, d in enumerate(
        write_corpus(tmp_path / "unused.jsonl", 6000, seed=8))]
    paths = write_parts([parts[0] + filler, parts[1]], tmp_path)
    data = tmp_path / "data"
    reference = LocalStore("ref", data)
    assert ingest(paths, reference, CONFIG, IngestOptions(workers=1)).ok
    reference.close()
    common = ("--index", "both", "--data-dir", data, "--tokenizer", "rjieba", "--json", "--workers", "1")
    big = start_cli("ingest", paths[0], *common, "--dead-letter", tmp_path / "dl0.jsonl",
                    stdout=tmp_path / "out0", stderr=tmp_path / "err0")
    try:
        [held] = wait_for(lambda: _held_locks(data / "checkpoints"), 120, 0.1, "the first ingest's checkpoint")
        wait_for(lambda: (data / "both.sqlite").exists(), 120, 0.1, "the first ingest's store")
        # Held still while the others run: their run beside it must not depend on how fast it is.
        _paused_outside_the_store(big, data, "both")
        again = run_cli("ingest", f"{tmp_path}/./{paths[0].name}", *common, "--dead-letter", tmp_path / "dl2.jsonl",
                        cwd=tmp_path)
        assert again.returncode == 2 and again.stderr == (
            f"Error: checkpoint {held.with_suffix('')} is in use by another ingest that is still running; give "
            "each ingest that runs at the same time a checkpoint file of its own\n"), again.stderr
        beside = run_cli("ingest", paths[1], *common, "--dead-letter", tmp_path / "dl1.jsonl")
        _no_traceback(beside.stderr)
        assert beside.returncode == 0, beside.stderr[-3000:]
        assert big.poll() is None, "the first ingest ended before the second ran beside it"
    finally:
        if big.poll() is None:
            os.kill(big.pid, signal.SIGCONT)
        assert big.wait(timeout=600) == 0, (tmp_path / "err0").read_text()[-3000:]
    labels = _labels(data, "both")
    assert set(labels) == {d["id"] for d in docs + filler}
    assert inconsistencies(labels) == []
    assert partition(labels) == partition(_labels(data, "ref"))


_OPEN_NEW_STORES = """
import sys, time
from esdedup.errors import StoreError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.store.local import LocalStore
base, rounds = sys.argv[1], int(sys.argv[2])
print("ready", flush=True)
start = float(sys.stdin.readline())  # one instant for all, given once every process is ready
for r in range(rounds):
    at = start + r * 0.3  # the processes open each round's new store at the same moment
    while time.time() < at - 0.005:  # asleep until the last few milliseconds: three spinning processes
        time.sleep(0.001)            # would hold both cores the whole test
    while time.time() < at:
        pass
    store = LocalStore("new", f"{base}/data{r}")
    try:
        store.open(FingerprintConfig(tokenizer="rjieba"))
        print("ok", store.count())
    except StoreError as exc:
        print("failed:", exc)
    finally:
        store.close()
"""


def test_processes_creating_one_store_at_once_all_open_it(tmp_path):
    """Processes opening one new embedded store at the same moment all open it (none fails "database is
    locked" while another one creates it), round after round on a fresh data directory."""
    rounds = 20
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_NEW_STORES, str(tmp_path), str(rounds)],
                              env=cli_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
             for _ in range(3)]
    with killed_on_exit(procs):
        for p in procs:  # every process has imported everything: their first round can start
            assert p.stdout is not None and p.stdout.readline() == "ready\n", p.communicate(timeout=60)
        start = time.time() + 0.2
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(f"{start}\n")
            p.stdin.flush()
        answers = [p.communicate(timeout=300) for p in procs]
    assert [out for out, _ in answers] == ["ok 0\n" * rounds] * 3, answers


_HOLD_NEW_FILE = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")  # the new file, not in WAL mode yet, held by a write transaction
print("held", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
db.close()
"""


def test_opening_a_new_store_waits_for_a_process_that_holds_its_file(tmp_path):
    """A store's first open switches its file to WAL mode; while another process holds a write transaction on
    the file (one creating the same store), the switch waits for it as every write waits, instead of failing
    at once with "database is locked"."""
    data = tmp_path / "data"
    data.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_NEW_FILE, str(data / "new.sqlite"), "1.5"],
                              env=cli_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        store = LocalStore("new", data)
        assert store.open(CONFIG).created
        store.close()
    finally:
        holder.wait(timeout=60)
    assert holder.returncode == 0
