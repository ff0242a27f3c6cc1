"""Tests of esdedup.readers.formats: one bad line costs one record, JSON files, files without an extension."""
from __future__ import annotations

import dataclasses
import gzip
import json
import random
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from esdedup.readers import SAMPLE_BYTES, Record, Rejected, read_records


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def jsonl(*objects) -> str:
    return "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in objects)


def kinds(items) -> list[tuple[str, str]]:
    return [(type(i).__name__, i.location) for i in items]


# --------------------------------------------------------------------------- NUL bytes


@pytest.mark.parametrize("damage", ["inside", "padding"])
def test_jsonl_where_a_sixth_of_the_lines_hold_nul_bytes(tmp_path, damage):
    """Those lines are rejected one by one; the other five sixths are read (not the whole file lost)."""
    lines = []
    for i in range(60):
        line = json.dumps({"id": str(i), "text": f"第{i}条新闻的正文"}, ensure_ascii=False)
        if i % 6 == 0:
            line = line.replace("正文", "正\x00文") if damage == "inside" else "\x00" * 40 + line
        lines.append(line)
    path = write(tmp_path / "n.jsonl", "\n".join(lines) + "\n")
    items = list(read_records([path]))
    assert [r.id for r in items if isinstance(r, Record)] == [str(i) for i in range(60) if i % 6]
    bad = [i for i in items if isinstance(i, Rejected)]
    assert [b.location for b in bad] == [f"line {i + 1}" for i in range(0, 60, 6)]
    assert {b.reason for b in bad} == {"raw NUL byte in the line (not valid JSON text)"}
    assert "\\x00" in bad[0].excerpt


def test_csv_rows_with_nul_bytes_are_rejected_alone(tmp_path):
    rows = ["id,text"] + [f"{i},{'坏的' if i % 5 == 0 else '好的'}{i}" for i in range(20)]
    rows = [r.replace("坏的", "坏\x00的") for r in rows]
    path = write(tmp_path / "n.csv", "\n".join(rows) + "\n")
    items = list(read_records([path]))
    assert [i.location for i in items if isinstance(i, Rejected)] == ["row 1", "row 6", "row 11", "row 16"]
    assert {i.reason for i in items if isinstance(i, Rejected)} == {"raw NUL byte in the row (not CSV text)"}
    assert len([i for i in items if isinstance(i, Record)]) == 16


def _binaries() -> dict[str, bytes]:
    rng = random.Random(7)
    noise = bytes(rng.randrange(256) for _ in range(80_000))
    text = ("这是一段会被压缩的文本。" * 2000).encode()
    buf = Path(sys.executable).read_bytes()[:200_000]  # a real executable
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + zlib.compress(noise + text)
    return {"elf": buf, "png": png, "gzip": gzip.compress(text + noise), "noise-with-nul": noise,
            "text-then-binary": b'{"id": "1", "text": "ok"}\n' + b"\x00\x01\x02\x03" * 30}


@pytest.mark.parametrize("name", list(_binaries()))
def test_binary_files_are_still_refused_whole(tmp_path, name):
    data = _binaries()[name]
    if name != "text-then-binary":
        assert b"\x00" in data[:SAMPLE_BYTES]
    for suffix in (".jsonl", ".csv"):
        path = write(tmp_path / f"{name}{suffix}", data)
        assert list(read_records([path])) == [Rejected(str(path), "", "binary file (NUL bytes)", data[:200].decode(
            "ascii", "backslashreplace"))]


def test_zip_archive_named_jsonl_is_refused(tmp_path):
    path = tmp_path / "a.jsonl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("inner.jsonl", jsonl(*({"id": str(i), "text": "内容" * 50} for i in range(200))))
    [item] = list(read_records([path]))
    assert isinstance(item, Rejected) and item.reason == "binary file (NUL bytes)"


# --------------------------------------------------------------------------- values no store can carry


