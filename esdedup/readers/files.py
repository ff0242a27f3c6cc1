"""Finding input files, naming them, opening them safely, and reading one file whole.

Names (one rule for every reader, the dead-letter file and the checkpoint):

* A file's **source name** is its canonical path: a path given is made absolute with ``.``/``..`` and
  symlinks resolved (``./a/../a/x.txt``, ``a/x.txt/``... and a symlink to it all name the same file); a file
  found while walking a given directory is named by that directory's canonical path plus its path inside
  it, as walked. So the same input gives the same names from any working directory, and a resumed run
  finds its checkpoint whatever spelling it is given.
* Bytes of a file name that are not UTF-8 (a GBK name on a UTF-8 system) are written as ``\\xNN``
  escapes: names are always printable, valid text, and stable from run to run.
* A **file-derived id** (a txt file is one document) is the file's path inside the directory given,
  with ``/`` separators (``2024/001.txt``), or its source name when the file itself was given. When
  several directories are given, the path is taken inside the deepest directory holding them all
  (``ingest y/2023 y/2024``: ``2023/001.txt`` and ``2024/001.txt``), so that equal paths inside two of
  them stay two documents, under the same ids whenever the same arguments run again. Two distinct files
  never share an id in one run: the reader rejects the second one (see
  :func:`esdedup.readers.formats.read_records`).

This module never prints and never configures logging.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from esdedup.errors import ConfigError, DecodeError, InputError, InputNotFound
from esdedup.readers.encodings import decode_bytes
from esdedup.readers.records import DEFAULT_MAX_RECORD_BYTES, Rejected
from esdedup.util.fieldtypes import checked_args
from esdedup.util.regular import NotRegularFile, open_binary, read_limited

__all__ = ["MAX_TEXT_FILE_BYTES", "check_inputs", "detect_format", "iter_files", "read_text_file",
           "source_name"]

logger = logging.getLogger(__name__)

#: The largest file :func:`read_text_file` reads whole (``compare``, ``similar`` on a file): the same
#: limit as one ingest record.
MAX_TEXT_FILE_BYTES = DEFAULT_MAX_RECORD_BYTES

_JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json-lines")
_CSV_SUFFIXES = (".csv", ".tsv")


def detect_format(path: str | os.PathLike[str]) -> str:
    """By name, case-insensitive: 'jsonl' for .jsonl/.ndjson/.json-lines, 'json' for .json, 'csv' for
    .csv/.tsv, else 'txt'. (Reading with format 'auto' also looks inside files without an extension:
    see :func:`esdedup.readers.formats.read_records`.)"""
    name = Path(path).name.lower()
    if name.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(".json"):
        return "json"
    if name.endswith(_CSV_SUFFIXES):
        return "csv"
    return "txt"


# -- names ---------------------------------------------------------------------------------------------

def printable(name: str) -> str:
    """``name`` as valid text: bytes that were not UTF-8 (surrogate escapes) become ``\\xNN``."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def source_path(source: str) -> Path:
    """The file a source name (`source_name`) names: the name itself, or, when no file has that name, the
    name with its ``\\xNN`` escapes turned back into the bytes they stand for."""
    path = Path(source)
    if "\\x" not in source or path.exists():
        return path
    raw = re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), source.encode("utf-8"))
    return Path(os.fsdecode(raw))


