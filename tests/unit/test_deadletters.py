"""DeadLetters: lines reach the file only once their batch is committed; a fresh file left empty is removed."""
from __future__ import annotations

import json

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
