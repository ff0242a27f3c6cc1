"""`esdedup.ingest.pipeline`: the pipeline body, and the embedded store refused in one line (the node-side path is
tests/integration/test_plugin.py)."""
from __future__ import annotations

from esdedup_cli.main import app
from typer.testing import CliRunner

from esdedup import FingerprintConfig
from esdedup.ingest.pipeline import PROCESSOR, pipeline_body, pipeline_name


def test_the_body_carries_the_whole_config_and_the_field():
    config = FingerprintConfig(hamming_k=4)
    body = pipeline_body(config, field="content")
    (processor,) = body["processors"]
    assert processor[PROCESSOR] == {"field": "content", "target_field": "dedup", "config": config.to_dict()}
    assert FingerprintConfig.from_dict(processor[PROCESSOR]["config"]) == config
    assert pipeline_name("news") == "esdedup-news"


def test_the_embedded_store_has_no_pipeline(tmp_path):
    runner = CliRunner()
    common = ["--index", "p", "--data-dir", str(tmp_path)]
    text = "台湾居民明日起持台胞证可通关，无需另行申请签注。"
    (tmp_path / "a.txt").write_text(text, "utf-8")
    assert runner.invoke(app, ["ingest", str(tmp_path / "a.txt"), *common, "--workers", "1"]).exit_code == 0
    made = runner.invoke(app, ["pipeline", "put", *common])
    assert made.exit_code == 2 and "runs on Elasticsearch" in made.stderr, made.output
