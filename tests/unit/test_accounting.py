"""The run's books (`esdedup.ingest.accounting.Ledger`) and its writer (`esdedup.ingest.writer`), tested
directly on the embedded store: every record ends in exactly one of indexed, skipped or failed, with its dead
letter; a write the store stops part way leaves the rest failed as unconfirmed, never lost."""
from __future__ import annotations

import json
import uuid

import pytest

from esdedup import FingerprintConfig
from esdedup.errors import StoreError
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.ingest.accounting import BatchState, Ledger
from esdedup.ingest.deadletters import DeadLetters
from esdedup.ingest.documents import FingerprintedRecord
from esdedup.ingest.options import IngestSummary
from esdedup.ingest.writer import OverlappedWriter
from esdedup.readers import Record
from esdedup.schema import content_sha1
from esdedup.store.base import AllCreated, NewDoc, WriteResult, write_outcome
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore

CONFIG = FingerprintConfig(tokenizer="char", shingle=2)
TEXTS = ["今天北京的天气很好。", "上海的地铁越来越挤。", "广州的早茶很有名。", "深圳的科技公司很多。"]


def _items() -> list[FingerprintedRecord]:
    fps = Fingerprinter(CONFIG).fingerprint_many(TEXTS)
    return [FingerprintedRecord(Record(f"d{i}", t, None, {}, "in.jsonl", f"line {i + 1}", i * 40, "utf-8"), fp,
                                fp.simhash, content_sha1(t), f"d{i}") for i, (t, fp) in enumerate(zip(TEXTS, fps))]


def _new(d: FingerprintedRecord) -> NewDoc:
    return NewDoc(d.id, d.fingerprint, {"id": d.id, "text": d.record.text}, d.sha1, cluster_id=d.id)


@pytest.fixture
def books(tmp_path):
    summary = IngestSummary()
    dead = DeadLetters(tmp_path / "dead.jsonl", fresh=True)
    ledger = Ledger(summary, dead, keeps_fates=True)
    yield summary, dead, ledger
    dead.close()


def _dead_letters(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "dead.jsonl").read_text("utf-8").splitlines()]


def test_every_record_is_counted_once_and_dead_lettered_unless_indexed(books, tmp_path):
    summary, dead, ledger = books
    items = _items()
    state = ledger.enter(BatchState([]))
    sent = [(_new(d), d) for d in items[:3]]
    results = [WriteResult("d0", True, created=True), WriteResult("d1", True, created=False),
               WriteResult("d2", False, error="mapper_parsing_exception", status=400)]
    written = ledger.count_writes(sent, results, None)
    ledger.skip(items[3], "near-duplicate of d0")
    summary.read = 4
    dead.commit()
    assert [d.id for d in written] == ["d0", "d1"]
    assert (summary.indexed, summary.created, summary.updated, summary.failed, summary.skipped) == (2, 1, 1, 1, 1)
    assert summary.balanced and summary.skipped_ids == ["d3"] and state.created == {"d0"}
    assert {state.fates[id(d.record)][0] for d in items} == {"indexed", "failed", "skipped"}
    letters = _dead_letters(tmp_path)
    assert [(x["kind"], x["id"]) for x in letters] == [("rejected", "d2"), ("skipped", "d3")]
    ledger.unwrite(items[0], "deleted again: d9 was earlier")  # settling deleted a written document
    assert (summary.indexed, summary.created, summary.skipped, summary.duplicates) == (1, 0, 2, 1)
    assert summary.balanced


def test_a_write_the_store_stops_fails_the_unconfirmed_records_and_raises(books, tmp_path):
    summary, dead, ledger = books
    items = _items()
    ledger.enter(BatchState([]))
    sent = [(_new(d), d) for d in items]
    with pytest.raises(StoreError):
        ledger.count_writes(sent, [WriteResult("d0", True, created=True)], StoreError("the node went away"))
    summary.read = 4
    assert (summary.indexed, summary.failed) == (1, 3) and summary.balanced
    assert [(x["kind"], x["id"]) for x in _dead_letters(tmp_path)] == [("unconfirmed", f"d{i}") for i in (1, 2, 3)]


