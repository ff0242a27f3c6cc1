"""DeadLetters: lines reach the file only once their batch is committed; a fresh file left empty is removed."""
from __future__ import annotations

import json

import pytest

from esdedup.ingest.deadletters import DeadLetters


def test_only_committed_lines_reach_the_file(tmp_path):
    path = tmp_path / "dl.jsonl"
    dead = DeadLetters(path, fresh=True)
    dead.write(source="a.jsonl", location="line 1", reason="not JSON", kind="rejected", excerpt="{x")
    dead.commit()
    dead.write(source="a.jsonl", location="line 2", reason="interrupted", kind="rejected")  # never committed
    dead.close()
    (line,) = [json.loads(x) for x in path.read_text("utf-8").splitlines()]
    assert line == {"kind": "rejected", "source": "a.jsonl", "location": "line 1", "reason": "not JSON",
                    "id": None, "excerpt": "{x"}


def test_a_fresh_file_without_lines_is_removed_and_an_appended_one_kept(tmp_path):
    path = tmp_path / "dl.jsonl"
    path.write_text("old\n", "utf-8")
    DeadLetters(path).close()  # appended to (a resumed run): what was there stays
    assert path.read_text("utf-8") == "old\n"
    DeadLetters(path, fresh=True).close()  # a new run's file lists that run's records only: none
    assert not path.exists()


def test_a_device_named_as_the_dead_letter_file_is_never_removed(tmp_path):
    """A run with nothing to report removes its empty dead-letter file, but never a device (/dev/null given
    as the file): tested on a private null device made here."""
    import os
    import stat

    from esdedup.ingest.deadletters import DeadLetters

    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs root")
    DeadLetters(device, fresh=True).close()
    assert stat.S_ISCHR(os.stat(device).st_mode)
    empty = tmp_path / "dl.jsonl"
    DeadLetters(empty, fresh=True).close()
    assert not empty.exists()
