"""The dead-letter file of a run: one JSON line per record that was read and not written (failed or skipped),
with its source location, kind and reason.

Separate from the run (`esdedup.ingest.run`) because it is a file with rules of its own: it is opened before the
store, so a path that cannot be written is refused first; its lines are held until the batch they belong to
is accounted for, so an interrupted batch is reported by the run that reads it again, not twice.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from esdedup.errors import OutputError


class DeadLetters:
    """One JSON line per failed or skipped record.

    The file is opened when the run starts, so that a path that cannot be written is refused before any
    record is (`OutputError`): emptied first (``fresh``: a run's file lists that run's records only), or
    appended to (a resumed run, a service). Lines are held until `commit`, which ingest calls once a batch
    is accounted for (counted in the summary). A batch interrupted before that (Ctrl-C, a crash) is not
    checkpointed either: the next run reads it again and reports its records then, so `close` drops what
    was never committed rather than leave those records in the file twice. A fresh file that got no line
    is removed again.
    """

    def __init__(self, path: str | Path | None, *, fresh: bool = False) -> None:
        self.path = Path(path) if path else None
        self._fh: TextIO | None = None
        self._pending: list[str] = []
        self._fresh = fresh
        self._lines = 0
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(self.path, "w" if fresh else "a", encoding="utf-8")
            except OSError as exc:
                raise OutputError(f"cannot write the dead-letter file {self.path}: "
                                  f"{exc.strerror or exc}") from None

    def write(self, *, source: str, location: str, reason: str, kind: str, id: str | None = None,
              excerpt: str | None = None) -> None:
        if self.path is None:
            return
        rec = {"kind": kind, "source": source, "location": location, "reason": reason, "id": id,
               "excerpt": excerpt}
        self._pending.append(json.dumps(rec, ensure_ascii=False) + "\n")

    def use(self, lines: list[str]) -> None:
        """Hold the lines written from now on in ``lines`` (one batch's), until `commit`."""
        self._pending = lines

    def commit(self) -> None:
        """Write the held lines and flush them to the OS (a resumed run will not read those records again)."""
        if not self._pending or self._fh is None:
            return
        try:
            self._fh.writelines(self._pending)
            self._fh.flush()
        except OSError as exc:
            raise OutputError(f"cannot write the dead-letter file {self.path}: {exc.strerror or exc}") from None
        self._lines += len(self._pending)
        self._pending.clear()

    def close(self) -> None:
        self._pending.clear()
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            if self._fresh and not self._lines and self.path is not None:
                self.path.unlink(missing_ok=True)
