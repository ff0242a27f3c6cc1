"""The native core's JSON Lines reader (`jsonl_records`, the block path of `esdedup.readers.formats`) gives
what the Python reader gives, line for line: the same records and rejections, offsets and line numbers
included, over lines of every kind it reads itself and every kind it leaves to Python, blocks cut anywhere."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from esdedup.readers import Record, Rejected, lines, read_records
from esdedup.readers.records import FieldNames
from esdedup.util import native

pytestmark = pytest.mark.usefixtures("extension", "switch_on")

#: Lines the core reads itself and lines it leaves to Python, one of each kind.
TRICKY = [
    '{"id": "a1", "text": "北京欢迎你", "url": "http://x/1", "n": 3, "ok": true, "none": null}',
    '{"id": 42, "text": "integer id", "title": 7}',
    '{"id": -9223372036854775808, "text": "smallest id"}',
    '{"id": 9223372036854775808, "text": "id past 64 bits"}',
    '{"id": "", "text": "empty id", "title": ""}',
    '{"text": "no id at all", "title": "a title"}',
    '{"id": null, "text": "null id", "title": null}',
    '{"id": "f", "text": "float field", "score": 1.5}',
    '{"id": "e", "text": "exponent", "score": 1e3}',
    '{"id": "z", "text": "minus zero", "n": -0}',
    '{"id": "lz", "text": "leading zero", "n": 01}',
    '{"id": "nested", "text": "x", "meta": {"a": [1, 2, {"b": null}], "c": {"d": "e"}}}',
    '{"id": "deep", "text": "x", "meta": ' + "[" * 70 + "1" + "]" * 70 + "}",
    '{"id": "nf", "text": "x", "meta": {"a": [1, 2.0]}}',
    '{"id": "dup", "text": "first", "text": "second"}',
    '{"id": "dupn", "text": "x", "m": {"a": 1, "a": 2}}',
    '{"id": "esc", "text": "tab\\there \\"quoted\\" \\\\ \\/ \\b\\f\\n\\r \\u00e9 \\ud83d\\ude00"}',
    '{"id": "lone", "text": "lone \\ud800 surrogate"}',
    '{"id": "low", "text": "lone low \\udc00"}',
    '{"id": "half", "text": "high then not low \\ud800\\u0041"}',
    '{"id": "ctl", "text": "raw \x01 control"}',
    '{"id": "nul", "text": "escaped \\u0000 nul"}',
    '{"id": "ws", "text": " \\u3000\\t "}',
    '{"id": "ws2", "text": "\x1c\\u001f\\u2028"}',
    '{"id": "empty", "text": ""}',
    '{"id": "notext"}',
    '{"id": "numtext", "text": 5}',
    '{"id": "badtitle", "text": "x", "title": [1]}',
    '{"id": "booltitle", "text": "x", "title": true}',
    '{"id": ["list"], "text": "x"}',
    '{"id": true, "text": "x"}',
    '{"id": "' + "長" * 171 + '", "text": "id of 513 bytes"}',
    '{"id": "' + "長" * 170 + '", "text": "id of 510 bytes"}',
    '["not", "an", "object"]',
    '"a string"',
    '{"id": "trail", "text": "x"} extra',
    '{"id": "comma", "text": "x",}',
    '{"id": "bad escape", "text": "\\x"}',
    '{"id": "hex", "text": "\\u00G1"}',
    '   {"id": "spaced", "text": "padded"}   \r',
    "",
    "   ",
    '\ufeff{"id": "bom", "text": "a byte-order mark in the middle"}',
    '{"id": "inputs", "text": "x", "content_sha1": "abc", "cluster_id": "c"}',
    '{"id": "big", "text": "x", "n": 18446744073709551615}',
    '{"id":"tight","text":"no spaces","title":"t"}',
    '{"id": "unicode keys", "text": "x", "名字": "值", "\\u00e9": 1}',
    '{"id": "falsy", "text": "x", "f": false, "z": 0, "l": [], "o": {}}',
]


def _read(path: Path, on: bool, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> list[Record | Rejected]:
    with monkeypatch.context() as m:
        if not on:
            m.setenv(native.ENV_SWITCH, "0")
        return list(read_records([path], **kw))


def _same(path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> list[Record | Rejected]:
    """Read ``path`` both ways; the items (with their offsets, which `Rejected` leaves out of ``==``) agree."""
    by_core, by_python = _read(path, True, monkeypatch, **kw), _read(path, False, monkeypatch, **kw)
    assert by_core == by_python
    assert [item.offset for item in by_core] == [item.offset for item in by_python]
    return by_core


def test_the_block_reader_makes_the_plain_records_and_leaves_the_rest() -> None:
    """The core itself: a record for each plain line, the place of each other, the first non-ASCII record."""
    block = "\n".join([TRICKY[1], TRICKY[7], TRICKY[0], ""]).encode() + b"\n"
    entries, first_not_ascii = native.function("jsonl_records")(block, 100, 5, FieldNames(), "f.jsonl", "utf-8",
                                                                Record, 1000)
    assert [type(e) for e in entries] == [Record, tuple, Record, tuple]
    assert entries[0] == Record("42", "integer id", "7", {}, "f.jsonl", "line 5", 100, "utf-8")
    second = len(TRICKY[1]) + 1
    assert entries[1] == (second, len(TRICKY[7]))
    assert entries[2].offset == 100 + second + len(TRICKY[7]) + 1 and entries[2].location == "line 7"
    assert entries[2].fields == {"url": "http://x/1", "n": 3, "ok": True, "none": None}
    assert first_not_ascii == 2
    assert native.function("jsonl_records")(block, 0, 1, FieldNames(), "f", "utf-8", Record, 10)[0][0] == (
        0, len(TRICKY[1]))  # over the limit: left to Python


def test_the_block_reader_refuses_a_block_that_is_no_whole_lines() -> None:
    with pytest.raises(ValueError, match="must end with a newline"):
        native.function("jsonl_records")(b'{"text": "x"}', 0, 1, FieldNames(), "f", "utf-8", Record, 100)
    with pytest.raises(ValueError, match="three different names"):
        native.function("jsonl_records")(b"", 0, 1, FieldNames(id="text"), "f", "utf-8", Record, 100)


def test_every_kind_of_line_is_read_as_python_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tricky.jsonl"
    path.write_bytes("\n".join(TRICKY).encode("utf-8", "surrogatepass") + b'\n{"id": "last", "text": "no newline"}')
    items = _same(path, monkeypatch)
    assert sum(isinstance(i, Record) for i in items) > 20 and sum(isinstance(i, Rejected) for i in items) > 10
    assert items[-1] == Record("last", "no newline", None, {}, items[-1].source, f"line {len(TRICKY) + 1}",
                               items[-1].offset, "utf-8")


def test_lines_over_the_limit_and_blocks_cut_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small buffers: lines longer than a buffer, lines over the record limit inside a block, a block of one."""
    rng = random.Random(5)
    rows = [json.dumps({"id": f"r{i}", "text": "字" * rng.choice([1, 5, 40, 90, 300])}, ensure_ascii=rng.random() < 0.5)
            for i in range(300)]
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    for chunk in (7, 64, 500, 4096):
        monkeypatch.setattr(lines, "_CHUNK_BYTES", chunk)
        items = _same(path, monkeypatch, max_record_bytes=400)
        assert sum(isinstance(i, Rejected) for i in items) > 10 and sum(isinstance(i, Record) for i in items) > 100


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 7, 2**63 - 1, -(2**63), 2**63, 2**64, -(2**63) - 1])
    if kind == 2:
        return rng.choice([0.5, -0.0, 1e300, 3.0])
    if kind in (3, 4, 5):
        return "".join(rng.choice(["a", "é", "字", "😀", " ", "\t", '"', "\\", "\u3000", "\x1f", "\ud800", "/"])
                       for _ in range(rng.randrange(6)))
    if kind in (6, 7):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(["a", "b", "text", "id"]): _random_value(rng, depth + 1) for _ in range(rng.randrange(3))}


