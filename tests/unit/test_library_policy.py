"""What the command line decides is the library's to decide: the names of a run's checkpoint and dead letters,
standard input kept as a file, a config file read, thresholds that cannot act refused, an evaluation's own index.
A program calling the library gets each as the command line does (the command line only calls these)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from esdedup import FingerprintConfig
from esdedup.api import describe, refuse_inert_thresholds
from esdedup.errors import ConfigError, IndexNotFound
from esdedup.fingerprint.config import read_config_file
from esdedup.ingest import BY_THE_RUN, IngestOptions, default_checkpoint, default_dead_letter, ingest
from esdedup.match.thresholds import InertThresholds, ThresholdOverrides
from esdedup.quality import evaluate as evaluate_module
from esdedup.quality.evaluate import evaluate, parse_labels, temporary_index
from esdedup.readers.files import spool
from esdedup.store.local import LocalStore
from tests.cli_runner import cli_runner

CONFIG = FingerprintConfig(tokenizer="char", shingle=2)
TEXTS = ["今天北京的天气很好，阳光明媚，适合出门散步。", "今天北京的天气很好，阳光明媚，适合出门走走。",
         "上海的地铁线路越来越多，早高峰的时候车厢里依然非常拥挤。"]


def _jsonl(path: Path, n: int = 3) -> Path:
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": TEXTS[i % 3]}, ensure_ascii=False) + "\n"
                            for i in range(n)), "utf-8")
    return path


def test_the_library_names_its_files_and_resumes_as_the_command_line_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = _jsonl(tmp_path / "docs.jsonl")
    store = LocalStore("news", tmp_path / "data")
    opts = IngestOptions(checkpoint=BY_THE_RUN, dead_letter=BY_THE_RUN, workers=1)
    first = ingest([docs], store, CONFIG, opts)
    assert first.indexed == 3 and first.dead_letter == str(default_dead_letter("news"))
    checkpoint = default_checkpoint(store, [docs])
    assert checkpoint.parent == tmp_path / "data" / "checkpoints" and checkpoint.name.startswith("local-news-")
    assert json.loads(checkpoint.read_text("utf-8"))["files"]
    again = ingest([str(tmp_path / "." / "docs.jsonl")], store, CONFIG,  # another spelling of the same input
                   IngestOptions(checkpoint=BY_THE_RUN, dead_letter=BY_THE_RUN, resume=True, workers=1))
    assert (again.resumed_files, again.read) == (1, 0)
    assert store.count() == 3


def test_the_command_line_keeps_its_checkpoint_where_the_library_names_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = _jsonl(tmp_path / "docs.jsonl")
    data = tmp_path / "data"
    result = cli_runner().invoke(_app(), ["ingest", str(docs), "--index", "news", "--data-dir", str(data),
                                          "--tokenizer", "char", "--shingle", "2", "--workers", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert default_checkpoint(LocalStore("news", data), [docs]).exists()
    assert default_dead_letter("news") == Path("news.dead-letter.jsonl")


def _app():
    from esdedup_cli.main import app

    return app


def test_default_checkpoints_differ_by_inputs_and_index(tmp_path):
    a, b = _jsonl(tmp_path / "a.jsonl"), _jsonl(tmp_path / "b.jsonl")
    one, other = LocalStore("one", tmp_path), LocalStore("other", tmp_path)
    names = {default_checkpoint(one, [a]), default_checkpoint(one, [b]), default_checkpoint(other, [a]),
             default_checkpoint(one, [a, b])}
    assert len(names) == 4
    assert default_checkpoint(one, [a, b]) == default_checkpoint(one, [b, a])
    assert default_checkpoint(one, [a], data_dir=tmp_path / "x").parent == tmp_path / "x" / "checkpoints"


def test_a_stream_is_kept_as_a_file_named_by_its_content(tmp_path):
    first = spool(io.BytesIO(b'{"id": "a", "text": "x"}\n'), tmp_path / "stdin")
    again = spool(io.BytesIO(b'{"id": "a", "text": "x"}\n'), tmp_path / "stdin")
    other = spool(io.BytesIO(b'{"id": "b", "text": "y"}\n'), tmp_path / "stdin")
    assert first == again != other and first.read_bytes() == b'{"id": "a", "text": "x"}\n'
    assert sorted(p.name for p in (tmp_path / "stdin").iterdir()) == sorted({first.name, other.name})


def test_a_config_file_is_a_config_or_an_index_description(tmp_path):
    store = LocalStore("news", tmp_path / "data")
    store.open(CONFIG)
    (tmp_path / "info.json").write_text(json.dumps(describe(store)), "utf-8")
    (tmp_path / "config.json").write_text(CONFIG.to_json(), "utf-8")
    assert read_config_file(tmp_path / "info.json") == CONFIG == read_config_file(str(tmp_path / "config.json"))
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_config_file(tmp_path)
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="bad.json"):
        read_config_file(tmp_path / "bad.json")


def test_thresholds_that_cannot_act_are_refused_before_a_task(tmp_path):
    store = LocalStore("news", tmp_path / "data")
    with pytest.raises(IndexNotFound):
        refuse_inert_thresholds(store, ThresholdOverrides(hamming_k=2))
    # A task that creates the index judges by the config it creates it with: under ``simhash`` no text has
    # signatures, so the n-gram thresholds never act.
    with pytest.raises(InertThresholds):
        refuse_inert_thresholds(store, ThresholdOverrides(jaccard=0.5), creates=True,
                                new_config=CONFIG.replace(strategy="simhash"))
    refuse_inert_thresholds(store, ThresholdOverrides(), creates=False)  # nothing asked, nothing read
    store.open(CONFIG.replace(strategy="simhash"))
    with pytest.raises(InertThresholds):
        refuse_inert_thresholds(store, ThresholdOverrides(jaccard=0.5))
    refuse_inert_thresholds(store, ThresholdOverrides(cosine=0.8))


def test_an_evaluation_drops_its_own_index_whatever_happens(tmp_path, monkeypatch):
    docs = _jsonl(tmp_path / "docs.jsonl")
    labels = parse_labels(['{"a": "d0", "b": "d1", "label": 1}', '{"a": "d0", "b": "d2", "label": 0}'])
    name = temporary_index()
    assert name.startswith("esdedup-eval-") and name != temporary_index()
    store = LocalStore(name, tmp_path / "data")
    report = evaluate(store, labels, docs=[docs], config=CONFIG, cosines=[0.8, 0.9], drop=True, workers=1)
    assert report.labelled == 2 and report.rows
    assert not LocalStore(name, tmp_path / "data").path.exists()
    with pytest.raises(ConfigError):
        evaluate(LocalStore(name, tmp_path / "data"), labels, docs=[docs], config=CONFIG, jaccards=[1.5], drop=True)
    failing = LocalStore(temporary_index(), tmp_path / "data")

    def stopped(*args, **kwargs):
        assert failing.count() == 3  # indexed: the index exists when the evaluation stops
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate_module, "scored_pairs", stopped)
    with pytest.raises(KeyboardInterrupt):
        evaluate(failing, labels, docs=[docs], config=CONFIG, drop=True, workers=1)
    assert not failing.path.exists()
