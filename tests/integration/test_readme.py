"""The README's two commands work, and .ci/run calls exactly the README's test command."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README must start with a bash block"
    assert text.index(block.group(0)) < text.index("## "), "the commands come before the first section"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.startswith("#")]


def test_readme_starts_with_two_commands_and_ci_runs_the_second():
    setup, tests = readme_commands()
    assert setup.startswith("scripts/setup && ") and "esdedup ingest" in setup
    run = (ROOT / ".ci" / "run").read_text("utf-8")
    # The one line of .ci/run that runs the non-slow suite runs exactly the README's command (its output is
    # also copied to a log, behind a pipe), in the activated virtualenv.
    # (The Python path's pass runs unit and contract tests only, with its virtualenv's python named.)
    suite = [ln for ln in run.splitlines() if ln.lstrip().startswith("python ") and "pytest" in ln]
    assert len(suite) == 1, suite
    assert shlex.split(suite[0].split("|")[0].replace("2>&1", "")) == shlex.split(tests)
    assert run.index('source "$VENVS/es8/bin/activate"') < run.index(suite[0])
    # The Python path, the oracle the native core is held to, passes the unit and contract tests too.
    oracle = [ln for ln in run.splitlines() if "ESDEDUP_NATIVE=0" in ln and "pytest" in ln]
    assert len(oracle) == 1 and "tests/unit tests/contract" in oracle[0], oracle


def test_ci_sets_up_through_the_readmes_first_command_only():
    """What the tests need is installed by scripts/setup, the README's first step, and .ci/run installs nothing
    beside it: a step missing from scripts/setup fails CI as it fails a newcomer."""
    run = [ln for ln in (ROOT / ".ci" / "run").read_text("utf-8").splitlines() if not ln.lstrip().startswith("#")]
    assert not [ln for ln in run if "apt-get" in ln or "apt " in ln], "system packages belong in scripts/setup"
    # The one direct pip install: the 9.x virtualenv's dependencies prefetched, read from pyproject.toml's
    # extras while the 8.x one is made (scripts/setup then installs the same into it).
    installs = [ln for ln in run if "pip install" in ln]
    assert len(installs) == 1 and '"${reqs[@]}"' in installs[0], installs
    assert [ln for ln in run if "scripts/setup --client" in ln], "the virtualenvs are made by scripts/setup"
    setup = (ROOT / "scripts" / "setup").read_text("utf-8")
    for need in ("nginx", "chromium", ".[test,dev,bench]"):
        assert need in setup, need
    extras = re.search(r"extras\[\"(\w+)\"\] \+ extras\[\"(\w+)\"\] \+ extras\[\"(\w+)\"\]",
                       "\n".join(run))
    assert extras and set(extras.groups()) == {"test", "dev", "bench"}, "the prefetch reads the extras setup installs"


def test_readme_main_job_runs_on_the_embedded_store(tmp_path):
    setup, _ = readme_commands()
    # The set-up step already ran for this test session (.ci/run runs it; test_wheel installs a wheel).
    steps = [s for s in setup.split(" && ") if not s.startswith("scripts/setup")]
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


# -- every block, run as written -------------------------------------------------------------------------------
#: The README and the pages it sends details to (tests/unit/test_documents.py holds them to the caps).
PAGES = ("README.md", "docs/cli.md", "docs/elasticsearch.md", "docs/plugin.md", "docs/review.md", "docs/tuning.md",
         "docs/architecture.md", "docs/opensearch.md", "docs/scale.md")
#: (bash, python) blocks of each page, every one run by a test: below, and the plugin's in test_plugin.py beside
#: the node with the plugin. A new block gets a test, or the count check fails.
BLOCKS = {"README.md": (2, 2),  # the first commands (above), the Elasticsearch walkthrough; the search backend, Python
          "docs/plugin.md": (1, 0),
          "docs/opensearch.md": (2, 0),  # both run in test_opensearch_doc.py and test_plugin_opensearch.py
          "docs/scale.md": (2, 0)}  # run in test_scale_doc.py; its label block in test_plugin.py


def readme_blocks(language: str, document: str = "README.md") -> list[str]:
    """The code blocks of ``document`` in ``language`` (bash or python), in order."""
    text = (ROOT / document).read_text("utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def section_block(title: str, language: str = "bash", document: str = "README.md") -> str:
    """The first ``language`` block after the heading ``title`` (of any level) of ``document``."""
    text = "\n" + (ROOT / document).read_text("utf-8")
    start = re.search(rf"\n#+ {re.escape(title)}\n", text)
    assert start, f"{document} has no heading {title!r}"
    return re.search(rf"```{language}\n(.*?)```", text[start.start():], re.S).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize("document", PAGES)
def test_every_block_is_run_by_a_test(document: str) -> None:
    bash, python = BLOCKS.get(document, (0, 0))
    assert len(readme_blocks("bash", document)) == bash
    assert len(readme_blocks("python", document)) == python
    other = re.findall(r"```(?!bash|python|\n)(\w+)", (ROOT / document).read_text("utf-8"))
    assert not other, "a block in another language: give it a test and a count here"


def run_lines(block: str, url: str, env: dict[str, str], *, skip: tuple[str, ...]) -> list[str]:
    """Run each command line of a README block against the node at ``url`` (the README's 127.0.0.1:9250),
    from the repository root; the lines starting with one of ``skip`` are what the test's own node stands in
    for. Returns each command's stdout."""
    bindir = Path(sys.executable).parent
    outputs = []
    for line in block.splitlines():
        argv = shlex.split(line, comments=True)
        if not argv or line.startswith(skip):
            continue
        argv = [a.replace("http://127.0.0.1:9250", url) for a in argv]
        exe = bindir / argv[0]
        argv[0] = str(exe) if exe.exists() else argv[0]
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, (line, proc.stdout[-2000:], proc.stderr[-3000:])
        outputs.append(proc.stdout)
    return outputs


@pytest.fixture
def readme_env(tmp_path):
    env = {**os.environ, "ESDEDUP_DATA_DIR": str(tmp_path / "data"), "ESDEDUP_CONFIG": str(tmp_path / "none.json")}
    for var in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD"):
        env.pop(var, None)
    return env


@pytest.mark.es
def test_the_elasticsearch_walkthrough_and_the_search_backend_run_as_written(es_url, es_client, readme_env):
    """The walkthrough's commands on a fresh node (its `scripts/es-local start` / `stop` are the fixture's),
    then the search-backend example on the index it made: the rail story once on the page, only the fields
    asked for."""
    es_client.options(ignore_status=404).indices.delete(index="news")
    try:
        ingest, similar, dups = run_lines(section_block("With Elasticsearch"), es_url, readme_env,
                                           skip=("scripts/es-local",))
        assert "read 13 = indexed 13 (new 13, updated 0) + skipped 0 + failed 0" in ingest, ingest
        assert "near-duplicates found: 5;" in ingest
        found = re.findall(r"^  (\S+)\t", similar, re.M)
        assert sorted(found) == ["rail-1", "rail-2", "rail-3"], similar
        assert re.search(r"^6 pairs in 4 clusters$", dups, re.M), dups

        from fastapi.testclient import TestClient

        code = section_block("In a search backend", "python").replace("http://127.0.0.1:9250", es_url)
        scope: dict = {}
        exec(compile(code, "README.md (search backend)", "exec"), scope)
        with TestClient(scope["app"]) as client:
            for q, story in (("高铁", "rail"), ("今天", "rail"), ("开通", "rail")):
                page = client.get("/search", params={"q": q}).json()
                titles = {json.loads(line)["title"]: json.loads(line)["id"]
                          for line in (ROOT / "examples" / "news.jsonl").read_text("utf-8").splitlines()}
                ids = [titles[t] for t in page]
                assert len([i for i in ids if i.startswith(f"{story}-")]) == 1, (q, ids)
                assert len({i.split("-")[0] for i in ids}) == len(ids), (q, ids)  # one hit a story
            assert client.get("/search", params={"q": "电动车"}).json() == []
        from esdedup.search import search_diversified

        hits = search_diversified(es_client, "news", {"query": {"match_phrase": {"text": "高铁"}},
                                                      "_source": ["title"]}, size=10)["hits"]["hits"]
        assert hits and all(set(h["_source"]) == {"title"} for h in hits), hits
    finally:
        es_client.options(ignore_status=404).indices.delete(index="news")


def test_the_python_example_runs() -> None:
    code = section_block("Python", "python")
    scope: dict = {}
    lines = code.strip().splitlines()
    exec(compile("\n".join(lines[:-1]), "README.md (Python)", "exec"), scope)
    value = eval(lines[-1], scope)  # the last line is an expression a reader types at the prompt
    assert isinstance(value, tuple) and len(value) == 4

