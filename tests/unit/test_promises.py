"""What the commands promise on their default path, output asserted exactly: the ranking of `similar`, the
flags that act, the measures shown, the messages a first try meets."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from esdedup_cli.main import app

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.schema import content_sha1
from esdedup.store.base import NewDoc
from esdedup.store.local import LocalStore
from tests.cli_runner import cli_runner

NEWS = Path(__file__).resolve().parents[2] / "examples" / "news.jsonl"
TEXT = "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。有关部门表示，这一措施将覆盖所有口岸。"


def _write(store_dir: Path, name: str, docs: list[tuple[str, str]], config: FingerprintConfig) -> None:
    fper = Fingerprinter(config)
    store = LocalStore(name, store_dir)
    store.open(config)
    norms = [fper.normalize(t) for _, t in docs]
    fps = fper.fingerprint_normalized(norms)
    written = store.write(NewDoc(i, fp, {"text": t}, content_sha1(n))
                          for (i, t), fp, n in zip(docs, fps, norms, strict=True))
    assert all(r.ok for r in written)
    store.close()


# -- similar --top N -----------------------------------------------------------------------------------------
def test_similar_top_puts_the_exact_copy_first_then_the_best_measured(clean_env: Path) -> None:
    """Among hundreds of near-identical texts, `similar --id X --top 3` gives the exact copy first (whatever its
    id), then the candidates with the highest n-gram Jaccard of all those compared."""
    rng = random.Random(5)
    chars = list(TEXT)
    docs = [("q", TEXT), ("zz-copy", TEXT)]
    for i in range(600):
        edited = chars[:]
        for _ in range(1 + i % 4):  # one to four characters replaced
            edited[rng.randrange(len(edited))] = rng.choice("甲乙丙丁戊己庚辛壬癸")
        docs.append((f"v{i:04d}", "".join(edited)))
    _write(clean_env, "crowd", docs, FingerprintConfig())
    r = cli_runner().invoke(app, ["similar", "--index", "crowd", "--data-dir", str(clean_env), "--id", "q",
                               "--top", "3", "--json"])
    assert r.exit_code == 0, r.output
    matches = json.loads(r.stdout)["matches"]
    everything = json.loads(cli_runner().invoke(app, ["similar", "--index", "crowd", "--data-dir", str(clean_env),
                                                   "--id", "q", "--top", "1000", "--json"]).stdout)["matches"]
    assert matches[0]["id"] == "zz-copy" and matches[0]["jaccard"] == 1.0
    best = sorted((-m["jaccard"], -m["containment"], m["id"]) for m in everything if m["id"] != "zz-copy")[:2]
    assert [m["id"] for m in matches[1:]] == [i for _, _, i in best]


# -- measures not computed ------------------------------------------------------------------------------------
def test_measures_not_computed_are_not_shown_as_numbers(clean_env: Path) -> None:
    """Without vectors (the default) the cosine is "-" / null and the pair says the n-gram estimate decided; an
    index with vectors (strategy simhash) shows the cosine it read and says Hamming and cosine decided."""
    runner = cli_runner()
    for index, extra in (("plain", []), ("vectors", ["--strategy", "simhash"])):
        made = runner.invoke(app, ["ingest", str(NEWS), "--index", index, "--data-dir", str(clean_env), "--t2s",
                                   "--workers", "1", "--quiet", *extra])
        assert made.exit_code == 0, made.output
    plain = [json.loads(line) for line in runner.invoke(app, ["dups", "--index", "plain", "--data-dir",
                                                              str(clean_env)]).stdout.splitlines()]
    assert plain and all(p["cosine"] is None and p["decided_by"] in ("jaccard", "containment") for p in plain)
    rail = next(p for p in plain if (p["a"], p["b"]) == ("rail-1", "rail-3"))
    assert rail == {"a": "rail-1", "b": "rail-3", "hamming": None, "cosine": None, "jaccard": 1.0, "containment": 1.0,
                    "decided_by": "jaccard"}
    found = json.loads(runner.invoke(app, ["similar", "--index", "plain", "--data-dir", str(clean_env), "--id",
                                           "rail-1", "--json"]).stdout)["matches"]
    assert found[0] == {"id": "rail-3", "hamming": None, "cosine": None, "jaccard": 1.0, "containment": 1.0,
                        "decided_by": "jaccard"}
    vectors = [json.loads(line) for line in runner.invoke(app, ["dups", "--index", "vectors", "--data-dir",
                                                                str(clean_env)]).stdout.splitlines()]
    assert vectors and all(isinstance(p["cosine"], float) and p["decided_by"] == "hamming and cosine"
                           and "jaccard" not in p for p in vectors)
    table = runner.invoke(app, ["dups", "--index", "vectors", "--data-dir", str(clean_env), "--format", "table"])
    row = next(line.split() for line in table.stdout.splitlines() if line.startswith("rail-1") and "rail-3" in line)
    assert row == ["rail-1", "rail-3", "0", "1.0000", "-", "-", "hamming", "and", "cosine"]


# -- what a user tries first ------------------------------------------------------------------------------
def test_ingest_reads_standard_input(clean_env: Path) -> None:
    lines = NEWS.read_bytes()
    r = cli_runner().invoke(app, ["ingest", "-", "--index", "piped", "--data-dir", str(clean_env), "--t2s", "--json",
                               "--workers", "1", "--dead-letter", str(clean_env / "dl.jsonl")], input=lines)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout.splitlines()[-1])
    assert (summary["read"], summary["indexed"], summary["failed"], summary["duplicates"]) == (13, 13, 0, 5)
    again = cli_runner().invoke(app, ["ingest", "-", "--index", "piped", "--data-dir", str(clean_env), "--json",
                                   "--workers", "1", "--dead-letter", str(clean_env / "dl.jsonl")], input=lines)
    assert again.exit_code == 0 and json.loads(again.stdout.splitlines()[-1])["created"] == 0, again.output


def test_similar_says_the_text_is_empty(clean_env: Path) -> None:
    made = cli_runner().invoke(app, ["ingest", str(NEWS), "--index", "n", "--data-dir", str(clean_env), "--quiet",
                                  "--workers", "1"])
    assert made.exit_code == 0, made.output
    warning = ("warning: the --text given has no words once normalised (it is empty, blank, or only punctuation "
               "and stopwords), so only its exact copies match it; give a text with words to find near-duplicates\n")
    for text in ("   ", "", "，。！"):
        r = cli_runner().invoke(app, ["similar", "--index", "n", "--data-dir", str(clean_env), "--text", text])
        assert r.exit_code == 0 and r.stdout.endswith(": 0 near-duplicate(s)\n") and r.stderr == warning, r.output
        r = cli_runner().invoke(app, ["similar", "--index", "n", "--data-dir", str(clean_env), "--text", text, "--json"])
        assert r.exit_code == 0 and r.stderr == warning
        assert json.loads(r.stdout)["query"]["empty"] is True and json.loads(r.stdout)["matches"] == []


def test_dups_as_csv(clean_env: Path) -> None:
    made = cli_runner().invoke(app, ["ingest", str(NEWS), "--index", "n", "--data-dir", str(clean_env), "--t2s",
                                  "--quiet", "--workers", "1"])
    assert made.exit_code == 0, made.output
    r = cli_runner().invoke(app, ["dups", "--index", "n", "--data-dir", str(clean_env), "--format", "csv"])
    assert r.exit_code == 0, r.output
    jsonl = [json.loads(line) for line in cli_runner().invoke(app, ["dups", "--index", "n", "--data-dir",
                                                                 str(clean_env)]).stdout.splitlines()]
    expected = ["a,b,hamming,cosine,jaccard,containment,decided_by"] + [
        f"{p['a']},{p['b']},{'' if p['hamming'] is None else p['hamming']},,{p['jaccard']},{p['containment']},"
        f"{p['decided_by']}" for p in jsonl]  # a measure not computed (no SimHash, no vector) is an empty cell
    assert r.stdout.splitlines() == expected and len(expected) == 7


def test_the_whole_info_json_is_a_config_file(clean_env: Path) -> None:
    runner = cli_runner()
    made = runner.invoke(app, ["ingest", str(NEWS), "--index", "src", "--data-dir", str(clean_env), "--quiet",
                               "--workers", "1", "--t2s", "--hamming-k", "4"])
    assert made.exit_code == 0, made.output
    info = runner.invoke(app, ["info", "--index", "src", "--data-dir", str(clean_env), "--json"]).stdout
    (clean_env / "info.json").write_text(info, "utf-8")
    copy = runner.invoke(app, ["ingest", str(NEWS), "--index", "copy", "--data-dir", str(clean_env), "--quiet",
                               "--workers", "1", "--config", str(clean_env / "info.json")])
    assert copy.exit_code == 0, copy.output
    copied = json.loads(runner.invoke(app, ["info", "--index", "copy", "--data-dir", str(clean_env), "--json"]).stdout)
    assert copied["config"] == json.loads(info)["config"]


@pytest.mark.parametrize("args", [["pipeline", "put"], ["label"], ["similar", "--text", TEXT, "--server-side"]])
def test_elasticsearch_only_commands_on_the_local_store_name_es(clean_env: Path, args: list[str]) -> None:
    made = cli_runner().invoke(app, ["ingest", str(NEWS), "--index", "n", "--data-dir", str(clean_env), "--quiet",
                                  "--workers", "1"])
    assert made.exit_code == 0, made.output
    r = cli_runner().invoke(app, [*args, "--index", "n", "--data-dir", str(clean_env)])
    assert r.exit_code == 2
    assert r.stderr.endswith("; give the server with --es URL (or ESDEDUP_ES_URL)\n"), r.stderr


def test_help_says_what_the_code_does_and_uses_es_locals_port() -> None:
    dups = cli_runner().invoke(app, ["dups", "--help"], terminal_width=200).stdout
    assert "terms aggregations of the shared keys, one partition of the keys at a time" in " ".join(dups.split())
    assert "composite" not in dups
    import typer

    def walk(cmd, path):
        yield path
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            yield from walk(sub, (*path, name))

    for path in walk(typer.main.get_command(app), ()):
        text = cli_runner().invoke(app, [*path, "--help"]).stdout
        assert ":9200" not in text, path
    mapping = cli_runner().invoke(app, ["mapping", "--index", "x", "--help"]).stdout
    assert "--es" in mapping


# -- flags that cannot change the answer -------------------------------------------------------------------------
def test_thresholds_that_cannot_act_are_refused_naming_those_that_do(clean_env: Path) -> None:
    """Under strategy auto the n-gram estimates decide: --hamming and --cosine are refused (exit 2, one line
    naming the options that act); under simhash --jaccard and --containment are; acting ones run."""
    runner = cli_runner()
    for index, extra in (("auto", []), ("sim", ["--strategy", "simhash"])):
        made = runner.invoke(app, ["ingest", str(NEWS), "--index", index, "--data-dir", str(clean_env), "--quiet",
                                   "--workers", "1", *extra])
        assert made.exit_code == 0, made.output
    auto_rule = ("strategy 'auto': every text with words carries a MinHash signature, and a pair is a "
                 "near-duplicate when its estimated character n-gram Jaccard >= 0.5 or containment >= 0.8")
    cases = [
        (["dups", "--index", "auto", "--hamming", "0", "--cosine", "0.99"],
         f"Error: the thresholds hamming_k, cosine cannot change the answer on this index ({auto_rule}); the "
         "thresholds that act: jaccard, containment; omit --hamming, --cosine; the options that act here: "
         "--jaccard, --containment"),
        (["similar", "--index", "auto", "--id", "rail-1", "--cosine", "0.9"],
         f"Error: the threshold cosine cannot change the answer on this index ({auto_rule}); the thresholds that "
         "act: jaccard, containment; omit --cosine; the options that act here: --jaccard, --containment"),
        (["dups", "--index", "sim", "--jaccard", "0.9"],
         "Error: the threshold jaccard cannot change the answer on this index (strategy 'simhash': a pair is a "
         "near-duplicate when its SimHash Hamming distance is at most 3 and its TF cosine at least 0.8); the "
         "thresholds that act: hamming_k, cosine; omit --jaccard; the options that act here: --hamming, --cosine"),
        (["ingest", str(NEWS), "--index", "fresh", "--hamming", "2", "--workers", "1"],
         f"Error: the threshold hamming_k cannot change the answer on this index ({auto_rule}); the thresholds "
         "that act: jaccard, containment; omit --hamming; the options that act here: --jaccard, --containment"),
    ]
    for args, message in cases:
        r = runner.invoke(app, [*args, "--data-dir", str(clean_env)])
        assert (r.exit_code, r.stderr) == (2, message + "\n"), (args, r.stderr)
    for args in (["dups", "--index", "auto", "--jaccard", "0.9"], ["dups", "--index", "sim", "--cosine", "0.9"],
                 ["dups", "--index", "sim", "--hamming", "1"]):
        r = runner.invoke(app, [*args, "--data-dir", str(clean_env)])
        assert r.exit_code == 0, (args, r.stderr)
    assert not (clean_env / "fresh.sqlite").exists()


def test_info_states_the_rule_the_index_applies(clean_env: Path) -> None:
    runner = cli_runner()
    for index, extra in (("auto", []), ("sim", ["--strategy", "simhash"]), ("mh", ["--strategy", "minhash"])):
        made = runner.invoke(app, ["ingest", str(NEWS), "--index", index, "--data-dir", str(clean_env), "--quiet",
                                   "--workers", "1", *extra])
        assert made.exit_code == 0, made.output
    lines = {index: runner.invoke(app, ["info", "--index", index, "--data-dir", str(clean_env)]).stdout.splitlines()
             for index in ("auto", "sim", "mh")}
    assert lines["auto"][1] == ("rule: strategy 'auto': every text with words carries a MinHash signature, and a "
                                "pair is a near-duplicate when its estimated character n-gram Jaccard >= 0.5 or "
                                "containment >= 0.8")
    assert lines["auto"][2].startswith("SimHash band keys, only for texts of 200 or more characters (candidates, "
                                       "which the rule above decides): 4 tables")
    assert not any("finds every pair within Hamming" in line for line in lines["auto"] + lines["mh"])
    assert not any(line.startswith("SimHash band keys") or line.startswith("band layout") for line in lines["mh"])
    assert lines["sim"][1] == ("rule: strategy 'simhash': a pair is a near-duplicate when its SimHash Hamming "
                               "distance is at most 3 and its TF cosine at least 0.8")
    assert lines["sim"][2].endswith("finds every pair within Hamming 3")
    data = json.loads(runner.invoke(app, ["info", "--index", "auto", "--data-dir", str(clean_env), "--json"]).stdout)
    assert data["rule"] == lines["auto"][1].removeprefix("rule: ")
    assert data["acting_thresholds"] == ["jaccard", "containment"]


# -- a re-run changes nothing ------------------------------------------------------------------------------------
def test_a_rerun_of_the_same_ingest_sends_nothing(clean_env: Path) -> None:
    runner = cli_runner()
    args = ["ingest", str(NEWS), "--index", "n", "--data-dir", str(clean_env), "--t2s", "--workers", "1"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("read 13 = indexed 13 (new 13, updated 0) + skipped 0 + failed 0\n")
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith("read 13 = indexed 13 (new 0, updated 0, unchanged 13) + skipped 0 + failed 0\n"
                                   "near-duplicates found: 5;")
    edited = clean_env / "edited.jsonl"
    rows = [json.loads(line) for line in NEWS.read_text("utf-8").splitlines()]
    rows[-1]["text"] += "（完）"
    edited.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    changed = runner.invoke(app, ["ingest", str(edited), *args[2:]])
    assert changed.exit_code == 0, changed.output
    assert changed.stdout.startswith("read 13 = indexed 13 (new 0, updated 1, unchanged 12) + skipped 0 + failed 0\n")
