"""docs/architecture.md, the source map, stays true: its table of layers is the order tests/unit/test_layers.py
enforces (read from there, not copied), every room of esdedup/ has a row, each row's "may import" names the layers
below it, and every path the page names exists."""
from __future__ import annotations

import re
from pathlib import Path

from tests.unit.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"


def layer_rows(text: str) -> list[tuple[int, set[str], str]]:
    """(layer number, its rooms, its "may import" cell) for each row of the page's table of layers."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            rows.append((int(cells[0]), set(re.findall(r"`(\w+)`", cells[1])), cells[3]))
    return rows


def test_the_table_is_the_layer_list_of_test_layers() -> None:
    rows = layer_rows(PAGE.read_text("utf-8"))
    assert [rooms for _, rooms, _ in rows] == [set(layer) for layer in LAYERS], (
        "docs/architecture.md's table of layers must list LAYERS of tests/unit/test_layers.py, lowest first")
    assert [number for number, _, _ in rows] == list(range(len(LAYERS)))


def test_each_layer_may_import_the_layers_below_it() -> None:
    for number, _, may_import in layer_rows(PAGE.read_text("utf-8")):
        expected = "nothing of esdedup" if number == 0 else ("layer 0" if number == 1 else f"layers 0-{number - 1}")
        assert may_import == expected, (number, may_import)


def test_every_room_of_the_package_has_a_row() -> None:
    rooms = {p.name for p in (ROOT / "esdedup").iterdir() if (p / "__init__.py").exists()}
    rooms |= {p.stem for p in (ROOT / "esdedup").glob("*.py")} - {"__init__", "__main__", "moved"}
    listed = set().union(*(rooms_ for _, rooms_, _ in layer_rows(PAGE.read_text("utf-8"))))
    assert rooms <= listed, f"give these a row in docs/architecture.md (and a layer in LAYERS): {sorted(rooms - listed)}"


def test_every_path_the_page_names_exists() -> None:
    paths = re.findall(r"`((?:esdedup|cli|native|plugin|tests|scripts|bench)/[\w./*-]*)`", PAGE.read_text("utf-8"))
    assert paths, "the page names paths"
    missing = [p for p in paths if not list(ROOT.glob(p.rstrip("/")))]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_row_reader_sees_a_missing_room() -> None:
    table = "| 0 | `errors` | x | nothing of esdedup |\n| 1 | `util`, `data` | y | layer 0 |\n"
    assert layer_rows(table) == [(0, {"errors"}, "nothing of esdedup"), (1, {"util", "data"}, "layer 0")]
    assert [rooms for _, rooms, _ in layer_rows(table)] != [set(layer) for layer in LAYERS]
