"""Faults against real Elasticsearch nodes (scripts/es-local, never a mock): a node killed in the middle of
an ingest, a node of a 3-node cluster killed under ingest and lookups, a write queue so small that bulk
requests get 429, and interrupted runs continued with ``--resume``.

The CLI runs as a subprocess (``python -m esdedup ...``) so a test can kill it or the node under it and
read its exit code, its JSON summary and its stderr. Durations on the reference machine (2 cores) are in
RELIABILITY.md; the ``slow`` tests take minutes each.
"""
from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import esdedup.store.local.store as local_store
from tests.es_node import EARLY_STARTS, LocalCluster
from tests.reliability import (
    balanced,
    dead_letters,
    index_ids,
    killed_on_exit,
    last_json,
    make_docs,
    report,
    run_cli,
    start_cli,
    wait_for,
    write_corpus,
    write_jsonl,
)

# `es` marks the tests that start a node (the cluster3 one gets it from conftest); the resume tests below
# run on the local store, so the Elasticsearch-only pass of .ci/run (9.x) leaves them out.


def _count(client, index: str) -> int:
    # 404: not created yet; 503: created, its primary not started yet (seen on 9.2.0 under load)
    resp = client.options(ignore_status=(404, 503)).count(index=index)
    return int(resp.get("count", 0)) if resp.meta.status == 200 else 0


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text, text[-3000:]


def _started(cluster: LocalCluster) -> LocalCluster:
    cluster.start()
    return cluster


# Started early, in the background, when the run selects a test using them (tests/es_node.py, EarlyStarts).
# single_node: a node of its own, which the test kills (the session node serves the other tests).
EARLY_STARTS.register("single_node", lambda: _started(LocalCluster(nodes=1, name=f"esdedup-faults-{os.getpid()}")))
# tiny_queue_node: one write thread and a write queue of one: a bulk request touching three shards of the node
# gets at least one shard-level request rejected with 429 (es_rejected_execution_exception).
EARLY_STARTS.register("tiny_queue_node", lambda: _started(LocalCluster(
    nodes=1, name=f"esdedup-bp-{os.getpid()}",
    settings={"thread_pool.write.size": 1, "thread_pool.write.queue_size": 1})))
# The same on OpenSearch (its write pool takes the same two settings and counts rejections the same way).
EARLY_STARTS.register("tiny_queue_os_node", lambda: _started(LocalCluster(
    nodes=1, name=f"esdedup-bp-os-{os.getpid()}", engine="opensearch",
    settings={"thread_pool.write.size": 1, "thread_pool.write.queue_size": 1})))


@pytest.fixture(scope="module")
def single_node():
    """A node of its own: the test kills it (the session node serves the other tests)."""
    with EARLY_STARTS.held("single_node") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def tiny_queue_node():
    """One write thread and a write queue of one (see its registration above)."""
    with EARLY_STARTS.held("tiny_queue_node") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def tiny_queue_os_node():
    """The OpenSearch node with one write thread and a write queue of one."""
    with EARLY_STARTS.held("tiny_queue_os_node") as cluster:
        yield cluster


