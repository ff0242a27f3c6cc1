"""Tests of esdedup.readers: encodings, JSONL/CSV/txt records, rejects, file walking, resume."""
from __future__ import annotations

import codecs
import io
import json
import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from esdedup import readers
from esdedup.errors import ConfigError, DecodeError, InputError
from esdedup.readers import (
    Record,
    Rejected,
    decode_bytes,
    detect_encoding,
    detect_format,
    iter_files,
    read_records,
)
from esdedup.readers import files as files
from esdedup.readers import formats as formats
from esdedup.readers import lines as lines

# Original test sentences (about 40 characters each), plus longer paragraphs.
SIMPLIFIED_SHORT = "今天上午，市政府召开新闻发布会，介绍了今年城市建设的主要进展和下一步工作安排。"
TRADITIONAL_SHORT = "今天上午，市政府召開記者會，說明今年城市建設的主要進展與下一步工作安排。"
SIMPLIFIED_LONG = (
    "这座小城位于江南水乡，河道纵横，石桥众多。每到春天，两岸的柳树发出新芽，游客们坐着木船穿过古老的街巷，"
    "听船夫讲述过去的故事。当地政府近年来加大了对历史建筑的保护力度，同时鼓励年轻人回乡创业，开办书店、"
    "咖啡馆和手工作坊。一位在外打工多年的青年说，他希望把家乡的传统手艺带给更多的人，让大家知道这里不仅有"
    "美丽的风景，还有深厚的文化。专家认为，这种发展方式既能保护环境，又能增加居民收入，值得其他地区学习。\n"
) * 40
TRADITIONAL_LONG = (
    "這座小城位於江南水鄉，河道縱橫，石橋眾多。每到春天，兩岸的柳樹發出新芽，遊客們坐著木船穿過古老的街巷，"
    "聽船夫講述過去的故事。當地政府近年來加大了對歷史建築的保護力度，同時鼓勵年輕人回鄉創業，開辦書店、"
    "咖啡館和手工作坊。一位在外打工多年的青年說，他希望把家鄉的傳統手藝帶給更多的人，讓大家知道這裡不僅有"
    "美麗的風景，還有深厚的文化。專家認為，這種發展方式既能保護環境，又能增加居民收入，值得其他地區學習。\n"
) * 40
# Bytes that no candidate codec accepts: 0xFF is never valid in UTF-8, GB18030 or Big5, and the
# odd length rules out UTF-16.
UNDECODABLE = b"abc \xff\x80\xff\x80 xyz!"


def records(items):
    return [item for item in items if isinstance(item, Record)]


def rejects(items):
    return [item for item in items if isinstance(item, Rejected)]


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def jsonl(*objects) -> str:
    return "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in objects)


# --------------------------------------------------------------------------- encoding detection


def test_short_sentences_are_about_forty_characters():
    assert 35 <= len(SIMPLIFIED_SHORT) <= 45
    assert 35 <= len(TRADITIONAL_SHORT) <= 45


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (SIMPLIFIED_SHORT.encode("utf-8"), "utf-8"),
        (codecs.BOM_UTF8 + SIMPLIFIED_SHORT.encode("utf-8"), "utf-8-sig"),
        (codecs.BOM_UTF16_LE + SIMPLIFIED_SHORT.encode("utf-16-le"), "utf-16"),
        (codecs.BOM_UTF16_BE + SIMPLIFIED_SHORT.encode("utf-16-be"), "utf-16"),
        (SIMPLIFIED_SHORT.encode("utf-32"), "utf-32"),
        (SIMPLIFIED_SHORT.encode("gbk"), "gb18030"),
        (SIMPLIFIED_LONG.encode("gbk"), "gb18030"),
        (TRADITIONAL_SHORT.encode("big5"), "big5"),
        (TRADITIONAL_LONG.encode("big5"), "big5"),
        ("Hello, 世界 and more ASCII text\n".encode("utf-16-le"), "utf-16-le"),
        ("Hello, 世界 and more ASCII text\n".encode("utf-16-be"), "utf-16-be"),
        (SIMPLIFIED_SHORT.encode("utf-16-le"), "utf-16-le"),  # pure Han: no NUL bytes at all
        (SIMPLIFIED_SHORT.encode("utf-16-be"), "utf-16-be"),
        (b"plain ascii", "utf-8"),
        (b"", "utf-8"),
    ],
)
def test_detect_encoding(data, expected):
    assert detect_encoding(data) == expected


@pytest.mark.parametrize(
    ("text", "codec", "expected"),
    [
        (SIMPLIFIED_SHORT, "gbk", "gb18030"),
        (SIMPLIFIED_LONG, "gbk", "gb18030"),
        (TRADITIONAL_SHORT, "big5", "big5"),
        (TRADITIONAL_LONG, "big5", "big5"),
        ("第一章 山雨欲来\n\n夜色渐深，城门外的官道上只剩下一盏孤灯。老人收起棋盘，望着远处的山影，轻声说：“明天怕是要下雨了。”",
         "gbk", "gb18030"),
        ("第一章 山雨欲來\n\n夜色漸深，城門外的官道上只剩下一盞孤燈。老人收起棋盤，望著遠處的山影，輕聲說：「明天怕是要下雨了。」",
         "big5", "big5"),
    ],
)
def test_decode_bytes_gbk_and_big5_without_declaration(text, codec, expected):
    data = text.encode(codec)
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")  # really not UTF-8, so detection had to choose between the CJK codecs
    decoded, encoding = decode_bytes(data)
    assert encoding == expected
    assert decoded == text


def test_detect_encoding_on_a_cut_sample():
    data = SIMPLIFIED_LONG.encode("utf-8")
    cut = data[:1001]  # ends inside a three-byte character
    with pytest.raises(UnicodeDecodeError):
        cut.decode("utf-8")
    assert detect_encoding(cut, final=False) == "utf-8"
    gbk = SIMPLIFIED_LONG.encode("gbk")[:1001]
    assert detect_encoding(gbk, final=False) == "gb18030"


