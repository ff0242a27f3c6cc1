"""Tests of esdedup.readers.files: canonical source names and file ids, input checks, reading one file whole."""
from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path

import pytest

from esdedup.errors import ConfigError, DecodeError, InputError, InputNotFound
from esdedup.readers import Record, Rejected, check_inputs, read_records, read_text_file, source_name


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --------------------------------------------------------------------------- ids and source names


def test_ids_do_not_collide_across_input_folders(tmp_path, monkeypatch):
    """`ingest y/2023 y/2024`, each with its own 001.txt: two documents, with ids inside the folders' common
    folder, the same from any working directory and spelling; one folder given keeps ids inside it."""
    first = write(tmp_path / "y" / "2023" / "001.txt", "二〇二三年的第一篇")
    second = write(tmp_path / "y" / "2024" / "001.txt", "二〇二四年的第一篇")
    write(tmp_path / "z" / "2023" / "001.txt", "另一个二〇二三")
    items = list(read_records([tmp_path / "y" / "2023", tmp_path / "y" / "2024"]))
    assert [(type(i).__name__, i.id, i.source) for i in items] == [
        ("Record", "2023/001.txt", str(first)), ("Record", "2024/001.txt", str(second))]
    monkeypatch.chdir(tmp_path / "y")
    assert [r.id for r in read_records(["./2023/", "2024"])] == ["2023/001.txt", "2024/001.txt"]
    assert [r.id for r in read_records([tmp_path / "y"])] == ["2023/001.txt", "2024/001.txt"]
    assert [r.id for r in read_records(["2023"])] == ["001.txt"]
    assert [r.id for r in read_records([tmp_path / "y" / "2023", tmp_path / "z" / "2023"])] == [
        "y/2023/001.txt", "z/2023/001.txt"]


def test_distinct_files_reached_twice_keep_one_id(tmp_path):
    """The same real file given under two spellings is one file (read once), not a collision."""
    path = write(tmp_path / "a" / "x.txt", "一篇")
    items = list(read_records([path, tmp_path / "a" / ".." / "a" / "x.txt", tmp_path / "a"]))
    assert [(type(i).__name__, i.id) for i in items] == [("Record", str(path))]