# -- a single node killed in the middle of a 50,000-document ingest -----------------------------------
@pytest.mark.es
@pytest.mark.slow
def test_single_node_killed_mid_ingest_then_resumed(single_node, tmp_path):
    n = 50_000
    corpus = tmp_path / "corpus.jsonl"
    docs = write_corpus(corpus, n, seed=11)
    url, index = single_node.url, "faults-kill"
    client = single_node.client()
    args = ("ingest", corpus, "--index", index, "--es", url, "--tokenizer", "rjieba", "--json",
            "--checkpoint", tmp_path / "ck.json")

    t0 = time.monotonic()
    proc = start_cli(*args, "--dead-letter", tmp_path / "dl1.jsonl", stdout=tmp_path / "out1", stderr=tmp_path / "err1")
    try:
        wait_for(lambda: proc.poll() is not None or _count(client, index) >= n * 2 // 5, 600, 1.0,
                 "40% of the documents indexed")
        assert proc.poll() is None, (tmp_path / "err1").read_text()[-3000:]
        time.sleep(0.5)  # land somewhere inside a batch: fingerprinting, band lookup or bulk write
        at_kill = _count(client, index)
        single_node.kill(0)
        killed_at = time.monotonic() - t0
        rc1 = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out1, err1 = (tmp_path / "out1").read_text(), (tmp_path / "err1").read_text()
    # Exit 3 (server), one clear line naming the cause, no stack trace.
    assert rc1 == 3, (out1[-2000:], err1[-3000:])
    _no_traceback(err1)
    error_lines = [ln for ln in err1.splitlines() if ln.startswith("Error:")]
    assert len(error_lines) == 1 and "cannot reach Elasticsearch" in error_lines[0], err1[-3000:]
    s1 = last_json(out1)
    assert s1["error"] and balanced(s1) and 0 < s1["indexed"] < n, s1

    single_node.restart(0)
    client = single_node.client()
    client.cluster.health(index=index, wait_for_status="yellow", timeout="120s")
    after_restart = _count(client, index)
    # Every write the node acknowledged survived the SIGKILL (translog fsync'd per request).
    assert after_restart >= s1["indexed"], (after_restart, s1)

    t1 = time.monotonic()
    r2 = run_cli(*args, "--resume", "--dead-letter", tmp_path / "dl2.jsonl", timeout=900)
    resume_seconds = time.monotonic() - t1
    _no_traceback(r2.stderr)
    assert r2.returncode == 0, r2.stderr[-3000:]
    s2 = last_json(r2.stdout)
    assert balanced(s2) and s2["failed"] == 0 and s2["error"] is None, s2
    # The resumed run read only what the first one had not confirmed ...
    assert s2["read"] < n and s1["indexed"] + s2["read"] >= n, (s1, s2)
    # ... and says what it did with each: documents the server already had are "updated" (re-sent) or
    # "unchanged" (stored already with their text and labels: not sent), the rest "created".
    assert s2["created"] == n - after_restart, (s2, after_restart)
    assert s2["updated"] + s2["unchanged"] == s2["indexed"] - s2["created"]
    # No loss, no duplicates: exactly the input ids.
    ids = index_ids(client, index)
    assert len(ids) == n and set(ids) == {d["id"] for d in docs}
    sample = client.mget(index=index, ids=[docs[i]["id"] for i in range(0, n, 997)], source_includes=["text"])
    by_id = {d["id"]: d["text"] for d in docs}
    assert all(x["found"] and x["_source"]["text"] == by_id[x["_id"]] for x in sample["docs"])
    report("single_node_kill", {"docs": n, "killed_after_s": round(killed_at, 1), "count_at_kill": at_kill,
                                 "first_run": s1, "count_after_restart": after_restart, "resumed_run": s2,
                                 "resume_seconds": round(resume_seconds, 1)})


# -- 3 nodes, 1 replica: a node killed under ingest and lookups -----------------------------------------
def _master_index(cluster3) -> int:
    master = cluster3.client.cat.master(format="json")[0]["node"]
    return next(i for i in range(3) if cluster3.cluster.node_name(i) == master)