def canonical_path(path: str | os.PathLike[str]) -> Path:
    """Absolute, normalised, symlinks resolved. A symlink that leads nowhere (broken, a loop) keeps its
    own name in its resolved directory, so that a rejection names the link the user can see."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        return Path(os.path.realpath(p.parent)) / p.name
    return Path(os.path.realpath(p))


def source_name(path: str | os.PathLike[str]) -> str:
    """The canonical, printable name of a file given by the user (see the module docstring)."""
    return printable(str(canonical_path(path)))


def file_id(path: Path, root: Path | None) -> str:
    """A file-derived id: the path inside ``root`` (POSIX), or the source name without a root."""
    if root is None:
        return printable(str(path))
    return printable(path.relative_to(root).as_posix())


def check_inputs(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[Path]:
    """Every input path, checked up front: raise :class:`InputNotFound` naming each path that does not
    exist (a mistyped argument must not start a run), :class:`ConfigError` when there is none.
    Problems inside existing directories (unreadable files, broken links) are reported per file later.
    """
    items = as_paths(paths)
    if not items:
        raise ConfigError("no input paths given")
    missing = [p for p in items if not os.path.exists(p)]
    if missing:
        names = ", ".join(printable(str(p)) for p in missing)
        kind = "broken symlink" if len(missing) == 1 and os.path.islink(missing[0]) else "no such file or directory"
        raise InputNotFound(f"input path does not exist: {names} ({kind})" if len(missing) == 1 else
                            f"input paths do not exist: {names}", source=printable(str(missing[0])))
    return items


def as_paths(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    items = list(paths)
    for p in items:
        if not isinstance(p, (str, os.PathLike)):
            raise ConfigError(f"each input path must be a string or a path, got {type(p).__name__} {p!r:.40}")
    return [Path(p) for p in items]


# -- opening and reading ---------------------------------------------------------------------------

def os_reason(exc: OSError, path: Path) -> str:
    """A short reason for an OSError met while walking or opening ``path``."""
    if isinstance(exc, NotRegularFile):
        return "not a regular file"
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileNotFoundError):
        return "broken symlink" if os.path.islink(path) else "no such file or directory"
    return f"cannot read: {exc.strerror or exc}"


def too_long(length: int, limit: int) -> str:
    return f"record of {length} bytes exceeds the limit of {limit} bytes"


@checked_args
def read_text_file(path: str | os.PathLike[str], *, max_bytes: int = MAX_TEXT_FILE_BYTES) -> str:
    """A whole text file in any supported encoding (UTF-8/16/32, GB18030, Big5, Shift-JIS, EUC-JP,
    EUC-KR), strictly decoded.

    Only regular files of at most ``max_bytes`` bytes (:data:`MAX_TEXT_FILE_BYTES` by default) are read,
    so memory stays within a few times that limit: a FIFO, a device such as /dev/zero or a larger file
    raises :class:`InputError` at once. A missing file raises :class:`InputNotFound`; bytes that are not
    text raise :class:`DecodeError`. Each error's message starts with the file's name.

    >>> read_text_file("/dev/zero")
    Traceback (most recent call last):
    esdedup.errors.InputError: /dev/zero: not a regular file (FIFOs and devices cannot be read whole)
    """
    name = printable(str(path))
    try:
        with open_binary(path) as f:
            data = read_limited(f, max_bytes)
    except NotRegularFile as exc:
        raise InputError(f"{name}: not a regular file (FIFOs and devices cannot be read whole)", source=name,
                         reason="not a regular file") from exc
    except FileNotFoundError as exc:
        raise InputNotFound(f"{name}: no such file", source=name, reason="no such file") from exc
    except OSError as exc:
        reason = os_reason(exc, Path(path))
        raise InputError(f"{name}: {reason}", source=name, reason=reason) from exc
    if isinstance(data, int):
        reason = f"file of {data} bytes exceeds the limit of {max_bytes} bytes"
        raise InputError(f"{name}: {reason}", source=name, reason=reason)
    try:
        text, _encoding = decode_bytes(data)
    except DecodeError as exc:
        raise DecodeError(f"{name}: {exc.reason}", source=name, reason=exc.reason) from exc
    return text


# -- walking ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Found:
    """A regular file to read: where it is, the directory its file-derived id is relative to (None for a
    file given directly), its name."""

    path: Path
    root: Path | None
    source: str


class _Walker:
    """Depth-first walk in sorted order; each real file and directory is visited once."""

    def __init__(self) -> None:
        self._files: dict[tuple[int, int], Path] = {}
        self._dirs: dict[tuple[int, int], Path] = {}

    def walk(self, paths: list[Path]) -> Iterator[Found | Rejected]:
        """Yield each file to read (``root`` None for a file given directly) or a Rejected."""
        id_root = _id_root(paths)
        for given in paths:
            path = canonical_path(given)
            try:
                st = os.stat(path)
            except OSError as exc:
                yield Rejected(printable(str(path)), "", os_reason(exc, path), offset=0)
                continue
            if stat.S_ISDIR(st.st_mode):
                yield from self._walk_dir(path, id_root or path, st, frozenset())
            else:
                yield from self._file(path, None, st)

    def _file(self, path: Path, root: Path | None, st: os.stat_result) -> Iterator[Found | Rejected]:
        source = printable(str(path))
        if not stat.S_ISREG(st.st_mode):
            yield Rejected(source, "", "not a regular file", offset=0)
            return
        key = (st.st_dev, st.st_ino)
        first = self._files.get(key)
        if first is not None:
            logger.warning("skipping %s: same file as %s, already read", source, printable(str(first)))
            return
        self._files[key] = path
        if not os.access(path, os.R_OK):
            yield Rejected(source, "", "permission denied", offset=0)
            return
        yield Found(path, root, source)

    def _walk_dir(self, path: Path, root: Path, st: os.stat_result, ancestors: frozenset[tuple[int, int]]
                  ) -> Iterator[Found | Rejected]:
        key = (st.st_dev, st.st_ino)
        if key in ancestors:
            yield Rejected(printable(str(path)), "", "symlink loop", offset=0)
            return
        first = self._dirs.get(key)
        if first is not None:
            logger.warning("skipping %s: same directory as %s, already read", printable(str(path)),
                           printable(str(first)))
            return
        self._dirs[key] = path
        try:
            with os.scandir(path) as it:
                every = [entry.name for entry in it]
        except OSError as exc:
            yield Rejected(printable(str(path)), "", os_reason(exc, path), offset=0)
            return
        names = sorted(name for name in every if not name.startswith("."))
        hidden = sorted(name for name in every if name.startswith("."))
        if hidden:
            logger.warning("skipping %d hidden file(s) or folder(s) in %s (%s): names starting with '.' are not "
                           "read from a folder; give such a file's own path to read it", len(hidden),
                           printable(str(path)), ", ".join(printable(n) for n in hidden[:3])
                           + (", ..." if len(hidden) > 3 else ""))
        inner = ancestors | {key}
        for name in names:
            child = path / name
            try:
                child_st = os.stat(child)  # follows symlinks
            except OSError as exc:
                yield Rejected(printable(str(child)), "", os_reason(exc, child), offset=0)
                continue
            if stat.S_ISDIR(child_st.st_mode):
                yield from self._walk_dir(child, root, child_st, inner)
            else:
                yield from self._file(child, root, child_st)


def _id_root(paths: list[Path]) -> Path | None:
    """With several distinct directories given, the deepest directory holding them all: ids relative to it
    keep ``a/001.txt`` and ``b/001.txt`` apart. None with one directory (ids relative to it)."""
    dirs = {canonical_path(p) for p in paths if os.path.isdir(p)}
    if len(dirs) < 2:
        return None
    return Path(os.path.commonpath(sorted(dirs)))


def walk(paths: list[Path]) -> Iterator[Found | Rejected]:
    """The files under ``paths`` in order, each real file once (see :func:`iter_files`)."""
    return _Walker().walk(paths)


def iter_files(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> Iterator[Path | Rejected]:
    """Files named by ``paths`` (as canonical paths), directories walked recursively in sorted order.

    Symlinks are followed; a directory symlink leading back into its own ancestry yields one
    ``Rejected("symlink loop")``. A file or directory reached a second time (e.g. through a
    symlink elsewhere in the tree) is read once only, with a logged warning. Dot-files and
    dot-directories inside walked directories are skipped, with a logged warning (a path given explicitly
    is used).
    Unreadable files and directories yield ``Rejected("permission denied")``.
    """
    for item in walk(as_paths(paths)):
        yield item if isinstance(item, Rejected) else item.path


def spool(stream: BinaryIO, folder: Path) -> Path:
    """A stream (standard input) as a file of ``folder``, named by the SHA-1 of what was read: the readers take
    files (a format is sniffed from the content), the dead letters and the checkpoint name it, and the same
    input piped again is the same file, which a resumed run continues."""
    import hashlib
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1()
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    path = folder / digest.hexdigest()
    Path(out.name).replace(path)
    return path