def test_undecodable_bytes_are_an_error_not_mojibake():
    for codec in ("utf-8", "gb18030", "gbk", "big5", "cp950", "utf-16-le", "utf-16-be"):
        with pytest.raises(UnicodeDecodeError):
            UNDECODABLE.decode(codec)
    with pytest.raises(DecodeError) as info:
        decode_bytes(UNDECODABLE)
    assert isinstance(info.value, InputError)
    assert info.value.reason == "cannot decode: not UTF-8/UTF-16/GB18030/Big5"


def test_nul_bytes_mean_binary():
    with pytest.raises(DecodeError, match="binary file"):
        detect_encoding(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")
    with pytest.raises(DecodeError, match="binary file"):
        detect_encoding("正文".encode() + b"\x00" + "还有".encode())


def test_invalid_data_after_a_bom():
    with pytest.raises(DecodeError, match="byte-order mark"):
        detect_encoding(codecs.BOM_UTF8 + b"ok \xff\xfe\xfd")


# --------------------------------------------------------------------------- txt


def test_detect_format():
    assert detect_format(Path("a/b.jsonl")) == "jsonl"
    assert detect_format(Path("b.NDJSON")) == "jsonl"
    assert detect_format(Path("b.json-lines")) == "jsonl"
    assert detect_format(Path("b.csv")) == "csv"
    assert detect_format(Path("b.tsv")) == "csv"
    assert detect_format(Path("b.txt")) == "txt"
    assert detect_format(Path("novel")) == "txt"


@pytest.mark.parametrize(
    ("data", "text", "encoding"),
    [
        (SIMPLIFIED_LONG.encode("utf-8"), SIMPLIFIED_LONG, "utf-8"),
        (codecs.BOM_UTF8 + SIMPLIFIED_LONG.encode("utf-8"), SIMPLIFIED_LONG, "utf-8-sig"),
        (SIMPLIFIED_SHORT.encode("gbk"), SIMPLIFIED_SHORT, "gb18030"),
        (TRADITIONAL_SHORT.encode("big5"), TRADITIONAL_SHORT, "big5"),
        (SIMPLIFIED_LONG.encode("utf-16"), SIMPLIFIED_LONG, "utf-16"),  # with BOM
        (("Chapter 1\n" + SIMPLIFIED_LONG).encode("utf-16-le"), "Chapter 1\n" + SIMPLIFIED_LONG, "utf-16-le"),
        (("Chapter 1\n" + SIMPLIFIED_LONG).encode("utf-16-be"), "Chapter 1\n" + SIMPLIFIED_LONG, "utf-16-be"),
    ],
)
def test_txt_encodings(tmp_path, data, text, encoding):
    path = write(tmp_path / "doc.txt", data)
    [record] = list(read_records([path]))
    assert isinstance(record, Record)
    assert record.text == text
    assert record.encoding == encoding
    assert record.id == str(path)
    assert (record.title, record.fields, record.location, record.offset) == (None, {}, "", 0)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty file"),
        (b" \n\t\r\n", "empty file"),
        ("\u3000\n".encode(), "empty file"),
        (UNDECODABLE, "cannot decode: not UTF-8/UTF-16/GB18030/Big5"),
        (b"text\x00with a NUL byte", "binary file (NUL bytes)"),
    ],
)
def test_txt_rejects(tmp_path, data, reason):
    path = write(tmp_path / "bad.txt", data)
    [item] = list(read_records([path]))
    assert item == Rejected(str(path), "", reason, item.excerpt)


def test_txt_larger_than_the_limit_is_rejected_without_reading(tmp_path, monkeypatch):
    path = write(tmp_path / "big.txt", "字" * 2000)  # 6000 bytes
    real_open = formats.open_binary

    class NoRead:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def fileno(self):
            return self.f.fileno()

        def read(self, *args):
            raise AssertionError("an over-limit txt file must not be read")

    monkeypatch.setattr(formats, "open_binary", lambda p: NoRead(real_open(p)))
    [item] = list(read_records([path], max_record_bytes=1000))
    assert item == Rejected(str(path), "", "record of 6000 bytes exceeds the limit of 1000 bytes")


def test_txt_ids_are_relative_to_the_root(tmp_path):
    write(tmp_path / "corpus" / "b" / "two.txt", "第二篇")
    write(tmp_path / "corpus" / "a.txt", "第一篇")
    single = write(tmp_path / "single.txt", "单独的文件")
    items = list(read_records([tmp_path / "corpus", single]))
    assert [(r.id, r.source, r.text) for r in items] == [
        ("a.txt", str(tmp_path / "corpus" / "a.txt"), "第一篇"),
        ("b/two.txt", str(tmp_path / "corpus" / "b" / "two.txt"), "第二篇"),
        (str(single), str(single), "单独的文件"),
    ]


# --------------------------------------------------------------------------- jsonl


def test_jsonl_fields(tmp_path):
    path = write(tmp_path / "a.jsonl", jsonl(
        {"id": "x1", "text": "正文一", "title": "标题", "url": "http://e.com/1", "source": "新华社",
         "timestamp": "2024-05-01T08:00:00Z", "tags": ["a", "b"]},
        {"id": 42, "text": "正文二"},
        {"text": "正文三", "title": None},
    ))
    items = list(read_records([path]))
    assert rejects(items) == []
    first, second, third = items
    assert first == Record(id="x1", text="正文一", title="标题",
                           fields={"url": "http://e.com/1", "source": "新华社",
                                   "timestamp": "2024-05-01T08:00:00Z", "tags": ["a", "b"]},
                           source=str(path), location="line 1", offset=0, encoding="utf-8")
    assert second.id == "42" and second.location == "line 2"
    assert third.id is None and third.title is None