@pytest.mark.slow
def test_cluster3_node_killed_during_ingest_and_lookups(cluster3, tmp_path):
    from esdedup.api import similar_to
    from esdedup.errors import StoreError
    from esdedup.es.connect import make_client, resolve_settings
    from esdedup.store.elastic.store import ElasticStore

    index = f"faults-c3-{os.getpid()}"
    url = cluster3.urls[0]  # the CLI and the lookups talk to node 0; another node is killed
    base = make_docs(3000, seed=21, prefix="b")
    main = make_docs(20_000, seed=22, prefix="m")
    write_jsonl(tmp_path / "base.jsonl", base)
    write_jsonl(tmp_path / "main.jsonl", main)
    common = ("--index", index, "--es", url, "--tokenizer", "rjieba", "--shards", "3", "--replicas", "1", "--json")
    r0 = run_cli("ingest", tmp_path / "base.jsonl", *common, "--dead-letter", tmp_path / "dl0.jsonl",
                 "--checkpoint", tmp_path / "ck0.json")
    assert r0.returncode == 0, r0.stderr[-3000:]
    cluster3.client.cluster.health(index=index, wait_for_status="green", timeout="120s")

    # A stream of lookups: exact texts of documents stored before the fault; each must come back with
    # the document itself, or fail with a clear StoreError (never a wrong answer or another exception).
    client = make_client(resolve_settings(url))
    store = ElasticStore(client, index)
    results: list[tuple[float, str, str]] = []  # (latency, outcome, detail)
    stop = threading.Event()

    def lookups() -> None:
        i = 0
        while not stop.is_set():
            doc = base[(i * 7919) % len(base)]
            i += 1
            t = time.monotonic()
            try:
                res = similar_to(store, text=doc["text"], top=5)
                ok = any(m["id"] == doc["id"] for m in res.matches)
                results.append((time.monotonic() - t, "ok" if ok else "wrong", doc["id"]))
            except StoreError as exc:
                results.append((time.monotonic() - t, "error", str(exc)))
            except Exception as exc:  # noqa: BLE001 - recorded and asserted below
                results.append((time.monotonic() - t, "unexpected", repr(exc)))

    cli_similar: list[tuple[int, str, str]] = []

    def cli_lookup(doc) -> None:
        r = run_cli("similar", "--index", index, "--es", url, "--text", doc["text"], "--json", timeout=300)
        cli_similar.append((r.returncode, r.stdout, r.stderr))

    worker = threading.Thread(target=lookups, daemon=True)
    worker.start()
    t0 = time.monotonic()
    proc = start_cli("ingest", tmp_path / "main.jsonl", *common, "--dead-letter", tmp_path / "dl1.jsonl",
                     "--checkpoint", tmp_path / "ck1.json", stdout=tmp_path / "out1", stderr=tmp_path / "err1")
    victim = None
    try:
        wait_for(lambda: proc.poll() is not None or _count(cluster3.client, index) >= len(base) + len(main) // 3,
                 600, 1.0, "a third of the ingest")
        assert proc.poll() is None, (tmp_path / "err1").read_text()[-3000:]
        master = _master_index(cluster3)
        victim = master if master != 0 else 2
        before_kill = len(results)
        cluster3.kill(victim)
        killed_at = time.monotonic() - t0
        cli_lookup(base[1])  # the CLI right after the kill
        rc = proc.wait(timeout=900)
        ingest_seconds = time.monotonic() - t0
        during = len(results) - before_kill
        cluster3.restart(victim)  # lookups go on while the node rejoins
        cli_lookup(base[2])
        time.sleep(5)
    finally:
        stop.set()
        worker.join(timeout=120)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out, err = (tmp_path / "out1").read_text(), (tmp_path / "err1").read_text()
    _no_traceback(err)
    assert rc == 0, err[-3000:]
    s = last_json(out)
    assert balanced(s) and s["failed"] == 0 and s["indexed"] == len(main), s
    cluster3.client.cluster.health(index=index, wait_for_status="green", timeout="180s")
    ids = index_ids(cluster3.client, index)
    assert len(ids) == len(base) + len(main)
    assert set(ids) == {d["id"] for d in base} | {d["id"] for d in main}

    outcomes = {k: sum(1 for _, o, _ in results if o == k) for k in ("ok", "wrong", "error", "unexpected")}
    assert outcomes["wrong"] == 0 and outcomes["unexpected"] == 0, [r for r in results if r[1] != "ok"][:5]
    for _, o, detail in results:
        if o == "error":
            assert "Elasticsearch" in detail or "failed" in detail, detail
    assert outcomes["ok"] > 0 and during > 0
    for code, stdout, stderr in cli_similar:
        _no_traceback(stderr)
        if code == 0:
            assert json.loads(stdout)["matches"], stdout
        else:
            assert code == 3 and stderr.startswith("Error:"), (code, stderr)
    lat = sorted(t for t, o, _ in results if o == "ok")
    report("cluster3_kill", {"killed_node": victim, "was_master": victim == master,
                              "killed_after_s": round(killed_at, 1), "ingest_seconds": round(ingest_seconds, 1),
                              "summary": s, "lookups": outcomes, "lookups_during_outage": during,
                              "lookup_p50_ms": round(1000 * statistics.median(lat), 1),
                              "lookup_max_ms": round(1000 * lat[-1], 1),
                              "cli_similar_exit_codes": [c for c, _, _ in cli_similar],
                              "errors": sorted({d[:160] for _, o, d in results if o == "error"})[:5]})
    client.close()


# -- back-pressure: 429 from a full write queue ------------------------------------------------------------
def _write_rejected(client) -> int:
    stats = client.nodes.stats(metric="thread_pool", filter_path="nodes.*.thread_pool.write.rejected")
    return sum(n["thread_pool"]["write"]["rejected"] for n in stats["nodes"].values())


@pytest.mark.es
def test_back_pressure_429_is_retried_until_everything_is_indexed(tiny_queue_node, tmp_path):
    _back_pressure_is_retried(tiny_queue_node, tmp_path, "back_pressure")


@pytest.mark.opensearch
def test_back_pressure_429_is_retried_until_everything_is_indexed_on_opensearch(tiny_queue_os_node, tmp_path):
    _back_pressure_is_retried(tiny_queue_os_node, tmp_path, "back_pressure_opensearch")


