"""The benchmark scripts run on this checkout and answer, on small inputs: a script drives the library directly
(`FrozenKeys`, `RunIndex`, the CLI, the store, a node), and a change of the library that a script does not
follow would otherwise show only on the day someone measures. Each run prints its section (nothing appended to
BENCHMARKS.md) and the test reads an answer out of it, not just the exit status.

The scripts that need Elasticsearch run against the session's node (the ``es_url`` fixture). `bench/review.py`
runs on a small collection ingested here. `bench/quality.py`'s natural benchmark reads the Tang collections'
data, which the tests do not download: its CLI and rensa steps run on a few texts.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import quality
from tests.bench_runs import ROOT, run_bench_script
from tests.corpus import make_corpus

#: (script and arguments, what its output must show), embedded store or no store at all.
LOCAL = [
    (["diversify.py", "--hits", "20", "--reps", "3", "--no-append"],
     r"\| the config's \(jaccard 0\.5 or containment 0\.8\) \| drop \| 20 \| \d+ \|"),
    (["frozen_keys.py", "--windows", "2", "--docs", "2000", "--batches", "2"], r"ids found [1-9][\d,]*;"),
    (["roll_memory.py", "--windows", "2", "--docs", "2000"], r"lookups digest [0-9a-f]{12}"),
    (["local.py", "short", "--docs", "1000", "--no-append"],
     r"\| ingest 1,000 poems .*, failed 0 \|(.|\n)*\| dups \(all pairs\) .* [1-9]\d* pairs \|"),
    (["tokenizers.py", "--docs", "50"], r"\| rjieba \| [\d.]+ \| [\d.]+ \|"),
    (["fingerprint.py", "--max-mb", "0.2", "--repeat", "1", "--skip-jieba"],
     r"full fingerprint \(rjieba\) / rjieba tokenizer alone, CPU time: warm \d+%"),
    (["segment.py", "--poems", "50", "--random", "50", "--paragraphs", "50"],
     r"\| 50 poems \| 50 / 50 \|(.|\n)*\| 50 People's Daily paragraphs \| 50 / 50 \|(.|\n)*\| 50 random mixed-script strings \| 50 / 50 \|"),
    # one size of near-identical documents: each size is a process of its own running the same steps
    (["ingest_limits.py", "--mb", "1", "--near", "40", "--timeout", "300"],
     r"--mb 1 --near 40` (.|\n)*\| one 1 MB Chinese document \| [\d:.]+ \| [\d.]+ GB \| exit 0 \|(.|\n)*\| 40 \| [\d.]+ \| [\d.]+ \|"),
    (["local_phases.py", "--docs", "300"],
     r"300 texts, wall .* main thread [\d.]+, (.|\n)*\| labels record by record \(clusters joined\) \| [\d.]+ \|"),
    (["scale.py", "--docs", "1000", "--local", "--no-append", "--lookups", "50", "--shuffled-ids"],
     r"ids shuffled (.|\n)*`esdedup dups` .*\| [1-9][\d,]* pairs \([1-9][\d,]* of the [\d,]+ planted family pairs, 0 across"),
]

#: The same, against a running node (``{es}``: its URL).
ON_A_NODE = [
    (["es.py", "--es", "{es}", "--docs", "300", "--rounds", "1", "--lookups", "5", "--no-append"],
     r"Elasticsearch \d+\.\d+\.\d+ single node \(heap [\d.]+ GiB, 1 shard(.|\n)*"
     r"\| esdedup ingest `--on-duplicate label` \| [\d,]+ \| \d+% \| [\d.]+ \| node [\d.]+ \+ client [^|]+ \| "
     r"\d+ near-duplicates labelled; client CPU \d+ µs a poem \(median\) \|(.|\n)*"
     r"\| `label` mode's bound: [^|]+ \| [\d,]+ \| \d+% \| [\d.]+ \| node [\d.]+ \+ client(.|\n)*"
     r"\| `diversify` of \d+ real hits \(the index's rule\) \| median \d+ µs"),
    (["writers.py", "--es", "{es}", "--docs", "300", "--writers", "2"],
     r"Same clusters with 1 and 2 writers, each represented by its earliest member: True"),
    (["lookup_batch.py", "--es", "{es}", "--docs", "300", "--probes", "20"],
     r"ingest into a held index: .* [1-9]\d* near-duplicates labelled"),
    (["search.py", "--es", "{es}", "--docs", "300", "--queries", "5", "--no-append"],
     r"\| search_diversified request \+ `diversify` \| [\d,]+ \|"),
    (["es_fields.py", "--es", "{es}", "--docs", "300", "--rounds", "1", "--no-append"],
     r"\| SimHash bands, no vector, no MinHash, no LSH \| [\d,]+ "),
    (["es_phases.py", "--es", "{es}", "--docs", "300", "--mode", "label"],
     r"label: 300 poems, .* client CPU [\d.]+ µs a poem (.|\n)*\| labels record by record \(clusters joined\) \| [\d.]+ \|"),
    (["es_source.py", "--es", "{es}", "--docs", "300", "--rounds", "1", "--no-append"],
     r"\| \d+\.\d+\.\d+ \| the server's default \| [\d,]+ \|"),
]


@pytest.mark.parametrize(("args", "shows"), LOCAL, ids=[a[0] for a, _ in LOCAL])
def test_a_benchmark_script_runs_and_answers(args: list[str], shows: str) -> None:
    run_bench_script(args, shows)


@pytest.mark.parametrize(("args", "shows"), ON_A_NODE, ids=[a[0] for a, _ in ON_A_NODE])
def test_a_benchmark_script_runs_and_answers_on_a_node(args: list[str], shows: str, es_url: str) -> None:
    run_bench_script([a.format(es=es_url) for a in args], shows)


def test_the_review_benchmark_runs_and_answers_on_a_small_collection(tmp_path: Path) -> None:
    docs, _ = make_corpus(300, 60, seed=5)
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    data = tmp_path / "data"
    subprocess.run([sys.executable, "-m", "esdedup", "ingest", str(path), "--index", "small", "--data-dir",
                    str(data), "-q"], cwd=ROOT, check=True, capture_output=True, timeout=300)
    run_bench_script(["review.py", "--data-dir", str(data), "--index", "small", "--repeat", "2", "--query", "国家"],
         r"360 documents, [1-9]\d* clusters of two or more(.|\n)*\| clusters, page 1 \| \d+ \| \d+ \|"
         r"(.|\n)*\| search “国家” \| \d+ \|")


POEMS = ["床前明月光，疑是地上霜。举头望明月，低头思故乡。", "床前明月光，疑是地上霜。举头望山月，低头思故乡。",
         "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。", "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",
         "千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。"]


def test_the_quality_benchmark_s_cli_and_rensa_steps_find_the_pair_and_their_ratio_is_reported(tmp_path: Path) -> None:
    """bench/quality.py's speed comparison: its CLI step (`esdedup ingest` then `esdedup dups` with every
    default, each a process of its own) and its rensa step find the same obvious pair of five poems, and the
    line it reports reads their ratio round by round."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"p{n}", "text": t}, ensure_ascii=False) + "\n"
                            for n, t in enumerate(POEMS)), "utf-8")
    cli = quality.run_cli_defaults(docs, tmp_path)
    rensa = quality.run_rensa(docs)
    assert cli[0] == rensa[0] == {("p0", "p1")}
    assert cli[1]["wall_s"] > 0 and rensa[1]["wall_s"] > 0
    ratios = quality.speed_ratios([cli, cli], [rensa, ({("p0", "p1")}, {"wall_s": rensa[1]["wall_s"] * 2})])
    assert ratios[0] == cli[1]["wall_s"] / rensa[1]["wall_s"] == 2 * ratios[1]
    assert "2.00x, 1.50x, 1.75x (median 1.75x)" in quality.speed_line([2.0, 1.5, 1.75])
    assert "median" not in quality.speed_line([1.9])


