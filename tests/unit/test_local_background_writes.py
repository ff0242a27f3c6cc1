"""The embedded store's writes in the background (`LocalStore.start_write`): the extension's writer
(`esdedup_native.RowWriter`, through the SQLite library of Python's ``sqlite3``) writes the rows ``write``
writes, the same bytes in every column; a batch it cannot write is written as ``write`` writes it; a failure
is SQLite's own error as a `StoreError`, with nothing of the batch written; and a run whose batches are
written so labels and counts as one whose batches are written at once (ESDEDUP_NATIVE=0). The tests of the
writer itself skip without the extension unless ESDEDUP_REQUIRE_NATIVE=1 (tests/unit/conftest.py)."""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import sqlite3

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.errors import StoreError
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.ingest import IngestOptions, ingest
from esdedup.ingest.workers import fingerprint_with
from esdedup.schema import content_sha1
from esdedup.store.base import NewDoc, writes_in_background
from esdedup.store.local import LocalStore
from esdedup.store.local.rows import block_params
from esdedup.store.local.store import PendingRows, Written
from esdedup.util import native

CONFIG = FingerprintConfig(tokenizer="char", shingle=2)
TEXTS = ["今天北京的天气很好，适合出门散步。", "上海的地铁越来越挤，早高峰尤其如此。", "", "广州的早茶很有名。",
         "今天北京的天气很好，适合出门散步！"]
#: Every column but the write order the file gives each row.
COLUMNS = ("id, simhash, vector, tokens, chars, empty, content_sha1, cluster_id, duplicate_of, source, minhash, "
           "shingles, banded, wseq, cluster_seq")


def _docs(prefix: str = "d") -> list[NewDoc]:
    fps = Fingerprinter(CONFIG).fingerprint_many(TEXTS)
    return [NewDoc(f"{prefix}{i}", fp, {"id": f"{prefix}{i}", "text": t, "n": i, "tag": None}, content_sha1(t),
                   cluster_id=f"{prefix}0", duplicate_of=None if i == 0 else f"{prefix}0", seq=1_700_000_000_000_000_000 + i,
                   cluster_seq=1_700_000_000_000_000_000) for i, (t, fp) in enumerate(zip(TEXTS, fps, strict=True))]


def _rows(store: LocalStore, also: str = "") -> list[tuple]:
    """Every row of the store's documents (``also``: columns read before them)."""
    db = sqlite3.connect(store.path)
    try:
        return db.execute(f"SELECT {also}{COLUMNS} FROM docs ORDER BY seq").fetchall()
    finally:
        db.close()


def _store(tmp_path, name: str) -> LocalStore:
    store = LocalStore(name, tmp_path / "data")
    store.open(CONFIG)
    return store


def test_the_writer_writes_the_rows_write_writes(extension, switch_on, tmp_path):
    assert writes_in_background(LocalStore("x", tmp_path / "data"))
    background, at_once = _store(tmp_path, "background"), _store(tmp_path, "at-once")
    pending = background.start_write(_docs())
    assert isinstance(pending, PendingRows)
    results, error = pending.result()
    assert error is None and [(r.id, r.ok, r.created) for r in results] == [(f"d{i}", True, True) for i in range(5)]
    assert [(r.id, r.created) for r in at_once.write(_docs())] == [(f"d{i}", True) for i in range(5)]
    written = _rows(background)
    assert written == _rows(at_once) and len(written) == 5
    # Read back through the store: the documents written are the ones given.
    assert background.get(["d3"])["d3"].cluster_id == "d0" and json.loads(written[3][9])["n"] == 3
    background.close()
    at_once.close()


@pytest.mark.parametrize("config", [CONFIG, FingerprintConfig(tokenizer="char", shingle=2, vector_index="hnsw"),
                                    FingerprintConfig(strategy="simhash")], ids=["default", "vectors", "simhash"])
