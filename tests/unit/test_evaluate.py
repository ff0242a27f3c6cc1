"""esdedup.quality.evaluate: scoring functions, the vectorised sweep against the scalar rule, and `run` over a
small labelled corpus on the local store (and on Elasticsearch, with the same answers)."""
from __future__ import annotations

import itertools
import json
import random
import uuid

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.errors import InputError
from esdedup.match.pairs import ScoredPair
from esdedup.match.rule import is_duplicate
from esdedup.quality.evaluate import (
    Label,
    LabelledCandidates,
    Scores,
    Setting,
    best_per_class,
    default_grid,
    pair_key,
    parse_labels,
    run,
    score,
    score_by_class,
    sweep,
)
from esdedup.store.local import LocalStore
from tests.corpus import make_corpus

CONFIG = FingerprintConfig(tokenizer="rjieba")


def test_scores_count_only_labelled_pairs():
    labels = [Label("a", "b", 1), Label("c", "a", 1), Label("a", "d", 0), Label("b", "d", 0)]
    s = score({("b", "a"), ("a", "d"), ("x", "y")}, labels)
    assert (s.tp, s.fp, s.fn, s.tn) == (1, 1, 1, 1)
    assert s.precision == 0.5 and s.recall == 0.5 and s.f1 == 0.5
    assert Scores().precision == 1.0 and Scores().recall == 1.0
    assert Scores(tp=0, fp=3, fn=2).f1 == 0.0


def test_score_by_class():
    labels = [Label("a", "b", 1, cls="short"), Label("c", "d", 1, cls="long"), Label("e", "f", 0, cls="long")]
    by = score_by_class({("a", "b"), ("e", "f")}, labels)
    assert by["short"].recall == 1.0 and by["long"].recall == 0.0 and by["long"].fp == 1


def test_parse_labels_validates():
    good = ['{"a": "x", "b": "y", "label": 1, "kind": "chars", "class": "short"}', "",
            '{"a": "y", "b": "x", "label": 1}']
    labels = parse_labels(good)
    assert len(labels) == 1 and labels[0].key == ("x", "y") and labels[0].kind == "chars"
    with pytest.raises(InputError, match="both 0 and 1"):
        parse_labels(['{"a": "x", "b": "y", "label": 1}', '{"a": "y", "b": "x", "label": 0}'])
    with pytest.raises(InputError, match="line 1"):
        parse_labels(['{"a": "x", "b": "y", "label": 2}'])
    with pytest.raises(InputError):
        parse_labels(['{"a": "x", "label": 1}'])


def test_vectorised_sweep_agrees_with_the_rule():
    rng = random.Random(3)
    labels, found = [], {}
    for n in range(400):
        a, b = f"a{n}", f"b{n}"
        labels.append(Label(a, b, rng.randint(0, 1), cls=rng.choice(["short", "long"])))
        if rng.random() < 0.8:  # the rest were never candidates
            ngram = rng.random() < 0.5
            has_sig = ngram and rng.random() < 0.9
            found[pair_key(a, b)] = ScoredPair(a, b, rng.randint(0, 12), rng.random(), ngram,
                                               rng.random() if has_sig else None,
                                               rng.random() if has_sig else None)
    cands = LabelledCandidates(labels, found)
    grid = default_grid(CONFIG, cosines=(None, 0.5, 0.8), jaccards=(None, 0.4, 0.7), containments=(None, 0.8),
                        hammings=(None, 0, 3, 8))
    for s in grid:
        t = s
        if t.hamming_k is None and t.cosine is None:
            continue
        want = np.array([lab.key in found and is_duplicate(
            found[lab.key].hamming, found[lab.key].cosine, t, found[lab.key].ngram,
            jaccard=found[lab.key].jaccard, containment=found[lab.key].containment) for lab in labels])
        assert (cands.predict(s) == want).all(), s
    rows = sweep(cands, grid)
    assert rows[0].overall.f1 == max(r.overall.f1 for r in rows)
    assert set(rows[0].by_class) == {"short", "long"}
    per = best_per_class(rows)
    assert per["short"].by_class["short"].f1 == max(r.by_class["short"].f1 for r in rows)


def _labelled_corpus(tmp_path):
    docs, planted = make_corpus(80, 25, seed=5)
    rng = random.Random(9)
    ids = [d["id"] for d in docs if d["id"].startswith("d")]
    planted_set = {pair_key(a, b) for a, b in planted}
    negatives = set()
    while len(negatives) < 60:
        a, b = rng.sample(ids, 2)
        if pair_key(a, b) not in planted_set:
            negatives.add(pair_key(a, b))
    lines = [json.dumps({"a": a, "b": b, "label": 1}) for a, b in planted]
    lines += [json.dumps({"a": a, "b": b, "label": 0}) for a, b in sorted(negatives)]
    docs_path = tmp_path / "docs.jsonl"
    docs_path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    return docs_path, parse_labels(lines)


