"""An exclusive lock between processes on a lock file (``flock``): released when the holder closes it or
dies, so a killed process never leaves a stale lock behind. A process forked while a lock is held (a worker)
closes its copy of the descriptor at once: the lock stays its parent's alone, and does not outlive the parent
in a child that is still running.

Waiters are served in turn. ``flock`` itself promises no order, and a holder that lets the lock go between
two batches and takes it again a millisecond later would keep it from a waiter that only looks now and then.
So a taker that may wait first takes a second file, the queue (``<path>.queue``), and holds it while it
waits for the lock. The holder taking the lock again between batches is such a taker too: it finds the queue
held by a waiter and waits behind it. A taker that does not wait at all (``wait`` 0) does not queue.

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
    """In a forked child: close the inherited descriptors of the parent's locks (and of a queue it waits in).
    ``flock`` belongs to the open file, which the parent still holds open: closing the child's copy does not
    release the parent's lock."""
    for lock in list(_HELD):
        for fd in (lock._fd, lock._queue_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        lock._fd = lock._queue_fd = None
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
        #: The queue's descriptor while this lock waits in line (see the module docstring).
        self._queue_fd: int | None = None

    def acquire(self) -> FileLock:
        if fcntl is None:  # pragma: no cover
            return self
        deadline = time.monotonic() + self.wait
        fd = self._open(self.path)
        _HELD.add(self)  # a child forked while this waits closes its copies of both descriptors
        try:
            # In line first (at once, when nobody waits), then the lock itself. A taker that does not wait
            # (``wait`` 0: a checkpoint's lock) takes the lock or fails at once, and leaves no queue file.
            if self.wait > 0:
                self._queue_fd = self._open(self.path.with_name(self.path.name + ".queue"))
            if (self._queue_fd is None or _wait_for(self._queue_fd, deadline)) and _wait_for(fd, deadline):
                self._fd, fd = fd, -1
                return self
            raise self.busy from None
        finally:
            if self._queue_fd is not None:
                os.close(self._queue_fd)  # leaves the line
                self._queue_fd = None
            if fd != -1:
                os.close(fd)
                _HELD.discard(self)

    def _open(self, path: Path) -> int:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file {path}: {exc.strerror}") from None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None
        _HELD.discard(self)

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


#: How often a waiter looks at a held file again, in seconds: a holder between two batches lets go for about
#: a millisecond, and the waiter first in line must see it within a batch or two.
_POLL_SECONDS = 0.005


def _wait_for(fd: int, deadline: float) -> bool:
    """Take ``flock`` on ``fd``, looking again until ``deadline`` (`time.monotonic`); whether it was taken."""
    assert fcntl is not None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_SECONDS)