def test_random_objects_are_read_as_python_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    rows = []
    for i in range(3000):
        obj = {k: _random_value(rng) for k in rng.sample(["id", "text", "title", "url", "meta"], rng.randrange(6))}
        if rng.random() < 0.7:
            obj["text"] = rng.choice([_random_value(rng), f"text {i} 北京"])
        line = json.dumps(obj, ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.05:
            line = line.replace(":", ": ", 1).replace("}", " , }", 1)  # syntax errors
        rows.append(line)
    path = tmp_path / "random.jsonl"
    path.write_bytes("\n".join(rows).encode("utf-8", "surrogatepass") + b"\n")
    items = _same(path, monkeypatch)
    assert sum(isinstance(i, Record) for i in items) > 500 and sum(isinstance(i, Rejected) for i in items) > 300


def test_a_file_that_turns_out_not_utf8_is_read_as_python_reads_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A pure-ASCII start re-decided as GB18030 at its first line that is not UTF-8, in the middle of a block:
    the lines after it, in that block and in later ones, are read as that encoding (an ASCII line is GB18030,
    a line that is UTF-8 stays UTF-8)."""
    head = b"".join(json.dumps({"id": f"a{i}", "text": f"ascii {i}"}).encode() + b"\n" for i in range(3000))
    tail = b""
    for i in range(300):
        row = {"id": f"g{i}", "text": f"中文内容第{i}行，简体字。"}
        tail += (json.dumps(row, ensure_ascii=False).encode("gb18030") if i % 3 == 0 else
                 json.dumps(row, ensure_ascii=False).encode() if i % 3 == 1 else json.dumps(row).encode()) + b"\n"
    path = tmp_path / "gb.jsonl"
    path.write_bytes(head + tail)
    monkeypatch.setattr(lines, "_CHUNK_BYTES", 4096)
    items = _same(path, monkeypatch)
    assert all(isinstance(i, Record) for i in items)
    assert [i.encoding for i in items[-3:]] == ["gb18030", "utf-8", "gb18030"]
    assert items[-3].text == "中文内容第297行，简体字。"


@pytest.mark.parametrize("gap", [0, 200])
def test_a_non_ascii_line_settles_a_pure_ascii_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     gap: int) -> None:
    """A UTF-8 line read by the core settles the encoding: a later line that is not UTF-8, in the same block or
    (``gap`` lines later) in another, is rejected as such, not taken as a sign that the file is GB18030."""
    rows = [json.dumps({"id": f"a{i}", "text": f"ascii {i}"}) for i in range(3000)]  # past the sniffed sample
    rows.append(json.dumps({"id": "u", "text": "北京"}, ensure_ascii=False))
    path = tmp_path / "settled.jsonl"
    rows += [json.dumps({"id": f"b{i}", "text": f"ascii {i}"}) for i in range(gap)]
    path.write_bytes(("\n".join(rows) + "\n").encode() + '{"id": "g", "text": "中文"}\n'.encode("gb18030"))
    monkeypatch.setattr(lines, "_CHUNK_BYTES", 4096)
    items = _same(path, monkeypatch)
    assert isinstance(items[-1], Rejected) and "cannot decode as utf-8" in items[-1].reason
    assert items[-2 - gap].text == "北京" and items[-2 - gap].encoding == "utf-8"


def test_a_resumed_run_skips_the_same_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "resume.jsonl"
    path.write_bytes("\n".join(TRICKY).encode("utf-8", "surrogatepass") + b"\n")
    offsets = {item.offset for item in _read(path, False, monkeypatch)}
    done = set(sorted(offsets)[::2])
    items = _same(path, monkeypatch, skip=lambda source, offset: offset in done)
    assert items and not {item.offset for item in items} & done


def test_crlf_lines_and_a_utf8_bom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(TRICKY[:12]).encode() + b"\r\n")
    items = _same(path, monkeypatch)
    assert items[0].encoding == "utf-8-sig" and items[0].text == "北京欢迎你"
