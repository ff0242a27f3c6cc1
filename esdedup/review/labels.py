"""The labels file the review page writes: JSON lines ``{"a", "b", "label"}``, the format
`esdedup.quality.evaluate.read_labels` reads (``eval --pairs``).

One line per pair, the last label given wins. The page owns its labels file while it runs
(`esdedup.quality.labelsfile`: a second writer is refused, naming the file and this process), checks at the
start that it can be read and written, and writes it through a symlink. Every label rewrites the file whole
(a new file, then an atomic rename) before the label is taken in memory: a label the file did not take is
never shown, counted or tuned on, and a restart reads back exactly the labels shown.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError
from esdedup.quality.evaluate import Label, is_label, pair_key, read_labels
from esdedup.quality.labelsfile import labels_target, own_labels, write_labels

__all__ = ["LabelsFile"]


class LabelsFile:
    """The labelled pairs of one review, kept in memory and on disk (``path``), in the order first labelled.
    Owns the file from its making until `close`.

    Raises:
        ConfigError: the path cannot be written or read, is not UTF-8, or another process owns it.
        InputError: a line of the file is not a label.
    """

    def __init__(self, path: str | Path, *, who: str = "a review page") -> None:
        self.path = Path(path)
        self.target = labels_target(self.path)
        self._owner = own_labels(self.target, who)
        self._lock = threading.Lock()
        self._labels: dict[tuple[str, str], Label] = {}
        try:
            if self.target.exists():
                for lab in read_labels(self.path):
                    self._labels[lab.key] = Label(*lab.key, lab.label, lab.kind, lab.cls)
        except BaseException:
            self._owner.release()
            raise

    def close(self) -> None:
        """Give the file up (another process may own it from now on)."""
        self._owner.release()

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
        """Label the pair (replacing an earlier label of it) and write the file; only then is the label
        taken here.

        Raises:
            ConfigError: a label other than 0 or 1, or a pair of one document with itself.
            OutputError: the file could not be written (the labels here, and on disk, are as they were).
        """
        if not is_label(label):  # written as read back: the integer, not 1.0
            raise ConfigError(f"a label is 0 (different) or 1 (same story), got {label!r}")
        if a == b:
            raise ConfigError(f"a pair needs two different documents, got {a!r} twice")
        key = pair_key(a, b)
        with self._lock:
            old = self._labels.get(key)
            new = dict(self._labels)
            new[key] = Label(*key, int(label), old.kind if old else "", old.cls if old else "")
            write_labels(self.target, map(_row, new.values()))
            self._labels = new
            return new[key]


def _row(lab: Label) -> dict[str, Any]:
    row: dict[str, Any] = {"a": lab.a, "b": lab.b, "label": lab.label}
    if lab.kind:
        row["kind"] = lab.kind
    if lab.cls:
        row["class"] = lab.cls
    return row