def test_run_on_the_local_store(tmp_path):
    docs_path, labels = _labelled_corpus(tmp_path)
    store = LocalStore("eval", tmp_path / "data")
    report = run(store, labels, docs=[docs_path], config=CONFIG, workers=1)
    assert report.documents == 105 and report.labelled == len(labels) and report.missing_ids == 0
    assert report.configured.setting == Setting(3, 0.8, 0.5, 0.8)
    assert report.best.overall.f1 >= report.configured.overall.f1
    assert report.best.overall.recall >= 0.9 and report.best.overall.precision >= 0.9
    # A second run on the stored documents (no --docs) gives the same answer.
    again = run(store, labels, config=None)
    assert again.best.to_dict() == report.best.to_dict()
    store.drop()


def test_run_on_elasticsearch_matches_local(tmp_path, es_client, fresh_index):
    from esdedup.store.elastic.store import ElasticStore

    docs_path, labels = _labelled_corpus(tmp_path)
    local = LocalStore(f"eval-{uuid.uuid4().hex[:6]}", tmp_path / "data")
    es = ElasticStore(es_client, fresh_index, replicas=0)
    grid = default_grid(CONFIG, cosines=(0.7, 0.8), jaccards=(0.4, 0.5), containments=(None, 0.8))
    reports = [run(s, labels, docs=[docs_path], config=CONFIG, settings=grid, workers=1) for s in (local, es)]
    assert reports[0].candidates == reports[1].candidates
    assert [r.to_dict() for r in reports[0].rows] == [r.to_dict() for r in reports[1].rows]
    local.drop()


def test_eval_and_synth_commands(tmp_path):
    from esdedup_cli.main import app
    from typer.testing import CliRunner

    docs_path, labels = _labelled_corpus(tmp_path)
    labels_path = tmp_path / "labels.jsonl"
    labels_path.write_text("".join(json.dumps({"a": lab.a, "b": lab.b, "label": lab.label}) + "\n"
                                   for lab in labels), "utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["eval", "--pairs", str(labels_path), "--docs", str(docs_path), "--data-dir",
                              str(tmp_path / "d"), "--tokenizer", "rjieba", "--workers", "1", "--json",
                              "--cosines", "0.8", "--jaccards", "0.4,0.5", "--containments", "off,0.8"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["labelled_pairs"] == len(labels) and out["best"]["f1"] >= 0.9
    assert not list((tmp_path / "d").glob("*.sqlite"))  # the temporary index was dropped
    # synth -> eval round trip on the corpus texts
    src = tmp_path / "src.jsonl"
    rng = random.Random(1)
    alphabet = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 3000))
    src.write_text("".join(json.dumps({"id": f"r{i}", "text": "".join(
        rng.choice(alphabet) + ("，" if j % 9 == 8 else "。" if j % 23 == 22 else "") for j in range(60))},
        ensure_ascii=False) + "\n" for i in range(60)), "utf-8")
    res = runner.invoke(app, ["synth", str(src), "--docs-out", str(tmp_path / "sd.jsonl"), "--labels-out",
                              str(tmp_path / "sl.jsonl"), "--sources", "40", "--seed", "2"])
    assert res.exit_code == 0, res.output
    assert "duplicate" in res.stdout
    res = runner.invoke(app, ["eval", "--pairs", str(tmp_path / "sl.jsonl"), "--docs", str(tmp_path / "sd.jsonl"),
                              "--data-dir", str(tmp_path / "d2"), "--tokenizer", "rjieba", "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert "best" in res.stdout and "configured" in res.stdout


def test_grid_always_holds_the_configured_setting():
    grid = default_grid(CONFIG.replace(jaccard_threshold=0.55), cosines=(0.8,), jaccards=(0.5,),
                        containments=(None,))
    assert Setting(3, 0.8, 0.55, 0.8) in grid
    assert len({s for s in grid}) == len(grid)
    assert {s.hamming_k for s in grid} == {0, 1, 2, 3}
    assert list(itertools.islice(grid, 1))


def test_exact_copies_of_texts_without_words_are_predicted_under_every_setting(tmp_path):
    """Rule 0: two exact copies of a text without words are duplicates whatever the thresholds; two different
    such texts are not."""
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in (
        {"id": "a", "text": "！！！"}, {"id": "b", "text": "!!!"}, {"id": "c", "text": "???"})), "utf-8")
    labels = [Label("a", "b", 1), Label("a", "c", 0)]
    report = run(LocalStore("eval", tmp_path / "data"), labels, docs=[path], config=CONFIG, workers=1)
    assert all((r.overall.precision, r.overall.recall) == (1.0, 1.0) for r in report.rows), report.rows[:2]
