"""What the commands say and do on a real node, on the default path: creating an index, the measures shown,
re-runs that change nothing. Output is asserted exactly; nothing is mocked."""
from __future__ import annotations

import pytest
from esdedup_cli.main import app

from tests.cli_runner import cli_runner


@pytest.fixture
def cli(es_url, monkeypatch, tmp_path):
    for var in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ESDEDUP_CONFIG", str(tmp_path / "no-config.json"))
    monkeypatch.setenv("ESDEDUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)

    def run(*args: str):
        return cli_runner().invoke(app, [*args, "--es", es_url])

    return run


def test_index_create_makes_the_index_that_pipeline_put_needs(cli, es_url, es_client, fresh_index) -> None:
    """`pipeline put` on a fresh cluster names the command that creates the index; `index create` makes it
    (mapping, fingerprint config) and leaves an existing one as it is."""
    missing = cli("pipeline", "put", "--index", fresh_index)
    assert missing.exit_code == 2
    assert missing.stderr == (f"Error: index '{fresh_index}' does not exist at {es_url}; create it with 'esdedup "
                              f"index create --index {fresh_index}', or ingest into it\n")
    made = cli("index", "create", "--index", fresh_index, "--shards", "2")
    assert (made.exit_code, made.stdout) == (0, f"created index '{fresh_index}'\n"), made.stderr
    settings = es_client.indices.get_settings(index=fresh_index)[fresh_index]["settings"]["index"]
    assert settings["number_of_shards"] == "2"
    meta = es_client.indices.get_mapping(index=fresh_index)[fresh_index]["mappings"]["_meta"]["esdedup"]
    from esdedup.fingerprint.config import FingerprintConfig

    assert FingerprintConfig.from_dict(meta["config"]) == FingerprintConfig()
    again = cli("index", "create", "--index", fresh_index)
    assert (again.exit_code, again.stdout) == (0, f"index '{fresh_index}' exists already; left as it is\n")
    other = cli("index", "create", "--index", fresh_index, "--bits", "128")
    assert other.exit_code == 2 and "bits: index has 64, you asked for 128" in other.stderr


NEWS = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "news.jsonl"


def test_a_rerun_sends_nothing_unchanged(cli, es_client, fresh_index) -> None:
    """The same ingest twice: the second run finds every document stored with its id, text and labels and
    sends none of them (every _version stays 1); a changed text is sent."""
    import json
    import time

    first = cli("ingest", str(NEWS), "--index", fresh_index, "--t2s", "--json", "--workers", "1")
    assert first.exit_code == 0, first.stderr
    t0 = time.monotonic()
    second = cli("ingest", str(NEWS), "--index", fresh_index, "--json", "--workers", "1")
    rerun_seconds = time.monotonic() - t0
    assert second.exit_code == 0, second.stderr
    s = json.loads(second.stdout.splitlines()[-1])
    assert (s["read"], s["indexed"], s["created"], s["updated"], s["unchanged"], s["duplicates"]) == (
        13, 13, 0, 0, 13, 5), s
    es_client.indices.refresh(index=fresh_index)
    hits = es_client.search(index=fresh_index, size=100, version=True, source=False)["hits"]["hits"]
    assert sorted(h["_version"] for h in hits) == [1] * 13
    text = cli("ingest", str(NEWS), "--index", fresh_index, "--workers", "1")
    assert "read 13 = indexed 13 (new 0, updated 0, unchanged 13) + skipped 0 + failed 0" in text.stdout
    print(f"re-run of 13 unchanged documents: {rerun_seconds:.2f} s")


def test_new_indexes_are_green_on_one_node_and_replicas_are_kept(cli, es_client, fresh_index) -> None:
    """A new index gets a replica only where a second data node can hold it (a one-node cluster stays
    green); --replicas N is kept; --text-analyzer sets the text fields' analyzer."""
    made = cli("ingest", str(NEWS), "--index", fresh_index, "--quiet", "--workers", "1")
    assert made.exit_code == 0, made.stderr
    settings = es_client.indices.get_settings(index=fresh_index)[fresh_index]["settings"]["index"]
    assert settings["auto_expand_replicas"] == "0-1"
    nodes = len(es_client.nodes.info()["nodes"])
    health = es_client.cluster.health(index=fresh_index, wait_for_status="green" if nodes == 1 else "yellow",
                                      timeout="30s")
    assert nodes > 1 or health["status"] == "green", health
    other = f"{fresh_index}-r"
    try:
        made = cli("index", "create", "--index", other, "--replicas", "2", "--text-analyzer", "whitespace")
        assert made.exit_code == 0, made.stderr
        settings = es_client.indices.get_settings(index=other)[other]["settings"]["index"]
        assert settings["number_of_replicas"] == "2" and "auto_expand_replicas" not in settings
        props = es_client.indices.get_mapping(index=other)[other]["mappings"]["properties"]
        assert props["text"] == {"type": "text", "analyzer": "whitespace"} and props["title"]["analyzer"] == "whitespace"
    finally:
        es_client.options(ignore_status=404).indices.delete(index=other)


def test_mapping_with_es_prints_the_existing_index_mapping(cli, fresh_index) -> None:
    import json

    made = cli("index", "create", "--index", fresh_index, "--strategy", "simhash")
    assert made.exit_code == 0, made.stderr
    printed = cli("mapping", "--index", fresh_index)
    assert printed.exit_code == 0, printed.stderr
    assert json.loads(printed.stdout)["mappings"]["_meta"]["esdedup"]["config"]["strategy"] == "simhash"

