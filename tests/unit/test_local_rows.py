"""The embedded store's rows and text index written from documents in memory, and the JSONL parser, agree
with what they replace: the per-document encodings, the text index read back from the rows, the standard
library's strict JSON."""
from __future__ import annotations

import datetime
import gc
import json
import sqlite3
import threading
import time

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.readers.records import STRICT_JSON, strict_json
from esdedup.schema import content_sha1, json_bytes
from esdedup.store.base import NewDoc
from esdedup.store.local import LocalStore, sqlite, texts
from esdedup.store.local.rows import (
    KEY_COLUMNS,
    doc_rows,
    source_json,
    stored_docs,
    stored_signature,
    stored_signatures,
    stored_vector,
    stored_vectors,
)
from esdedup.store.local.texts import texts_path

TEXTS = ["床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。", "",
         "The quick brown fox jumps over the lazy dog.", "千山鸟飞绝，万径人踪灭。𠀀𠀁 e\u0301"]


def _read(text: str) -> tuple:
    try:
        return "value", repr(STRICT_JSON.decode(text))
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__, str(exc)


def _strict(text: str) -> tuple:
    try:
        return "value", repr(strict_json(text))
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__, str(exc)


@pytest.mark.parametrize("text", [
    '{"id": "a", "text": "秦川", "n": 1, "l": [true, false, null], "o": {"k": "\\u00e9\\n\\"\\/"}}',
    '{"a": 1, "b": 2, "a": 3}',  # the last value, in the first key's place
    '{"f": 1.5, "g": -0.0, "h": 1e-400, "i": 2.2250738585072012e-308}',
    '{"n": 123456789012345678901234567890}', '{"n": 18446744073709551616}', '{"n": -9223372036854775809}',
    '{"n": 18446744073709551615, "m": -9223372036854775808}', '{"deep": [[[{"x": [1.25]}]]]}',
    '{"v": NaN}', '{"v": Infinity}', '{"v": -Infinity}', '{"v": 1e400}', '{"v": 1.7976931348623159e308}',
    '{"v": 1' + "0" * 5000 + "}", '{"v": "\\ud800"}', '{"v": "\\udc00\\ud800"}', '{"v": "\\ud83d\\ude00"}',
    '{"v": "a\tb"}', '{"a": 1} x', '{"a": 1', "[1, 2]", '"text"', "null", '  {"k": 0}\n ', "\ufeff{}",
    "[" * 3000 + "]" * 3000, "[" * 100 + "1.5" + "]" * 100, "{'a': 1}", "{} {}", "",
])
def test_strict_json_gives_the_standard_librarys_value_or_error(text):
    assert _strict(text) == _read(text)


def _docs(config: FingerprintConfig) -> list[NewDoc]:
    fps = Fingerprinter(config).fingerprint_many(TEXTS)
    return [NewDoc(f"d{k}", fp, {"id": f"d{k}", "title": f"标题{k}" if k % 2 else None, "text": TEXTS[k],
                                 "when": object() if k == 1 else k}, content_sha1(TEXTS[k]), f"d{k}", None,
                   seq=k + 1, cluster_seq=k + 1) for k, fp in enumerate(fps)]


@pytest.mark.parametrize("strategy", ["auto", "simhash"])
def test_doc_rows_encode_each_document_as_on_its_own(strategy):
    config = FingerprintConfig(tokenizer="rjieba", strategy=strategy)
    docs = _docs(config)
    for stores_vector in (True, False):
        rows = doc_rows(docs, config.bits, stores_vector)
        for d, row in zip(docs, rows, strict=True):
            fp = d.fingerprint
            assert row[2] == (stored_vector(fp.vector) if stores_vector and not fp.empty else None)
            assert row[9] == source_json(d.source)
            assert row[10] == (None if fp.minhash is None else stored_signature(fp.minhash))


