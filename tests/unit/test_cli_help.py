"""The command line as documentation: every command explains itself with an example, and the exit codes
follow one policy (0 ok, 1 failures in the data, 2 usage or configuration, 3 server or connection, 4 a worker
process of the run killed), with
one ``Error:`` line and never a traceback."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from esdedup_cli.main import app

from esdedup import errors
from tests.cli_runner import cli_runner

EXPECTED_COMMANDS = {("ingest",), ("similar",), ("dups",), ("mapping",), ("info",), ("compare",), ("eval",), ("index", "create"),
                     ("synth",), ("kibana",), ("kibana", "export")}
DOC = "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。有关部门表示，这一措施将覆盖所有口岸。"


def _command_paths() -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        # Duck-typed: recent typer releases bring their own copy of click, so isinstance(click.Group) fails.
        if path:
            paths.append(path)
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return paths


COMMANDS = _command_paths()


def _assert_one_error_line(result) -> str:
    """Exactly one line on stderr, an ``Error:`` line, and no exception escaped the command."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors_ = [line for line in lines if line.startswith("Error:")]
    assert len(errors_) == 1, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    return errors_[0]


# -- help --------------------------------------------------------------------------------------------
def test_every_expected_command_is_registered() -> None:
    assert EXPECTED_COMMANDS <= set(COMMANDS), sorted(EXPECTED_COMMANDS - set(COMMANDS))


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_help_has_an_example(path: tuple[str, ...]) -> None:
    result = cli_runner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("Usage: ")
    examples = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("Example:")]
    assert examples, f"'esdedup {' '.join(path)} --help' has no 'Example:' line"
    assert examples[0].startswith(f"Example: esdedup {' '.join(path)}"), examples[0]


def test_version() -> None:
    from esdedup import __version__

    result = cli_runner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"esdedup {__version__}"


# -- exit codes ---------------------------------------------------------------------------------------
def test_error_classes_follow_the_exit_code_policy() -> None:
    assert errors.EsdedupError.exit_code == 1
    assert errors.InputError.exit_code == errors.DecodeError.exit_code == errors.BulkError.exit_code == 1
    assert errors.ConfigError.exit_code == errors.ConfigMismatchError.exit_code == 2
    assert errors.IndexNotFound.exit_code == 2
    assert errors.StoreError.exit_code == errors.ConnectionFailed.exit_code == 3
    assert errors.WorkerKilled.exit_code == 4


def test_ok_is_0(clean_env: Path) -> None:
    result = cli_runner().invoke(app, ["mapping", "--index", "news"])
    assert result.exit_code == 0, result.stderr
    assert "dedup" in json.loads(result.stdout)["mappings"]["properties"]


def test_missing_index_is_a_usage_error(clean_env: Path) -> None:
    result = cli_runner().invoke(app, ["similar", "--index", "missing", "--text", "x", "--data-dir", str(clean_env)])
    assert result.exit_code == 2
    line = _assert_one_error_line(result)
    assert "'missing'" in line and "does not exist" in line
    assert result.stdout == ""


def test_bad_options_are_usage_errors(clean_env: Path) -> None:
    runner = cli_runner()
    neither = runner.invoke(app, ["similar", "--index", "news", "--data-dir", str(clean_env)])
    assert neither.exit_code == 2 and "exactly one of --text, --id or --file" in neither.stderr
    assert "Traceback" not in neither.stderr
    unknown = runner.invoke(app, ["ingest", "x", "--index", "t", "--no-such-option"])
    assert unknown.exit_code == 2 and "No such option" in unknown.stderr
    bad_config = runner.invoke(app, ["mapping", "--index", "news", "--bits", "63"])
    assert bad_config.exit_code == 2
    assert "bits must be 64 or 128" in _assert_one_error_line(bad_config)