def test_documents_of_one_block_are_written_from_its_arrays_as_write_writes_them(extension, switch_on, tmp_path,
                                                                                  config):
    """A batch whose fingerprints came from a worker process in one block of arrays (`NewDoc.block`) is
    written from the arrays (`block_params`, `RowWriter.start_block`): the same bytes in every column as
    ``write`` writes from each fingerprint, with vectors stored or not, the zero vector of a text without
    terms, texts without words (no signature, no vector), long texts with SimHash band keys, the SimHash strategy,
    and documents that leave some of the block's rows out."""
    texts = [*TEXTS, "！？。", "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。" * 12, "短", "上海的地铁"]
    sent = pickle.loads(pickle.dumps(fingerprint_with(Fingerprinter(config), texts)))  # as a worker sends it
    block, fps = sent.block(), sent.fingerprints()
    assert block is not None and block.banded.any() and not block.banded.all() and (block.sig_row < 0).any()
    # A text with words and a zero vector (none of these configs gives one; another config's texts could):
    # its row reads the block's zero vector.
    at = block.vector_row.copy()
    at[7] = -1
    block = dataclasses.replace(block, vector_row=at)
    fps[7] = dataclasses.replace(fps[7], vector=block.zero)

    def docs() -> list[NewDoc]:
        return [NewDoc(f"b{r}", fps[r], {"text": texts[r], "n": r}, sent.sha1s[r], cluster_id="b0",
                       duplicate_of=None if r == 0 else "b0", seq=1_700_000_000_000_000_000 + r,
                       cluster_seq=1_700_000_000_000_000_000, block=block, row=r)
                for r in range(len(texts)) if r != 3]

    assert block_params(docs(), config.bits, config.stores_vector) is not None
    background, at_once = (LocalStore(name, tmp_path / "data") for name in ("background", "at-once"))
    for store in (background, at_once):
        store.open(config)
    results, error = background.start_write(docs()).result()
    assert error is None and len(results) == len(texts) - 1
    assert len(list(at_once.write(docs()))) == len(texts) - 1
    written = _rows(background)
    assert written == _rows(at_once) and len(written) == len(texts) - 1
    assert any(row[2] is not None for row in written) == config.stores_vector
    background.close()
    at_once.close()


def test_a_batch_of_many_rows_is_written_several_rows_a_statement_as_write_writes_it(extension, switch_on, tmp_path):
    """A batch larger than the rows the writer inserts a statement at a time (and not a multiple of it) is
    written as ``write`` writes it row by row: the same rows, in the same order, with the same row ids."""
    texts = [f"第{i}首：春眠不觉晓，处处闻啼鸟。{'夜来风雨声' * (i % 3)}" for i in range(70)]
    fps = Fingerprinter(CONFIG).fingerprint_many(texts)

    def docs() -> list[NewDoc]:
        return [NewDoc(f"m{i}", fp, {"text": t, "i": i}, content_sha1(t), cluster_id=f"m{i}", seq=100 + i,
                       cluster_seq=100 + i) for i, (t, fp) in enumerate(zip(texts, fps, strict=True))]

    background, at_once = _store(tmp_path, "background"), _store(tmp_path, "at-once")
    pending = background.start_write(docs())
    assert isinstance(pending, PendingRows) and pending.result()[1] is None
    assert len(list(at_once.write(docs()))) == len(texts)
    rows = [_rows(s, "seq, ") for s in (background, at_once)]
    assert rows[0] == rows[1] and [r[1] for r in rows[0]] == [f"m{i}" for i in range(70)]
    background.close()
    at_once.close()


#: Article fields of every kind a record can carry: the writer encodes those of plain values itself (strings,
#: 64-bit integers, booleans, None), and has Python encode the others.
SOURCES = [
    {},
    {"text": "引号\"、反斜杠\\、换行\n、制表\t、\b\f\r、\x00\x1f\x7f、é、😀、\u2028", "id": "x"},
    {"n": 2**63 - 1, "m": -2**63, "u": 2**64 - 1, "t": True, "f": False, "none": None, "": ""},
    {"big": 2**64, "text": "an integer orjson refuses: the standard library writes it"},
    {"small": -2**63 - 1},
    {"score": 0.1, "text": "a float"},
    {"tags": ["a", 1, None], "nested": {"k": [True]}},
    {"keys \" and \\": "v", "中文键": "值"},
]


