"""Writing a labels file (JSON lines that `esdedup.quality.evaluate.read_labels` reads): one writer at a
time, and each write whole or not at all.

A labels file has one owner at a time. Whoever writes it (the review page for as long as it runs, `synth`
while it writes one) holds an exclusive ``flock`` on ``<file>.lock`` beside it (released when the holder
ends, a kill included; the file removed when the holder lets it go) and writes its process id there, so a second writer is refused with the file
and the process that holds it: two writers that each rewrite the file from their own copy would lose each
other's labels. Readers (``eval``) take no lock: they read the old file or the new one.

A labels path that is a symlink is written through: the lock and the file replaced are those of the file it
points to, so two names of one file share one owner and the link stays a link. A labels file with more than
one hard link is refused (`labels_target`, and again before each write): hard links are names the lock cannot
see from one another, and a rename would part them.

Every write goes to a new file in the same folder, is flushed to disk, then renamed over the labels file
(keeping its permission bits): a crash or a full disk leaves the old file or the new one, never half of
either, and a write that fails raises `OutputError` with the old file untouched.
"""
from __future__ import annotations

import json
import os
import secrets
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError, OutputError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LabelsOwner", "labels_target", "own_labels", "owned_labels", "write_labels"]


def labels_target(path: str | Path) -> Path:
    """The file a labels path names (through any symlink), checked writable before anything is written.

    Raises:
        ConfigError: the path is a folder, a FIFO or a device, its folder cannot be made, or nothing can be
            written there (with the reason).
    """
    given = Path(path)
    target = Path(os.path.realpath(given))
    shown = str(given) if target == given.absolute() else f"{given} (a link to {target})"
    if target.exists() and not target.is_file():
        raise ConfigError(f"labels file {shown} is not a regular file: give a file path")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"labels file {shown}: cannot make its folder {target.parent}: "
                          f"{exc.strerror or exc}") from None
    # Written as each label will be: a new file in the same folder, then gone.
    probe = target.parent / f".{target.name}.{secrets.token_hex(4)}.probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"labels file {shown} cannot be written: {exc.strerror or exc}") from None
    if target.exists() and not os.access(target, os.R_OK):
        raise ConfigError(f"labels file {shown} cannot be read")
    if target.exists():
        reason = _links_reason(target, os.stat(target))
        if reason is not None:
            raise ConfigError(reason)
    return target


def _links_reason(target: Path, st: os.stat_result) -> str | None:
    """Why a labels file with other hard links cannot be written, or None. Its lock is taken by name, so a
    writer given another name of it would not see this one's lock, and every write replaces the file by a
    rename, which would leave the other names holding the old labels: a copy is what such a user wants."""
    if st.st_nlink <= 1:
        return None
    return (f"labels file {target} has {st.st_nlink} hard links (other names of the same file): each writer of "
            "a labels file locks it by its name and replaces it whole, so the other names would lose labels; "
            "give a copy of it (cp), not a hard link")


class LabelsOwner:
    """The lock a labels file's one writer holds; `release` (or the holder's end) frees it."""

    def __init__(self, fd: int | None, lock_path: Path) -> None:
        self._fd, self.lock_path = fd, lock_path

    def release(self) -> None:
        """Remove the lock file, then let it go. It is removed while still held: a process that opened it
        meanwhile finds, once it holds it, that the name no longer leads to it, and takes a new one."""
        if self._fd is None:
            return
        try:
            if _same_file(self.lock_path, self._fd):
                self.lock_path.unlink()
        except OSError:
            pass
        os.close(self._fd)
        self._fd = None


def _same_file(path: Path, fd: int) -> bool:
    try:
        st, held = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def own_labels(path: str | Path, who: str) -> LabelsOwner:
    """Become the one writer of the labels file at ``path`` (a `labels_target`), as ``who`` (a few words
    that tell a person which program holds it, e.g. "a review page of index news"). The lock is
    ``<file>.lock``, removed when its owner lets it go (one a killed owner leaves is taken over).

    Raises:
        ConfigError: another process holds it (the message names the file and that process), or the lock
            file cannot be made.
    """
    target = Path(path)
    lock_path = target.with_name(target.name + ".lock")
    if fcntl is None:  # pragma: no cover - Windows: no flock; one writer is the user's to keep
        return LabelsOwner(None, lock_path)
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise ConfigError(f"labels file {target}: cannot make its lock file {lock_path}: "
                              f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(f"labels file {target} is in use by {_holder(lock_path)}: one process writes a "
                              "labels file at a time; stop it, or give this one another labels file") from None
        if _same_file(lock_path, fd):
            break
        os.close(fd)  # its owner removed it between our open and our lock: take the new one
    note = f"process {os.getpid()}, {who}, since {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n"
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, note.encode("utf-8", "replace"), 0)
    except OSError:
        pass  # the lock holds without its note; a second writer is told "another process"
    return LabelsOwner(fd, lock_path)


@contextmanager
def owned_labels(path: str | Path, who: str) -> Iterator[Path]:
    """The labels file at ``path`` checked (`labels_target`) and owned (`own_labels`, as ``who``) for the
    ``with`` block, which writes it with `write_labels` on the path it is given; let go at the block's end.

    Raises:
        ConfigError: as `labels_target` and `own_labels` raise.
    """
    target = labels_target(path)
    owner = own_labels(target, who)
    try:
        yield target
    finally:
        owner.release()


def _holder(lock_path: Path) -> str:
    try:
        note = lock_path.read_bytes()[:300].decode("utf-8", "replace").strip()
    except OSError:
        note = ""
    return note.splitlines()[0] if note else "another process"


def _line(row: Mapping[str, Any]) -> bytes:
    text = json.dumps(row, ensure_ascii=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # an id with a lone surrogate (as Elasticsearch keeps them): escaped, exact
        return (json.dumps(row) + "\n").encode("ascii")


def write_labels(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Replace the labels file at ``path`` (a `labels_target`) with ``rows``, one JSON line each; returns the
    number of rows. The caller owns the file (`own_labels`).

    Raises:
        OutputError: the file could not be written (the old one is left as it was).
    """
    target = Path(path)
    tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    n = 0
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None  # a new file: the umask decides its mode, as for any file made here
    except OSError as exc:
        raise OutputError(f"cannot write labels file {target}: {exc.strerror or exc}") from None
    reason = None if st is None else _links_reason(target, st)  # a link made since `labels_target` checked
    if reason is not None:
        raise OutputError(reason)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
            with os.fdopen(fd, "wb", closefd=False) as fh:
                for row in rows:
                    fh.write(_line(row))
                    n += 1
                fh.flush()
                os.fsync(fh.fileno())
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise OutputError(f"cannot write labels file {target}: {exc.strerror or exc}") from None
    try:  # the rename itself, on disk
        dfd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return n
