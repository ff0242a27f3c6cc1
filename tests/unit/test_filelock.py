"""The lock file between writers: exclusive, released by closing, and served in turn (a holder that lets go
between batches and takes it again at once does not keep a waiter out)."""
from __future__ import annotations

import os
import threading

import pytest

from esdedup.errors import StoreError
from esdedup.util.filelock import FileLock

fcntl = pytest.importorskip("fcntl", reason="flock exists on POSIX systems only; elsewhere the lock is a no-op")


def _lock(path, wait=0.0):
    return FileLock(path, busy=StoreError("held"), wait=wait)


def test_a_second_holder_is_refused_until_the_first_lets_go(tmp_path):
    first = _lock(tmp_path / "x.lock").acquire()
    with pytest.raises(StoreError, match="held"):
        _lock(tmp_path / "x.lock", wait=0.05).acquire()
    first.release()
    _lock(tmp_path / "x.lock").acquire().release()


def test_a_waiter_gets_the_lock_from_a_holder_that_takes_it_again_at_once(tmp_path):
    """A holder that takes the lock again right after letting it go (a batch run between two batches, for
    300 batches of 10 ms) lets a waiter in after the batch it is writing: the waiter is first in line."""
    path = tmp_path / "x.lock"
    batches, done, stop = 300, [0], threading.Event()
    held = threading.Event()

    def holder() -> None:
        for _ in range(batches):
            if stop.is_set():
                return
            with _lock(path, wait=10):
                held.set()
                stop.wait(0.01)
                done[0] += 1

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(5)
        with _lock(path, wait=10):
            seen = done[0]
            stop.set()
    finally:
        stop.set()
        thread.join()
    assert seen < batches // 2, f"the waiter got the lock only after {seen} of the holder's {batches} batches"


def test_a_waiter_that_gives_up_leaves_the_line(tmp_path):
    """A waiter refused at its deadline holds neither file: the next one takes the lock at once."""
    path = tmp_path / "x.lock"
    holder = _lock(path).acquire()
    with pytest.raises(StoreError):
        _lock(path, wait=0.02).acquire()
    holder.release()
    for name in ("x.lock", "x.lock.queue"):
        fd = os.open(tmp_path / name, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError when still held
        finally:
            os.close(fd)


def test_a_taker_that_does_not_wait_leaves_no_queue_file(tmp_path):
    """A checkpoint's lock (``wait`` 0) takes the lock file alone: nothing else appears beside the checkpoint."""
    _lock(tmp_path / "ck.json.lock").acquire().release()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.json.lock"]
