"""Checkpoint.save: any source name can be saved, and a failed save leaves no temporary file behind; where runs
keep their checkpoints while the tests run."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from esdedup.ingest.checkpoint import Checkpoint
from esdedup.store.local import default_data_dir


def test_checkpoint_saves_any_name_and_reads_it_back(tmp_path):
    path = tmp_path / "ck.json"
    ckpt = Checkpoint(path)
    names = ["/data/中文.txt", "/data/\udcd6\udcd0.txt"]  # the second: undecodable bytes kept by surrogate escapes
    for name in names:
        ckpt.advance(name, 10)
    ckpt.finish(names[1])
    ckpt.save()
    assert sorted(path.parent.iterdir()) == [path]  # no .tmp left
    again = Checkpoint(path)
    assert again.skip(names[0], 9) and not again.skip(names[0], 10)
    assert again.done(names[1])


def test_failed_save_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "ck.json"
    path.mkdir()  # os.replace cannot put a file there
    ckpt = Checkpoint(None)
    ckpt.path = path
    ckpt.advance("/data/a.txt", 5)
    with pytest.raises(OSError):
        ckpt.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.json"]


def _checkpoint_after(path, src, offset, *, done=False):
    ckpt = Checkpoint(path)
    ckpt.advance(str(src), offset)
    if done:
        ckpt.finish(str(src))
    ckpt.save()


def test_a_resumed_checkpoint_goes_on_in_a_file_that_only_grew(tmp_path):
    from esdedup.ingest.checkpoint import open_checkpoint

    src, ck = tmp_path / "a.jsonl", tmp_path / "ck.json"
    src.write_bytes(b"line one\nline two\n")
    _checkpoint_after(ck, src, 9)
    with open(src, "ab") as f:
        f.write(b"line three\n")
    again = open_checkpoint(ck, resume=True)
    assert again.skip(str(src), 0) and not again.skip(str(src), 9)


def test_a_resumed_checkpoint_reads_a_rewritten_file_from_its_start(tmp_path, caplog):
    from esdedup.ingest.checkpoint import open_checkpoint

    src, ck = tmp_path / "a.jsonl", tmp_path / "ck.json"
    src.write_bytes(b"line one\nline two\n")
    _checkpoint_after(ck, src, 9)
    src.write_bytes(b"LINE ONE\nline two\n")  # same size, other bytes before the offset
    again = open_checkpoint(ck, resume=True)
    assert not again.skip(str(src), 0)
    assert "changed since checkpoint" in caplog.text and "read again from its start" in caplog.text


@pytest.mark.parametrize("rewrite", [b"short\n", b"line one\nline tw0\nmore\n"], ids=["shorter", "changed"])
def test_a_finished_file_rewritten_since_is_read_again(tmp_path, rewrite):
    from esdedup.ingest.checkpoint import open_checkpoint

    src, ck = tmp_path / "a.jsonl", tmp_path / "ck.json"
    src.write_bytes(b"line one\nline two\n")
    _checkpoint_after(ck, src, 18, done=True)
    assert open_checkpoint(ck, resume=True).done(str(src))
    src.write_bytes(rewrite)
    again = open_checkpoint(ck, resume=True)
    assert not again.done(str(src)) and not again.skip(str(src), 0)


def test_a_checkpoint_with_a_bad_hash_is_refused(tmp_path):
    from esdedup.errors import ConfigError

    ck = tmp_path / "ck.json"
    ck.write_text('{"files": {"/a": {"offset": 3, "hashed": 3, "sha1": "nothex"}}}')
    with pytest.raises(ConfigError, match="'sha1'"):
        Checkpoint(ck)


def test_the_tests_keep_default_checkpoints_out_of_the_users_own_data_folder():
    """A run a test starts without naming a checkpoint keeps it in the data folder (`default_checkpoint`): during
    the tests that is the test run's own folder (tests/conftest.py), not the data folder of the user running them."""
    users = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "esdedup"
    folder = default_data_dir()
    assert folder != users and folder.name.startswith("esdedup-tests-data-")
    assert Path(tempfile.gettempdir()).resolve() in folder.resolve().parents and folder.is_dir()