def test_jsonl_malformed_lines_mixed_with_good_ones(tmp_path):
    lines = [
        '{"id": "1", "text": "好的第一条"}',
        '{"id": "2", "text": "坏的" "x"}',
        "",
        '{"id": "3", "text": "好的第三条"}',
        "not json at all",
        "[1, 2, 3]",
        '"just a string"',
        '{"id": "4", "text": "截断的',
        "   ",
        '{"id": "5", "text": "好的最后一条"}',
    ]
    path = write(tmp_path / "mixed.jsonl", "\n".join(lines) + "\n")
    items = list(read_records([path]))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Record", "line 1"),
        ("Rejected", "line 2"),
        ("Record", "line 4"),
        ("Rejected", "line 5"),
        ("Rejected", "line 6"),
        ("Rejected", "line 7"),
        ("Rejected", "line 8"),
        ("Record", "line 10"),
    ]
    bad = rejects(items)
    assert bad[0].reason == "invalid JSON: Expecting ',' delimiter at column 26"
    assert bad[0].excerpt == lines[1]
    assert bad[1].reason.startswith("invalid JSON: Expecting value at column 1")
    assert bad[2].reason == "not a JSON object (got array)"
    assert bad[3].reason == "not a JSON object (got string)"
    assert bad[4].reason.startswith("invalid JSON: Unterminated string")
    assert [r.id for r in records(items)] == ["1", "3", "5"]


def test_jsonl_offsets_point_at_record_starts(tmp_path):
    content = jsonl({"id": "a", "text": "第一"}, {"id": "b", "text": "第二"}) + "\n" + jsonl({"id": "c", "text": "三"})
    path = write(tmp_path / "o.jsonl", content.replace("\n", "\r\n", 1))
    raw = path.read_bytes()
    items = list(read_records([path]))
    assert [r.location for r in items] == ["line 1", "line 2", "line 4"]
    for record in items:
        line = raw[record.offset:].split(b"\n", 1)[0]
        assert json.loads(line)["id"] == record.id


@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        ({"id": "1"}, "text field 'text' is missing"),
        ({"id": "1", "text": 5}, "text field 'text' is not a string (got int)"),
        ({"id": "1", "text": None}, "text field 'text' is not a string (got null)"),
        ({"id": "1", "text": ["a"]}, "text field 'text' is not a string (got list)"),
        ({"id": "1", "text": "  \n"}, "text field 'text' is empty"),
        ({"id": 1.5, "text": "正文"}, "id field 'id' is not a string or integer (got float)"),
        ({"id": True, "text": "正文"}, "id field 'id' is not a string or integer (got bool)"),
        ({"id": "1", "text": "正文", "title": {"a": 1}}, "title field 'title' is not a string (got dict)"),
    ],
)
def test_jsonl_field_rules(tmp_path, obj, reason):
    path = write(tmp_path / "f.jsonl", jsonl(obj))
    [item] = list(read_records([path]))
    assert isinstance(item, Rejected)
    assert (item.location, item.reason) == ("line 1", reason)
    assert item.excerpt == json.dumps(obj, ensure_ascii=False)


def test_custom_field_names(tmp_path):
    path = write(tmp_path / "c.jsonl", jsonl({"doc_id": 7, "body": "正文", "headline": "标题", "text": "别的"}))
    [record] = list(read_records([path], id_field="doc_id", text_field="body", title_field="headline"))
    assert (record.id, record.text, record.title, record.fields) == ("7", "正文", "标题", {"text": "别的"})
    [item] = list(read_records([path], text_field="content"))
    assert item.reason == "text field 'content' is missing"


def test_long_ids_are_rejected_and_duplicate_ids_are_kept(tmp_path):
    path = write(tmp_path / "ids.jsonl", jsonl(
        {"id": "x" * 10_000, "text": "长id"},
        {"id": "dup", "text": "第一份"},
        {"id": "dup", "text": "第二份"},
        {"id": "字" * 170, "text": "510 bytes is fine"},
        {"id": "字" * 171, "text": "513 bytes is not"},
    ))
    items = list(read_records([path]))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Rejected", "line 1"), ("Record", "line 2"), ("Record", "line 3"), ("Record", "line 4"),
        ("Rejected", "line 5")]
    assert items[0].reason == "id of 10000 bytes exceeds 512"
    assert len(items[0].excerpt) == readers.EXCERPT_CHARS
    assert items[4].reason == "id of 513 bytes exceeds 512"
    assert [(r.id, r.text) for r in items[1:3]] == [("dup", "第一份"), ("dup", "第二份")]


def test_jsonl_huge_line_is_rejected_and_reading_goes_on(tmp_path):
    path = write(tmp_path / "huge.jsonl", jsonl(
        {"id": "before", "text": "前"},
        {"id": "huge", "text": "大" * 5000},
        {"id": "after", "text": "后"},
    ) + '{"id": "tail", "text": "' + "尾" * 400 + '"}')  # last line: no newline, 1226 bytes
    items = list(read_records([path], max_record_bytes=1000))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Record", "line 1"), ("Rejected", "line 2"), ("Record", "line 3"), ("Rejected", "line 4")]
    huge_len = len(json.dumps({"id": "huge", "text": "大" * 5000}, ensure_ascii=False).encode())
    assert items[1].reason == f"record of {huge_len} bytes exceeds the limit of 1000 bytes"
    assert items[1].excerpt.startswith('{"id": "huge"')
    assert items[3].reason == "record of 1226 bytes exceeds the limit of 1000 bytes"
    assert path.read_bytes()[items[2].offset:].startswith(b'{"id": "after"')


def test_jsonl_huge_line_memory_is_bounded(tmp_path):
    size = 24 * 2**20
    with open(tmp_path / "big.jsonl", "wb") as f:
        f.write(b'{"id": "big", "text": "')
        f.write(b"x" * size)
        f.write(b'"}\n{"id": "small", "text": "ok"}\n')
    tracemalloc.start()
    try:
        items = list(read_records([tmp_path / "big.jsonl"], max_record_bytes=4096))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [type(i).__name__ for i in items] == ["Rejected", "Record"]
    assert items[0].reason == f"record of {size + 25} bytes exceeds the limit of 4096 bytes"
    assert peak < 6 * 2**20  # a read chunk or two, never the 24 MB line