@pytest.mark.parametrize("source", [
    {"id": "a", "title": "静夜思", "text": TEXTS[0], "n": 3, "x": 0.1, "ok": True, "none": None, "list": [1, "二"]},
    {"text": TEXTS[4], "big": 2**70},  # beyond 64 bits: orjson refuses it
    {"text": "x", 7: "a key that is not a string"},
    {"text": "x", "when": np.float32(1.5).item(), "odd": complex(1, 2)},  # written as its str
    {"text": "x", "at": datetime.datetime(2026, 12, 2, 9, 30, tzinfo=datetime.timezone.utc)},
    {"text": "lone \ud800 surrogate"},
])
def test_a_source_is_stored_as_the_elasticsearch_store_sends_it(source):
    """orjson writes the ``source`` column, the standard library what orjson refuses: either way the column
    reads back as the values the Elasticsearch store sends (`json_bytes`), and as the standard library's own
    encoding gives them but for a datetime (ISO 8601 there, ``str`` here)."""
    stored = json.loads(source_json(source))
    assert stored == json.loads(json_bytes(source))
    stdlib = json.loads(json.dumps(source, ensure_ascii=False, default=str))
    assert stored == stdlib or stored["at"] == source["at"].isoformat()


def test_stored_vectors_and_signatures_of_mixed_lengths_one_by_one():
    rng = np.random.default_rng(3)
    same = [rng.standard_normal(8).astype(np.float32) for _ in range(5)]
    mixed = [*same, rng.standard_normal(3).astype(np.float32)]
    for vectors in (same, mixed, same[:1], []):
        assert stored_vectors(vectors) == [stored_vector(v) for v in vectors]
    sigs = [rng.integers(0, 2**32, 16, dtype=np.uint32) for _ in range(4)]
    for group in (sigs, [*sigs, sigs[0][:5]]):
        assert stored_signatures(group) == [stored_signature(s) for s in group]
    assert stored_vectors([np.zeros(0, np.float32)] * 3) == [b""] * 3


@pytest.mark.parametrize("lengths", [[16] * 600, [16, None, 16, 0, 16], [16, 5, None, 16], [None, None], [0, 0], []],
                         ids=["one-length", "none-and-empty", "two-lengths", "none", "empty", "no-rows"])
def test_stored_docs_read_each_signature_as_its_own_values(lengths):
    """`stored_docs` converts a chunk's signatures of one length in one array: each document still gets its
    own values, as uint32, whatever lengths and gaps the chunk holds (600 rows: more than one chunk)."""
    rng = np.random.default_rng(5)
    sigs = [None if n is None else rng.integers(0, 2**16, n, dtype=np.uint16) for n in lengths]
    rows = [(f"d{k}", "00ff", None, 3, 9, 0, None, None, None if s is None else s.astype("<u2").tobytes(), 4, k, 0,
             "sha") for k, s in enumerate(sigs)]
    docs = list(stored_docs(iter(rows), 4))
    assert [d.id for d in docs] == [r[0] for r in rows]
    for d, s in zip(docs, sigs, strict=True):
        if s is None:
            assert d.minhash is None
        else:
            assert d.minhash.dtype == np.uint32 and d.minhash.tolist() == s.tolist()
    assert all(d.simhash == 255 and d.seq == k and d.content_sha1 == "sha" and d.version is None
               for k, d in enumerate(docs))


def test_stored_docs_refuse_a_signature_that_is_no_whole_number_of_values():
    rows = [(f"d{k}", "0", None, 0, 0, 0, None, None, b"\x01\x02\x03", 0, 0, 0, None) for k in range(4)]
    with pytest.raises(ValueError):
        list(stored_docs(rows, 4))


def _index(path) -> list[tuple]:
    """Every entry of the collection ``path``'s text index: term, document, column, offset."""
    db = sqlite3.connect(texts_path(path))
    try:
        db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, texts, instance)")
        return db.execute("SELECT * FROM temp.v ORDER BY term, doc, col, offset").fetchall()
    finally:
        db.close()