@pytest.mark.parametrize("source", SOURCES, ids=range(len(SOURCES)))
def test_a_block_s_article_fields_are_stored_as_write_stores_them(extension, switch_on, tmp_path, source):
    """The ``source`` column of a batch written from its arrays (`RowWriter.start_block`, which encodes the
    article fields itself where they are plain) holds the text ``write`` stores (`source_json`), byte for byte:
    escapes, integers at the edges of 64 bits and past them, floats, lists, nested objects, odd keys."""
    texts = ["今天北京的天气很好。", "上海的地铁越来越挤。"]
    sent = pickle.loads(pickle.dumps(fingerprint_with(Fingerprinter(CONFIG), texts)))
    block, fps = sent.block(), sent.fingerprints()

    def docs() -> list[NewDoc]:
        return [NewDoc(f"s{r}", fps[r], {**source, "row": r}, sent.sha1s[r], cluster_id=f"s{r}", seq=10 + r,
                       cluster_seq=10 + r, block=block, row=r) for r in range(len(texts))]

    background, at_once = (LocalStore(name, tmp_path / "data") for name in ("background", "at-once"))
    for store in (background, at_once):
        store.open(CONFIG)
    pending = background.start_write(docs())
    assert isinstance(pending, PendingRows) and pending.result()[1] is None
    assert len(list(at_once.write(docs()))) == len(texts)
    written = _rows(background)
    assert written == _rows(at_once)
    assert [json.loads(row[9]) for row in written] == [{**source, "row": r} for r in range(len(texts))]
    background.close()
    at_once.close()


def test_block_parameters_that_do_not_fit_the_rows_are_refused_before_anything_is_written(extension, switch_on,
                                                                                          tmp_path):
    """`RowWriter.start_block` checks what it is given against the documents' rows and says what does not fit
    (the store then writes the batch with ``sqlite3``); nothing is written."""
    store = _store(tmp_path, "refused")
    writer = store._database.row_writer()
    sql = "INSERT INTO meta VALUES (?, ?)"
    ints = np.arange(2, dtype="<i8").tobytes()
    for rows, params, message in [
            ([0, 2], [("doc", 0), ("int", ints)], "an int column has 2 rows, a document reads row 2"),
            ([0, 1], [("doc", 0), ("doc", 0)], "a document's value taken twice"),
            ([0, 1], [("doc", 0), ("doc", 1)], "a document without value 1"),
            ([0, 1], [("doc", 0), ("hex", b"1234567", 16)], "a hex column is not 8 bytes a value"),
            ([0, 1], [("doc", 0), ("blob", b"abc", 2, ints)], "a blob matrix is not rows of its width"),
            ([0, 1], [("doc", 0), ("blob", b"ab", 2, ints)], "a blob column names a row its matrix does not have"),
            ([0, 1], [("doc", 0), ("float", ints)], 'a parameter of kind "float"')]:
        with pytest.raises(ValueError, match=message):
            writer.start_block(sql, [("k0",), ("k1",)], rows, params)
    assert writer.wait() is None  # nothing was started
    assert sqlite3.connect(store.path).execute("SELECT count(*) FROM meta WHERE key IN ('k0', 'k1')").fetchone() == (0,)
    store.close()


def test_documents_of_several_blocks_are_written_row_by_row(tmp_path):
    """Documents that did not all come in one block have no block parameters: they are written as rows."""
    sent = [pickle.loads(pickle.dumps(fingerprint_with(Fingerprinter(CONFIG), TEXTS))) for _ in range(2)]
    docs = [NewDoc(f"{k}{r}", s.fingerprints()[r], {"text": t}, s.sha1s[r], block=s.block(), row=r)
            for k, s in enumerate(sent) for r, t in enumerate(TEXTS)]
    assert block_params(docs, CONFIG.bits, CONFIG.stores_vector) is None
    assert block_params(docs[:5], CONFIG.bits, CONFIG.stores_vector) is not None


