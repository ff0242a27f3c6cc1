"""The bulk request lines the native core writes for a group of documents (`esdedup.store.elastic.writes.
bulk_actions`, native/src/esbulk.rs) are the bytes the Python path gives (`action_lines`), and a document
the core would not write as orjson does goes back to Python. Skips without the extension unless
ESDEDUP_REQUIRE_NATIVE=1 (the `extension` fixture, tests/unit/conftest.py)."""
from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.schema import DEDUP, content_sha1, dedup_members
from esdedup.store.base import NewDoc
from esdedup.store.elastic.writes import action_lines, bulk_actions
from esdedup.util import native

CONFIG = FingerprintConfig()
HEADER = b'{"index":{"_index":"idx","_id":'


def _doc(source: dict[str, Any], *, doc_id: str = "d1", dedup: bytes | None = b'"simhash":"00","tokens":0',
         cluster_id: str | None = "d0", duplicate_of: str | None = "d0", seq: int = 7, cluster_seq: int = 3,
         fp: Any = None) -> NewDoc:
    return NewDoc(doc_id, fp, source, "sha", cluster_id, duplicate_of, seq=seq, cluster_seq=cluster_seq,
                  dedup_json=dedup)


def _python(docs: list[NewDoc]) -> list[tuple[str, bytes]]:
    return [(d.id, action_lines(HEADER, CONFIG, d)) for d in docs]


def _native(docs: list[NewDoc]) -> list[bytes | None]:
    lines = native.loaded().bulk_document_lines(HEADER, docs, DEDUP)
    assert len(lines) == len(docs)
    return list(lines)


#: Documents the core writes itself: every kind of value it takes, and every string it escapes.
WRITTEN = [
    _doc({"id": "d1", "title": "標題", "text": "床前明月光，疑是地上霜。", "author": "李白"}),
    _doc({"text": "\"quoted\" \\ back\nslash\t\r\b\f\x00\x01\x1f\x7f \u2028 😀 é"}, doc_id="id \"\\ \n 😀"),
    _doc({"n": 0, "neg": -5, "big": 2**63 - 1, "ubig": 2**64 - 1, "t": True, "f": False, "none": None,
          "text": "x"}),
    _doc({"text": "x", DEDUP: {"cluster_id": "theirs"}}),  # a record's own dedup object is not written
    _doc({}, dedup=b""),  # no article fields, no dedup members
    _doc({"text": "x"}, cluster_id=None, duplicate_of=None, seq=0, cluster_seq=0),
    _doc({"text": "x"}, duplicate_of=None, seq=2**63 + 5, cluster_seq=-1),
    _doc({"text": "x"}, dedup=b""),
]
#: Documents the core leaves to Python: a value or key it does not write as orjson does, no encoded members.
LEFT = [
    _doc({"text": "x", "score": 1.5}),
    _doc({"text": "x", "tags": ["a", "b"]}),
    _doc({"text": "x", "nested": {"a": 1}}),
    _doc({"text": "lone \ud800 surrogate"}),
    _doc({"text": "x", 1: "int key"}),
    _doc({"text": "x", "huge": 2**64}),
    _doc({"text": "x"}, doc_id="lone \udc00"),
    _doc({"text": "x"}, cluster_id="lone \udfff"),
]


def test_the_core_writes_the_python_bytes(extension, switch_on) -> None:
    made = _native(WRITTEN)
    assert all(lines is not None for lines in made)
    assert list(zip((d.id for d in WRITTEN), made, strict=True)) == _python(WRITTEN)
    for lines in made:  # and they are two lines of JSON
        action, doc, end = lines.split(b"\n")
        assert end == b"" and orjson.loads(action)["index"]["_index"] == "idx" and DEDUP in orjson.loads(doc)


def test_what_the_core_does_not_write_is_left_to_python(extension, switch_on) -> None:
    assert _native(LEFT) == [None] * len(LEFT)
    docs = [*WRITTEN, *LEFT]
    assert list(bulk_actions("idx", CONFIG, docs)) == _python(docs)


def test_a_document_without_encoded_members_is_encoded_in_python(extension, switch_on) -> None:
    fp = Fingerprinter(CONFIG).fingerprint("床前明月光，疑是地上霜。")
    doc = _doc({"text": "床前明月光"}, dedup=None, fp=fp)
    assert _native([doc]) == [None]
    assert list(bulk_actions("idx", CONFIG, [doc])) == _python([doc])


def test_the_python_path_gives_the_same_lines(extension, monkeypatch) -> None:
    docs = [*WRITTEN, *LEFT]
    monkeypatch.setenv(native.ENV_SWITCH, "1")
    on = list(bulk_actions("idx", CONFIG, docs))
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert list(bulk_actions("idx", CONFIG, docs)) == on == _python(docs)


def test_real_documents_across_groups(extension, switch_on) -> None:
    """More documents than one native call takes: every one, in order, as Python writes it."""
    fper = Fingerprinter(CONFIG)
    texts = [f"第{i}首：床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。" for i in range(2500)]
    docs = []
    for i, (text, fp) in enumerate(zip(texts, fper.fingerprint_many(texts), strict=True)):
        sha1 = content_sha1(fper.normalize(text))
        docs.append(NewDoc(f"p{i}", None, {"id": f"p{i}", "title": "靜夜思", "text": text, "author": "李白"}, sha1,
                           f"p{i - i % 3}", None if i % 3 == 0 else f"p{i - i % 3}", seq=i + 1,
                           cluster_seq=i - i % 3 + 1, dedup_json=dedup_members(fp, CONFIG, sha1)))
    assert list(bulk_actions("idx", CONFIG, docs)) == _python(docs)


json_scalars = st.one_of(st.text(), st.integers(min_value=-(2**63), max_value=2**64 - 1), st.booleans(), st.none())


@settings(max_examples=200, deadline=None)
@given(source=st.dictionaries(st.text(), json_scalars, max_size=5), doc_id=st.text(min_size=1),
       cluster=st.one_of(st.none(), st.text()), seq=st.integers(min_value=0, max_value=2**63))
def test_any_scalar_fields_are_written_as_python_writes_them(source, doc_id, cluster, seq) -> None:
    if native.extension_missing():
        pytest.skip(native.extension_missing())
    doc = _doc(source, doc_id=doc_id, cluster_id=cluster, duplicate_of=cluster, seq=seq)
    made = _native([doc])[0]
    expected = _python([doc])[0][1]
    assert made is None or made == expected
