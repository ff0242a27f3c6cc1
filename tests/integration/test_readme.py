"""The README's two commands work, and .ci/run calls exactly the README's test command."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README must start with a bash block"
    assert text.index(block.group(0)) < text.index("## "), "the commands come before the first section"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.startswith("#")]


def test_readme_starts_with_two_commands_and_ci_runs_the_second():
    setup, tests = readme_commands()
    assert "pip install" in setup and "esdedup ingest" in setup
    run = (ROOT / ".ci" / "run").read_text("utf-8")
    # The one line of .ci/run that runs the non-slow suite runs exactly the README's command (its output is
    # also copied to a log, behind a pipe), in the activated virtualenv.
    suite = [ln for ln in run.splitlines() if "pytest" in ln and '"not slow"' in ln and not ln.lstrip().startswith("#")]
    assert len(suite) == 1, suite
    assert shlex.split(suite[0].split("|")[0].replace("2>&1", "")) == shlex.split(tests)
    assert run.index('source "$VENVS/es8/bin/activate"') < run.index(suite[0])


def test_readme_main_job_runs_on_the_embedded_store(tmp_path):
    setup, _ = readme_commands()
    # The install step already ran for this test session (.ci/run runs it; test_wheel installs a wheel).
    steps = [s for s in setup.split(" && ") if not s.startswith("python -m pip install")]
    env = {**os.environ, "ESDEDUP_DATA_DIR": str(tmp_path / "data")}
    env.pop("ESDEDUP_ES_URL", None)
    bindir = Path(sys.executable).parent
    out = ""
    for step in steps:
        argv = shlex.split(step)
        exe = bindir / argv[0]
        argv[0] = str(exe) if exe.exists() else argv[0]
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                              input="")
        assert proc.returncode == 0, proc.stderr
        out += proc.stdout
    assert "read 13 = indexed 13" in out
    # Every reprint in the example data is found, paired with its original.
    for a, b in [("rail-1", "rail-2"), ("rail-1", "rail-3"), ("panda-1", "panda-2"), ("rain-1", "rain-2"),
                 ("ev-1", "ev-2")]:
        assert re.search(rf"^{a}\s+{b}\s", out, re.M), f"{a} ~ {b} missing from:\n{out}"
    assert re.search(r"^\d+ pairs in 4 clusters$", out, re.M), out
    assert not list(ROOT.glob("demo.*")), "the main job leaves no files in the working directory"
