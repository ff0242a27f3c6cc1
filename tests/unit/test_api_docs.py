"""docs/api.md lists every public name, and its examples run."""
from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
import re
from pathlib import Path

import pytest

import esdedup
from esdedup import errors

API_MD = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _text() -> str:
    return API_MD.read_text("utf-8")


def _python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", _text(), flags=re.S | re.M)


def test_every_public_name_is_documented() -> None:
    text = _text()
    missing = [name for name in esdedup.__all__
               if not re.search(rf"`(esdedup\.)?{re.escape(name)}(\(|`)", text)]
    assert not missing, f"add these esdedup.__all__ names to docs/api.md: {missing}"


def test_every_public_name_imports() -> None:
    for name in esdedup.__all__:
        assert getattr(esdedup, name) is not None, name


def test_every_error_class_is_documented() -> None:
    text = _text()
    classes = [name for name, obj in vars(errors).items()
               if inspect.isclass(obj) and issubclass(obj, errors.EsdedupError)]
    assert len(classes) >= 8
    for name in classes:
        row = re.search(rf"^\| `{name}` \| (\d+) \|", text, flags=re.M)
        assert row, f"errors table in docs/api.md has no row for {name}"
        assert int(row.group(1)) == getattr(errors, name).exit_code, name


def test_examples_parse() -> None:
    blocks = _python_blocks()
    assert len(blocks) >= 10
    for block in blocks:
        ast.parse(block)


def test_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The examples run in order in one namespace (later ones reuse the index the ingest example built),
    on the local store only: the Elasticsearch ones only define functions."""
    for var in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ESDEDUP_CONFIG", str(tmp_path / "no-config.json"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    namespace: dict[str, object] = {"__name__": "api_md"}
    for i, block in enumerate(_python_blocks()):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(block, f"docs/api.md block {i + 1}", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message is the point
                pytest.fail(f"docs/api.md python block {i + 1} failed: {exc!r}\n{block}")


#: Public names the subpackages re-export at the package (``from esdedup.ingest import ingest``): code written
#: against them must keep importing.
PACKAGE_NAMES = (
    "esdedup.ingest.Ingester", "esdedup.ingest.MAX_PER_KEY", "esdedup.ingest.ingest", "esdedup.ingest.settle_stored",
    "esdedup.readers.read_records", "esdedup.schema.mapping_for", "esdedup.search.async_search_diversified",
    "esdedup.search.index_config", "esdedup.store.base.Store", "esdedup.store.base.shared_keys",
)


@pytest.mark.parametrize("path", PACKAGE_NAMES)
def test_package_public_names_keep_working(path: str) -> None:
    module, _, name = path.rpartition(".")
    assert getattr(importlib.import_module(module), name) is not None
