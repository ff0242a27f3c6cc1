"""An exclusive lock between processes on a lock file (``flock``): released when the holder closes it or
dies, so a killed process never leaves a stale lock behind. A process forked while a lock is held (a worker)
closes its copy of the descriptor at once: the lock stays its parent's alone, and does not outlive the parent
in a child that is still running.

Where ``flock`` does not exist (Windows) the lock is a no-op: SQLite's own locking still serialises the
embedded store's transactions.
"""
from __future__ import annotations

import contextlib
import os
import time
import weakref
from pathlib import Path

from esdedup.errors import EsdedupError, StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


#: The locks this process holds, whose descriptors a forked child closes (`_close_in_child`).
_HELD: weakref.WeakSet[FileLock] = weakref.WeakSet()


def _close_in_child() -> None:
    """In a forked child: close the inherited descriptors of the parent's locks. ``flock`` belongs to the open
    file, which the parent still holds open: closing the child's copy does not release the parent's lock."""
    for lock in list(_HELD):
        if lock._fd is not None:
            with contextlib.suppress(OSError):
                os.close(lock._fd)
            lock._fd = None
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_child)


class FileLock:
    """Hold ``path`` exclusively, waiting up to ``wait`` seconds (0: not at all) for another holder; raises
    ``busy`` when it is still held then.

    >>> import tempfile, os
    >>> lock_path = os.path.join(tempfile.mkdtemp(), "x.lock")
    >>> with FileLock(lock_path, busy=StoreError("in use")):
    ...     FileLock(lock_path, busy=StoreError("in use")).acquire()
    Traceback (most recent call last):
    ...
    esdedup.errors.StoreError: in use
    """

    def __init__(self, path: str | Path, *, busy: EsdedupError, wait: float = 0.0) -> None:
        self.path, self.busy, self.wait = Path(path), busy, wait
        self._fd: int | None = None

    def acquire(self) -> FileLock:
        if fcntl is None:  # pragma: no cover
            return self
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file {self.path}: {exc.strerror}") from None
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._fd = fd
                _HELD.add(self)
                return self
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise self.busy from None
                time.sleep(0.05)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None
        _HELD.discard(self)

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