def _back_pressure_is_retried(node: LocalCluster, tmp_path: Path, name: str) -> None:
    url, index = node.url, "faults-backpressure"
    client = node.client()
    rejected_before = _write_rejected(client)
    # Two ingests at once into one 3-shard index: every bulk request fans out into three shard-level
    # write tasks, more than one thread plus a queue of one can take.
    parts = []
    for k in range(2):
        docs = make_docs(1000, seed=31 + k, prefix=f"p{k}-")
        write_jsonl(tmp_path / f"part{k}.jsonl", docs)
        parts.append(docs)
    t0 = time.monotonic()
    procs = [start_cli("ingest", tmp_path / f"part{k}.jsonl", "--index", index, "--es", url, "--tokenizer", "rjieba",
                       "--shards", "3", "--workers", "1", "--json", "--dead-letter", tmp_path / f"dl{k}.jsonl",
                       "--checkpoint", tmp_path / f"ck{k}.json", stdout=tmp_path / f"out{k}",
                       stderr=tmp_path / f"err{k}") for k in range(2)]
    with killed_on_exit(procs):
        codes = [p.wait(timeout=600) for p in procs]
    seconds = time.monotonic() - t0
    summaries = []
    for k, code in enumerate(codes):
        err = (tmp_path / f"err{k}").read_text()
        _no_traceback(err)
        assert code == 0, err[-3000:]
        s = last_json((tmp_path / f"out{k}").read_text())
        assert balanced(s) and s["failed"] == 0 and s["indexed"] == 1000, s
        summaries.append(s)
    rejected = _write_rejected(client) - rejected_before
    retried = sum(s["retried"] for s in summaries)
    # 429s really happened, and the summaries count the re-sent documents.
    assert rejected > 0 and retried > 0, (rejected, summaries)
    if node.engine == "opensearch":  # the point-in-time calls of index_ids, as the library makes them there
        from esdedup.es import opensearch

        client = opensearch.wrap(client)
    ids = index_ids(client, index)
    assert len(ids) == 2000 and set(ids) == {d["id"] for part in parts for d in part}
    report(name, {"write_rejected": rejected, "retried": [s["retried"] for s in summaries],
                  "seconds": round(seconds, 1)})


# -- resume ----------------------------------------------------------------------------------------------
def _line_offsets(path: Path) -> list[int]:
    raw = path.read_bytes()
    return [0] + [i + 1 for i, b in enumerate(raw[:-1]) if b == 0x0A]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_resume_after_the_cli_is_killed(tmp_path, sig):
    """Kill the CLI mid-run (local store), then --resume: finished files are not opened again, nothing
    before the checkpoint is re-sent, rejected lines are not reported twice, and the store ends up with
    exactly the good records."""
    from esdedup.store.local import LocalStore

    src = tmp_path / "in"
    files = []
    good: dict[str, str] = {}
    for k in range(5):
        docs = make_docs(1500, seed=40 + k, prefix=f"f{k}-")
        lines = [json.dumps(d, ensure_ascii=False) for d in docs]
        lines.insert(700, '{"id": "broken", "text": ')  # a rejected line in every file
        path = src / f"part{k}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", "utf-8")
        files.append(path)
        good.update((d["id"], d["text"]) for d in docs)
    data, ck = tmp_path / "data", tmp_path / "ck.json"
    args = ("ingest", src, "--index", "resume", "--data-dir", data, "--tokenizer", "rjieba", "--json",
            "--workers", "1", "--checkpoint", ck)

    def progress():
        if not ck.exists():
            return False
        state = json.loads(ck.read_text())["files"]
        return sum(1 for f in state.values() if f.get("done")) >= 2

    proc = start_cli(*args, "--dead-letter", tmp_path / "dl1.jsonl", stdout=tmp_path / "out1",
                     stderr=tmp_path / "err1", new_session=True)
    try:
        wait_for(lambda: proc.poll() is not None or progress(), 300, 0.05, "two finished files in the checkpoint")
        assert proc.poll() is None, "the run finished before it could be interrupted"
        if sig == signal.SIGKILL:
            os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its worker processes, like a crash
        else:
            os.kill(proc.pid, signal.SIGINT)  # Ctrl-C
        rc1 = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err1 = (tmp_path / "err1").read_text()
    if sig == signal.SIGINT:
        # Ctrl-C reports as SIGTERM does: the counts, and what a resumed run reads again.
        assert rc1 == 130 and err1.startswith("Error: stopped by SIGINT: read ") and \
            "(a resumed run reads them again)" in err1, (rc1, err1[-2000:], (tmp_path / "out1").read_text()[-2000:])
        _no_traceback(err1)
    else:
        assert rc1 == -signal.SIGKILL
    state = json.loads(ck.read_text())["files"]
    finished = [p for p in files if state.get(str(p), {}).get("done")]
    assert len(finished) >= 2
    # Records the resumed run must read: those at or after each unfinished file's checkpoint offset.
    expected_read = 0
    for p in files:
        f = state.get(str(p), {})
        if not f.get("done"):
            expected_read += sum(1 for o in _line_offsets(p) if o >= f.get("offset", 0))
    # A finished file that grew since is not opened again: its new record must not be indexed.
    with open(finished[0], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "appended-later", "text": "不应该被读到的记录" * 5}, ensure_ascii=False) + "\n")

    # Rejected lines before the checkpoint (finished files included) are not read or reported again;
    # those after it are (and make the resumed run exit 1).
    broken_offset = {str(p): _line_offsets(p)[700] for p in files}
    expected_again = sorted(src for src, off in broken_offset.items()
                            if not state.get(src, {}).get("done") and off >= state.get(src, {}).get("offset", 0))

    r2 = run_cli(*args, "--resume", "--dead-letter", tmp_path / "dl2.jsonl")
    _no_traceback(r2.stderr)
    assert r2.returncode == (1 if expected_again else 0), r2.stderr[-3000:]
    s2 = last_json(r2.stdout)
    assert balanced(s2) and s2["resumed_files"] == len(finished), s2
    assert s2["read"] == expected_read and s2["failed"] == len(expected_again), (s2, expected_read)
    dl2 = dead_letters(tmp_path / "dl2.jsonl")
    assert sorted(d["source"] for d in dl2 if d["kind"] == "rejected") == expected_again
    assert all(d["location"] == "line 701" for d in dl2 if d["kind"] == "rejected")
    dl1 = dead_letters(tmp_path / "dl1.jsonl")
    assert {d["source"] for d in dl1 + dl2 if d["kind"] == "rejected"} == set(broken_offset)

    store = LocalStore("resume", data)
    store.open(None, create=False)
    try:
        assert store.count() == len(good)
        have = store.get(list(good) + ["appended-later"])
        assert set(have) == set(good)
    finally:
        store.close()
    report(f"resume_{sig.name}", {"finished_files": len(finished), "resumed_run": s2})


