"""docs/opensearch.md's commands, run as written: a real OpenSearch node started by scripts/es-local, the example
articles ingested, their pairs listed, the node stopped and purged. Only the port and the cluster name differ,
so that the run takes free ones. The node the commands start is also the one `es-local --engine opensearch` is
checked on (its version, its status, its own log folder, nothing left after `stop --purge`): one OpenSearch
start-up for both."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.es_node import OS_VERSION, pick_base_port

pytestmark = [pytest.mark.es, pytest.mark.opensearch]

ROOT = Path(__file__).resolve().parents[2]


def doc_commands() -> list[str]:
    text = (ROOT / "docs" / "opensearch.md").read_text("utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "docs/opensearch.md starts with a bash block"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.startswith("#")]


def test_the_documented_commands_run_as_written(tmp_path: Path) -> None:
    commands = doc_commands()
    # the install step, run as written too (the test environment has the client already: pip says so and stops)
    assert commands[0].startswith('python -m pip install "opensearch-py')
    port, lease = pick_base_port(1)
    name = f"os-doc-{uuid.uuid4().hex[:6]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESDEDUP_ES_URL")}
    env["ESDEDUP_ES_STATE"] = str(tmp_path / "state")
    bindir = Path(sys.executable).parent
    out, started = "", False
    try:
        for line in commands:
            line = line.replace("9290", str(port)).replace("os-demo", name)
            argv = shlex.split(line, comments=True)
            argv[0] = sys.executable if argv[0] == "python" else argv[0]
            exe = bindir / argv[0]
            argv[0] = str(exe) if exe.exists() else argv[0]
            started = started or "start" in argv
            proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, input="")
            assert proc.returncode == 0, (line, proc.stderr[-3000:])
            out += proc.stdout
            if "start" in argv:
                work = _check_the_started_node(port, name, env, tmp_path / "state")
            if "stop" in argv:
                started = False
    finally:
        if started:
            subprocess.run(["bash", str(ROOT / "scripts" / "es-local"), "stop", "--purge", "--name", name], env=env,
                           capture_output=True, timeout=180)
        lease.release()
    assert "read 13 = indexed 13" in out
    for a, b in [("rail-1", "rail-2"), ("rail-1", "rail-3"), ("panda-1", "panda-2"), ("rain-1", "rain-2"),
                 ("ev-1", "ev-2")]:
        assert re.search(rf"^{a}\s+{b}\s", out, re.M), f"{a} ~ {b} missing from:\n{out}"
    assert re.search(r"^\d+ pairs in 4 clusters$", out, re.M), out
    assert re.search(r"^\s+rail-2\s", out, re.M), out  # `similar --id rail-1` finds its reprint
    assert not (tmp_path / "state" / "cluster.env").exists()  # stop --purge removed the cluster
    assert not work.exists()  # and its data and logs


def _check_the_started_node(port: int, name: str, env: dict[str, str], state: Path) -> Path:
    """`es-local start --engine opensearch` started OpenSearch of the version asked for, which `status` reports
    up and green, and which logs into its own folders; returns its work folder."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as resp:
        root = json.loads(resp.read())
    assert root["version"]["distribution"] == "opensearch" and root["version"]["number"] == OS_VERSION
    status = subprocess.run(["bash", str(ROOT / "scripts" / "es-local"), "status", "--name", name], env=env,
                            capture_output=True, text=True, timeout=60)
    report = status.stdout + status.stderr
    assert f"(OpenSearch {OS_VERSION}, 1 node(s)" in report and "health: green" in report, report
    assert [ln.split()[4] for ln in status.stdout.splitlines()
            if len(ln.split()) >= 5 and ln.split()[0].isdigit()] == ["up"], report
    cluster = dict(line.split("=", 1) for line in (state / "cluster.env").read_text().splitlines())
    assert cluster["ENGINE"] == "opensearch"
    work = Path(cluster["WORK"])
    # each node writes its GC log in its own logs dir, not in the shared distribution
    assert (work / "node-0" / "logs" / "gc.log").exists()
    return work