def test_error_lines_name_the_flags_that_fix_them(clean_env: Path) -> None:
    """The library states the problem in its own terms; the CLI adds the flags, on the same line."""
    sample = clean_env / "one.jsonl"
    sample.write_text(json.dumps({"id": "a", "text": DOC}, ensure_ascii=False) + "\n", "utf-8")
    runner = cli_runner()
    common = ["--index", "h", "--data-dir", str(clean_env)]
    made = runner.invoke(app, ["ingest", str(sample), *common, "--workers", "1", "--quiet"])
    assert made.exit_code == 0, made.output
    wide = runner.invoke(app, ["dups", *common, "--hamming", "9"])
    assert wide.exit_code == 2
    line = _assert_one_error_line(wide)
    assert "hamming_k 3" in line and "--hamming 3 or less" in line and "--hamming-k 9" in line, line
    other = runner.invoke(app, ["ingest", str(sample), *common, "--workers", "1", "--bits", "128"])
    assert other.exit_code == 2
    line = _assert_one_error_line(other)
    assert "different fingerprint config" in line and "omit the fingerprint options" in line, line


def test_certificate_errors_get_the_tls_flags() -> None:
    from esdedup_cli.common import error_line

    untrusted = error_line(errors.CertificateError("TLS certificate verification failed", needs="ca"))
    assert untrusted.startswith("Error: TLS certificate verification failed;") and "--ca-certs" in untrusted
    assert "--client-cert and --client-key" in error_line(errors.CertificateError("no cert", needs="client_cert"))


@pytest.mark.parametrize("name", ["abc\n", "abc\r\n", "\nabc", "ab\x1b[2Jc"])
def test_a_name_with_a_line_break_or_control_character_is_invalid(clean_env: Path, name: str) -> None:
    result = cli_runner().invoke(app, ["info", "--index", name, "--data-dir", str(clean_env)])
    assert result.exit_code == 2
    assert "invalid index name" in _assert_one_error_line(result)
    assert not list(clean_env.glob("*.sqlite"))


def test_malformed_record_is_a_data_failure_and_the_summary_adds_up(clean_env: Path) -> None:
    sample = clean_env / "sample.jsonl"
    sample.write_text(json.dumps({"id": "a", "text": DOC}, ensure_ascii=False) + "\n"
                      + '{"id": "b", "text": broken\n'
                      + json.dumps({"id": "c", "text": "今天北京天气晴朗，最高气温二十五度，适合户外活动。"},
                                   ensure_ascii=False) + "\n", "utf-8")
    result = cli_runner().invoke(app, ["ingest", str(sample), "--index", "t", "--data-dir", str(clean_env),
                                    "--workers", "1"])
    assert result.exit_code == 1, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    m = re.search(r"read (\d+) = indexed (\d+) \(new (\d+), updated (\d+)\) \+ skipped (\d+) \+ failed (\d+)",
                  result.stdout)
    assert m, result.stdout
    read, indexed, new, updated, skipped, failed = map(int, m.groups())
    assert (read, indexed, skipped, failed) == (3, 2, 0, 1)
    assert read == indexed + skipped + failed and indexed == new + updated
    dead = [json.loads(line) for line in (clean_env / "t.dead-letter.jsonl").read_text("utf-8").splitlines()]
    assert len(dead) == failed + skipped
    assert dead[0]["location"] == "line 2" and "JSON" in dead[0]["reason"]
    assert "t.dead-letter.jsonl" in result.stdout


def test_unreachable_server_is_3_with_the_url(clean_env: Path) -> None:
    (clean_env / "x").write_text(json.dumps({"id": "a", "text": DOC}, ensure_ascii=False) + "\n", "utf-8")
    url = "http://127.0.0.1:1"  # nothing listens on port 1
    result = cli_runner().invoke(app, ["ingest", "x", "--index", "t", "--es", url, "--workers", "1"])
    assert result.exit_code == 3, (result.stdout, result.stderr)
    line = _assert_one_error_line(result)
    assert url in line and "cannot reach Elasticsearch" in line


THRESHOLD_FLAGS = ("--hamming", "--cosine", "--jaccard", "--containment")