def test_jsonl_line_just_at_the_limit_is_accepted(tmp_path):
    line = json.dumps({"id": "a", "text": "x" * 100})
    path = write(tmp_path / "edge.jsonl", line + "\n" + line + "x\n")
    items = list(read_records([path], max_record_bytes=len(line)))
    assert isinstance(items[0], Record)
    assert items[1].reason == f"record of {len(line) + 1} bytes exceeds the limit of {len(line)} bytes"


@pytest.mark.parametrize("codec", ["gbk", "big5"])
def test_jsonl_in_gbk_and_big5(tmp_path, codec):
    text = SIMPLIFIED_SHORT if codec == "gbk" else TRADITIONAL_SHORT
    path = write(tmp_path / "x.jsonl", jsonl({"id": "1", "text": text}, {"id": "2", "text": text[:10]}).encode(codec))
    items = list(read_records([path]))
    assert [(r.id, r.text, r.encoding) for r in items] == [
        ("1", text, "gb18030" if codec == "gbk" else "big5"),
        ("2", text[:10], "gb18030" if codec == "gbk" else "big5"),
    ]


@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_jsonl_bom_and_utf16(tmp_path, codec):
    content = jsonl({"id": "1", "text": SIMPLIFIED_SHORT}, {"id": "2", "text": "第二条 with ASCII"})
    content += "\n" + "{broken\n" + jsonl({"id": "3", "text": "😀 surrogate pair"})
    data = content.encode(codec)
    path = write(tmp_path / "u.jsonl", data)
    items = list(read_records([path]))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Record", "line 1"), ("Record", "line 2"), ("Rejected", "line 4"), ("Record", "line 5")]
    assert [r.text for r in records(items)] == [SIMPLIFIED_SHORT, "第二条 with ASCII", "😀 surrogate pair"]
    assert {r.encoding for r in records(items)} == {codec}
    assert items[2].reason.startswith("invalid JSON")
    # Offsets are exact byte offsets, usable for seeking, in every encoding.
    unit_codec = {"utf-8-sig": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}.get(codec, codec)
    for record in records(items):
        tail = data[record.offset:].decode(unit_codec, "replace")
        assert tail.startswith(f'{{"id": "{record.id}"')


def test_jsonl_utf16_huge_line(tmp_path):
    content = jsonl({"id": "1", "text": "大" * 600}, {"id": "2", "text": "小"})
    path = write(tmp_path / "u16.jsonl", content.encode("utf-16"))
    items = list(read_records([path], max_record_bytes=1000))
    assert [type(i).__name__ for i in items] == ["Rejected", "Record"]
    expected = len(json.dumps({"id": "1", "text": "大" * 600}, ensure_ascii=False).encode("utf-16-le"))
    assert items[0].reason == f"record of {expected} bytes exceeds the limit of 1000 bytes"
    assert items[1].id == "2"


def test_jsonl_undecodable_line_is_rejected_alone(tmp_path):
    data = (jsonl({"id": "1", "text": "好"}).encode() + b'{"id": "2", "text": "\xff\xfe"}\n'
            + jsonl({"id": "3", "text": "也好"}).encode())
    path = write(tmp_path / "d.jsonl", data)
    items = list(read_records([path]))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Record", "line 1"), ("Rejected", "line 2"), ("Record", "line 3")]
    assert items[1].reason.startswith("cannot decode as utf-8")
    assert "\\xff" in items[1].excerpt


def test_jsonl_binary_and_empty_and_undecodable_files(tmp_path):
    empty = write(tmp_path / "a.jsonl", b"")
    binary = write(tmp_path / "b.jsonl", b'{"id": "1"}\n\x00\x01\x02\x03')
    garbage = write(tmp_path / "c.jsonl", UNDECODABLE)
    blank = write(tmp_path / "d.jsonl", b"\n\n  \n")
    items = list(read_records([tmp_path]))
    assert items == [
        Rejected(str(empty), "", "empty file"),
        Rejected(str(binary), "", "binary file (NUL bytes)", items[1].excerpt),
        # Lines are decoded one by one, so an undecodable line is rejected on its own.
        Rejected(str(garbage), "line 1", "cannot decode as utf-8: invalid start byte at byte 4 of the record",
                 "abc \\xff\\x80\\xff\\x80 xyz!"),
    ]
    assert str(blank) not in {i.source for i in items}  # only blank lines: nothing to report


def test_jsonl_ascii_start_then_gbk(tmp_path):
    """The first 64 KiB are pure ASCII (any encoding fits); the first non-ASCII line decides."""
    head = jsonl(*({"id": f"en{i}", "text": "plain English text " * 5} for i in range(800)))
    assert len(head) > readers.SAMPLE_BYTES
    tail = jsonl({"id": "zh1", "text": SIMPLIFIED_SHORT}, {"id": "zh2", "text": SIMPLIFIED_LONG[:100]})
    path = write(tmp_path / "mixed.jsonl", head.encode("ascii") + tail.encode("gbk"))
    items = list(read_records([path]))
    assert rejects(items) == []
    assert len(items) == 802
    assert (items[0].encoding, items[-1].encoding) == ("utf-8", "gb18030")
    assert items[-2].text == SIMPLIFIED_SHORT


@pytest.mark.parametrize("text", [SIMPLIFIED_SHORT, "今天上午", "新闻"])
def test_jsonl_mixed_utf8_and_gbk_lines(tmp_path, text):
    """Concatenated files. GB18030 decodes some UTF-8 text too ("新闻" -> "鏂伴椈"): mojibake."""
    utf8 = jsonl({"id": "1", "text": text}).encode()
    gbk = jsonl({"id": "2", "text": text}).encode("gbk")
    path = write(tmp_path / "m.jsonl", utf8 + gbk + utf8)
    items = list(read_records([path]))
    assert [(r.text, r.encoding) for r in items] == [(text, "utf-8"), (text, "gb18030"), (text, "utf-8")]


