"""The embedded store's batch write in the extension (`esdedup_native.RowWriter`, loaded by
`esdedup.fingerprint.native`): the rows `esdedup.store.local.rows` makes, written through its statement on a
connection and a thread of the extension's own with the GIL released, so that a run reads its next batch
meanwhile. The library is the SQLite that Python's ``sqlite3`` module uses (never a second copy of it in the
process); where the extension cannot find it so, the store writes through ``sqlite3``.
"""
from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from esdedup.fingerprint import native

#: SQLite's primary result codes whose errors ``sqlite3`` raises as other classes than OperationalError.
_ERROR_CLASSES: dict[int, type[sqlite3.Error]] = {11: sqlite3.DatabaseError, 26: sqlite3.DatabaseError,  # corrupt
                                                  18: sqlite3.DataError, 19: sqlite3.IntegrityError}


def open_row_writer(path: Path, busy_seconds: float, setup: Sequence[str]) -> Any | None:
    """A `RowWriter` on the file ``path`` that waits ``busy_seconds`` for another connection's transaction
    and runs the statements ``setup`` first; None when the extension is not in use or cannot use the SQLite
    library of ``sqlite3`` (one built into the interpreter, or another version).

    Raises:
        sqlite3.OperationalError: the file cannot be opened or ``setup`` fails.
    """
    if not native.enabled():
        return None
    library = getattr(sys.modules.get("_sqlite3"), "__file__", None)  # the module ``sqlite3`` imported
    if library is None:
        return None
    major, minor, patch = sqlite3.sqlite_version_info
    try:  # the paths as the file system's bytes: a folder's name need not be UTF-8
        return native.loaded().RowWriter.open(os.fsencode(library), major * 1_000_000 + minor * 1000 + patch,
                                              os.fsencode(path), round(busy_seconds * 1000), list(setup))
    except RuntimeError as exc:
        raise sqlite3.OperationalError(str(exc)) from None


def sqlite_error(code: int, message: str) -> sqlite3.Error:
    """The exception ``sqlite3`` raises for SQLite's extended result ``code`` and ``message``."""
    error = _ERROR_CLASSES.get(code & 0xFF, sqlite3.OperationalError)(message)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error
