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
#: The layers, lowest first: a module may import its own subpackage and any layer below its own, never one
#: above or beside it (the package root, which re-exports, stands apart).
LAYERS = (
    {"errors", "_version", "data"},
    {"util"},
    {"fingerprint", "readers"},
    {"schema"},
    {"es"},
    {"store"},
    {"match"},
    {"ingest", "search"},
    {"api"},
    {"quality"},
    {"review"},
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
ROOT_FACE = {REPO / "esdedup" / "__init__.py", ENTRY_POINT}
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
    names = imports_of(REPO / "esdedup" / "store" / "elastic" / "lookup.py")
    assert {"esdedup.schema", "esdedup.store.base", "esdedup.es.query"} <= names
    assert "esdedup.api" in imports_of(REPO / "esdedup" / "__init__.py")  # imported under TYPE_CHECKING
    assert "esdedup_cli.start" in imports_of(ENTRY_POINT)


@pytest.mark.parametrize("path", LIBRARY, ids=_rel)
def test_the_library_never_imports_a_front_end(path: Path) -> None:
    bad = sorted(n for n in imports_of(path) if n.split(".")[0] in FRONT_ENDS)
    assert not bad, f"{_rel(path)} imports {bad}: the library must not know the command line"


def _room(path: Path) -> str:
    """The subpackage (or top module) of esdedup/ that ``path`` lives in."""
    return path.relative_to(REPO / "esdedup").with_suffix("").parts[0]


def test_every_room_has_a_layer() -> None:
    rooms = {_room(p) for p in LIBRARY if p not in ROOT_FACE}
    assert rooms <= set(RANK), f"give these a layer in LAYERS: {sorted(rooms - set(RANK))}"
    assert len([p for p in (REPO / "esdedup").glob("*.py")]) <= 12
    assert len([p for p in (REPO / "esdedup").iterdir() if (p / "__init__.py").exists()]) >= 5


@pytest.mark.parametrize("path", [p for p in LIBRARY if p not in ROOT_FACE], ids=_rel)
def test_imports_point_down_the_layers(path: Path) -> None:
    room = _room(path)
    bad = sorted(n for n in imports_of(path)
                 if n.startswith("esdedup.") and (other := n.split(".")[1]) != room
                 and RANK.get(other, -1) >= RANK[room])
    assert not bad, f"{_rel(path)} ({room}) imports {bad}: imports point down the layers (LAYERS)"


def test_the_layer_check_sees_an_upward_import() -> None:
    """The fingerprint layer must never know matching, storage, ingest or search."""
    assert min(RANK[n] for n in ("match", "store", "ingest", "search")) > RANK["fingerprint"]
    for path in (REPO / "esdedup" / "fingerprint").glob("*.py"):
        names = {n.split(".")[1] for n in imports_of(path) if n.startswith("esdedup.")}
        assert not names & {"match", "store", "ingest", "search", "es", "api"}, path


BOTTOM = [p for p in LIBRARY if p not in ROOT_FACE and RANK[_room(p)] == RANK["fingerprint"]]
#: A module of esdedup named in text (docstrings and comments too): ``esdedup.<room>``.
NAMED = re.compile(r"\besdedup\.([a-z_]+)")


@pytest.mark.parametrize("path", BOTTOM, ids=_rel)
def test_the_bottom_layers_name_no_module_above_them(path: Path) -> None:
    """Not in an import, and not in words either: a docstring that sends its reader up the layers (as the
    native bridge once did, to the ingest, search and schema steps it served) is a hub in disguise."""
    above = sorted({n for n in NAMED.findall(path.read_text("utf-8")) if RANK.get(n, -1) > RANK[_room(path)]})
    assert not above, f"{_rel(path)} names {above}, above its layer"


def test_the_name_check_sees_an_upper_module() -> None:
    assert NAMED.findall("see `esdedup.match.rule`; esdedup_native is not a module of esdedup") == ["match"]


NATIVE_BRIDGE = REPO / "esdedup" / "util" / "native.py"


@pytest.mark.parametrize("path", LIBRARY, ids=_rel)
def test_only_the_bridge_loads_the_extension(path: Path) -> None:
    assert path == NATIVE_BRIDGE or "esdedup_native" not in imports_of(path), _rel(path)


def test_the_bridge_only_loads_the_extension() -> None:
    """Each native step lives beside the Python step it replaces (a module ``native_*.py`` of the layer that
    calls it); the bridge loads the extension, checks its version and says whether it is in use."""
    tree = ast.parse(NATIVE_BRIDGE.read_text("utf-8"))
    assert not [n for n in tree.body if isinstance(n, ast.ClassDef)]
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert functions <= {"_import_extension", "extension_missing", "unavailable_reason", "enabled", "kernels",
                         "loaded", "function"}, functions
    assert not {n for n in imports_of(NATIVE_BRIDGE) if n.startswith("esdedup.")}


NATIVE_STEPS = sorted((REPO / "esdedup").rglob("native_*.py"))


@pytest.mark.parametrize("steps", NATIVE_STEPS, ids=_rel)
def test_a_layers_native_steps_serve_that_layer(steps: Path) -> None:
    """No layer's native steps become a hub again: only its own subpackage (or schema, for its own) imports them."""
    name = _module_name(steps)
    users = [p for p in LIBRARY if name in imports_of(p)]
    assert users, f"nothing imports {name}"
    assert all(_room(p) == _room(steps) for p in users), [_rel(p) for p in users]


#: The pure core of matching: the rule, its measures and their thresholds, below the store-driven lookups and
#: joins (lookup.py, pairs.py); they import nothing but each other and the layers under matching that hold no
#: store (fingerprint, util, errors).
PURE_MATCH = ("esdedup.match.rule", "esdedup.match.measures", "esdedup.match.thresholds",
              "esdedup.match.native_kernels")


@pytest.mark.parametrize("module", PURE_MATCH)
def test_the_rule_and_its_measures_read_no_store(module: str) -> None:
    path = REPO / Path(*module.split(".")).with_suffix(".py")
    bad = sorted(n for n in imports_of(path) if n.startswith("esdedup.") and n != "esdedup.match"
                 and not n.startswith(PURE_MATCH)
                 and RANK.get(n.split(".")[1], 99) > RANK["fingerprint"])
    assert not bad, f"{module} imports {bad}"


@pytest.mark.parametrize("path", CLI, ids=_rel)
def test_no_command_module_imports_main(path: Path) -> None:
    """main composes the command modules; a module that imported main would close a circle (start, the entry
    point, imports it when it runs, after taking SIGTERM)."""
    assert "esdedup_cli.main" not in imports_of(path) or path.name in ("main.py", "__main__.py", "start.py")


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
    """At run time too: every esdedup module imported, and no CLI, typer, rich or click among sys.modules.

    httpx (a test dependency: Starlette's test client) is kept out of the run: where it is installed, the
    Elasticsearch transport imports it, and httpx imports click and rich for its own command line whenever they
    are installed, a chain of third-party imports that no esdedup module asks for."""
    code = (
        "import sys\n"
        "sys.modules['httpx'] = None\n"
        "import importlib, pkgutil, esdedup\n"
        "for m in pkgutil.walk_packages(esdedup.__path__, 'esdedup.'):\n"
        "    if m.name != 'esdedup.__main__':\n"
        "        importlib.import_module(m.name)\n"
        f"print(sorted(n for n in sys.modules if n.split('.')[0] in {sorted(FRONT_ENDS)!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def test_the_elasticsearch_store_does_not_import_the_sqlite_store() -> None:
    """Name validation and the mismatch error are the store package's (store/names.py), shared by both stores."""
    for path in (REPO / "esdedup" / "store" / "elastic").glob("*.py"):
        assert "esdedup.store.local" not in imports_of(path), _rel(path)


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


@pytest.mark.parametrize("path", LIBRARY, ids=_rel)
def test_no_module_over_700_lines_and_no_class_over_400(path: Path) -> None:
    """A module is one idea and a class one job: past these sizes they have become several."""
    text = path.read_text("utf-8")
    assert text.count("\n") <= 700, f"{_rel(path)} has {text.count(chr(10))} lines: split it by idea"
    big = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(text))
           if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 400]  # type: ignore[operator]
    assert not big, f"{_rel(path)}: classes over 400 lines {big}: cut them along their seams"


@pytest.mark.parametrize("path", LIBRARY + CLI, ids=_rel)
def test_no_backslash_line_continuations(path: Path) -> None:
    """Lines join inside brackets: a backslash continuation breaks on a trailing space and stops some
    structure readers from reading the file."""
    import io
    import tokenize

    text = path.read_text("utf-8")
    in_strings = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            in_strings.update(range(tok.start[0], tok.end[0]))
    found = [n for n, line in enumerate(text.splitlines(), 1) if line.endswith("\\") and n not in in_strings
             and not line.lstrip().startswith("#")]
    assert not found, f"{_rel(path)} continues lines with a backslash at {found}"