def test_mixed_utf8_and_gbk_document_is_not_decoded_into_mojibake():
    data = ("新闻今天上午" * 3).encode() + "今天上午".encode("gbk")
    assert data.decode("gb18030")  # decodes, but the first part would be mojibake
    with pytest.raises(DecodeError) as info:
        decode_bytes(data)
    assert info.value.reason == "cannot decode: partly UTF-8, partly another encoding"


def test_jsonl_utf8_file_with_a_gbk_line_after_the_sample(tmp_path):
    head = jsonl(*({"id": str(i), "text": SIMPLIFIED_SHORT} for i in range(700))).encode()
    assert len(head) > readers.SAMPLE_BYTES
    path = write(tmp_path / "u.jsonl", head + jsonl({"id": "gbk", "text": "中文"}).encode("gbk"))
    items = list(read_records([path]))
    assert len(records(items)) == 700
    [bad] = rejects(items)
    assert (bad.location, bad.reason) == ("line 701", "cannot decode as utf-8: invalid continuation byte "
                                                      "at byte 23 of the record")


# --------------------------------------------------------------------------- csv


def test_csv_with_embedded_newlines(tmp_path):
    content = (
        'id,title,text,url\r\n'
        '1,第一篇,"第一段\n第二段, 带逗号",http://e.com/1\r\n'
        '2,"带""引号""的标题","单行",http://e.com/2\r\n'
        '\r\n'
        '3,,"多行\r\n\r\n结尾",\r\n'
    )
    path = write(tmp_path / "a.csv", content)
    raw = path.read_bytes()
    items = list(read_records([path]))
    assert rejects(items) == []
    assert [(r.id, r.title, r.text, r.fields, r.location) for r in items] == [
        ("1", "第一篇", "第一段\n第二段, 带逗号", {"url": "http://e.com/1"}, "row 1"),
        ("2", '带"引号"的标题', "单行", {"url": "http://e.com/2"}, "row 2"),
        ("3", None, "多行\r\n\r\n结尾", {"url": ""}, "row 4"),
    ]
    assert [raw[r.offset:r.offset + 2] for r in items] == [b"1,", b"2,", b"3,"]


def test_tsv(tmp_path):
    path = write(tmp_path / "a.tsv", "id\ttext\tsource\n1\t正文, 带逗号\t新华社\n")
    [record] = list(read_records([path]))
    assert (record.id, record.text, record.fields) == ("1", "正文, 带逗号", {"source": "新华社"})


@pytest.mark.parametrize("name,fmt", [("a.tsv", "auto"), ("a.tsv", "csv"), ("a.txt", "tsv")])
def test_tsv_has_no_quoting_one_record_per_line(tmp_path, name, fmt):
    """Tab-separated exports do not quote: a cell that opens a quote (or holds one) is text, and every
    line stays one record; a CSV keeps its quoting."""
    lines = ["id\ttext", '1\t"开了引号没有关', '2\t他说"好"', '3\t"整格带引号"', "4\t尾部\r"]
    lines += [f"{i}\t第{i}行" for i in range(5, 1001)]
    path = write(tmp_path / name, "\n".join(lines) + "\n")
    records = list(read_records([path], format=fmt))
    assert all(isinstance(r, Record) for r in records)
    assert [r.id for r in records] == [str(i) for i in range(1, 1001)]
    assert [r.text for r in records[:4]] == ['"开了引号没有关', '他说"好"', '"整格带引号"', "尾部"]
    assert [r.location for r in records[:2]] == ["row 1", "row 2"]


def test_csv_keeps_its_quoting(tmp_path):
    path = write(tmp_path / "a.csv", 'id,text\n1,"两行\n正文"\n2,好\n')
    assert [r.text for r in read_records([path])] == ["两行\n正文", "好"]


def test_csv_rejects(tmp_path):
    content = (
        "id,text,title\n"
        "1,好的,\n"
        "2,,空正文\n"
        "3,好的,标题,多余\n"
        "4\n"
        f"{'x' * 600},好的,\n"
        "6,还是好的,标题\n"
    )
    path = write(tmp_path / "r.csv", content)
    items = list(read_records([path]))
    assert [(type(i).__name__, i.location, getattr(i, "reason", None)) for i in items] == [
        ("Record", "row 1", None),
        ("Rejected", "row 2", "text field 'text' is empty"),
        ("Rejected", "row 3", "row has 4 fields but the header has 3"),
        ("Rejected", "row 4", "text field 'text' is missing"),
        ("Rejected", "row 5", "id of 600 bytes exceeds 512"),
        ("Record", "row 6", None),
    ]


def test_csv_header_only_and_empty(tmp_path):
    write(tmp_path / "a.csv", "id,text\n")
    empty = write(tmp_path / "b.csv", "")
    assert list(read_records([tmp_path])) == [Rejected(str(empty), "", "empty file")]


def test_csv_over_long_multiline_record(tmp_path):
    big = "长文本\n" * 200  # 2000 bytes across many lines
    content = f'id,text\n1,"{big}"\n2,短\n3,"{big[:30]}"\n'
    path = write(tmp_path / "long.csv", content)
    items = list(read_records([path], max_record_bytes=1000))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Rejected", "row 1"), ("Record", "row 2"), ("Record", "row 3")]
    row_bytes = len(f'1,"{big}"\n'.encode())
    assert items[0].reason == f"record of {row_bytes} bytes exceeds the limit of 1000 bytes"
    assert (items[1].id, items[1].text) == ("2", "短")
    assert items[2].text == big[:30]


def test_csv_field_bigger_than_the_csv_module_default(tmp_path):
    text = "字" * 200_000  # beyond csv's default field limit of 131072 characters
    path = write(tmp_path / "big.csv", f'id,text\n1,"{text}"\n')
    [record] = list(read_records([path]))
    assert record.text == text


