"""Ingest on the embedded store (real SQLite files, real input files): the run's structure and accounting.

Tests that need Elasticsearch are in tests/integration/; the contract tests run ingest on both stores.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

from esdedup.config import FingerprintConfig
from esdedup.ingest import IngestOptions, ingest
from esdedup.store.local import LocalStore
from tests.corpus import make_corpus

CONFIG = FingerprintConfig(tokenizer="rjieba")
INGEST_PY = Path(__file__).resolve().parents[2] / "esdedup" / "ingest.py"


def _jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    return path


def test_no_function_in_ingest_is_longer_than_sixty_lines():
    """Issue #12: ingest is a run object with one-job methods, not a 120-line function of 12 parameters."""
    tree = ast.parse(INGEST_PY.read_text("utf-8"))
    long = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)  # type: ignore[operator]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60]
    assert long == []


class _RetryingStore(LocalStore):
    """A local store that reports one re-sent document per write call, as the Elasticsearch store does
    when a bulk item comes back with 429 (the count is part of the `Store` protocol)."""

    def write(self, docs):
        self.retried += 1
        return super().write(docs)


def test_retried_counts_the_resends_of_this_run_only(tmp_path):
    docs, _ = make_corpus(30, 0, seed=3)
    path = _jsonl(tmp_path / "a.jsonl", docs)
    store = _RetryingStore("retry", tmp_path / "data")
    opts = IngestOptions(workers=1, batch=10, dead_letter=tmp_path / "dl.jsonl")
    first = ingest([path], store, CONFIG, opts)
    second = ingest([path], store, CONFIG, opts)  # the same store object, kept open by a service
    store.close()
    assert (first.retried, second.retried) == (3, 3)
    assert first.balanced and second.balanced and second.updated == 30