def test_rejected_lines_are_not_read_again_on_resume(tmp_path):
    """Deterministic: Ctrl-C (KeyboardInterrupt) right after the first batch, whose last lines were
    rejected; the resumed run starts after them."""
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest import IngestOptions, ingest
    from esdedup.store.local import LocalStore

    docs = make_docs(12, seed=50)
    lines = [json.dumps(d, ensure_ascii=False) for d in docs[:3]] + ["not json", '{"id": "x"}'] + \
        [json.dumps(d, ensure_ascii=False) for d in docs[3:]]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    ck, dl = tmp_path / "ck.json", tmp_path / "dl.jsonl"
    config = FingerprintConfig(tokenizer="rjieba")

    def interrupt(_summary):
        raise KeyboardInterrupt

    store = LocalStore("rej", tmp_path / "data")
    with pytest.raises(KeyboardInterrupt):
        ingest([path], store, config, IngestOptions(batch=5, workers=1, checkpoint=ck, dead_letter=dl),
               progress=interrupt)
    store.close()
    assert len(dead_letters(dl)) == 2
    store = LocalStore("rej", tmp_path / "data")
    s = ingest([path], store, config, IngestOptions(batch=5, workers=1, checkpoint=ck, resume=True,
                                                    dead_letter=dl))
    assert s.read == len(docs) - 3 and s.failed == 0 and s.indexed == len(docs) - 3, s
    assert len(dead_letters(dl)) == 2  # not reported again
    assert store.count() == len(docs)
    store.close()



def _failing_rows(batch: int, error: BaseException) -> Callable[..., list[tuple]]:
    """`esdedup.store.local.rows.doc_rows` that raises ``error`` for the ``batch``-th batch it is asked for."""
    from esdedup.store.local.rows import doc_rows

    asked = itertools.count(1)

    def rows(*args: Any, **kwargs: Any) -> list[tuple]:
        if next(asked) == batch:
            raise error
        return doc_rows(*args, **kwargs)
    return rows