def test_writes_leave_the_text_index_to_the_first_search_which_indexes_every_row(tmp_path):
    """Writing indexes no text; the first search indexes every document from its row (a title that is not a
    string as the stored JSON gives it back, a source only the standard library could write), and the index
    is the one a statement a row of `texts.spaced` fields builds. A replaced text and another connection's
    write are caught up by the next search."""
    config = FingerprintConfig(tokenizer="rjieba")
    docs = _docs(config)
    docs[3].source["title"] = 12345
    docs[1].source["note"] = float("nan")  # orjson refuses it: the row holds the standard library's JSON
    s = LocalStore("lazy", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write(docs))
    s.refresh()
    assert _indexed_seqs(s.path) == set()
    assert [h.id for h in s.search_text("12345", size=5).hits] == ["d3"]
    assert _index(s.path) == _index_row_by_row(tmp_path / "reference", s)
    again = [NewDoc("d0", docs[1].fingerprint, {"text": "黄河远上白云间"}, content_sha1("x"), "d0", None, seq=9)]
    assert all(r.ok for r in s.write(again))
    other = LocalStore("lazy", tmp_path)
    other.open()
    assert all(r.ok for r in other.write([NewDoc("z", docs[0].fingerprint, {"text": "孤帆远影碧空尽"},
                                                 content_sha1("z"), "z", None, seq=10)]))
    other.close()
    assert [h.id for h in s.search_text("远影碧空", size=5).hits] == ["z"]
    assert [h.id for h in s.search_text("白云", size=5).hits] == ["d0"]
    assert s.search_text("床前", size=5).hits == []  # d0's old text is gone
    assert [h.id for h in s.search_text("标题1", size=5).hits] == ["d1"]
    # The replaced text's entries stay under its old seq, which no row has any more.
    live = {seq for (seq,) in s._database.connect().execute("SELECT seq FROM docs")}
    assert [e for e in _index(s.path) if e[1] in live] == _index_row_by_row(tmp_path / "reference", s)
    s.drop()


def _index_row_by_row(path, store: LocalStore) -> list[tuple]:
    """The index a statement a row builds from ``store``'s rows (title and text as `json.loads` reads them,
    each `texts.spaced`), in a new file ``path``, read as `_index` reads one."""
    rows = [(seq, texts.spaced(str(src.get("title") or "")), texts.spaced(str(src.get("text") or "")))
            for seq, src in ((seq, json.loads(raw)) for seq, raw in
                             store._database.connect().execute("SELECT seq, source FROM docs ORDER BY seq"))]
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.executescript(texts._SCHEMA)
        db.executemany("INSERT INTO texts (rowid, title, body) VALUES (?, ?, ?)", [r for r in rows if r[1] or r[2]])
        db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, texts, instance)")
        return db.execute("SELECT * FROM temp.v ORDER BY term, doc, col, offset").fetchall()
    finally:
        db.close()


def _indexed_seqs(path) -> set[int]:
    """The ``seq`` of every document the collection ``path``'s text index holds (none before it has one)."""
    db = sqlite3.connect(texts_path(path))
    try:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'texts'").fetchone() is None:
            return set()
        db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, texts, instance)")
        return {r[0] for r in db.execute("SELECT DISTINCT doc FROM temp.v")}
    finally:
        db.close()


def _store_catching_up_through(around, name, tmp_path, monkeypatch) -> tuple[LocalStore, list[NewDoc]]:
    """A new store whose text index catches up through ``around(catch_up, *args)``, and the test documents."""
    catch_up = texts.catch_up
    monkeypatch.setattr(texts, "catch_up", lambda *args, **kwargs: around(catch_up, *args, **kwargs))
    config = FingerprintConfig(tokenizer="rjieba")
    s = LocalStore(name, tmp_path)
    s.open(config)
    return s, _docs(config)


