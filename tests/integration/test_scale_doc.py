"""docs/scale.md's commands, run as written: the partitions' pairs together are one `dups` run's."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_scale_doc_commands_run_as_written(tmp_path):
    text = (ROOT / "docs" / "scale.md").read_text("utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block and "--partition $i/4" in block.group(1)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "news.jsonl").write_bytes((ROOT / "examples" / "news.jsonl").read_bytes())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.group(1)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"event": "summary"' in done.stdout and '"partition": "0/4"' in done.stdout
    parts = [ln for i in range(4) for ln in (tmp_path / f"part{i}.jsonl").read_text("utf-8").splitlines()]
    assert len(parts) == len(set(parts)) > 0
    assert sorted(parts) == sorted((tmp_path / "all.jsonl").read_text("utf-8").splitlines())


def test_partitions_bench_runs_small(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "partitions.py"), "--docs", "1000", "--local",
                           "--parts", "1,3"], capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [ln for ln in done.stdout.splitlines() if ln.startswith("| --partition")]
    assert len(rows) == 2 and all(ln.rstrip().endswith("| yes |") for ln in rows), done.stdout
