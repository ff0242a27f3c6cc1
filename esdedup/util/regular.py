"""Opening a file that must be a regular file: input files, resource files (synonyms, user dictionary,
stopwords, idf table), config files.

A FIFO or a device named where a file belongs (``/dev/zero``, ``/dev/urandom``, a pipe nobody writes to)
would hang the reader or never end; it is refused when opened, on the open descriptor, before anything is
read.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO


class NotRegularFile(OSError):
    """A FIFO, device, socket or directory where a regular file was expected."""


def open_binary(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a regular file for reading; raise :class:`NotRegularFile` for anything else.

    Opened non-blocking and checked on the open descriptor: opening a FIFO never waits for a writer, and
    a file swapped for a device after it was listed is still refused.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_limited(f: BinaryIO, limit: int) -> bytes | int:
    """The whole file, or its size when it is over ``limit`` bytes (then it is not read at all, or, if it
    grew while being read, no more than ``limit + 1`` bytes are)."""
    size = os.fstat(f.fileno()).st_size
    if size > limit:
        return size
    data = f.read(limit + 1)
    return len(data) if len(data) > limit else data