def test_a_text_index_caught_up_in_the_background_is_searched_once_that_is_done(tmp_path, monkeypatch):
    """`prepare_text_search` catches the index up in a thread of the store's own, `TEXT_CHUNK` documents a
    transaction; a search waits for it and indexes only what was written after (here nothing: it writes
    nothing)."""
    monkeypatch.setattr(texts, "TEXT_CHUNK", 2)
    threads = []
    marks = []

    def recorded(catch_up, index, *args, **kwargs):
        threads.append(threading.current_thread().name)
        catch_up(index, *args, **kwargs)
        marks.append(texts._mark(index))

    s, docs = _store_catching_up_through(recorded, "ahead", tmp_path, monkeypatch)
    assert all(r.ok for r in s.write(docs))
    s.prepare_text_search()
    assert [h.id for h in s.search_text("quick brown", size=5).hits] == ["d3"]
    assert threads == ["esdedup-texts", threading.current_thread().name] and marks == [5, 5]
    assert _indexed_seqs(s.path) == {1, 2, 4, 5}  # d2 has neither title nor text: nothing to index
    changes = s._texts._index.total_changes
    assert [h.id for h in s.search_text("千山", size=5).hits] == ["d4"]
    assert s._texts._index.total_changes == changes  # nothing new: the search wrote nothing
    s.drop()
    assert not texts_path(s.path).exists()


def test_closing_stops_catching_up_after_a_chunk_and_the_next_search_goes_on_from_there(tmp_path, monkeypatch):
    """Closing the store while the thread catches up stops it after the chunk it is indexing, which is kept;
    a search of the next connection indexes the rest."""
    monkeypatch.setattr(texts, "TEXT_CHUNK", 2)
    started, release = threading.Event(), threading.Event()
    insert = texts._insert

    def held_up(index, rows):
        started.set()
        release.wait(10)
        insert(index, rows)

    config = FingerprintConfig(tokenizer="rjieba")
    s = LocalStore("closing", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write(_docs(config)))
    monkeypatch.setattr(texts, "_insert", held_up)
    s.prepare_text_search()
    assert started.wait(10)
    threading.Timer(0.5, release.set).start()  # the chunk ends after close has asked the thread to stop
    s.close()
    assert release.is_set() and _indexed_seqs(s.path) == {1, 2}
    monkeypatch.setattr(texts, "_insert", insert)
    s = LocalStore("closing", tmp_path)
    s.open()
    assert [h.id for h in s.search_text("千山", size=5).hits] == ["d4"]
    assert _indexed_seqs(s.path) == {1, 2, 4, 5}
    s.drop()


def test_a_first_search_writes_nothing_to_a_new_collection(tmp_path):
    """The collection's id that the text index names is written when the collection is made: a first search,
    or catching up ahead of one, writes nothing to the collection, which an ingest writing it at the same time
    would take for another writer's write."""
    config = FingerprintConfig(tokenizer="rjieba")
    s = LocalStore("quiet", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write(_docs(config)))
    watcher = sqlite3.connect(s.path)
    before = watcher.execute("PRAGMA data_version").fetchone()[0]
    searcher = LocalStore("quiet", tmp_path)
    searcher.open()
    searcher.prepare_text_search()
    assert [h.id for h in searcher.search_text("千山", size=5).hits] == ["d4"]
    assert watcher.execute("PRAGMA data_version").fetchone()[0] == before
    watcher.close()
    searcher.close()
    s.drop()


def test_a_text_index_left_by_a_deleted_collection_is_built_again(tmp_path):
    """The text index names its collection: a collection deleted by hand and made again under the same name
    does not find the old collection's texts."""
    config = FingerprintConfig(tokenizer="rjieba")
    docs = _docs(config)
    s = LocalStore("again", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write(docs[:2]))
    assert [h.id for h in s.search_text("明月", size=5).hits] == ["d0"]
    s.close()
    s.path.unlink()
    s = LocalStore("again", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write([docs[3]]))
    assert s.search_text("明月", size=5).hits == []
    assert _indexed_seqs(s.path) == {1}
    s.drop()


