"""What the commands say and do on a real node, on the default path: creating an index, the measures shown,
re-runs that change nothing. Output is asserted exactly; nothing is mocked."""
from __future__ import annotations

import pytest
from esdedup_cli.main import app
from typer.testing import CliRunner


def _runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


@pytest.fixture
def cli(es_url, monkeypatch, tmp_path):
    for var in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ESDEDUP_CONFIG", str(tmp_path / "no-config.json"))
    monkeypatch.setenv("ESDEDUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)

    def run(*args: str):
        return _runner().invoke(app, [*args, "--es", es_url])

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
