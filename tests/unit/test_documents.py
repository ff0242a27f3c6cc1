"""The project's documents, comments and docstrings describe the code as it is, not how it came to be.

An issue number or a work-session label ("issue 16", "#14", "the ninth session") means nothing to a reader
without the tracker or the diary it points at; the reason belongs in the text, the history in git. The two
measurement documents stay short enough to read: one current figure per question.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Single documents, and folders whose Python and Markdown files are scanned.
DOCUMENTS = ("README.md", "BENCHMARKS.md", "RELIABILITY.md", "plugin/README.md")
FOLDERS = ("docs", "bench", "esdedup", "cli", "tests")
#: Folders never scanned: environments, build output, downloaded corpora and data files.
SKIPPED_PARTS = frozenset({".venv", "venv", "__pycache__", "node_modules", "target", "data", ".git"})

#: "issue 16", "Issue #14", "issues 13", "PR 7", "pull request #3".
ISSUE_WORD = re.compile(r"\b(?:issues?|tickets?|PRs?|pull requests?)\s*#?\d+\b", re.IGNORECASE)
#: A bare "#14" standing for an issue: after a space, a bracket or the line start, digits only. An HTML
#: entity ("&#39;"), a fragment ("page#2") or a hex colour with letters ("#3a3") does not match; a colour
#: of digits only ("color: #333") is told apart by the colon before it.
HASH_NUMBER = re.compile(r"(?:^|(?<=[\s(\[]))#\d{1,5}\b(?![0-9A-Fa-f-])")
CSS_VALUE_BEFORE = re.compile(r":\s*$")
#: A work session of the project's history: "the tenth session", "this session's main", "session 9".
#: A pytest or client session ("the test session", "session-scoped", "insertion_session") does not match.
ORDINALS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
            r"|\d+(?:st|nd|rd|th)")
SESSION = re.compile(
    rf"\b(?:{ORDINALS}|this|last|previous|next|earlier|later)\s+sessions?(?:'s)?\b|\bsession\s+\d+\b",
    re.IGNORECASE)
#: In the measurement documents a figure is current or it is not there.
SUPERSEDED = re.compile(r"\bsupersed\w*", re.IGNORECASE)
MEASUREMENT_DOCUMENTS = frozenset({"BENCHMARKS.md", "RELIABILITY.md"})

MAX_LINES = {"BENCHMARKS.md": 650, "RELIABILITY.md": 260}


def _scanned() -> Iterator[Path]:
    for name in DOCUMENTS:
        if (ROOT / name).is_file():
            yield ROOT / name
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            parts = set(path.relative_to(ROOT).parts[:-1])
            if path.suffix in {".py", ".md"} and path.is_file() and not parts & SKIPPED_PARTS \
                    and path != Path(__file__).resolve():
                yield path


def diary_lines(text: str, name: str = "") -> list[tuple[int, str]]:
    """(line number, line) of each line of ``text`` that cites an issue or a work session."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        hashes = [m for m in HASH_NUMBER.finditer(line) if not CSS_VALUE_BEFORE.search(line[:m.start()])]
        if ISSUE_WORD.search(line) or hashes or SESSION.search(line) \
                or (name in MEASUREMENT_DOCUMENTS and SUPERSEDED.search(line)):
            found.append((number, line.strip()))
    return found


@pytest.mark.parametrize(("line", "diary"), [
    ("Issue #14: one 62 MB document did not finish", True),
    ("## Indexing cost, schema 4 (bench/es_fields.py, issue 16)", True),
    ("fixed by #12 on the way", True),
    ("(see #7)", True),
    ("measured in the tenth session", True),
    ("on this session's main (7f5443c)", True),
    ("the 3rd session's numbers", True),
    ("Session 9: the million again", True),
    ("retried by the bulk helper after HTTP 429", False),
    ("color: #333; background: #fff", False),
    ("a#b and %2e%2e are invalid index names", False),
    ("&#39; is an apostrophe", False),
    ("with lsh.insertion_session() as session:", False),
    ("the session node serves the other tests", False),
    ("@pytest.fixture(scope=\"session\")", False),
    ("concurrent test sessions on one machine", False),
    ("# 3 shards, 1 replica", False),
    ("an issue with the mapping", False),
])
def test_the_patterns_tell_diary_lines_from_ordinary_ones(line: str, diary: bool) -> None:
    assert bool(diary_lines(line)) is diary


def test_no_document_comment_or_docstring_cites_an_issue_or_a_session() -> None:
    found = [f"{path.relative_to(ROOT)}:{number}: {line[:120]}"
             for path in _scanned()
             for number, line in diary_lines(path.read_text("utf-8", errors="replace"), path.name)]
    assert not found, "say the reason instead (the history is in git):\n" + "\n".join(found)


@pytest.mark.parametrize(("name", "limit"), sorted(MAX_LINES.items()))
def test_the_measurement_documents_stay_short(name: str, limit: int) -> None:
    lines = len((ROOT / name).read_text("utf-8").splitlines())
    assert lines <= limit, f"{name} has {lines} lines, more than {limit}: keep one current figure per question"