def test_path_spellings_give_one_source_and_id(tmp_path, monkeypatch):
    """./a/../a/x.txt, a trailing slash, an absolute path and a symlink all name the same file: the same
    source (the checkpoint key) and the same id, from any working directory."""
    path = write(tmp_path / "a" / "x.txt", "同一篇文章")
    (tmp_path / "link.txt").symlink_to(path)
    (tmp_path / "dirlink").symlink_to(tmp_path / "a", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    files = ["./a/../a/x.txt", "a/x.txt", str(path), "link.txt", f"{tmp_path}//a/./x.txt"]
    seen = {(r.id, r.source) for f in files for r in read_records([f])}
    assert seen == {(str(path), str(path))}
    folders = ["a", "a/", "./a", str(tmp_path / "a"), "dirlink", "dirlink/"]
    seen = {(r.id, r.source) for f in folders for r in read_records([f])}
    assert seen == {("x.txt", str(path))}
    monkeypatch.chdir(tmp_path / "a")
    assert [r.source for r in read_records(["x.txt"])] == [str(path)]
    assert source_name("../a/x.txt") == str(path)


def test_rejections_name_the_link_not_its_target(tmp_path, monkeypatch):
    (tmp_path / "dangling.txt").symlink_to("missing.txt")
    monkeypatch.chdir(tmp_path)
    assert list(read_records(["./dangling.txt"])) == [Rejected(str(tmp_path / "dangling.txt"), "", "broken symlink")]


GBK_NAME = "中文.txt".encode("gbk")  # b"\xd6\xd0\xce\xc4.txt": not valid UTF-8


def _gbk_named(folder: Path, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    raw = os.path.join(os.fsencode(folder), GBK_NAME)
    with open(raw, "wb") as fh:
        fh.write(data)
    return Path(os.fsdecode(raw))


def test_file_name_that_is_not_utf8_is_carried_as_escapes(tmp_path):
    """A GBK file name on a UTF-8 system: the source and id are printable text that any JSON writer and
    any store accept, and the same from run to run."""
    _gbk_named(tmp_path / "d", "正文".encode())
    empty = _gbk_named(tmp_path / "e", b"")
    items = list(read_records([tmp_path / "d", tmp_path / "e"]))
    assert [type(i).__name__ for i in items] == ["Record", "Rejected"]
    record, rejected = items
    assert record.id == "d/\\xd6\\xd0\\xce\\xc4.txt"  # two folders given: the path inside both
    assert record.source == f"{tmp_path}/d/\\xd6\\xd0\\xce\\xc4.txt"
    assert rejected.source == f"{tmp_path}/e/\\xd6\\xd0\\xce\\xc4.txt"
    for item in items:
        json.dumps(dataclasses.asdict(item), ensure_ascii=False).encode("utf-8")  # what the dead-letter file does
    assert [i.source for i in read_records([tmp_path / "d", tmp_path / "e"])] == [i.source for i in items]
    assert source_name(empty) == rejected.source


# --------------------------------------------------------------------------- input checks


def test_check_inputs_names_every_missing_path(tmp_path):
    good = write(tmp_path / "a.txt", "有")
    assert check_inputs([good, tmp_path]) == [good, tmp_path]
    assert check_inputs(str(good)) == [good]
    with pytest.raises(InputNotFound) as info:
        check_inputs([good, tmp_path / "nosuchdir"])
    assert info.value.exit_code == 2 and isinstance(info.value, InputError)
    assert str(info.value) == f"input path does not exist: {tmp_path / 'nosuchdir'} (no such file or directory)"
    (tmp_path / "dangling").symlink_to("gone")
    with pytest.raises(InputNotFound, match="broken symlink"):
        check_inputs([tmp_path / "dangling"])
    with pytest.raises(InputNotFound) as info:
        check_inputs(["x1", "x2"])
    assert str(info.value) == "input paths do not exist: x1, x2"
    with pytest.raises(ConfigError):
        check_inputs([])


# --------------------------------------------------------------------------- reading one file whole


def test_read_text_file(tmp_path):
    path = write(tmp_path / "gbk.txt", "简体中文的正文。".encode("gbk"))
    assert read_text_file(path) == "简体中文的正文。"
    with pytest.raises(InputNotFound) as info:
        read_text_file(tmp_path / "missing.txt")
    assert str(info.value) == f"{tmp_path / 'missing.txt'}: no such file"
    with pytest.raises(DecodeError) as decode:
        read_text_file(write(tmp_path / "bin.txt", b"PK\x03\x04\x00\x00" + bytes(range(256))))
    assert str(decode.value) == f"{tmp_path / 'bin.txt'}: binary file (NUL bytes)"


def test_read_text_file_refuses_devices_and_large_files(tmp_path):
    with pytest.raises(InputError) as info:
        read_text_file("/dev/zero")  # endless: would be read until memory runs out
    assert str(info.value) == "/dev/zero: not a regular file (FIFOs and devices cannot be read whole)"
    big = write(tmp_path / "big.txt", "字" * 1000)
    with pytest.raises(InputError) as info:
        read_text_file(big, max_bytes=2999)
    assert str(info.value) == f"{big}: file of 3000 bytes exceeds the limit of 2999 bytes"
    assert read_text_file(big, max_bytes=3000) == "字" * 1000


def test_read_text_file_does_not_wait_on_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome: list[BaseException | str] = []

    def read() -> None:
        try:
            outcome.append(read_text_file(fifo))
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever happened
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # blocked in open(): release it by opening the other end, then fail
        with open(fifo, "wb"):
            pass
        reader.join(10)
        pytest.fail("reading a FIFO waited for a writer")
    [error] = outcome
    assert isinstance(error, InputError) and "not a regular file" in str(error)


def test_records_of_a_file_are_read_through_a_safe_open(tmp_path):
    """A FIFO met inside a walked folder is reported, never opened (the walk would hang)."""
    write(tmp_path / "a.txt", "正文")
    os.mkfifo(tmp_path / "b.jsonl")
    items = list(read_records([tmp_path]))
    assert [type(i) for i in items] == [Record, Rejected]
    assert items[1].reason == "not a regular file"


def test_a_resumed_run_keeps_the_ids_of_finished_files(tmp_path):
    """A file finished by the run being resumed is not read again, and the files after it keep the ids the
    whole run gives them."""
    first = write(tmp_path / "y" / "2023" / "001.txt", "第一篇")
    second = write(tmp_path / "y" / "2024" / "001.txt", "第二篇")
    items = list(read_records([tmp_path / "y" / "2023", tmp_path / "y" / "2024"],
                              skip_file=lambda source: source == str(first)))
    assert [(type(i).__name__, i.id, i.source) for i in items] == [("Record", "2024/001.txt", str(second))]


def test_hidden_files_in_a_folder_are_skipped_with_a_warning_and_read_when_named(tmp_path, caplog):
    import logging

    from esdedup.readers import read_records

    folder = tmp_path / "in"
    folder.mkdir()
    hidden = folder / ".part-0001.jsonl"
    hidden.write_text('{"id": "a", "text": "今天天气很好"}\n', "utf-8")
    with caplog.at_level(logging.WARNING, logger="esdedup.readers.files"):
        assert list(read_records([folder])) == []
    [warning] = [r.getMessage() for r in caplog.records]
    assert "skipping 1 hidden file(s) or folder(s)" in warning and ".part-0001.jsonl" in warning, warning
    assert [r.id for r in read_records([hidden])] == ["a"]