def test_the_quality_benchmark_writes_its_labels_file_as_an_owner(tmp_path: Path, monkeypatch) -> None:
    """bench/quality.py's synthetic step writes its labels file as esdedup's own writers do (`owned_labels`): a
    review page that holds the file refuses it, naming itself, and the file is left as the page wrote it."""
    from argparse import Namespace

    from esdedup.errors import ConfigError
    from esdedup.quality.evaluate import read_labels
    from esdedup.review.labels import LabelsFile

    monkeypatch.setattr(quality, "DATA", tmp_path / "data")
    monkeypatch.setattr(quality, "RESULTS", tmp_path / "results")
    docs, _ = make_corpus(8, 2, seed=5)
    quality.write_jsonl(docs, tmp_path / "data" / "synth" / "sources.jsonl")
    args = Namespace(rebuild=False, sources=6, seed=0, es=None, workers=1)
    assert "12 duplicate and 24 non-duplicate pairs" in quality.synth(args)[0]
    labels = tmp_path / "data" / "synth" / "labels.jsonl"
    made = read_labels(labels)
    assert made and {lab.label for lab in made} == {0, 1} and not labels.with_name("labels.jsonl.lock").exists()
    page = LabelsFile(labels, who="a review page of index poems")
    try:
        page.set("a", "b", 1)
        with pytest.raises(ConfigError, match=f"is in use by process {os.getpid()}, a review page of index poems"):
            quality.synth(args)
        assert read_labels(labels)[-1].key == ("a", "b")
    finally:
        page.close()


def test_the_quality_benchmark_feeds_its_peers_the_raw_text_s_bigrams(tmp_path: Path) -> None:
    """rensa and datasketch are timed as their users run them: a plain set of each raw text's character bigrams,
    made inside their clock, with no esdedup normalisation (which is esdedup's cost). Two texts that differ only
    in case are one text once esdedup has normalised them (case folded), and nothing alike raw."""
    assert quality.raw_bigrams("春眠，不觉") == {"春眠", "眠，", "，不", "不觉"}
    docs = tmp_path / "docs.jsonl"
    texts = ["SPRING DAWN UNAWARE OF MORNING", "spring dawn unaware of morning"]
    docs.write_text("".join(json.dumps({"id": f"p{n}", "text": t}) + "\n" for n, t in enumerate(texts)), "utf-8")
    assert quality.run_rensa(docs)[0] == set()
    assert quality.run_datasketch(docs)[0] == set()