def test_a_text_index_an_older_esdedup_kept_in_the_collection(tmp_path):
    """A collection whose text index an older esdedup kept in the collection's own file: searched there
    while the file cannot be written, replaced by an index of its own once it can."""
    config = FingerprintConfig(tokenizer="rjieba")
    docs = _docs(config)
    s = LocalStore("older", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write(docs))
    s.close()
    texts_path(s.path).unlink(missing_ok=True)
    db = sqlite3.connect(s.path)
    with db:
        db.execute("DELETE FROM meta WHERE key = 'text_index'")
        db.execute("CREATE VIRTUAL TABLE texts USING fts5(title, body, content='', "
                   "tokenize='unicode61 remove_diacritics 2')")
        db.execute("INSERT INTO texts (rowid, title, body) VALUES (5, '', '千 山 鸟 飞 绝')")
        db.execute("INSERT INTO meta VALUES ('indexed:texts', '5')")
    db.close()
    s = LocalStore("older", tmp_path)
    s.open()
    s._database.read_only = True  # as a file this process may not write is found
    assert [h.id for h in s.search_text("飞绝", size=5).hits] == ["d4"]
    assert s.search_text("明月", size=5).hits == []  # the older index held d4 alone
    assert not texts_path(s.path).exists()
    s.close()
    s = LocalStore("older", tmp_path)
    s.open()
    assert [h.id for h in s.search_text("明月", size=5).hits] == ["d0"]
    db = sqlite3.connect(s.path)
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'texts'").fetchone() is None
    assert db.execute("SELECT value FROM meta WHERE key = 'indexed:texts'").fetchone() is None
    db.close()
    s.drop()


@pytest.mark.parametrize("json_functions", [True, False], ids=["json", "sqlite-without-json"])
def test_texts_indexed_in_one_statement_are_indexed_as_a_row_at_a_time(tmp_path, monkeypatch, json_functions):
    """`texts._insert` hands SQLite the rows as one JSON array: the index is the one a statement a row
    makes, for quotes, backslashes, controls, separators, emoji and text beyond the BMP; a text JSON cannot
    carry (a lone surrogate, which another client may have stored) is indexed with U+FFFD in its place.
    An SQLite without its JSON functions
    (here: a statement naming one it lacks) gets the rows one at a time."""
    if not json_functions:
        monkeypatch.setattr(texts, "_INSERT_FROM_JSON", texts._INSERT_FROM_JSON.replace("json_each", "json_none"))
    hard = ['引号"与\\反斜杠', "控制\x01字符\n换行\t", "分隔\u2028符\u2029", "表情😀与𠀀", "naïve Ω", "", "  "]
    rows = [(k + 1, texts.spaced(t), texts.spaced(hard[-1 - k])) for k, t in enumerate(hard)]
    entries = []
    for name, insert in (("json", texts._insert), ("rows", lambda db, r: db.executemany(
            "INSERT INTO texts (rowid, title, body) VALUES (?, ?, ?)", r))):
        db = sqlite3.connect(tmp_path / name, isolation_level=None)
        db.executescript(texts._SCHEMA)
        insert(db, rows)
        db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, texts, instance)")
        entries.append(db.execute("SELECT * FROM temp.v ORDER BY term, doc, col, offset").fetchall())
        if name == "rows":  # SQLite itself takes no lone surrogate ...
            with pytest.raises(UnicodeEncodeError):
                insert(db, [(99, "a\ud800", "b")])
        else:  # ... so `_insert` indexes it as U+FFFD and the rest of the text as it is
            insert(db, [(99, "a\ud800", "b")])
            assert {row[0] for row in db.execute("SELECT term FROM temp.v WHERE doc = 99")} >= {"a", "b"}
        db.close()
    assert entries[0] == entries[1] and len(entries[0]) > 20


