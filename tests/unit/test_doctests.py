"""The examples in the library's docstrings run and print what they show (they are documentation too). The
folders they make with `tempfile` are made in the test's own."""
from __future__ import annotations

import doctest
import importlib
import pkgutil
import tempfile
from pathlib import Path

import pytest

import esdedup

MODULES = sorted(m.name for m in pkgutil.walk_packages(esdedup.__path__, "esdedup.") if m.name != "esdedup.__main__")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed"