def test_numbers_that_cannot_be_read_or_stored_are_rejected_per_line(tmp_path):
    lines = [
        jsonl({"id": "ok1", "text": "正文一"}),
        '{"id": "big", "text": "正文", "n": ' + "9" * 4301 + "}\n",
        '{"id": "nan", "text": "正文", "score": NaN}\n',
        '{"id": "inf", "text": "正文", "score": -Infinity}\n',
        '{"id": "huge", "text": "正文", "score": 1e400}\n',
        '{"id": "edge", "text": "正文", "n": ' + "9" * 4300 + ", \"f\": 1.5e300}\n",
        jsonl({"id": "ok2", "text": "正文二"}),
    ]
    path = write(tmp_path / "n.jsonl", "".join(lines))
    items = list(read_records([path]))
    assert kinds(items) == [("Record", "line 1"), ("Rejected", "line 2"), ("Rejected", "line 3"),
                            ("Rejected", "line 4"), ("Rejected", "line 5"), ("Rejected", "line 6"),
                            ("Record", "line 7")]
    assert items[1].reason == ("invalid JSON: a number cannot be read (Exceeds the limit (4300 digits) for "
                               "integer string conversion: value has 4301 digits)")
    assert items[2].reason == "invalid JSON: NaN is not a JSON number"
    assert items[3].reason == "invalid JSON: -Infinity is not a JSON number"
    assert items[4].reason == "invalid JSON: number 1e400 is out of range"
    assert items[5].reason.startswith("field 'n' holds the integer 999999999999999999999999999999... (4300 digits), "
                                      "beyond a signed 64-bit integer")


WIDE = "write it as a string (in quotes)"


def test_an_integer_beyond_a_signed_64_bits_in_any_field_is_rejected_naming_its_path(tmp_path):
    """Elasticsearch refuses such a document, the embedded store would keep it: the reader rejects it for both,
    on orjson's path and on the strict decoder's, in JSONL and JSON files. The id and title are kept as digits."""
    lines = [
        '{"id": "a", "text": "正文", "n": 9223372036854775807, "m": -9223372036854775808}',
        '{"id": "b", "text": "正文", "n": 9223372036854775808}',  # orjson reads it as an integer
        '{"id": "c", "text": "正文", "n": 12345678901234567890123}',  # orjson reads it as a float
        '{"id": "d", "text": "正文", "deep": {"x": [1, {"y": -9223372036854775809}]}, "f": 1.5}',
        '{"id": 123456789012345678901234567890, "title": 18446744073709551616, "text": "正文"}',
    ]
    paths = [write(tmp_path / "w.jsonl", "\n".join(lines) + "\n"), write(tmp_path / "w.json", "[" + ",".join(lines) + "]")]
    for path in paths:
        items = list(read_records([path]))
        assert [type(x).__name__ for x in items] == ["Record", "Rejected", "Rejected", "Rejected", "Record"], path
        assert items[0].fields == {"n": 2**63 - 1, "m": -(2**63)}
        assert [x.reason for x in items[1:4]] == [
            f"field 'n' holds the integer 9223372036854775808, beyond a signed 64-bit integer "
            f"(-9223372036854775808 to 9223372036854775807), which Elasticsearch refuses: {WIDE}",
            f"field 'n' holds the integer 12345678901234567890123, beyond a signed 64-bit integer "
            f"(-9223372036854775808 to 9223372036854775807), which Elasticsearch refuses: {WIDE}",
            f"field 'deep.x[1].y' holds the integer -9223372036854775809, beyond a signed 64-bit integer "
            f"(-9223372036854775808 to 9223372036854775807), which Elasticsearch refuses: {WIDE}"]
        assert (items[4].id, items[4].title) == ("123456789012345678901234567890", "18446744073709551616")