def test_interrupted_batch_dead_letters_are_written_once(tmp_path, monkeypatch):
    """Ctrl-C inside a batch (after its rejected lines were seen, before the store confirmed it): that batch
    is not checkpointed, so the resumed run reads it again; its dead letters must not be in the file twice."""
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest import IngestOptions, ingest
    from esdedup.store.local import LocalStore

    docs = make_docs(12, seed=51)
    lines = [json.dumps(d, ensure_ascii=False) for d in docs[:6]] + ["not json", '{"id": "x"}'] + \
        [json.dumps(d, ensure_ascii=False) for d in docs[6:]]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    ck, dl = tmp_path / "ck.json", tmp_path / "dl.jsonl"
    config = FingerprintConfig(tokenizer="rjieba")

    # The second batch's rows (lines 6-10, holding both broken lines) are never made, whether the batch is written
    # at once or in the background.
    monkeypatch.setattr(local_store, "doc_rows", _failing_rows(2, KeyboardInterrupt()))
    store = LocalStore("rej", tmp_path / "data")
    with pytest.raises(KeyboardInterrupt):
        ingest([path], store, config, IngestOptions(batch=5, workers=1, checkpoint=ck, dead_letter=dl))
    store.close()
    monkeypatch.undo()
    assert dead_letters(dl) == []  # the interrupted batch was not accounted for, so nothing of it is reported
    store = LocalStore("rej", tmp_path / "data")
    s = ingest([path], store, config, IngestOptions(batch=5, workers=1, checkpoint=ck, resume=True,
                                                    dead_letter=dl))
    assert s.read == len(lines) - 5 and s.failed == 2 and s.indexed == len(docs) - 5, s
    assert sorted(d["location"] for d in dead_letters(dl)) == ["line 7", "line 8"]
    assert store.count() == len(docs)
    store.close()


@pytest.mark.parametrize("change", ["rewritten", "appended"])
def test_resume_over_a_changed_input(tmp_path, change):
    """An interrupted run, then its input changes before --resume: a file rewritten since (other records,
    fewer bytes) is read again from its start, so none of its records is lost; a file that only grew goes on
    from the checkpoint's offset and reads the new records too."""
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest.run import IngestOptions, ingest
    from esdedup.store.local import LocalStore

    path, ck = tmp_path / "a.jsonl", tmp_path / "ck.json"
    first = make_docs(200, seed=52, prefix="old-")
    write_jsonl(path, first)
    config = FingerprintConfig(tokenizer="rjieba")

    def interrupt(summary):
        if summary.read >= 150:
            raise KeyboardInterrupt

    store = LocalStore("changed", tmp_path / "data")
    with pytest.raises(KeyboardInterrupt):
        ingest([path], store, config, IngestOptions(batch=50, workers=1, checkpoint=ck), progress=interrupt)
    store.close()
    if change == "rewritten":
        second = make_docs(180, seed=53, prefix="new-")
        write_jsonl(path, second)
        expected_read, expected_ids = len(second), {d["id"] for d in second}
    else:
        second = make_docs(30, seed=54, prefix="more-")
        with open(path, "a", encoding="utf-8") as fh:
            for d in second:
                fh.write(json.dumps(d, ensure_ascii=False) + "\n")
        expected_read, expected_ids = 200 - 150 + len(second), {d["id"] for d in first + second}
    store = LocalStore("changed", tmp_path / "data")
    try:
        s = ingest([path], store, config, IngestOptions(batch=50, workers=1, checkpoint=ck, resume=True))
        assert s.read == expected_read and s.failed == 0 and s.indexed == expected_read, s
        assert expected_ids <= set(store.get(sorted(expected_ids)))
    finally:
        store.close()


# -- a store that refuses writes -----------------------------------------------------------------------
def _set_block(client, index: str, block: str, on: bool) -> None:
    client.indices.put_settings(index=index, settings={f"index.blocks.{block}": on if on else None})


@pytest.mark.es
def test_a_write_block_stops_the_run_and_resume_writes_what_it_refused(es_url, es_client, fresh_index, tmp_path):
    """A write block set on the index: the run stops (exit 3, "refused"), the records the store did not
    confirm are not in the checkpoint, and --resume, once the block is lifted, writes every one of them."""
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    write_corpus(first, 50, seed=70, prefix="a")
    docs = write_corpus(second, 600, seed=71, prefix="b")
    common = ("--index", fresh_index, "--es", es_url, "--tokenizer", "rjieba", "--workers", "1", "--json",
              "--replicas", "0")
    r = run_cli("ingest", first, *common)
    assert r.returncode == 0, r.stderr[-3000:]
    _set_block(es_client, fresh_index, "write", True)
    ck, dl = tmp_path / "ck.json", tmp_path / "dl.jsonl"
    try:
        r = run_cli("ingest", second, *common, "--checkpoint", ck, "--dead-letter", dl, timeout=300)
        _no_traceback(r.stderr)
        assert r.returncode == 3, (r.returncode, r.stderr[-3000:])
        assert "refused to write" in r.stderr and "cluster_block_exception" in r.stderr, r.stderr[-3000:]
        s = last_json(r.stdout)
        assert balanced(s) and s["indexed"] == 0 and s["error"], s
        assert all(d["kind"] == "unconfirmed" for d in dead_letters(dl))
        state = json.loads(ck.read_text())["files"] if ck.exists() else {}
        assert not state.get(str(second), {}).get("done"), state
    finally:
        _set_block(es_client, fresh_index, "write", False)
    r = run_cli("ingest", second, *common, "--checkpoint", ck, "--dead-letter", dl, "--resume", timeout=300)
    _no_traceback(r.stderr)
    assert r.returncode == 0, r.stderr[-3000:]
    s = last_json(r.stdout)
    assert s["read"] == len(docs) and s["indexed"] == len(docs) and s["failed"] == 0, s
    assert set(index_ids(es_client, fresh_index)) == {d["id"] for d in docs} | {f"a{i:06d}" for i in range(50)}