def test_csv_encodings(tmp_path):
    gbk = write(tmp_path / "a.csv", f"id,text\n1,{SIMPLIFIED_SHORT}\n".encode("gbk"))
    big5 = write(tmp_path / "b.csv", f"id,text\n1,{TRADITIONAL_SHORT}\n".encode("big5"))
    u16 = write(tmp_path / "c.csv", f'id,text\n1,"{SIMPLIFIED_SHORT}\n第二行"\n2,x\n'.encode("utf-16"))
    items = list(read_records([tmp_path]))
    assert [(r.source, r.text, r.encoding) for r in items] == [
        (str(gbk), SIMPLIFIED_SHORT, "gb18030"),
        (str(big5), TRADITIONAL_SHORT, "big5"),
        (str(u16), SIMPLIFIED_SHORT + "\n第二行", "utf-16"),
        (str(u16), "x", "utf-16"),
    ]


def test_csv_undecodable_row(tmp_path):
    path = write(tmp_path / "d.csv", b"id,text\n1,ok\n2,\"bad \xff\nstill bad\"\n3,fine\n")
    items = list(read_records([path]))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Record", "row 1"), ("Rejected", "row 2"), ("Record", "row 3")]
    assert items[1].reason.startswith("cannot decode as utf-8")


# --------------------------------------------------------------------------- walking files


def test_directory_walk_is_sorted_and_skips_hidden_files(tmp_path):
    root = tmp_path / "corpus"
    # Created in reverse order so that directory order is unlikely to be sorted already.
    for name in ["z.txt", "m/2.jsonl", "m/1.txt", "b.csv", "a.txt", ".hidden.txt", ".git/config"]:
        suffix = Path(name).suffix
        body = {"jsonl": jsonl({"text": "内容"}), "csv": "text\n内容\n"}.get(suffix[1:], "内容")
        write(root / name, body)
    expected = ["a.txt", "b.csv", "m/1.txt", "m/2.jsonl", "z.txt"]
    assert [p.relative_to(root).as_posix() for p in iter_files([root])] == expected
    first = [(r.source, r.location) for r in read_records([root])]
    assert [Path(s).relative_to(root).as_posix() for s, _ in first] == expected
    assert first == [(r.source, r.location) for r in read_records([root])]
    assert list(iter_files([root / ".hidden.txt"])) == [root / ".hidden.txt"]  # explicitly named


def test_symlink_loop(tmp_path):
    root = tmp_path / "root"
    write(root / "a.txt", "甲")
    write(root / "sub" / "b.txt", "乙")
    (root / "sub" / "loop").symlink_to("..", target_is_directory=True)
    (root / "link.txt").symlink_to("a.txt")  # a file symlink is followed...
    items = list(read_records([root]))
    loops = [i for i in rejects(items) if i.reason == "symlink loop"]
    assert loops == [Rejected(str(root / "sub" / "loop"), "", "symlink loop")]
    # ...but each real file is read once only.
    assert sorted(r.text for r in records(items)) == ["乙", "甲"]
    assert len(items) == 3


def test_symlink_to_self_and_broken_symlink(tmp_path):
    (tmp_path / "self").symlink_to("self")
    (tmp_path / "dangling.txt").symlink_to("missing.txt")
    items = list(iter_files([tmp_path, tmp_path / "nope.txt"]))
    assert items == [
        Rejected(str(tmp_path / "dangling.txt"), "", "broken symlink"),
        Rejected(str(tmp_path / "self"), "", "symlink loop"),
        Rejected(str(tmp_path / "nope.txt"), "", "no such file or directory"),
    ]


def test_unreadable_file(tmp_path):
    write(tmp_path / "a.txt", "可读")
    locked = write(tmp_path / "b.txt", "不可读")
    locked.chmod(0)
    try:
        items = list(read_records([tmp_path]))
    finally:
        locked.chmod(0o644)
    assert records(items)[0].text == "可读"
    if os.geteuid() == 0:
        # root reads mode-000 files, so there is no permission error to see: the file is read.
        assert len(items) == 2
    else:
        assert items[1] == Rejected(str(locked), "", "permission denied")


def test_permission_denied_even_as_root(tmp_path, monkeypatch):
    """The same paths with the permission checks forced to fail, so root runs test them too."""
    write(tmp_path / "a.txt", "可读")
    locked = write(tmp_path / "b.txt", "不可读")
    locked_dir = tmp_path / "c"
    write(locked_dir / "x.txt", "看不到")
    vanished = write(tmp_path / "d.jsonl", jsonl({"text": "打不开"}))
    real_access, real_scandir, real_open = os.access, os.scandir, formats.open_binary

    def access(path, mode):
        return False if Path(path) == locked else real_access(path, mode)

    def scandir(path):
        if Path(path) == locked_dir:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def open_binary(path):
        if Path(path) == vanished:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path)

    monkeypatch.setattr(files.os, "access", access)
    monkeypatch.setattr(files.os, "scandir", scandir)
    monkeypatch.setattr(formats, "open_binary", open_binary)
    items = list(read_records([tmp_path]))
    assert items == [
        items[0],
        Rejected(str(locked), "", "permission denied"),
        Rejected(str(locked_dir), "", "permission denied"),
        Rejected(str(vanished), "", "permission denied"),
    ]
    assert items[0].text == "可读"


def test_same_file_given_twice_is_read_once(tmp_path):
    path = write(tmp_path / "a.txt", "一次")
    assert [r.text for r in read_records([path, tmp_path, str(path)])] == ["一次"]


# --------------------------------------------------------------------------- resume, options


