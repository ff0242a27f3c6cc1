"""The embedded store's signature columns read by the extension (`esdedup.store.local.native_rows
.read_signature_columns`, on a connection of its own) and through ``sqlite3``: the same columns, and the
rows the extension does not read as ``sqlite3`` would (a SimHash of 128 bits, a count stored as a real)
read through ``sqlite3`` instead. Skipped without the extension unless ESDEDUP_REQUIRE_NATIVE=1."""
from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.schema import content_sha1
from esdedup.store.base import NewDoc
from esdedup.store.columns import SignatureColumns
from esdedup.store.local import LocalStore, native_rows
from esdedup.store.local import store as local_store
from esdedup.util import native

TEXTS = ["北京欢迎你，我们去公园散步，看看花。", "北京欢迎你，我们去公园散步，看看草。", "今天天气很好，适合出门。",
         "。。", "the quick brown fox jumps over the lazy dog", "春眠不觉晓，处处闻啼鸟。"]


def _store(tmp_path, config: FingerprintConfig, ids: list[str], texts: list[str] = TEXTS) -> LocalStore:
    fper = Fingerprinter(config)
    store = LocalStore("read", tmp_path)
    store.open(fper.config)
    list(store.write(NewDoc(i, fp, {"text": t}, content_sha1(fper.normalize(t)))
                     for i, t, fp in zip(ids, texts, fper.fingerprint_many(texts), strict=True)))
    return store


def _columns(store: LocalStore, switch: str, monkeypatch: pytest.MonkeyPatch) -> tuple[SignatureColumns, bool]:
    """The store's columns with the extension switched on ("1") or off, and whether the extension read them."""
    monkeypatch.setenv(native.ENV_SWITCH, switch)
    calls = []

    def spy(*args):
        calls.append(read := native_rows.read_signature_columns(*args))
        return read

    monkeypatch.setattr(local_store, "read_signature_columns", spy)
    columns = store.signature_columns(store.config.minhash_perm)
    return columns, any(c is not None for c in calls)


def _same(a: SignatureColumns, b: SignatureColumns) -> None:
    assert (a.ids, a.simhash, a.chars, a.shingles, a.banded_elsewhere) == (b.ids, b.simhash, b.chars, b.shingles,
                                                                            b.banded_elsewhere)
    assert a.sigs.dtype == b.sigs.dtype == np.uint32 and np.array_equal(a.sigs, b.sigs)


@pytest.mark.parametrize("bits", [64, 128])
def test_the_extension_reads_the_columns_sqlite3_reads(extension, tmp_path, monkeypatch, bits) -> None:
    """Ids written out of order (sorted after the read) and a document without chars (NULL, read as 0): the
    same columns both ways, as a scan reads them. A 128-bit SimHash (32 hex digits) is no integer of 64 bits:
    the extension leaves those rows to ``sqlite3``."""
    store = _store(tmp_path, FingerprintConfig(tokenizer="rjieba", bits=bits), ["f", "b", "e", "a", "d", "c"])
    with sqlite3.connect(store._database.path) as db:
        db.execute("UPDATE docs SET chars = NULL WHERE id = 'b'")
    store.refresh()
    by_extension, read = _columns(store, "1", monkeypatch)
    assert read == (bits == 64)
    by_sqlite3, read = _columns(store, "0", monkeypatch)
    assert not read
    _same(by_extension, by_sqlite3)
    scanned = SignatureColumns.of((d for batch in store.scan() for d in batch), store.config)
    _same(by_extension, scanned)
    assert by_extension.ids == sorted(by_extension.ids) and len(by_extension.ids) == 5
    assert by_extension.chars[by_extension.ids.index("b")] == 0
    assert all(isinstance(h, int) for h in by_extension.simhash)


def test_a_row_the_extension_would_read_otherwise_is_read_through_sqlite3(extension, tmp_path, monkeypatch) -> None:
    """A count of characters stored as a real (``sqlite3`` gives a float; the extension reads integers): the
    extension gives the whole read back, and ``sqlite3`` reads it."""
    store = _store(tmp_path, FingerprintConfig(tokenizer="rjieba"), [f"d{i}" for i in range(len(TEXTS))])
    with sqlite3.connect(store._database.path) as db:
        db.execute("UPDATE docs SET chars = 5.5 WHERE id = 'd2'")
    store.refresh()
    columns, read = _columns(store, "1", monkeypatch)
    assert not read and columns.chars[columns.ids.index("d2")] == 5.5


def test_ids_in_no_order_come_back_sorted_with_their_own_rows(extension, tmp_path, monkeypatch) -> None:
    """The extension reads the rows in the file's order and sorts them by id itself: 300 ids written in a
    shuffled order, some of them beyond ASCII (U+FF5E sorts before U+1D11E by code point, after it in UTF-16),
    each keep their own signature, SimHash and counts, as ``ORDER BY id`` through ``sqlite3`` gives them."""
    rng = random.Random(7)
    prefixes = ["", "é", "\uff5e", "\U0001d11e", "中"]
    ids = [f"{rng.choice(prefixes)}{rng.randrange(10**6):06d}-{i}" for i in range(300)]
    texts = [f"{TEXTS[i % 3]}第{i}回，{'甲乙丙丁戊己庚辛'[i % 8]}{i * 7919 % 1000}" for i in range(300)]
    store = _store(tmp_path, FingerprintConfig(tokenizer="rjieba"), ids, texts)
    by_extension, read = _columns(store, "1", monkeypatch)
    assert read
    by_sqlite3, _ = _columns(store, "0", monkeypatch)
    _same(by_extension, by_sqlite3)
    assert by_extension.ids == sorted(ids)
    written = dict(zip(ids, Fingerprinter(store.config).fingerprint_many(texts), strict=True))
    for row, doc_id in enumerate(by_extension.ids):
        assert by_extension.simhash[row] == written[doc_id].simhash
        assert np.array_equal(by_extension.sigs[row], np.asarray(written[doc_id].minhash, dtype=np.uint32))