def test_a_failing_catch_up_in_the_background_loses_nothing(tmp_path, monkeypatch, caplog):
    """When the thread cannot index (a full disk, say) it says so once and stops; the next search indexes
    every document from its row."""
    def failing_in_the_thread(catch_up, *args, **kwargs):
        if threading.current_thread().name == "esdedup-texts":
            raise sqlite3.OperationalError("database or disk is full")
        return catch_up(*args, **kwargs)

    s, docs = _store_catching_up_through(failing_in_the_thread, "failing", tmp_path, monkeypatch)
    assert all(r.ok for r in s.write(docs))
    with caplog.at_level("WARNING", logger="esdedup.store.local.texts"):
        s.prepare_text_search()
        s._texts._catching_up.wait()
    assert [r.getMessage() for r in caplog.records if "database or disk is full" in r.getMessage()] == [
        f"the text index of {s.path} could not be brought up to date ahead of a search (database or disk is "
        "full); the search will catch up from the stored documents"]
    assert _indexed_seqs(s.path) == set()
    assert [h.id for h in s.search_text("千山", size=5).hits] == ["d4"]
    assert _indexed_seqs(s.path) == {1, 2, 4, 5}
    s.close()


def test_the_lsh_key_table_holds_each_document_under_the_keys_of_its_fingerprint(tmp_path):
    """The keys a first lookup indexes, made for every document of a chunk at once from the stored signatures,
    are each document's own LSH keys (`Fingerprint.lsh`), under its id, in document order; a text without a
    signature holds none."""
    config = FingerprintConfig(tokenizer="rjieba")
    docs = _docs(config)
    s = LocalStore("keys", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write(docs))
    rows = s._database.connect().execute(f"SELECT {KEY_COLUMNS} FROM docs ORDER BY seq").fetchall()
    want = [(k, d.id) for d in docs for k in d.fingerprint.lsh]
    assert want and len({d.id for d in docs if d.fingerprint.lsh}) >= 3
    assert s._keys.keys_of(rows, "lsh") == want
    assert s._keys.keys_of(rows[:1], "lsh") == [(k, docs[0].id) for k in docs[0].fingerprint.lsh]


def _file_pages(path) -> int:
    """Pages of the database file itself, without its write-ahead log (read from the file's header)."""
    with open(path, "rb") as f:
        header = f.read(32)
    return int.from_bytes(header[28:32], "big")


def test_a_thread_copies_each_write_from_the_log_into_the_file_and_stops_with_the_store(tmp_path):
    """The connection that writes copies its log into the file only past `WAL_PAGES`: the file grows while the
    store is open only because the checkpoint thread copied the write there. Closing the store stops it."""
    config = FingerprintConfig(tokenizer="rjieba")
    fp = Fingerprinter(config).fingerprint_many([TEXTS[0]])[0]
    s = LocalStore("logged", tmp_path)
    s.open(config)
    before = _file_pages(s.path)
    others = set(threading.enumerate())
    docs = [NewDoc(f"d{k}", fp, {"text": TEXTS[0] * 20}, content_sha1(f"{k}"), f"d{k}", None, seq=k + 1)
            for k in range(3000)]
    assert all(r.ok for r in s.write(docs))
    assert sqlite.WAL_PAGES > 1000  # the 3,000 documents' pages stay in the log unless the thread copies them
    deadline = time.monotonic() + 30
    while _file_pages(s.path) <= before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _file_pages(s.path) > before + 100
    ours = [t for t in set(threading.enumerate()) - others if t.name == "esdedup-checkpoint"]
    assert len(ours) == 1
    checkpointer = s._database._checkpointer
    assert checkpointer is not None and checkpointer._with_owner is not None and checkpointer._with_owner.alive
    s.close()
    assert not ours[0].is_alive()
    assert not checkpointer._with_owner.alive  # closed: nothing is left for the store's collection to stop


