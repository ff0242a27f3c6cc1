"""The dead-letter file of a run: one JSON line per record that was read and not written (failed or skipped),
with its source location, kind and reason.

Separate from the run (`esdedup.ingest.run`) because it is a file with rules of its own: it is opened before the
store, so a path that cannot be written is refused first; its lines are held until the batch they belong to
is accounted for, so an interrupted batch is reported by the run that reads it again, not twice.
"""
from __future__ import annotations

import io
import json
import logging
import os
import stat
from pathlib import Path
from typing import TextIO

from esdedup.errors import OutputError
from esdedup.util.regular import open_binary

log = logging.getLogger(__name__)


class DeadLetters:
    """One JSON line per failed or skipped record.

    The file is opened when the run starts, so that a path that cannot be written is refused before any
    record is (`OutputError`): emptied first (``fresh``: a run's file lists that run's records only), or
    appended to (a resumed run, a service). Lines are held until `commit`, which ingest calls once a batch
    is accounted for (counted in the summary). A batch interrupted before that (Ctrl-C, a crash) is not
    checkpointed either: the next run reads it again and reports its records then, so `close` drops what
    was never committed rather than leave those records in the file twice. A fresh file that got no line
    is removed again.

    ``supersede`` (a resumed run): a record the run before left unconfirmed (the store went away, or
    refused it) and this run accounts for again has its old ``unconfirmed`` line removed at `close`, so the
    file does not list as unwritten a record that is stored. ``broken``: a write to the file failed.
    """

    def __init__(self, path: str | Path | None, *, fresh: bool = False, supersede: bool = False) -> None:
        self.path = Path(path) if path else None
        self._fh: TextIO | None = None
        self._pending: list[str | tuple[str, str]] = []
        self._fresh = fresh
        self._lines = 0
        self.broken = False
        #: The (source, location) of each record the file lists as unconfirmed, and how many lines it had.
        self._unconfirmed: set[tuple[str, str]] = set()
        self._lines_before = 0
        #: Those of them that this run accounted for again.
        self._superseded: set[tuple[str, str]] = set()
        if self.path is not None and supersede and not fresh:
            self._read_unconfirmed()
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

    @property
    def has_unconfirmed(self) -> bool:
        """Whether a line of the file says a record was not confirmed (a resumed run's), which `accounted` may
        supersede."""
        return bool(self._unconfirmed)

    def accounted(self, source: str, location: str) -> None:
        """A record this run accounted for (written, skipped or failed): an earlier ``unconfirmed`` line of
        it is superseded once its batch is committed."""
        if (source, location) in self._unconfirmed:
            self._pending.append((source, location))

    def use(self, lines: list[str | tuple[str, str]]) -> None:
        """Hold the lines written from now on in ``lines`` (one batch's), until `commit`."""
        self._pending = lines

    def commit(self) -> None:
        """Write the held lines and flush them to the OS (a resumed run will not read those records again)."""
        if not self._pending or self._fh is None:
            return
        lines = [line for line in self._pending if isinstance(line, str)]
        try:
            self._fh.writelines(lines)
            self._fh.flush()
        except OSError as exc:
            self.broken = True
            raise OutputError(f"cannot write the dead-letter file {self.path}: {exc.strerror or exc}") from None
        self._superseded.update(key for key in self._pending if isinstance(key, tuple))
        self._lines += len(lines)
        self._pending.clear()

    def _read_unconfirmed(self) -> None:
        assert self.path is not None
        try:
            # A regular file only: the dead letters may go to a device (/dev/null, /dev/full), never read.
            with io.TextIOWrapper(open_binary(self.path), encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    self._lines_before = n
                    entry = _entry(line)
                    if entry is not None and entry.get("kind") == "unconfirmed":
                        self._unconfirmed.add((str(entry.get("source")), str(entry.get("location"))))
        except (OSError, UnicodeDecodeError):  # no file yet, or one this run cannot read: nothing superseded
            self._unconfirmed.clear()

    def _drop_superseded(self) -> None:
        """Rewrite the file without the earlier ``unconfirmed`` lines of records this run accounted for."""
        assert self.path is not None
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(self.path, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8") as out:
                for n, line in enumerate(src, 1):
                    entry = _entry(line) if n <= self._lines_before else None
                    if (entry is None or entry.get("kind") != "unconfirmed"
                            or (str(entry.get("source")), str(entry.get("location"))) not in self._superseded):
                        out.write(line)
            os.replace(tmp, self.path)
        except (OSError, UnicodeDecodeError) as exc:
            tmp.unlink(missing_ok=True)
            log.warning("the dead-letter file %s still lists %d records as unconfirmed that this run accounted "
                        "for (it could not be rewritten: %s)", self.path, len(self._superseded), exc)

    def close(self) -> None:
        self._pending.clear()
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError as exc:  # what is left of a failed write; the failure itself was raised already
                if not self.broken:
                    log.warning("the dead-letter file %s may lack its last lines: %s", self.path, exc.strerror or exc)
                self.broken = True
            self._fh = None
            if self._fresh and not self._lines and self.path is not None and _regular(self.path):
                self.path.unlink(missing_ok=True)  # never a device such as /dev/null named as the file
            elif self._superseded:
                self._drop_superseded()


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _entry(line: str) -> dict | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def default_dead_letter(index: str) -> Path:
    """Where a run puts its failed and skipped records when no file is named: ``<index>.dead-letter.jsonl`` in
    the working folder, beside the inputs a person works on."""
    return Path(f"{index}.dead-letter.jsonl")
