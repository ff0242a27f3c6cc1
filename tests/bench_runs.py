"""Running a benchmark script of `bench/` on this checkout, as the tests that check the scripts do: it must
exit 0, print what the test expects, and leave BENCHMARKS.md and every other tracked file as they were, and
nothing in the temporary folder."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_bench_script(args: list[str], shows: str) -> None:
    """Run ``bench/<args[0]>`` with the rest of ``args``; its output must match the pattern ``shows``."""
    before = _tracked_changes()
    with tempfile.TemporaryDirectory(prefix="esdedup-bench-test-") as tmp:
        out = subprocess.run([sys.executable, f"bench/{args[0]}", *args[1:]], cwd=ROOT, capture_output=True,
                             text=True, timeout=600, env=os.environ | {"TMPDIR": tmp})
        assert out.returncode == 0, out.stderr[-3000:]
        assert re.search(shows, out.stdout), out.stdout[-3000:]
        assert _tracked_changes() == before  # BENCHMARKS.md and the rest as they were
        # The jieba package keeps its dictionary's cache there on purpose, for the next process.
        left = sorted(set(os.listdir(tmp)) - {"jieba.cache"})
        assert not left, f"bench/{args[0]} left {left} in the temporary folder"


def _tracked_changes() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout
