"""The embedded store's batch write in the extension (`esdedup_native.RowWriter`, loaded by
`esdedup.util.native`): the rows `esdedup.store.local.rows` makes, written through its statement on a
connection and a thread of the extension's own with the GIL released, so that a run reads its next batch
meanwhile; and the signature columns all-pairs search reads (`read_signature_columns`), without a Python
tuple a row. The library is the SQLite that Python's ``sqlite3`` module uses (never a second copy of it in
the process); where the extension cannot find it so, the store writes and reads through ``sqlite3``.
"""
from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from esdedup.util import native

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
    library = _library()
    if library is None:
        return None
    try:  # the paths as the file system's bytes: a folder's name need not be UTF-8
        return native.loaded().RowWriter.open(os.fsencode(library), _version(), os.fsencode(path),
                                              round(busy_seconds * 1000), list(setup))
    except RuntimeError as exc:
        raise sqlite3.OperationalError(str(exc)) from None


def read_signature_columns(path: Path, busy_seconds: float, count_sql: str, rows_sql: str, size: int,
                           perm: int) -> tuple[np.ndarray, list[str], list[int], list[int], list[int]] | None:
    """One read transaction of the file ``path`` by the extension: ``count_sql`` counts the rows at most,
    ``rows_sql`` (its parameter bound to ``size``) gives them as (id, SimHash hex, chars, shingles,
    signature of ``perm`` uint16 values) in any order; returns them sorted by id (as ``ORDER BY id`` sorts
    text): the signatures (uint32, a row each, in an array of a row for each row counted: the pages of the
    rows never written take no memory), the ids, SimHashes, chars and shingles. None when the extension is
    not in use, cannot use the SQLite library of ``sqlite3``, or reads a row otherwise than ``sqlite3`` would
    (the caller reads the rows itself).

    Raises:
        sqlite3.OperationalError: SQLite failed.
    """
    library = _library()
    if library is None:
        return None
    try:
        read = native.loaded().read_signature_columns(
            os.fsencode(library), _version(), os.fsencode(path), round(busy_seconds * 1000), count_sql, rows_sql,
            size, perm, lambda count: np.empty((count, perm), dtype=np.uint32))
    except RuntimeError as exc:
        raise sqlite3.OperationalError(str(exc)) from None
    if read is None:
        return None
    sigs, ids, simhash, chars, shingles, n = read
    return (sigs[:n], ids, np.frombuffer(simhash, dtype="<u8").tolist(), np.frombuffer(chars, dtype="<i8").tolist(),
            np.frombuffer(shingles, dtype="<i8").tolist())


def _library() -> str | None:
    """The shared object of the module ``sqlite3`` imported, when the extension is in use and there is one."""
    if not native.enabled():
        return None
    return getattr(sys.modules.get("_sqlite3"), "__file__", None)


def _version() -> int:
    """``sqlite3``'s SQLite version as one number, as the extension compares it."""
    major, minor, patch = sqlite3.sqlite_version_info
    return major * 1_000_000 + minor * 1000 + patch


def sqlite_error(code: int, message: str) -> sqlite3.Error:
    """The exception ``sqlite3`` raises for SQLite's extended result ``code`` and ``message``."""
    error = _ERROR_CLASSES.get(code & 0xFF, sqlite3.OperationalError)(message)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error
