"""Resource files with values that cannot be used (an idf table's negative, fractional or huge counts, a
synonym line whose term normalises to nothing) are refused when they are read, naming the file and the line,
never a ZeroDivisionError or a "math domain error" at the first text."""
from __future__ import annotations

import json
import re

import pytest
from esdedup_cli.main import app

from esdedup import FingerprintConfig, Fingerprinter
from esdedup.errors import ConfigError
from esdedup.fingerprint.features import MAX_DOCUMENTS, DocumentFrequency
from esdedup.fingerprint.resources import parse_synonyms
from tests.cli_runner import cli_runner

TEXT = "台湾居民明日起持台胞证可通关，无需另行申请签注。"


def _idf_file(tmp_path, df, n_docs=3):
    path = tmp_path / "idf.json"
    # One count a line, as a person editing the table by hand would see it.
    lines = ",\n".join(f"  {json.dumps(k, ensure_ascii=False)}: {v}" for k, v in df.items())
    path.write_text(f'{{"n_docs": {n_docs},\n"df": {{\n{lines}\n}}}}\n', "utf-8")
    return path


@pytest.mark.parametrize("df, n_docs, line, words", [
    ({"台胞": 1, "台湾": -1}, 3, 4, "the document count of '台湾' must be a whole number from 0 to n_docs (3), got -1"),
    ({"台胞": -5}, 3, 3, "got -5"),
    ({"台胞": 1, "明日": 2, "通关": 7}, 3, 5, "the document count of '通关' must be a whole number from 0 to n_docs (3), got 7"),
    ({"台胞": 1.5}, 3, 3, "got 1.5"),
    ({"台胞": "NaN"}, 3, 3, "got 'NaN'"),
    ({"台胞": True}, 3, 3, "got True"),
    ({"台胞": 1}, -2, 1, "n_docs must be a whole number from 0 to"),
    ({"台胞": 1}, 10**400, 1, "n_docs must be a whole number from 0 to"),
    ({"台胞": 1}, "1e400", 1, "n_docs must be a whole number from 0 to"),
])
def test_an_idf_table_with_counts_that_cannot_be_is_refused_naming_file_and_line(tmp_path, df, n_docs, line, words):
    path = _idf_file(tmp_path, {k: json.dumps(v) for k, v in df.items()}, n_docs=n_docs)  # "1e400": a float, inf
    config = FingerprintConfig(weighting="tfidf", idf_path=str(path))
    with pytest.raises(ConfigError, match=re.escape(f"idf table {path}, line {line}: ") + ".*" + re.escape(words)):
        Fingerprinter(config).fingerprint(TEXT)


def test_a_table_made_in_code_is_checked_too():
    with pytest.raises(ConfigError, match=re.escape("the document count of 'a' must be a whole number from 0 to n_docs")):
        DocumentFrequency(2, {"a": -1})
    with pytest.raises(ConfigError, match="n_docs must be a whole number"):
        DocumentFrequency(MAX_DOCUMENTS + 1, {})
    table = DocumentFrequency.from_json(DocumentFrequency.build([["a"], ["a", "b"]]).to_json())
    assert table.idf("a") > 0 and table.idf("zzz") > table.idf("b")


def test_the_cli_prints_one_error_line_for_such_a_table(tmp_path):
    idf = _idf_file(tmp_path, {"台胞": 1, "台湾": -1})
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(TEXT, "utf-8")
    b.write_text(TEXT + "！", "utf-8")
    result = cli_runner().invoke(app, ["compare", str(a), str(b), "--weighting", "tfidf", "--idf", str(idf)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: ") and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"{idf}, line 4" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("text, line, term", [
    ("# comment\n\n\u200b 台湾居民 台湾同胞\n", 3, "'\\u200b'"),
    ("台胞 台湾居民\n\u00ad\u200d 台湾同胞\n", 2, "'\\xad\\u200d'"),
    ("台胞 \u200b 台湾同胞\n", 1, "'\\u200b'"),
])
def test_a_synonym_term_that_normalises_to_nothing_is_refused_with_its_line(text, line, term):
    """Refused, not skipped: with an empty canonical term every variant of the line would become nothing."""
    with pytest.raises(ConfigError, match=re.escape(f"syn.dict: line {line}: the term {term} is empty once normalised")):
        parse_synonyms(text, source="syn.dict")


def test_synonym_errors_give_the_line_of_the_file_not_of_the_words():
    with pytest.raises(ConfigError, match=re.escape("syn.dict: line 4 has a canonical term but no variant")):
        parse_synonyms("# header\n台胞 台湾居民\n\n台湾\n", source="syn.dict")
    assert parse_synonyms("台胞 台湾居民, 台湾同胞") == {"台湾居民": "台胞", "台湾同胞": "台胞"}


def test_a_synonyms_file_with_such_a_line_is_refused_when_the_fingerprinter_is_made(tmp_path):
    path = tmp_path / "syn.dict"
    path.write_text("台胞 台湾居民\n\u200b 台湾同胞\n", "utf-8")
    with pytest.raises(ConfigError, match=re.escape(f"{path}: line 2: the term '\\u200b' is empty once normalised")):
        Fingerprinter(FingerprintConfig(synonyms_path=str(path)))