@pytest.mark.es
def test_a_write_block_set_during_a_run_leaves_the_rest_to_resume(es_url, es_client, fresh_index, tmp_path):
    """The block comes in the middle of the run: what was written stays, the run stops at the first refused
    batch, and the resumed run writes exactly the rest."""
    from esdedup.api import open_store
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest.run import IngestOptions, ingest

    path, ck = tmp_path / "a.jsonl", tmp_path / "ck.json"
    docs = write_corpus(path, 400, seed=72)
    blocked = []

    def block_after_two_batches(summary):
        if summary.read >= 100 and not blocked:
            _set_block(es_client, fresh_index, "write", True)
            blocked.append(summary.indexed)

    config = FingerprintConfig(tokenizer="rjieba")
    opts = IngestOptions(batch=50, workers=1, checkpoint=ck)
    try:
        s1 = ingest([path], open_store(fresh_index, es_url=es_url), config, opts, progress=block_after_two_batches)
        assert s1.error and "refused to write" in s1.error and s1.read < len(docs), s1
        assert s1.read == s1.indexed + s1.failed and s1.indexed >= blocked[0]
    finally:
        _set_block(es_client, fresh_index, "write", False)
    s2 = ingest([path], open_store(fresh_index, es_url=es_url), config,
                IngestOptions(batch=50, workers=1, checkpoint=ck, resume=True))
    assert s2.error is None and s2.failed == 0, s2
    assert s1.indexed + s2.read >= len(docs) and s2.indexed == s2.read
    assert set(index_ids(es_client, fresh_index)) == {d["id"] for d in docs}


@pytest.mark.es
def test_a_429_that_outlasts_the_retries_stops_the_run(es_url, es_client, fresh_index, tmp_path, caplog):
    """The flood-stage block (``read_only_allow_delete``) answers every write with 429: after the retries
    (each announced with what it waits for) the run stops as a server problem, and nothing is lost."""
    import logging

    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest.run import IngestOptions, ingest
    from esdedup.store.elastic.store import ElasticStore

    path, ck = tmp_path / "a.jsonl", tmp_path / "ck.json"
    docs = write_corpus(path, 120, seed=73)
    config = FingerprintConfig(tokenizer="rjieba")
    store = ElasticStore(es_client, fresh_index, replicas=0, max_retries=3, initial_backoff=0.05)
    store.open(config)
    _set_block(es_client, fresh_index, "read_only_allow_delete", True)
    try:
        with caplog.at_level(logging.INFO, logger="esdedup.store.elastic.writes"):
            s1 = ingest([path], store, config, IngestOptions(batch=40, workers=1, checkpoint=ck))
    finally:
        _set_block(es_client, fresh_index, "read_only_allow_delete", False)
    assert s1.error and "refused to write" in s1.error and "429" in s1.error and "after 3 re-sends" in s1.error, s1
    assert s1.indexed == 0 and s1.read == s1.failed, s1
    waits = [r.getMessage() for r in caplog.records if "re-sending" in r.getMessage()]
    assert len(waits) == 3 and all("cluster_block_exception" in w and "(re-send" in w for w in waits), waits
    store = ElasticStore(es_client, fresh_index, replicas=0)
    s2 = ingest([path], store, config, IngestOptions(batch=40, workers=1, checkpoint=ck, resume=True))
    assert s2.error is None and s2.read == s2.indexed == len(docs), s2
    assert set(index_ids(es_client, fresh_index)) == {d["id"] for d in docs}