@pytest.mark.parametrize("command", ["ingest", "label", "similar", "dups"])
def test_the_commands_that_apply_the_rule_take_the_one_threshold_group(command: str) -> None:
    """The four thresholds are declared once (`threshold_options` in cli/common.py), and every command that
    applies the rule offers all four."""
    result = cli_runner().invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.stderr
    assert all(re.search(rf"{flag}(?![\w-])", result.stdout) for flag in THRESHOLD_FLAGS), result.stdout
    cli = Path(__file__).resolve().parents[2] / "cli"
    declared = [p.name for p in sorted(cli.glob("*.py")) if '"--hamming"' in p.read_text("utf-8")]
    assert declared == ["common.py"]


def test_ngram_thresholds_from_the_command_line(clean_env: Path) -> None:
    """--jaccard / --containment override the index's n-gram thresholds in ingest, similar and dups: the
    sample's edited reprints are duplicates at the defaults; at Jaccard 1 with containment off only the
    reprint that is the same text in Traditional script is."""
    news = Path(__file__).resolve().parents[2] / "examples" / "news.jsonl"
    runner = cli_runner()
    common = ["--data-dir", str(clean_env)]

    def pairs(*extra: str) -> set[tuple[str, str]]:
        r = runner.invoke(app, ["dups", "--index", "n", *common, *extra])
        assert r.exit_code == 0, r.output
        return {(p["a"], p["b"]) for p in map(json.loads, r.stdout.splitlines())}

    def labelled(index: str, *extra: str) -> int:
        r = runner.invoke(app, ["ingest", str(news), "--index", index, *common, "--json", "--quiet",
                                "--t2s", "--dead-letter", str(clean_env / f"{index}.dl"), *extra])
        assert r.exit_code == 0, r.output
        return int(json.loads(r.stdout.strip().splitlines()[-1])["duplicates"])

    assert labelled("n") > 1
    assert labelled("strict", "--jaccard", "1", "--containment", "0") == 1
    default = pairs()
    identical = {p for p in default if p == ("rail-1", "rail-3")}  # one text, Simplified and Traditional
    assert len(default) > len(identical) > 0
    assert pairs("--jaccard", "1", "--containment", "0") == identical
    assert pairs("--jaccard", "0.05") >= default
    text = json.loads(news.read_text("utf-8").splitlines()[0])
    r = runner.invoke(app, ["similar", "--index", "n", *common, "--id", text["id"], "--json",
                            "--jaccard", "1", "--containment", "0"])
    assert r.exit_code == 0 and all(m["id"] in {"rail-1", "rail-3"} for m in json.loads(r.stdout)["matches"])


# -- --config --------------------------------------------------------------------------------------------
def test_the_config_info_prints_is_a_usable_config_file(clean_env: Path) -> None:
    """`esdedup info --json` prints the index's config; given back with --config, ingest, mapping and
    compare take it as it is (its key stopwords_path, null, must not read as "stopwords 'file'")."""
    runner = cli_runner()
    common = ["--data-dir", str(clean_env)]
    sample = clean_env / "docs.jsonl"
    sample.write_text(json.dumps({"id": "a", "text": DOC}, ensure_ascii=False) + "\n", "utf-8")
    made = runner.invoke(app, ["ingest", str(sample), "--index", "src", *common, "--workers", "1", "--quiet",
                               "--t2s", "--hamming-k", "4"])
    assert made.exit_code == 0, made.output
    config = json.loads(runner.invoke(app, ["info", "--index", "src", *common, "--json"]).stdout)["config"]
    path = clean_env / "config.json"
    path.write_text(json.dumps(config), "utf-8")
    again = runner.invoke(app, ["ingest", str(sample), "--index", "copy", *common, "--workers", "1", "--quiet",
                                "--config", str(path)])
    assert again.exit_code == 0, again.output
    copied = json.loads(runner.invoke(app, ["info", "--index", "copy", *common, "--json"]).stdout)["config"]
    assert copied == config
    mapping = runner.invoke(app, ["mapping", "--index", "m", "--config", str(path)])
    assert mapping.exit_code == 0, mapping.output
    assert json.loads(mapping.stdout)["mappings"]["_meta"]["esdedup"]["config"] == config
    compare = runner.invoke(app, ["compare", str(sample), str(sample), "--config", str(path), "--format", "jsonl"])
    assert compare.exit_code == 0 and json.loads(compare.stdout)["cosine"] == 1.0, compare.output


