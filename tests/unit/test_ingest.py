"""Ingest on the embedded store (real SQLite files, real input files): the run's structure and accounting.

Tests that need Elasticsearch are in tests/integration/; the contract tests run ingest on both stores.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from esdedup.errors import ConfigError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest import Ingester, IngestOptions, ingest
from esdedup.store.base import Capability
from esdedup.store.local import LocalStore
from tests.corpus import make_corpus

CONFIG = FingerprintConfig(tokenizer="rjieba")
LIBRARY = Path(__file__).resolve().parents[2] / "esdedup"


def _jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    return path


@pytest.mark.parametrize("module", sorted(p.name for p in (LIBRARY / "ingest").glob("*.py")))
def test_no_function_in_ingest_is_longer_than_sixty_lines(module):
    """Ingest is a driver over small objects with one-job methods, not a long function of many parameters."""
    tree = ast.parse((LIBRARY / "ingest" / module).read_text("utf-8"))
    long = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)  # type: ignore[operator]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60]
    assert long == []


class _RetryingStore(LocalStore):
    """A local store that reports one re-sent document per write call, as the Elasticsearch store does
    when a bulk item comes back with 429 (the count is part of the `Store` protocol); every batch through
    `write`, as the Elasticsearch store's are."""

    capabilities = LocalStore.capabilities - {Capability.BACKGROUND_WRITES}

    def write(self, docs):
        self.retried += 1
        return super().write(docs)


def test_retried_counts_the_resends_of_this_run_only(tmp_path):
    docs, _ = make_corpus(30, 0, seed=3)
    path = _jsonl(tmp_path / "a.jsonl", docs)
    store = _RetryingStore("retry", tmp_path / "data")
    opts = IngestOptions(workers=1, batch=10, dead_letter=tmp_path / "dl.jsonl")
    first = ingest([path], store, CONFIG, opts)
    second = ingest([path], store, CONFIG, opts)  # the same store object, kept open by a service
    store.close()
    assert (first.retried, second.retried) == (3, 3)
    # The second run finds every document stored as it is: nothing is sent again.
    assert first.balanced and second.balanced and (second.updated, second.unchanged) == (0, 30)


def test_a_run_collects_young_objects_less_often_while_it_feeds_and_restores_the_threshold(tmp_path):
    """The young generation's threshold is `YOUNG_COLLECTION_ALLOCATIONS` while batches are fed (seen from the
    progress callback) and the program's own before and after, a program's higher one kept."""
    import gc

    from esdedup.util.collector import YOUNG_COLLECTION_ALLOCATIONS

    docs, _ = make_corpus(30, 0, seed=3)
    path = _jsonl(tmp_path / "a.jsonl", docs)
    before = gc.get_threshold()
    try:
        for own in (700, YOUNG_COLLECTION_ALLOCATIONS * 2):
            gc.set_threshold(own, *before[1:])
            seen: list[int] = []
            store = LocalStore(f"gc{own}", tmp_path / "data")
            ingest([path], store, CONFIG, IngestOptions(workers=1, batch=10),
                   progress=lambda _, seen=seen: seen.append(gc.get_threshold()[0]))
            store.close()
            assert seen and set(seen) == {max(own, YOUNG_COLLECTION_ALLOCATIONS)}
            assert gc.get_threshold() == (own, *before[1:])
    finally:
        gc.set_threshold(*before)


def test_the_examples_in_the_docstrings_run(tmp_path, monkeypatch):
    import doctest
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the examples' folders: the test's own

    import esdedup.api
    import esdedup.ingest.service
    import esdedup.store.names
    import esdedup.util.filelock
    import esdedup.util.unionfind

    for module in (esdedup.ingest.service, esdedup.store.names, esdedup.util.unionfind, esdedup.util.filelock,
                   esdedup.api):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


class _CountingStore(LocalStore):
    opened = 0

    def open(self, config=None, *, create=True):
        _CountingStore.opened += 1
        return super().open(config, create=create)


def test_an_ingester_opens_the_index_and_builds_the_fingerprinter_once(tmp_path, monkeypatch):
    import esdedup.ingest.service as ingest_mod

    built = []
    real = ingest_mod.Fingerprinter

    def counting(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest_mod, "Fingerprinter", counting)
    docs, _ = make_corpus(5, 2, seed=4)
    ingester = ingest_mod.Ingester(_CountingStore("svc", tmp_path / "data"), CONFIG)
    added = [ingester.add(d["text"], id=d["id"], url=f"https://x.test/{d['id']}") for d in docs]
    ingester.close()
    assert (_CountingStore.opened, len(built)) == (1, 1)
    assert [a.status for a in added] == ["indexed"] * len(docs)
    assert sum(a.duplicate_of is not None for a in added) == 2 and ingester.summary.duplicates == 2
    store = LocalStore("svc", tmp_path / "data")
    store.open(None, create=False)
    assert store.get_source(docs[0]["id"])["url"] == f"https://x.test/{docs[0]['id']}"
    store.close()