@pytest.mark.es
def test_an_alias_without_a_write_index_is_a_refusal(es_url, es_client, fresh_index, tmp_path):
    from esdedup.api import open_store
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest.run import IngestOptions, ingest

    path, ck = tmp_path / "a.jsonl", tmp_path / "ck.json"
    docs = write_corpus(path, 60, seed=74)
    config = FingerprintConfig(tokenizer="rjieba")
    open_store(fresh_index, es_url=es_url).open(config)
    alias = f"{fresh_index}-alias"
    es_client.indices.update_aliases(actions=[{"add": {"index": fresh_index, "alias": alias,
                                                       "is_write_index": False}}])
    s1 = ingest([path], open_store(alias, es_url=es_url), config, IngestOptions(batch=20, workers=1, checkpoint=ck))
    assert s1.error and "no write index" in s1.error and s1.indexed == 0, s1
    es_client.indices.update_aliases(actions=[{"add": {"index": fresh_index, "alias": alias,
                                                       "is_write_index": True}}])
    s2 = ingest([path], open_store(alias, es_url=es_url), config,
                IngestOptions(batch=20, workers=1, checkpoint=ck, resume=True))
    assert s2.error is None and s2.read == s2.indexed == len(docs), s2


@pytest.mark.parametrize("failure", ["rows", "sqlite"])
def test_a_resumed_run_takes_its_records_off_the_unconfirmed_list(tmp_path, monkeypatch, failure):
    """The store fails in the middle of a run (its records are dead-lettered as unconfirmed): before the third
    batch's rows are made, or in SQLite's write of them (a trigger refuses one); the resumed run writes them,
    and the dead-letter file then lists none of them as unconfirmed (the rejected line stays)."""
    from esdedup.errors import StoreError
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest.run import IngestOptions, ingest
    from esdedup.store.local import LocalStore

    docs = make_docs(30, seed=75)
    lines = [json.dumps(d, ensure_ascii=False) for d in docs]
    lines.insert(3, "not json")
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    ck, dl = tmp_path / "ck.json", tmp_path / "dl.jsonl"
    config = FingerprintConfig(tokenizer="rjieba")

    store = LocalStore("unc", tmp_path / "data")
    if failure == "rows":
        monkeypatch.setattr(local_store, "doc_rows", _failing_rows(3, StoreError("the disk is gone")))
    else:
        store.open(config)
        db = sqlite3.connect(store.path)
        db.execute(f"CREATE TRIGGER gone BEFORE INSERT ON docs WHEN NEW.id = '{docs[12]['id']}' "
                   "BEGIN SELECT RAISE(ABORT, 'the disk is gone'); END")
        db.commit()
    s1 = ingest([path], store, config, IngestOptions(batch=5, workers=1, checkpoint=ck, dead_letter=dl))
    store.close()
    monkeypatch.undo()
    if failure == "sqlite":
        db.execute("DROP TRIGGER gone")
        db.commit()
        db.close()
    assert "the disk is gone" in (s1.error or "")
    assert s1.error and any(d["kind"] == "unconfirmed" for d in dead_letters(dl)), s1
    store = LocalStore("unc", tmp_path / "data")
    s2 = ingest([path], store, config, IngestOptions(batch=5, workers=1, checkpoint=ck, dead_letter=dl,
                                                     resume=True))
    assert s2.error is None and s2.failed == 0, s2
    assert store.count() == len(docs)
    store.close()
    assert [(d["kind"], d["location"]) for d in dead_letters(dl)] == [("rejected", "line 4")]


def test_a_dead_letter_file_that_cannot_be_written_is_not_named_in_the_summary(tmp_path, monkeypatch):
    """The disk under the dead-letter file fills up (every write fails with ENOSPC once it is open): the run
    stops with that error, and its summary names no dead-letter file."""
    import builtins
    import errno

    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest import deadletters
    from esdedup.ingest.run import IngestOptions, ingest
    from esdedup.store.local import LocalStore

    class Full:
        def __init__(self, fh):
            self._fh = fh

        def writelines(self, lines):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self._fh, name)

    monkeypatch.setattr(deadletters, "open", lambda *a, **k: Full(builtins.open(*a, **k)), raising=False)
    path = tmp_path / "a.jsonl"
    path.write_text("not json\n" + json.dumps(make_docs(1, seed=76)[0], ensure_ascii=False) + "\n", "utf-8")
    dl = tmp_path / "dl.jsonl"
    store = LocalStore("full", tmp_path / "data")
    try:
        s = ingest([path], store, FingerprintConfig(tokenizer="rjieba"), IngestOptions(workers=1, dead_letter=dl))
    finally:
        store.close()
    assert s.error and f"cannot write the dead-letter file {dl}: No space left on device" in s.error, s
    assert s.dead_letter is None