def test_a_folder_whose_name_is_not_utf8_is_written_by_the_writer(extension, switch_on, tmp_path):
    """The paths reach SQLite as the file system's bytes, as ``sqlite3`` gives them (GBK bytes here)."""
    folder = tmp_path / os.fsdecode("\u4e2d\u6587".encode("gbk"))
    store = LocalStore("gbk", folder)
    store.open(CONFIG)
    pending = store.start_write(_docs())
    assert isinstance(pending, PendingRows) and pending.result()[1] is None
    assert len(_rows(store)) == 5 and store.path.parent == folder
    store.close()


def test_a_batch_that_replaces_stored_documents_is_written_at_once(extension, switch_on, tmp_path):
    store = _store(tmp_path, "replaced")
    assert store.start_write(_docs()[:2]).result()[1] is None
    pending = store.start_write(_docs())  # d0 and d1 are stored: their key rows go in the same transaction
    assert isinstance(pending, Written)
    results, error = pending.result()
    assert error is None and [r.created for r in results] == [False, False, True, True, True]
    assert store.count() == 5
    store.close()


def test_a_value_the_writer_does_not_bind_is_written_by_sqlite3_which_names_it(extension, switch_on, tmp_path):
    store = _store(tmp_path, "wide")
    docs = _docs()
    docs[1].seq = 2**70  # no SQLite integer
    with pytest.raises(OverflowError):
        store.start_write(docs)
    assert store.count() == 0
    store.close()


def test_a_failed_write_is_sqlite_s_error_and_writes_nothing(extension, switch_on, tmp_path):
    store = _store(tmp_path, "refused")
    db = sqlite3.connect(store.path)
    db.execute("CREATE TRIGGER refuse BEFORE INSERT ON docs WHEN NEW.id = 'd3' BEGIN SELECT RAISE(ABORT, 'no d3'); END")
    db.commit()
    db.close()
    pending = store.start_write(_docs())
    assert isinstance(pending, PendingRows)
    results, error = pending.result()
    assert results == [] and isinstance(error, StoreError) and "no d3" in str(error)
    assert store.count() == 0  # the whole transaction was rolled back
    # What `write` says of the same batch.
    with pytest.raises(StoreError, match="no d3"):
        list(store.write(_docs()))
    store.close()


def test_without_the_extension_a_batch_is_written_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    store = _store(tmp_path, "python")
    pending = store.start_write(_docs())
    assert isinstance(pending, Written) and pending.result()[1] is None and store.count() == 5
    store.close()


def test_a_run_written_in_the_background_labels_as_one_written_at_once(extension, tmp_path, monkeypatch):
    """Several batches of near-duplicates across batch boundaries, progress seen after each batch is accounted
    for: the same labels, counts and progress with the writer as without it."""
    texts = [f"第{i % 7}号通知：明天上午九点在三楼会议室开会，请各部门负责人准时参加。{'!' * (i // 7)}" for i in range(40)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"n{i:02d}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(texts)), "utf-8")

    def run(switch: str) -> tuple[list[tuple], list[tuple[int, int]], object]:
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        store = LocalStore(f"run{switch}", tmp_path / "data")
        seen: list[tuple[int, int]] = []
        summary = ingest([path], store, CONFIG, IngestOptions(batch=6, workers=1, checkpoint=None, dead_letter=None),
                         progress=lambda s: seen.append((s.read, s.indexed + s.skipped + s.failed)))
        labels = sorted(store._database.connect().execute("SELECT id, cluster_id, duplicate_of FROM docs"))
        store.close()
        return labels, seen, summary

    labels, seen, summary = run("1")
    assert (labels, seen) == run("0")[:2]
    assert summary.balanced and summary.indexed == 40 and summary.error is None  # type: ignore[attr-defined]
    assert seen[-1] == (40, 40) and all(read == done for read, done in seen)  # each batch accounted for when seen
    assert len({c for _, c, _ in labels}) < 40