def test_a_float_beyond_a_32_bit_float_in_any_field_is_rejected_naming_its_path(tmp_path):
    """Elasticsearch maps a new field's float to ``float`` and refuses a document whose number would be infinite
    there; 3.4028235e38 rounds to the largest finite one and is kept, as are doubles inside the range."""
    lines = ['{"id": "a", "text": "正文", "f": 3.4028235e38, "g": -1.5e-300}',
             '{"id": "b", "text": "正文", "f": 1e300}',
             '{"id": "c", "text": "正文", "deep": [{"g": -3.5e38}]}']
    items = list(read_records([write(tmp_path / "f.jsonl", "\n".join(lines) + "\n")]))
    assert [type(x).__name__ for x in items] == ["Record", "Rejected", "Rejected"]
    assert items[0].fields == {"f": 3.4028235e38, "g": -1.5e-300}
    span = "beyond a 32-bit float (-3.4028235e+38 to 3.4028235e+38), which Elasticsearch refuses in a new number field"
    assert [x.reason for x in items[1:]] == [f"field 'f' holds the number 1e+300, {span}: {WIDE}",
                                             f"field 'deep[0].g' holds the number -3.5e+38, {span}: {WIDE}"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"id": "1", "text": "正文", "url": "http://e/\\ud800"}', "field 'url' has an unpaired surrogate escape"),
        ('{"id": "1", "text": "正文", "meta": {"tags": ["a", "\\udfff"]}}',
         "field 'meta' has an unpaired surrogate escape"),
        ('{"id": "1", "text": "正文", "\\udc00k": 1}', "field name '\\udc00k' has an unpaired surrogate escape"),
        ('{"id": "1", "text": "正文", "title": "\\ud800"}', "title field 'title' has an unpaired surrogate escape"),
    ],
)
def test_unpaired_surrogate_in_any_field_is_rejected_at_read_time(tmp_path, line, reason):
    path = write(tmp_path / "s.jsonl", jsonl({"id": "0", "text": "好"}) + line + "\n" + jsonl({"id": "2", "text": "好"}))
    items = list(read_records([path]))
    assert kinds(items) == [("Record", "line 1"), ("Rejected", "line 2"), ("Record", "line 3")]
    assert items[1].reason == reason
    for item in items:  # every later stage encodes text as UTF-8
        json.dumps(dataclasses.asdict(item), ensure_ascii=False).encode("utf-8")


def test_paired_surrogate_escapes_are_fine_everywhere(tmp_path):
    path = write(tmp_path / "p.jsonl", '{"id": "\\ud83d\\ude00", "text": "x", "k\\ud83d\\ude00": ["\\ud83d\\ude00"]}\n')
    [record] = list(read_records([path]))
    assert (record.id, record.fields) == ("😀", {"k😀": ["😀"]})


# --------------------------------------------------------------------------- .json files


def test_json_file_with_an_array_of_objects(tmp_path):
    objs = [{"id": "a", "text": "第一篇"}, {"id": "b", "text": "第二篇", "title": "标题", "url": "u"},
            {"text": "第三篇"}]
    data = json.dumps(objs, ensure_ascii=False, indent=2).encode()
    path = write(tmp_path / "news.json", data)
    items = list(read_records([path]))
    assert [(type(r).__name__, r.id, r.text, r.location) for r in items] == [
        ("Record", "a", "第一篇", "item 1"), ("Record", "b", "第二篇", "item 2"), ("Record", None, "第三篇", "item 3")]
    assert items[1].title == "标题" and items[1].fields == {"url": "u"}
    for record in items:  # exact byte offsets, as for JSONL
        assert data[record.offset:].startswith(b"{")
        assert json.JSONDecoder().raw_decode(data[record.offset:].decode())[0]["text"] == record.text


def test_json_file_with_one_object_and_other_encodings(tmp_path):
    one = write(tmp_path / "one.json", json.dumps({"id": "x", "text": "一个对象"}, ensure_ascii=False))
    gbk = write(tmp_path / "gbk.json", json.dumps([{"id": "g", "text": "简体中文正文"}], ensure_ascii=False)
                .encode("gbk"))
    u16 = write(tmp_path / "u16.json", json.dumps([{"id": "u", "text": "正文"}], ensure_ascii=False)
                .encode("utf-16"))
    items = list(read_records([gbk, one, u16]))
    assert [(r.id, r.text, r.location, r.encoding) for r in items] == [
        ("g", "简体中文正文", "item 1", "gb18030"), ("x", "一个对象", "", "utf-8"), ("u", "正文", "item 1", "utf-16")]
    assert items[2].offset == 2 + len("[".encode("utf-16-le"))  # after the BOM


