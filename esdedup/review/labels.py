"""The labels file the review page writes: JSON lines ``{"a", "b", "label"}``, the format
`esdedup.quality.evaluate.read_labels` reads (``eval --pairs``).

One line per pair, the last label given wins: every label rewrites the file (a temporary file in the same
folder, then an atomic rename), so a crash leaves the old file or the new one, never half of either, and a
restart reads back exactly the labels given.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

from esdedup.errors import ConfigError
from esdedup.quality.evaluate import Label, pair_key, read_labels

__all__ = ["LabelsFile"]


class LabelsFile:
    """The labelled pairs of one review, kept in memory and on disk (``path``), in the order first labelled."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_file():
            raise ConfigError(f"labels file {self.path} is not a regular file: give a file path")
        self._lock = threading.Lock()
        self._labels: dict[tuple[str, str], Label] = {}
        if self.path.exists():
            for lab in read_labels(self.path):
                self._labels[lab.key] = Label(*lab.key, lab.label, lab.kind, lab.cls)

    def get(self, a: str, b: str) -> int | None:
        """The label of the pair (either order), or None."""
        lab = self._labels.get(pair_key(a, b))
        return None if lab is None else lab.label

    def all(self) -> list[Label]:
        return list(self._labels.values())

    def keys(self) -> set[tuple[str, str]]:
        return set(self._labels)

    def __len__(self) -> int:
        return len(self._labels)

    def set(self, a: str, b: str, label: int) -> Label:
        """Label the pair (replacing an earlier label of it) and write the file before returning.

        Raises:
            ConfigError: a label other than 0 or 1, or a pair of one document with itself.
        """
        if isinstance(label, bool) or label not in (0, 1):
            raise ConfigError(f"a label is 0 (different) or 1 (same story), got {label!r}")
        if a == b:
            raise ConfigError(f"a pair needs two different documents, got {a!r} twice")
        key = pair_key(a, b)
        with self._lock:
            old = self._labels.get(key)
            self._labels[key] = Label(*key, int(label), old.kind if old else "", old.cls if old else "")
            self._write()
            return self._labels[key]

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                for lab in self._labels.values():
                    row: dict[str, object] = {"a": lab.a, "b": lab.b, "label": lab.label}
                    if lab.kind:
                        row["kind"] = lab.kind
                    if lab.cls:
                        row["class"] = lab.cls
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