def test_a_store_dropped_without_closing_ends_its_checkpoint_thread(tmp_path):
    """The thread holds a connection to the file of its own: a store that is never closed and then forgotten
    must not keep it for the rest of the process."""
    config = FingerprintConfig(tokenizer="rjieba")
    fp = Fingerprinter(config).fingerprint_many([TEXTS[0]])[0]
    others = set(threading.enumerate())
    s = LocalStore("forgotten", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write([NewDoc("d1", fp, {"text": TEXTS[0]}, content_sha1("1"), "d1", None, seq=1)]))
    ours = [t for t in set(threading.enumerate()) - others if t.name == "esdedup-checkpoint"]
    assert len(ours) == 1 and ours[0].is_alive()
    del s
    gc.collect()
    ours[0].join(timeout=30)
    assert not ours[0].is_alive()


def test_a_checkpoint_thread_that_cannot_open_the_file_says_so_and_ends(tmp_path, caplog):
    thread = sqlite._Checkpointer(tmp_path)  # a folder: SQLite cannot open it
    with caplog.at_level("WARNING", logger="esdedup.store.local.sqlite"):
        thread.ask()
        thread.stop()
    assert "is copied into the file by the commits from now on" in caplog.text


def _has_sha1_index(path) -> bool:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'docs_sha1'").fetchone() is not None
    finally:
        db.close()


def test_a_new_collection_indexes_its_content_sha1s_when_first_read_by_them(tmp_path):
    """A collection created by this connection is written without its index of content SHA-1s (random
    keys, a B-tree insert a row), refreshed or not (an ingest refreshes at each roll of its window); the
    first lookup by content SHA-1 builds it in one pass (an exact-copy lookup, the copy groups of all-pairs
    search), and so does closing the store; a connection that finds the file without it (its creator died
    first) builds it before it writes, not when it opens the file to read it. The rows are the same either
    way."""
    config = FingerprintConfig(tokenizer="rjieba")
    docs = _docs(config)
    closed = LocalStore("closed", tmp_path)
    closed.open(config)
    assert all(r.ok for r in closed.write(docs))
    closed.refresh()
    assert not _has_sha1_index(closed.path)
    closed.close()
    assert _has_sha1_index(closed.path)
    s = LocalStore("deferred", tmp_path)
    s.open(config)
    assert all(r.ok for r in s.write(docs))
    s.refresh()
    assert not _has_sha1_index(s.path)
    assert s.copy_columns() == []  # no two texts alike
    assert _has_sha1_index(s.path)
    plan = s._database.connect().execute("EXPLAIN QUERY PLAN SELECT id FROM docs WHERE content_sha1 = 'x'")
    assert "docs_sha1" in " ".join(str(r) for r in plan)
    rows = s._database.connect().execute(
        "SELECT id, content_sha1, source, cluster_id FROM docs ORDER BY seq").fetchall()
    s.close()

    first = LocalStore("lookup-first", tmp_path)
    first.open(config)
    assert all(r.ok for r in first.write(docs))
    assert [[d.id for d in found] for found in first.copies([docs[0].content_sha1, "none"])] == [["d0"], []]
    assert _has_sha1_index(first.path)
    assert first._database.connect().execute(
        "SELECT id, content_sha1, source, cluster_id FROM docs ORDER BY seq").fetchall() == rows

    died = LocalStore("died", tmp_path)
    died.open(config)
    assert all(r.ok for r in died.write(docs))
    died._database._sha1_pending = None  # as if the process had died before refresh or close
    died.close()
    assert not _has_sha1_index(died.path)
    again = LocalStore("died", tmp_path)
    again.open()
    assert [[d.id for d in found] for found in again.copies([docs[0].content_sha1])] == [["d0"]]
    again.refresh()
    again.copy_columns()
    assert not _has_sha1_index(died.path)
    assert all(r.ok for r in again.write(docs[:1]))
    assert _has_sha1_index(died.path)
    again.close()
    first.close()