def test_a_similar_finder_opens_the_index_and_builds_the_fingerprinter_once(tmp_path, monkeypatch):
    """A service asking for near-duplicates of one article at a time should not pay a mapping read and a
    Fingerprinter per call, as `similar_to` does; a `SimilarFinder` pays them once and answers as `similar_to` does."""
    import esdedup.api as api

    docs, _ = make_corpus(6, 3, seed=5)
    ingester = Ingester(LocalStore("find", tmp_path / "data"), CONFIG)
    ingester.add_many(docs)
    ingester.close()
    built = []
    real = api.Fingerprinter

    def counting(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "Fingerprinter", counting)
    _CountingStore.opened = 0
    finder = api.SimilarFinder(_CountingStore("find", tmp_path / "data"))
    answers = [finder.find(text=d["text"], top=3).matches for d in docs]
    assert (_CountingStore.opened, len(built)) == (1, 1)
    store = LocalStore("find", tmp_path / "data")
    assert answers == [api.similar_to(store, text=d["text"], top=3).matches for d in docs]
    assert sum(len(a) > 1 for a in answers) >= 3  # the planted duplicates are found
    with pytest.raises(ConfigError, match="top must be at least 1"):
        finder.find(text="x", top=0)


def test_an_ingester_says_what_became_of_each_article(tmp_path):
    from esdedup.ingest import Ingester

    docs, planted = make_corpus(3, 1, seed=6)
    ingester = Ingester(LocalStore("svc", tmp_path / "data"), CONFIG, on_duplicate="skip",
                        dead_letter=tmp_path / "dl.jsonl")
    original = next(d for d in docs if d["id"] == planted[0][0])
    variant = next(d for d in docs if d["id"] == planted[0][1])
    got = ingester.add_many([original, variant, {"text": "  "}, {"text": "正文", "id": 3.5}])
    ingester.close()
    assert [(a.id, a.status) for a in got] == [(original["id"], "indexed"), (variant["id"], "skipped"),
                                               (None, "failed"), (None, "failed")]
    assert got[1].reason == f"near-duplicate of {original['id']}"
    assert got[2].reason == "text is empty" and got[3].reason == "id is not a string or integer (got float)"
    s = ingester.summary
    assert (s.read, s.indexed, s.skipped, s.failed) == (4, 1, 1, 2)
    kinds = [json.loads(x)["kind"] for x in (tmp_path / "dl.jsonl").read_text("utf-8").splitlines()]
    assert sorted(kinds) == ["rejected", "rejected", "skipped"]


_LONG_TEXT_PROBE = """
import random, resource, sys
from esdedup import FingerprintConfig, Fingerprinter
rng = random.Random(1)
han = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
text = "，".join("".join(rng.choices(han, k=12)) for _ in range(230_000))  # 3 million characters, 9 MB
fper = Fingerprinter(FingerprintConfig(tokenizer="rjieba"))
fper.fingerprint("预热")
before = resource.getrusage(resource.RUSAGE_SELF)
fp = fper.fingerprint(text)
after = resource.getrusage(resource.RUSAGE_SELF)
print(after.ru_utime - before.ru_utime, (after.ru_maxrss - before.ru_maxrss) / 1024, fp.shingles)
"""