def test_json_file_rejections(tmp_path):
    mixed = write(tmp_path / "a.json", '[{"id": "1", "text": "好"}, 5, {"id": "3"}, {"id": "4", "text": "好"}]')
    broken = write(tmp_path / "b.json", '[{"id": "1", "text": "好"},\n {"id": "2", "text": "坏}, {"id": "3"}]')
    scalar = write(tmp_path / "c.json", '"just a string"')
    unclosed = write(tmp_path / "d.json", '[{"id": "1", "text": "好"}')
    items = list(read_records([tmp_path]))
    assert [(i.source, type(i).__name__, i.location, getattr(i, "reason", None)) for i in items] == [
        (str(mixed), "Record", "item 1", None),
        (str(mixed), "Rejected", "item 2", "not a JSON object (got number)"),
        (str(mixed), "Rejected", "item 3", "text field 'text' is missing"),
        (str(mixed), "Record", "item 4", None),
        (str(broken), "Record", "item 1", None),
        (str(broken), "Rejected", "item 2",
         "invalid JSON: Expecting ',' delimiter at line 2, column 29; the rest of the file is not read"),
        (str(scalar), "Rejected", "", "a JSON file must hold an object or an array of objects (got string)"),
        (str(unclosed), "Record", "item 1", None),
        (str(unclosed), "Rejected", "item 2", "invalid JSON: the array is not closed"),
    ]


def test_json_file_over_the_limit_and_json_lines_under_a_json_name(tmp_path):
    big = write(tmp_path / "big.json", json.dumps([{"text": "字" * 500}]))
    [item] = list(read_records([big], max_record_bytes=1000))
    assert item.reason.startswith(f"record of {big.stat().st_size} bytes exceeds the limit of 1000 bytes")
    assert "JSON Lines" in item.reason
    lines = write(tmp_path / "lines.json", jsonl({"id": "1", "text": "一"}, {"id": "2", "text": "二"}) + "{bad\n")
    assert kinds(read_records([lines])) == [("Record", "line 1"), ("Record", "line 2"), ("Rejected", "line 3")]


def test_json_resume_skips_items_by_offset(tmp_path):
    path = write(tmp_path / "r.json", json.dumps([{"id": str(i), "text": f"第{i}篇"} for i in range(5)]))
    full = list(read_records([path]))
    done = full[2].offset
    resumed = list(read_records([path], skip=lambda source, offset: offset <= done))
    assert resumed == full[3:]


# --------------------------------------------------------------------------- files without an extension


def test_files_without_an_extension_are_looked_into(tmp_path):
    write(tmp_path / "a_lines", jsonl({"id": "l1", "text": "第一行"}, {"id": "l2", "text": "第二行"}))
    write(tmp_path / "b_array", json.dumps([{"id": "j1", "text": "数组里的"}], ensure_ascii=False, indent=1))
    write(tmp_path / "c_object", json.dumps({"id": "o1", "text": "一个对象"}, ensure_ascii=False, indent=1))
    write(tmp_path / "d_novel", "[第一章]\n夜色渐深，城门外的官道上只剩下一盏孤灯。")
    write(tmp_path / "e_note", "{注}这一段是正文，不是JSON。")
    items = list(read_records([tmp_path]))
    assert [(r.id, r.location) for r in items] == [
        ("l1", "line 1"), ("l2", "line 2"), ("j1", "item 1"), ("o1", ""), ("d_novel", ""), ("e_note", "")]
    assert items[4].text.startswith("[第一章]")
    # A name with an extension is believed: data.txt holding JSON is one text document.
    write(tmp_path / "x" / "data.txt", jsonl({"id": "1", "text": "正文"}))
    [whole] = list(read_records([tmp_path / "x"]))
    assert whole.text.startswith('{"id"')


def test_nul_lines_and_undecodable_lines_in_one_file(tmp_path):
    """Two kinds of damage at once still cost one line each."""
    good = [json.dumps({"id": str(i), "text": f"第{i}条"}, ensure_ascii=False).encode() for i in range(30)]
    good[3] = b'{"id": "3", "text": "\x00"}'
    good[7] = b'{"id": "7", "text": "\xff\xfe"}'
    path = write(tmp_path / "two.jsonl", b"\n".join(good) + b"\n")
    items = list(read_records([path]))
    assert [(i.location, i.reason.split(":")[0]) for i in items if isinstance(i, Rejected)] == [
        ("line 4", "raw NUL byte in the line (not valid JSON text)"), ("line 8", "cannot decode as utf-8")]
    assert len([i for i in items if isinstance(i, Record)]) == 28