def test_skip_resumes_after_a_checkpoint(tmp_path):
    jl = write(tmp_path / "a.jsonl", jsonl(*({"id": str(i), "text": f"第{i}条"} for i in range(5)))
               + "not json\n\n" + jsonl({"id": "5", "text": "最后"}))
    txt = write(tmp_path / "b.txt", "文本")
    csvf = write(tmp_path / "c.csv", 'id,text\n1,一\n2,"二\n二"\n3,三\n')
    full = list(read_records([tmp_path]))
    assert [i.location for i in full] == [f"line {n}" for n in (1, 2, 3, 4, 5, 6, 8)] + [""] + [
        "row 1", "row 2", "row 3"]
    checkpoint = {str(jl): full[2].offset, str(csvf): full[9].offset}
    asked: list[tuple[str, int]] = []

    def skip(source, offset):
        asked.append((source, offset))
        return source == str(txt) or offset <= checkpoint.get(source, -1)

    resumed = list(read_records([tmp_path], skip=skip))
    assert resumed == full[3:7] + full[10:]
    raw = jl.read_bytes()
    line_starts = [0] + [i + 1 for i, byte in enumerate(raw[:-1]) if byte == ord("\n")]
    blank = raw.index(b"\n\n") + 1
    assert [o for s, o in asked if s == str(jl)] == [o for o in line_starts if o != blank]
    assert [o for s, o in asked if s == str(txt)] == [0]
    raw = csvf.read_bytes()
    assert [o for s, o in asked if s == str(csvf)] == [raw.index(b"1,"), raw.index(b"2,"), raw.index(b"3,")]


def test_forced_format_and_bad_options(tmp_path):
    path = write(tmp_path / "data.txt", jsonl({"id": "1", "text": "正文"}))
    [record] = list(read_records([path], format="jsonl"))
    assert (record.id, record.text) == ("1", "正文")
    [whole] = list(read_records(str(path)))  # a single path is accepted, read as txt by name
    assert whole.text.startswith('{"id"')
    with pytest.raises(ConfigError):
        read_records([path], format="xml")  # raised at the call, before iterating
    with pytest.raises(ConfigError):
        read_records([path], max_record_bytes=0)


def test_counts_add_up_and_nothing_is_printed(tmp_path, capsys):
    write(tmp_path / "a.jsonl", jsonl({"text": "一"}, {"no": "text"}) + "{bad\n\n")
    write(tmp_path / "b.csv", "text\n二\n\n三\n")
    write(tmp_path / "c.txt", "四")
    write(tmp_path / "d.txt", "")
    write(tmp_path / "e.txt", UNDECODABLE)
    items = list(read_records([tmp_path]))
    assert (len(records(items)), len(rejects(items))) == (4, 4)
    assert capsys.readouterr() == ("", "")


def test_bom_only_txt_is_empty(tmp_path):
    path = write(tmp_path / "bom.txt", codecs.BOM_UTF8)
    assert list(read_records([path])) == [Rejected(str(path), "", "empty file")]


def test_jsonl_unpaired_surrogate_escape(tmp_path):
    path = write(tmp_path / "s.jsonl", '{"id": "1", "text": "bad \\ud83d here"}\n'
                 '{"id": "2", "text": "ok \\ud83d\\ude00 pair"}\n'
                 '{"id": "3\\udc00", "text": "bad id"}\n')
    items = list(read_records([path]))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Rejected", "line 1"), ("Record", "line 2"), ("Rejected", "line 3")]
    assert items[0].reason == "text field 'text' has an unpaired surrogate escape"
    assert items[1].text == "ok 😀 pair"
    assert items[2].reason == "id field 'id' has an unpaired surrogate escape"


def test_gbk_jsonl_with_a_corrupt_line(tmp_path):
    good = [jsonl({"id": str(i), "text": SIMPLIFIED_SHORT[i:]}).encode("gbk") for i in range(3)]
    bad = b'{"id": "x", "text": "\xd6\xd0\xff"}\n'
    path = write(tmp_path / "g.jsonl", good[0] + bad + good[1] + good[2])
    items = list(read_records([path]))
    assert [(type(i).__name__, i.location) for i in items] == [
        ("Record", "line 1"), ("Rejected", "line 2"), ("Record", "line 3"), ("Record", "line 4")]
    assert {r.encoding for r in records(items)} == {"gb18030"}
    assert items[1].reason.startswith("cannot decode as gb18030")


def test_big5_with_microsoft_extensions_uses_cp950(tmp_path):
    text = "他們在碁盤前坐了很久，恒久不變的是這份心情。"
    data = text.encode("cp950")
    with pytest.raises(UnicodeDecodeError):
        data.decode("big5")
    assert decode_bytes(data) == (text, "cp950")


def test_csv_header_rules(tmp_path):
    bom = write(tmp_path / "a.csv", codecs.BOM_UTF8 + "id, text ,title\n1,正文,标题\n".encode())
    dup = write(tmp_path / "b.csv", "id,text,text\n1,一,二\n")
    nocol = write(tmp_path / "c.csv", "id,body\n1,一\n2,二\n")
    items = list(read_records([tmp_path]))
    assert items[0] == Record(id="1", text="正文", title="标题", fields={}, source=str(bom),
                              location="row 1", offset=len("id, text ,title\n") + 3, encoding="utf-8-sig")
    assert items[1] == Rejected(str(dup), "header", "CSV header has column 'text' more than once", "id,text,text")
    assert [(i.source, i.location, i.reason) for i in items[2:]] == [
        (str(nocol), "row 1", "text field 'text' is missing"),
        (str(nocol), "row 2", "text field 'text' is missing"),
    ]


def test_special_files_and_duplicate_directories(tmp_path, caplog):
    root = tmp_path / "root"
    write(root / "real" / "a.txt", "一")
    (root / "alias").symlink_to("real", target_is_directory=True)  # not a loop: same files twice
    os.mkfifo(root / "pipe")
    with caplog.at_level("WARNING", logger="esdedup.readers.files"):
        items = list(read_records([root]))
    assert [(type(i).__name__, i.source) for i in items] == [
        ("Record", str(root / "alias" / "a.txt")),
        ("Rejected", str(root / "pipe")),
    ]
    assert items[0].id == "alias/a.txt"
    assert items[1].reason == "not a regular file"
    assert "same directory" in caplog.text