def test_a_long_text_is_fingerprinted_in_bounded_time_and_memory():
    """A long document must not take hours (merging its distinct n-grams chunk by chunk with numpy's
    hash-based unique would) or gigabytes (one string object per character when its letters are picked out):
    a 9 MB one takes seconds and about ten times its size."""
    import subprocess
    import sys

    from tests.reliability import cli_env

    r = subprocess.run([sys.executable, "-c", _LONG_TEXT_PROBE], env=cli_env(), capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    cpu_seconds, growth_mb, shingles = map(float, r.stdout.split())
    assert shingles > 2_000_000
    assert cpu_seconds < 60 and growth_mb < 180, (cpu_seconds, growth_mb)


def _with_bad_lines(path: Path, docs: list[dict]) -> Path:
    lines = [json.dumps(d, ensure_ascii=False) for d in docs]
    path.write_text("\n".join(lines[:2] + ["not json", '{"id": "x"}'] + lines[2:]) + "\n", "utf-8")
    return path


def test_an_unwritable_dead_letter_path_is_refused_before_anything_is_written(tmp_path):
    from esdedup.errors import OutputError

    docs, _ = make_corpus(6, 0, seed=8)
    path = _with_bad_lines(tmp_path / "a.jsonl", docs)
    (tmp_path / "file").write_text("x")
    for bad in (tmp_path, tmp_path / "file" / "dl.jsonl"):  # a folder; a path through a file
        store = LocalStore("dl", tmp_path / "data")
        with pytest.raises(OutputError, match="cannot write the dead-letter file"):
            ingest([path], store, CONFIG, IngestOptions(workers=1, dead_letter=bad, checkpoint=tmp_path / "ck.json"))
        store.close()
        assert not (tmp_path / "data" / "dl.sqlite").exists() and not (tmp_path / "ck.json").exists()


def test_the_dead_letter_file_lists_one_run_unless_it_is_resumed(tmp_path):
    docs, _ = make_corpus(6, 0, seed=9)
    bad, good = _with_bad_lines(tmp_path / "bad.jsonl", docs), _jsonl(tmp_path / "good.jsonl", docs)
    dl, ck = tmp_path / "dl.jsonl", tmp_path / "ck.json"
    store = LocalStore("dl", tmp_path / "data")

    def run(path: Path, resume: bool = False) -> int:
        s = ingest([path], store, CONFIG, IngestOptions(workers=1, dead_letter=dl, checkpoint=ck, resume=resume))
        assert s.balanced
        return len(dl.read_text("utf-8").splitlines()) if dl.exists() else 0

    assert run(bad) == 2
    assert run(bad) == 2  # not 4: a new run starts the file afresh
    ck.unlink()
    assert run(bad, resume=True) == 4  # a resumed run adds to it (here: nothing was checkpointed)
    assert run(good) == 0 and not dl.exists()  # nothing failed: no file left behind
    store.close()


@pytest.mark.parametrize("content", ["[]", "null", "3", '"files"', '{"files": []}', '{"files": {"a.jsonl": 5}}',
                                     '{"files": {"a.jsonl": {"offset": -1}}}',
                                     '{"files": {"a.jsonl": {"offset": "7"}}}',
                                     '{"files": {"a.jsonl": {"offset": 0, "done": "yes"}}}'])
def test_a_checkpoint_of_the_wrong_shape_is_one_clear_error(tmp_path, content):
    from esdedup.errors import ConfigError

    path = _jsonl(tmp_path / "a.jsonl", make_corpus(3, 0, seed=10)[0])
    ck = tmp_path / "ck.json"
    ck.write_text(content, "utf-8")
    store = LocalStore("ck", tmp_path / "data")
    with pytest.raises(ConfigError, match=r"checkpoint .*ck\.json does not hold an ingest checkpoint \(.+\); "
                                          "delete it to start over"):
        ingest([path], store, CONFIG, IngestOptions(workers=1, checkpoint=ck, resume=True))
    # A run that does not resume starts a new checkpoint over it.
    assert ingest([path], store, CONFIG, IngestOptions(workers=1, checkpoint=ck)).ok
    assert json.loads(ck.read_text("utf-8"))["files"][str(path)]["done"] is True
    store.close()


def test_near_identical_documents_ingest_in_linear_time_and_their_crowded_keys_are_reported(tmp_path):
    """Near-identical documents must cost time linear in their number, not quadratic (every document compared
    with every earlier one): the in-run index keeps the first `MAX_PER_KEY` per key and reports the crowded keys."""
    import time

    from esdedup.ingest.runindex import MAX_PER_KEY

    seconds = []
    for n in (1000, 4000):
        path = _jsonl(tmp_path / f"same{n}.jsonl", _near_identical(n))
        store = LocalStore(f"same{n}", tmp_path / "data")
        started = time.process_time()
        s = ingest([path], store, CONFIG, IngestOptions(workers=1))
        seconds.append(time.process_time() - started)
        assert s.ok and s.duplicates == n - 1  # one cluster, all the same
        assert s.crowded_keys and s.crowded_keys[0][1] == n and len(s.crowded_keys) <= 10
        assert json.loads(json.dumps(s.to_dict()))["crowded_keys"][0] == [s.crowded_keys[0][0], n]
        assert len({cid for cid, _ in store.labels().values()}) == 1
        store.close()
    assert n > 2 * MAX_PER_KEY
    assert seconds[1] < 10 * seconds[0], seconds  # four times the documents: about four times the CPU, not sixteen


def _near_identical(n: int) -> list[dict[str, str]]:
    base = ("国家统计局今天发布了最新的经济数据，第三季度国内生产总值同比增长百分之五点二。"
            "气象台预计未来三天本市将出现持续降雨，局部地区有大到暴雨，请市民注意出行安全。")
    return [{"id": f"d{i:05d}", "text": f"{base}（第{i}号）"} for i in range(n)]


def test_a_lookup_on_a_crowded_key_reads_no_more_than_its_limit(tmp_path, monkeypatch):
    """A second ingest of near-identical documents into the filled store must not read, for every lookup,
    every document that holds one of its keys before cutting to the limit (quadratic). Each key stops
    after a bounded number of ids (the smallest), so a store eight times as crowded gives the same answer;
    so does a lookup whose keys SQLite takes in several statements, their counts added up."""
    import time

    from esdedup.fingerprint.fingerprinter import Fingerprinter
    from esdedup.match.lookup import probe_for
    from esdedup.schema import content_sha1
    from esdedup.store.base import NewDoc
    from esdedup.store.local import keys

    fper = Fingerprinter(CONFIG)
    seconds, answers = [], []
    for n in (1000, 8000):
        docs = _near_identical(n)
        store = LocalStore(f"crowd{n}", tmp_path / "data")
        store.open(CONFIG)
        fps = fper.fingerprint_many([d["text"] for d in docs])
        list(store.write(NewDoc(d["id"], fp, d, content_sha1(d["text"])) for d, fp in zip(docs, fps)))
        probes = [probe_for(fp, CONFIG) for fp in fps[:100]]
        store.lookup(probes[:1], limit=50)  # index the keys first
        started = time.process_time()
        found = store.lookup(probes, limit=50)
        seconds.append(time.process_time() - started)
        answers.append([[d.id for d in cands] for cands in found])
        with monkeypatch.context() as m:
            m.setattr(keys, "COMPOUND", 2)
            assert [[d.id for d in cands] for cands in store.lookup(probes, limit=50)] == answers[-1]
        store.close()
    assert answers[0] == answers[1]
    assert all(len(ids) == 50 and ids == sorted(ids) for ids in answers[0])
    assert seconds[1] < 4 * seconds[0], seconds  # eight times the documents: about the same CPU, not eight times

def test_a_records_own_id_text_title_and_dedup_are_kept_when_other_fields_were_chosen(tmp_path):
    """``--id-field doc_id --text-field content`` on records that also have ``id`` and ``text`` keeps those
    values (and a field named ``dedup``) under ``input_fields``, so none is lost without a word."""
    records = [
        {"doc_id": "a1", "content": "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。", "id": 77,
         "text": "another text", "title": "标题", "dedup": {"mine": 1}, "url": "https://x.test/a1"},
        {"doc_id": "a2", "content": "今天北京天气晴朗，最高气温二十五度，空气质量优良，适合户外活动。", "id": 78,
         "input_fields": "taken"},
        {"doc_id": "a3", "content": "研究人员在南海发现了一种新的深海鱼类，它能够在极端高压和低温环境中生存。",
         "input_fields": {"free": "to use"}},
    ]
    path = _jsonl(tmp_path / "a.jsonl", records)
    store = LocalStore("own", tmp_path / "data")
    s = ingest([path], store, CONFIG, IngestOptions(workers=1, id_field="doc_id", text_field="content",
                                                    dead_letter=tmp_path / "dl.jsonl"))
    assert (s.read, s.indexed, s.failed) == (3, 2, 1)
    src = store.get_source("a1")
    assert (src["id"], src["text"], src["title"], src["url"]) == ("a1", records[0]["content"], "标题",
                                                                  "https://x.test/a1")
    assert src["input_fields"] == {"id": 77, "text": "another text", "dedup": {"mine": 1}}
    assert store.get_source("a3")["input_fields"] == {"free": "to use"}  # no clash: the record's own field
    store.close()
    (letter,) = [json.loads(x) for x in (tmp_path / "dl.jsonl").read_text("utf-8").splitlines()]
    assert letter["location"] == "line 2" and "'input_fields'" in letter["reason"] and "'id'" in letter["reason"]


@pytest.mark.parametrize("labels", [{}, {"cluster_id": "a", "duplicate_of": "b", "seq": 5, "cluster_seq": 3}])
def test_a_document_with_dedup_fields_encoded_in_advance_is_the_document_encoded_whole(labels):
    from esdedup.fingerprint.fingerprinter import Fingerprinter
    from esdedup.schema import dedup_members
    from esdedup.store.base import NewDoc
    from esdedup.store.elastic.writes import index_action

    fp = Fingerprinter(CONFIG).fingerprint("台湾居民明日起持台胞证可通关，无需另行申请签注。")
    source = {"id": "1", "title": "t", "text": "台湾居民", "url": "u"}
    whole = NewDoc("1", fp, source, "sha", **labels)
    encoded = NewDoc("1", fp, source, "sha", **labels,
                     dedup_json=dedup_members(fp, CONFIG, "sha"))
    a, b = index_action("x", CONFIG, whole), index_action("x", CONFIG, encoded)
    assert json.loads(a["_source"]) == json.loads(b["_source"])
    assert list(json.loads(a["_source"])) == list(json.loads(b["_source"]))  # field order too
