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


# -- the README and the pages it sends details to ----------------------------------------------------------------
#: The README's details live in these pages; each is held to the caps and its commands to the CLI.
PAGES = ("docs/cli.md", "docs/elasticsearch.md", "docs/plugin.md", "docs/review.md", "docs/tuning.md",
         "docs/architecture.md", "docs/opensearch.md")
#: Words (as ``wc -w`` counts them) a reader can take in at one sitting.
MAX_WORDS = {"README.md": 3500, "BENCHMARKS.md": 4000}
MAX_LINE_CHARS = 300


@pytest.mark.parametrize(("name", "limit"), sorted(MAX_WORDS.items()))
def test_the_readme_and_the_benchmarks_stay_short(name: str, limit: int) -> None:
    words = len((ROOT / name).read_text("utf-8").split())
    assert words <= limit, f"{name} has {words} words, more than {limit}: move details to docs/ (or git history)"


@pytest.mark.parametrize("name", ["README.md", "BENCHMARKS.md", *PAGES])
def test_no_line_is_longer_than_a_reader_can_follow(name: str) -> None:
    long = [(n, len(line)) for n, line in enumerate((ROOT / name).read_text("utf-8").splitlines(), 1)
            if len(line) > MAX_LINE_CHARS]
    assert not long, f"{name}: lines over {MAX_LINE_CHARS} characters (number, length): {long}"


def test_the_readme_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert not [p for p in PAGES if f"]({p})" not in readme], "the README's Documents list links every page"


#: `esdedup <command> ...` in inline code, up to the closing backquote, or a code block's line that starts so.
COMMAND_SPAN = re.compile(r"`(?:python -m )?esdedup ([a-z][\w-]*(?: [^`\n]*)?)")
BLOCK_COMMAND = re.compile(r"^(?:python -m )?esdedup ([a-z][\w-]*(?: .*)?)$", re.M)
CODE_BLOCK = re.compile(r"```\w*\n(.*?)```", re.S)


def _cli_commands() -> dict[tuple[str, ...], set[str]]:
    """Every command path of the CLI and the option names it takes."""
    import typer
    from esdedup_cli.main import app

    found: dict[tuple[str, ...], set[str]] = {}

    def walk(cmd, path: tuple[str, ...]) -> None:
        if path:
            found[path] = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def documented_commands(text: str) -> list[tuple[str, list[str]]]:
    """(the command's words, its tokens after them) for every `esdedup ...` span of ``text``."""
    import shlex

    out = []
    blocks = "\n".join(CODE_BLOCK.findall(text))
    for match in [*COMMAND_SPAN.finditer(CODE_BLOCK.sub("", text)), *BLOCK_COMMAND.finditer(blocks)]:
        try:
            words = shlex.split(match.group(1), comments=True)
        except ValueError:  # a span cut inside a quoted text: its words up to the quote
            words = match.group(1).split('"')[0].split()
        out.append((match.group(1), words))
    return out


def command_problems(text: str) -> list[str]:
    """What is wrong with the `esdedup ...` spans of ``text``: a command the CLI lacks, a flag it does not take."""
    commands = _cli_commands()
    bad = []
    for span, words in documented_commands(text):
        path = max((p for p in commands if tuple(words[:len(p)]) == p), key=len, default=None)
        if path is None:
            bad.append(f"no command: esdedup {span}")
            continue
        flags = {w.split("=")[0] for w in words[len(path):] if w.startswith("--")}
        if flags - commands[path]:
            bad.append(f"esdedup {span}: {sorted(flags - commands[path])} not options of esdedup {' '.join(path)}")
    return bad


@pytest.mark.parametrize("name", ["README.md", "BENCHMARKS.md", *PAGES])
def test_every_command_a_document_shows_exists_with_the_flags_it_shows(name: str) -> None:
    """A command in a sentence cannot be run by a test (it names NAME or URL), but its command and every flag it
    shows must be the CLI's own: a renamed flag fails here before a reader meets it."""
    bad = command_problems((ROOT / name).read_text("utf-8"))
    assert not bad, f"{name}:\n" + "\n".join(bad)


def test_the_command_check_sees_a_wrong_flag_and_a_wrong_command() -> None:
    assert not command_problems("run `esdedup dups --index NAME --write-clusters` then `esdedup index create`")
    assert command_problems("run `esdedup dups --index NAME --write-cluster`")
    assert command_problems("```bash\nesdedup dedupe --index NAME\n```\n")
    assert not command_problems("esdedup is a library\n")