def test_a_file_option_replaces_the_config_files_digest(clean_env: Path) -> None:
    old, new = clean_env / "old.txt", clean_env / "new.txt"
    old.write_text("的\n了\n", "utf-8")
    new.write_text("是\n", "utf-8")
    path = clean_env / "config.json"
    path.write_text(json.dumps({"stopwords": "file", "stopwords_path": str(old)}), "utf-8")
    result = cli_runner().invoke(app, ["mapping", "--index", "m", "--config", str(path), "--stopwords-file", str(new)])
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)["mappings"]["_meta"]["esdedup"]["config"]
    import hashlib

    assert config["stopwords_sha256"] == hashlib.sha256(new.read_bytes()).hexdigest()


@pytest.mark.parametrize("content, message", [
    (b"\x00\x01\xff\xfe binary", "is not JSON text (not UTF-8 at byte 2)"),
    (b'{"bits": "64"}', "config field bits must be a whole number, got str '64'"),
    (b'{"t2s": "yes"}', "config field t2s must be true or false, got str 'yes'"),
    (b'{"cosine_threshold": [0.8]}', "config field cosine_threshold must be a number, got list"),
    (b"[1, 2]", "config JSON must be an object"),
    (b'{"bits": 64', "config is not valid JSON"),
    (None, "is not a regular file"),  # a folder
])
def test_a_bad_config_file_is_one_line_and_exit_2(clean_env: Path, content: bytes | None, message: str) -> None:
    path = clean_env / "bad-config"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    for command in (["mapping", "--index", "m"], ["compare", "a.txt", "b.txt"]):
        result = cli_runner().invoke(app, [*command, "--config", str(path)])
        assert result.exit_code == 2, result.output
        line = _assert_one_error_line(result)
        assert f"config file {path}" in line and message in line, line


# -- values refused before any work -----------------------------------------------------------------------
#: Typer's own refusals (a choice, a range) are asserted by the flag only: their wording changes between
#: typer releases.
REFUSED = [
    (["compare", "{a}", "{b}", "--format", "xml"], "Invalid value for '--format'"),
    (["compare", "{a}", "{b}", "--max-ratio", "-1"], "max_ratio must be a number of at least 1"),
    (["compare", "{a}", "{b}", "--max-ratio", "nan"], "got nan"),
    (["dups", "--index", "n", "--hamming", "-1"], "hamming_k must be a whole number from 0 to 128"),
    (["dups", "--index", "n", "--max-bucket", "-5"], "Invalid value for '--max-bucket'"),
    (["dups", "--index", "n", "--format", "xml"], "Invalid value for '--format'"),
    (["dups", "--index", "n", "--cosine", "nan"], "cosine threshold must be a number in (0, 1]"),
    (["similar", "--index", "n", "--text", "x", "--top", "-1"], "Invalid value for '--top'"),
    (["similar", "--index", "n", "--text", "x", "--jaccard", "2"], "jaccard threshold must be a number in (0, 1]"),
    (["ingest", "{a}", "--index", "n", "--hamming", "-1"], "hamming_k must be a whole number from 0 to 128"),
    (["ingest", "{a}", "--index", "n", "--containment", "inf"], "containment threshold must be a number in (0, 1]"),
    (["ingest", "{a}", "--index", "n", "--format", "xml"], "Invalid value for '--format'"),
    (["ingest", "{a}", "--index", "n", "--shards", "0"], "Invalid value for '--shards'"),
    (["ingest", "{a}", "--index", "n", "--workers", "-2"], "Invalid value for '--workers'"),
    (["eval", "--pairs", "{labels}", "--docs", "{a}", "--cosines", "0.8,nan"], "cosine threshold must be"),
    (["eval", "--pairs", "{labels}", "--docs", "{a}", "--hammings", "2.7"], "'2.7' is not a whole number"),
    (["eval", "--pairs", "{labels}", "--docs", "{a}", "--max-bucket", "1"], "Invalid value for '--max-bucket'"),
    (["info", "--index", "n", "--data-dir", "{a}"], "is a file, not a folder"),
    (["ingest", "{a}", "--index", "n", "--data-dir", "{a}/sub"], "is a file, not a folder"),
]