def test_csv_malformed_quoting_is_rejected_not_merged(tmp_path):
    stray = write(tmp_path / "a.csv", 'id,text\n1,ok\n2,"x"y,z\n3,fine\n')
    unclosed = write(tmp_path / "b.csv", 'id,text\n1,"unclosed\n2,b\n3,c\n')
    items = list(read_records([tmp_path]))
    assert [(type(i).__name__, i.source, i.location) for i in items] == [
        ("Record", str(stray), "row 1"),
        ("Rejected", str(stray), "row 2"),
        ("Record", str(stray), "row 3"),
        ("Rejected", str(unclosed), "row 1"),  # the rest of the file, visibly, not one merged record
    ]
    assert items[1].reason == "invalid CSV: ',' expected after '\"'"
    assert items[3].reason == "invalid CSV: unexpected end of data"
    assert items[3].excerpt == '1,"unclosed\n2,b\n3,c\n'


# Lines that a UTF-8 JSONL file may hold: records that orjson reads as they are, and every kind of line it
# leaves to the long way (a float, a BOM, surrogates, blanks, bad fields, raw NUL, GBK bytes, broken JSON).
JSONL_LINES = [
    '{"id": "a", "text": "今天上午，市政府召开新闻发布会"}'.encode(),
    b'{"id": 7, "text": "hello", "title": 3, "url": "u"}',
    b'{"id": "q", "text": "plain ascii", "title": ""}',
    b'{"text": "x", "title": 1.5}',
    b'{"text": "x", "n": 1e400}',
    b'{"text": "x", "big": 123456789012345678901234567890}',
    b'{"text": "\\ud800"}',
    b'{"text": "\\ud83d\\ude00", "id": ""}',
    '\ufeff{"text": "bom"}'.encode(),
    b"",
    b"   ",
    b"[1, 2]",
    b'{"text": ""}',
    b'{"text": "  "}',
    b'{"id": true, "text": "x"}',
    b'{"id": "' + b"x" * 600 + b'", "text": "long id"}',
    b'{"text": "x", "title": [1]}',
    b'{"text": "a\x00b"}',
    '{"text": "测试"}'.encode("gbk"),
    b'{"text": "x"',
    b'{"text": "x", "text": "y"}',
    b'{"text": "cr"}\r',
    b'{"text": "x", "v": NaN}',
    b'{"text": "x", "extra": {"deep": [1, {"a": "b"}]}}',
    b'{"txt": "no text field"}',
    b'{"id": -5, "text": "x", "title": 0, "a": {"b": [true, null, -3]}}',
    b'{"id": 9223372036854775808, "text": "x"}',
    b'{"id": 1.0, "text": "x"}',
    b'{"text": "x", "title": false}',
    b'{"text": "x", "title": null, "id": null}',
    b'{"text": 5}',
    b'{"text": "x", "deep": [[[2.5]]]}',
    b'{"title": "t", "text": "x", "id": "z", "text2": "y"}',
]


#: Pure ASCII lines beyond the encoding's sample: the file's UTF-8 is provisional until a later line settles it.
ASCII_START = [b'{"id": "f%d", "text": "%s"}' % (i, b"x" * 1000) for i in range(70)]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(JSONL_LINES), max_size=12), st.booleans(), st.booleans(),
       st.sampled_from([60, 2000, 1 << 20]), st.integers(0, 3))
# A UTF-8 line read the short way settles the file's UTF-8: the GBK line after it is rejected, not re-detected.
@example(chosen=[JSONL_LINES[0], JSONL_LINES[18]], ascii_start=True, newline_at_end=True, limit=1 << 20, skip_mod=0)
def test_a_jsonl_file_reads_the_same_with_and_without_reading_plain_lines_from_their_bytes(
        tmp_path_factory, chosen, ascii_start, newline_at_end, limit, skip_mod):
    """Every record, rejection and resume question is the same when no line is read the short way."""
    path = tmp_path_factory.mktemp("plain") / "a.jsonl"
    path.write_bytes(b"\n".join((ASCII_START if ascii_start else []) + chosen) + (b"\n" if newline_at_end else b""))

    def read() -> tuple[list[tuple[object, int | None]], list[int]]:
        asked: list[int] = []

        def skip(source: str, offset: int) -> bool:
            asked.append(offset)
            return bool(skip_mod) and offset % skip_mod == 1

        items = [(i, i.offset) for i in read_records([path], format="jsonl", max_record_bytes=limit, skip=skip)]
        return items, asked

    short = read()
    plain_line = formats._plain_line
    formats._plain_line = lambda *args: None
    try:
        long = read()
    finally:
        formats._plain_line = plain_line
    assert short == long


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"a", b"\xe4\xbd\xa0", b'"', b"x" * 9]), max_size=40),
       st.integers(1, 12), st.integers(1, 7))
def test_single_byte_lines_are_split_as_the_aligned_search_splits_them(data, limit, chunk):
    """The short search of single-byte lines finds each line, its offset, its end and its head as the search
    that any code unit takes does, across reads of any size and lines over the limit."""
    def split() -> list[tuple[int, int, bytes | None, bytes, bool, int]]:
        return [(x.offset, x.length, x.data, x.head, x.terminated, x.quotes)
                for x in lines.split_lines(io.BytesIO(b"".join(data)), 0, b"\n", limit)]

    chunk_bytes, byte_lines = lines._CHUNK_BYTES, lines._Splitter._byte_lines
    lines._CHUNK_BYTES = chunk
    try:
        short = split()
        lines._Splitter._byte_lines = lines._Splitter._aligned_lines
        aligned = split()
    finally:
        lines._CHUNK_BYTES, lines._Splitter._byte_lines = chunk_bytes, byte_lines
    assert short == aligned
    assert sum(x[1] for x in short) + sum(x[4] for x in short) == len(b"".join(data))