def test_write_outcome_gives_every_result_in_order(tmp_path):
    store = LocalStore("books", tmp_path / "data")
    store.open(CONFIG)
    items = _items()
    results, error = write_outcome(store, [_new(d) for d in items[:2]])
    assert error is None and [(r.id, r.ok, r.created) for r in results] == [("d0", True, True), ("d1", True, True)]
    results, error = write_outcome(store, [_new(d) for d in reversed(items)])
    assert error is None and [(r.id, r.created) for r in results] == [("d3", True), ("d2", True), ("d1", False),
                                                                       ("d0", False)]


@pytest.mark.es
def test_the_overlapped_writer_writes_one_batch_at_a_time_in_its_thread(es_client):
    """Elasticsearch's client may be used from two threads: its batch is written in one of the writer's own
    (the embedded store writes in the background itself, `test_local_background_writes.py`)."""
    store = ElasticStore(es_client, f"esdedup-writer-{uuid.uuid4().hex[:10]}", shards=1, replicas=0)
    store.open(CONFIG)
    items = _items()
    assert write_outcome(store, [_new(items[0])])[1] is None
    writer = OverlappedWriter(store)
    try:
        assert writer.take() is None
        state = BatchState([])
        writer.start(state, [(_new(d), d) for d in items[1:]])
        taken = writer.take()
        assert taken is not None
        sending, (results, error) = taken
        assert sending.state is state and error is None
        assert sorted((r.id, r.created) for r in results) == [("d1", True), ("d2", True), ("d3", True)]
        assert writer.take() is None
    finally:
        writer.close()
    store.refresh()
    assert store.count() == 4
    store.drop()


def test_a_batch_run_counts_each_fate_without_keeping_it(tmp_path):
    """Only a caller that answers record by record (a service) keeps each record's fate; a batch run's books
    count the same and hold none."""
    summary, dead = IngestSummary(), DeadLetters(tmp_path / "dead.jsonl", fresh=True)
    ledger = Ledger(summary, dead)
    items = _items()
    state = ledger.enter(BatchState([]))
    ledger.count_writes([(_new(d), d) for d in items[:2]], [WriteResult("d0", True, created=True),
                                                            WriteResult("d1", False, error="x", status=400)], None)
    ledger.skip(items[2], "near-duplicate of d0")
    ledger.unchanged(items[3])
    dead.close()
    assert (summary.indexed, summary.failed, summary.skipped, summary.unchanged) == (2, 1, 1, 1)
    assert state.fates == {} and state.clusters == {}


@pytest.mark.parametrize("keeps_fates", [False, True])
def test_a_batch_created_whole_counts_as_its_results_one_by_one(tmp_path, keeps_fates):
    """`AllCreated` (the embedded store's background write) is counted a batch at once: the same counts, created
    ids, fates and superseded unconfirmed lines as the same results given one by one; results that name other
    ids than the batch sent are counted one by one."""
    items = _items()
    unconfirmed = json.dumps({"kind": "unconfirmed", "source": "in.jsonl", "location": "line 2", "id": "d1"})

    def books(name: str, results_of) -> tuple:
        path = tmp_path / f"{name}.jsonl"
        path.write_text(unconfirmed + "\n", "utf-8")
        summary, dead = IngestSummary(), DeadLetters(path, supersede=True)
        ledger = Ledger(summary, dead, keeps_fates=keeps_fates)
        state = ledger.enter(BatchState([]))
        sent = [(_new(d), d) for d in items[:3]]
        written = ledger.count_writes(sent, results_of(sent), None)
        dead.commit()
        dead.close()
        return ([d.id for d in written], summary.to_dict(), sorted(state.created), sorted(state.fates.values()),
                dead._superseded)

    whole = books("whole", lambda sent: AllCreated([new.id for new, _ in sent]))
    one_by_one = books("one", lambda sent: [WriteResult(new.id, True, created=True) for new, _ in sent])
    assert whole == one_by_one
    assert whole[0] == ["d0", "d1", "d2"] and whole[1]["created"] == 3 and whole[4] == {("in.jsonl", "line 2")}
    assert len(whole[3]) == (3 if keeps_fates else 0)
    other_order = books("other", lambda sent: AllCreated([new.id for new, _ in reversed(sent)]))
    assert other_order[0] == ["d2", "d1", "d0"] and other_order[1:] == whole[1:]


def test_all_created_reads_as_its_results():
    results = AllCreated(["a", "b", "c"])
    assert len(results) == 3 and results[1] == WriteResult("b", True, created=True)
    assert list(results) == [WriteResult(i, True, created=True) for i in "abc"] and results[1:] == list(results)[1:]
