"""Checkpoint.save: any source name can be saved, and a failed save leaves no temporary file behind."""
from __future__ import annotations

import pytest

from esdedup.ingest.checkpoint import Checkpoint


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