@pytest.mark.parametrize("args, message", REFUSED, ids=[" ".join(a[:1] + a[-2:]) for a, _ in REFUSED])
def test_impossible_values_are_refused_before_any_work(clean_env: Path, args: list[str], message: str) -> None:
    a, b = clean_env / "a.jsonl", clean_env / "b.jsonl"
    a.write_text(json.dumps({"id": "a", "text": DOC}, ensure_ascii=False) + "\n", "utf-8")
    b.write_text(json.dumps({"id": "b", "text": DOC}, ensure_ascii=False) + "\n", "utf-8")
    labels = clean_env / "labels.jsonl"
    labels.write_text('{"a": "a", "b": "b", "label": 1}\n', "utf-8")
    data = clean_env / "data"
    argv = [x.format(a=a, b=b, labels=labels) for x in args]
    if "--data-dir" not in argv:
        argv += ["--data-dir", str(data)] if argv[0] != "compare" else []
    result = cli_runner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split()), result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    made = [p.name for p in clean_env.rglob("*") if p.suffix in (".sqlite", ".json") or "dead-letter" in p.name]
    assert made == [], f"work was done before the refusal: {made}"


def test_labels_are_exactly_0_or_1(clean_env: Path) -> None:
    docs = clean_env / "docs.jsonl"
    docs.write_text(json.dumps({"id": "a", "text": DOC}, ensure_ascii=False) + "\n", "utf-8")
    for label in ("1.7", '"1"', "true", "2", "1.0", "0.0", "1e0"):
        labels = clean_env / "labels.jsonl"
        labels.write_text('{"a": "a", "b": "b", "label": 1}\n{"a": "a", "b": "c", "label": ' + label + "}\n", "utf-8")
        result = cli_runner().invoke(app, ["eval", "--pairs", str(labels), "--docs", str(docs),
                                        "--data-dir", str(clean_env / "data")])
        assert result.exit_code == 1, result.output  # a bad labels file is bad input data, like a malformed line
        line = _assert_one_error_line(result)
        assert "line 2: label must be 0 or 1" in line and f"got label {json.loads(label)!r}" in line, line
        assert not (clean_env / "data").exists()  # refused before anything was indexed


# -- what reaches the terminal ----------------------------------------------------------------------------
HOSTILE_IDS = ["\x1b]0;pwned\x07a", "b\x1b[2J\x9b31m\u202egnp.exe"]
ACTIVE = ("\x1b", "\x07", "\x9b", "\u202e")


def test_control_sequences_in_ids_and_titles_reach_no_terminal_raw(clean_env: Path) -> None:
    """Ids and titles holding ESC ] 0;... BEL (window title), ESC [2J (clear screen), a C1 CSI and a
    right-to-left override: written as escapes in text for people, as \\u escapes in JSON (which still
    parses to the exact ids)."""
    sample = clean_env / "hostile.jsonl"
    sample.write_text("".join(json.dumps({"id": i, "title": "标题\x1b[2J" + i, "text": DOC}, ensure_ascii=False)
                              + "\n" for i in HOSTILE_IDS), "utf-8")
    runner = cli_runner()
    common = ["--index", "h", "--data-dir", str(clean_env)]
    made = runner.invoke(app, ["ingest", str(sample), *common, "--workers", "1"])
    assert made.exit_code == 0, made.output
    outputs = {
        "dups table": runner.invoke(app, ["dups", *common, "--format", "table"]),
        "dups jsonl": runner.invoke(app, ["dups", *common]),
        "similar --explain": runner.invoke(app, ["similar", *common, "--id", HOSTILE_IDS[0], "--explain"]),
        "similar --json": runner.invoke(app, ["similar", *common, "--text", DOC, "--json"]),
        "error": runner.invoke(app, ["similar", *common, "--file", str(clean_env / "x\x1b[2J.txt")]),
    }
    for what, result in outputs.items():
        assert result.exit_code == (2 if what == "error" else 0), (what, result.output)  # a missing file: usage
        for ch in ACTIVE:
            assert ch not in result.stdout + result.stderr, (what, ch, result.output)
    table = outputs["dups table"].stdout
    assert "\\x1b]0;pwned\\x07a" in table and "\\x1b[2J\\x9b31m\\u202egnp.exe" in table
    assert "title: 标题\\x1b[2J" in outputs["similar --explain"].stdout
    pair = json.loads(outputs["dups jsonl"].stdout.splitlines()[0])
    assert sorted([pair["a"], pair["b"]]) == sorted(HOSTILE_IDS)
    assert sorted(m["id"] for m in json.loads(outputs["similar --json"].stdout)["matches"]) == sorted(HOSTILE_IDS)
    assert "x\\x1b[2J.txt" in _assert_one_error_line(outputs["error"])


