"""Imports point one way: fingerprint -> match -> store -> ingest/search -> CLI.

Read from the source (AST), so a local import inside a function counts as much as one at the top. The
library also never speaks of the command line: no CLI flag and no ``esdedup <command>`` in its messages
(the CLI adds such hints where it prints an error, `esdedup_cli.common.flag_hint`).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: ``python -m esdedup`` runs this file; nothing in the library imports it (checked at run time below).
ENTRY_POINT = REPO / "esdedup" / "__main__.py"
LIBRARY = sorted(p for p in (REPO / "esdedup").rglob("*.py") if p != ENTRY_POINT)
CLI = sorted((REPO / "cli").glob("*.py"))
FINGERPRINT = {"normalize", "tokenize", "jieba_fast", "jieba_hmm", "features", "hashing", "simhash", "minhash", "bands", "config",
               "fingerprint", "resources"}
ABOVE_FINGERPRINT = {"lookup", "pairs", "rule", "thresholds", "clusters", "store", "ingest", "readers", "search",
                     "diversify", "api", "connect", "workers", "runindex", "checkpoint", "deadletters", "prefetch"}
FRONT_ENDS = {"esdedup_cli", "typer", "rich", "click"}
#: Command names; "mapping" only quoted, as "the esdedup mapping" is also the library's word for its mapping.
COMMANDS = ("ingest", "similar", "dups", "info", "compare", "eval", "synth", "kibana")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] == "cli":
        parts[0] = "esdedup_cli"
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved; ``from a import b``
    counts as ``a.b`` too, since b may be a module)."""
    tree = ast.parse(path.read_text("utf-8"))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return out


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_the_import_reader_resolves_relative_imports() -> None:
    """The checks below are only as good as this reader: it must see a local, relative import."""
    names = imports_of(REPO / "esdedup" / "store" / "elastic.py")
    assert {"esdedup.schema", "esdedup.store.base", "esdedup.es.query"} <= names
    assert "esdedup.api" in imports_of(REPO / "esdedup" / "__init__.py")  # imported under TYPE_CHECKING
    assert "esdedup_cli.main" in imports_of(ENTRY_POINT)


@pytest.mark.parametrize("path", LIBRARY, ids=_rel)
def test_the_library_never_imports_a_front_end(path: Path) -> None:
    bad = sorted(n for n in imports_of(path) if n.split(".")[0] in FRONT_ENDS)
    assert not bad, f"{_rel(path)} imports {bad}: the library must not know the command line"


@pytest.mark.parametrize("name", sorted(FINGERPRINT))
def test_fingerprint_modules_import_nothing_above_them(name: str) -> None:
    path = REPO / "esdedup" / f"{name}.py"
    bad = sorted(n for n in imports_of(path)
                 if n.startswith("esdedup.") and n.split(".")[1] in ABOVE_FINGERPRINT)
    assert not bad, f"esdedup/{name}.py imports {bad}: the fingerprint layer must not know matching or storage"


@pytest.mark.parametrize("path", CLI, ids=_rel)
def test_no_command_module_imports_main(path: Path) -> None:
    """main composes the command modules; a module that imported main would close a circle."""
    assert "esdedup_cli.main" not in imports_of(path) or path.name in ("main.py", "__main__.py")


def _messages(path: Path) -> list[tuple[int, str]]:
    """String constants other than docstrings (f-string parts included), with their line numbers."""
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+|\besdedup (?:" + "|".join(COMMANDS) + r")\b|['`\"]esdedup mapping")


@pytest.mark.parametrize("path", LIBRARY, ids=_rel)
def test_library_messages_do_not_name_cli_flags(path: Path) -> None:
    found = [(line, text) for line, text in _messages(path) if FLAG.search(text)]
    assert not found, f"{_rel(path)} speaks of the command line in {found}: say it in the library's terms"


def test_the_message_check_sees_a_flag() -> None:
    assert FLAG.search("give the CA with --ca-certs") and FLAG.search("see 'esdedup info'")
    assert FLAG.search("run 'esdedup mapping' first")
    assert not FLAG.search("a --> b") and not FLAG.search("esdedup information")
    assert not FLAG.search("not a date field of the esdedup mapping")


def test_importing_the_whole_library_loads_no_front_end() -> None:
    """At run time too: every esdedup module imported, and no CLI, typer, rich or click among sys.modules."""
    code = (
        "import importlib, pkgutil, sys, esdedup\n"
        "for m in pkgutil.walk_packages(esdedup.__path__, 'esdedup.'):\n"
        "    if m.name != 'esdedup.__main__':\n"
        "        importlib.import_module(m.name)\n"
        f"print(sorted(n for n in sys.modules if n.split('.')[0] in {sorted(FRONT_ENDS)!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def test_the_elasticsearch_store_does_not_import_the_sqlite_store() -> None:
    """Name validation and the mismatch error are the protocol's (store/base.py), shared by both stores."""
    assert "esdedup.store.local" not in imports_of(REPO / "esdedup" / "store" / "elastic.py")


def private_names_imported(path: Path) -> list[str]:
    """``module.name`` for each underscore name ``path`` imports from another module of the project."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    out = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if module.split(".")[0] in {"esdedup", "esdedup_cli"}:
                out.extend(f"{module}.{a.name}" for a in node.names if a.name.startswith("_") and a.name != "__version__")
    return out


def test_the_private_name_reader_sees_one() -> None:
    """bench/fingerprint.py times the SimHash stage alone, through a private function (a benchmark may)."""
    assert "esdedup.fingerprint.fingerprinter._vote_sums" in private_names_imported(REPO / "bench" / "fingerprint.py")


@pytest.mark.parametrize("path", LIBRARY + CLI, ids=_rel)
def test_no_module_imports_another_modules_private_names(path: Path) -> None:
    """A name with a leading underscore belongs to its module; a second module that needs it needs a public
    home for it (as the write clock got, esdedup/ingest/clock.py)."""
    bad = private_names_imported(path)
    assert not bad, f"{_rel(path)} imports private names {bad}"