def test_json_for_programs_is_exact_and_inert() -> None:
    from esdedup_cli.output import for_people, json_text

    every = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0), 0x61C, 0x200E, 0x200F, 0x2028, 0x2029,
                              *range(0x202A, 0x202F), *range(0x2066, 0x206A)]))
    value = {"id": "台湾" + every + "\\x1b", "n": 1}
    text = json_text(value)
    assert json.loads(text) == value and text.isprintable()
    indented = json_text(value, indent=2)
    assert json.loads(indented) == value and all(line.isprintable() for line in indented.splitlines())
    assert for_people(every).isprintable() and for_people("台湾 a\tb") == "台湾 a\\tb"


# -- why a pair matched -------------------------------------------------------------------------------------
def test_output_names_the_measures_that_decided(clean_env: Path) -> None:
    """dups (table and JSONL), similar and --explain show the MinHash Jaccard/containment estimates and the
    measure that decided; on an index without vectors (the default) no vector cosine is shown ("-", null), and
    the exact TF cosine of --explain is named apart."""
    news = Path(__file__).resolve().parents[2] / "examples" / "news.jsonl"
    runner = cli_runner()
    common = ["--index", "n", "--data-dir", str(clean_env)]
    made = runner.invoke(app, ["ingest", str(news), *common, "--t2s", "--workers", "1", "--quiet"])
    assert made.exit_code == 0, made.output
    table = runner.invoke(app, ["dups", *common, "--format", "table"]).stdout.splitlines()
    assert table[0].split() == ["a", "b", "hamming", "vec_cos", "jaccard", "contain", "decided"]
    row = next(line.split() for line in table if line.startswith("rail-1") and "rail-2" in line)
    pairs = [json.loads(line) for line in runner.invoke(app, ["dups", *common]).stdout.splitlines()]
    pair = next(p for p in pairs if (p["a"], p["b"]) == ("rail-1", "rail-2"))
    # Short texts under the default config are not segmented: no SimHash, no Hamming distance to show.
    assert pair["hamming"] is None and pair["cosine"] is None and pair["decided_by"] == "jaccard"
    assert row[2:] == ["-", "-", f"{pair['jaccard']:.4f}", f"{pair['containment']:.4f}", "jaccard"]
    assert any(line.startswith("hamming: SimHash bits apart (- where a text has none") for line in table)
    assert any("cosine of the hashed TF vectors (- where the index stores none)" in line for line in table)
    similar = runner.invoke(app, ["similar", *common, "--id", "rail-1", "--explain"]).stdout
    line = next(line for line in similar.splitlines() if line.strip().startswith("rail-2"))
    assert line.split("\t")[1:] == ["hamming -", "vector cosine -",
                                    f"jaccard {pair['jaccard']:.4f}", f"containment {pair['containment']:.4f}",
                                    "decided by jaccard"]
    assert "exact TF cosine: " in similar and "the index stores no vectors, so no vector cosine is shown" in similar


def test_similar_says_when_its_answer_was_truncated(clean_env: Path) -> None:
    """More stored candidates than one lookup fetches: the answer says so (JSON "truncated", a warning)."""
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.fingerprint.fingerprinter import Fingerprinter
    from esdedup.match.lookup import DEFAULT_LIMIT
    from esdedup.store.base import NewDoc
    from esdedup.store.local import LocalStore

    config = FingerprintConfig(tokenizer="rjieba")
    fp = Fingerprinter(config).fingerprint(DOC)
    for name, n in (("crowd", DEFAULT_LIMIT + 1), ("few", 3)):
        store = LocalStore(name, clean_env)
        store.open(config)
        assert all(r.ok for r in store.write(NewDoc(f"d{i:05d}", fp, {"text": DOC}, "0" * 40) for i in range(n)))
        store.close()
    for name, truncated in (("crowd", True), ("few", False)):
        common = ["similar", "--index", name, "--data-dir", str(clean_env), "--text", DOC]
        text = cli_runner().invoke(app, common)
        assert text.exit_code == 0, text.output
        assert ("warning: the index holds more candidates" in text.stderr) is truncated
        assert json.loads(cli_runner().invoke(app, [*common, "--json"]).stdout)["truncated"] is truncated


# -- compare ------------------------------------------------------------------------------------------------
def _novels(root: Path) -> tuple[Path, Path, Path]:
    text = DOC * 20
    a, longer, close = root / "a.txt", root / "longer.txt", root / "close.txt"
    a.write_text(text, "utf-8")
    longer.write_text(text + "今天北京天气晴朗，最高气温二十五度，适合户外活动。" * 30, "utf-8")  # 1.7x
    close.write_text(text + DOC, "utf-8")
    return a, longer, close


def _compare(*args: object) -> list[dict[str, Any]]:
    result = cli_runner().invoke(app, ["compare", *map(str, args), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_two_files_are_compared_whatever_their_sizes(clean_env: Path) -> None:
    a, longer, close = _novels(clean_env)
    (row,) = _compare(a, longer)
    assert "skipped" not in row and 0 < row["cosine"] < 1 and row["size_ratio"] > 1.5
    table = cli_runner().invoke(app, ["compare", str(a), str(longer)]).stdout
    assert f"{row['size_ratio']:.2f}x*" in table and "more than 1.5x as long" in table
    # With three or more files the pre-filter applies, and an explicit --max-ratio applies to two.
    rows = {(r["a"], r["b"]): r for r in _compare(a, longer, close)}
    assert rows[(str(a), str(longer))]["skipped"].startswith("size ratio 1.")
    assert "skipped" not in rows[(str(a), str(close))]
    assert _compare(a, longer, "--max-ratio", "1.2")[0]["skipped"].endswith("> 1.2")


def test_empty_files_are_not_identical(clean_env: Path) -> None:
    empty, blank = clean_env / "empty.txt", clean_env / "blank.txt"
    empty.write_text("", "utf-8")
    blank.write_text("  \n", "utf-8")
    a, _, _ = _novels(clean_env)
    for pair in ((empty, blank), (empty, a)):
        (row,) = _compare(*pair)
        assert "hamming" not in row and "cosine" not in row
        assert row["skipped"].startswith("no words in ") and str(empty) in row["skipped"]
    table = cli_runner().invoke(app, ["compare", str(empty), str(blank)]).stdout
    assert "skipped: no words in" in table and " 0\n" not in table


def test_compare_speaks_in_the_users_terms() -> None:
    text = cli_runner().invoke(app, ["compare", "--help"]).stdout
    assert "design document" not in text.lower() and "Hamming distance" in text


def test_long_outputs_are_printed_in_chunks_line_for_line(capsys: pytest.CaptureFixture[str]) -> None:
    from esdedup_cli.output import _echo_lines

    _echo_lines((f"pair {i}" for i in range(2500)), chunk=1000)
    _echo_lines(iter(()))
    assert capsys.readouterr().out == "".join(f"pair {i}\n" for i in range(2500))
