"""Line-oriented files (JSONL, CSV): split a binary stream into lines in bounded memory, decode each.

A line longer than the record limit is counted and dropped, never held; lines are split at newlines
aligned to the encoding's code unit (UTF-16/32 newlines carry NUL bytes). Each line is decoded on its
own, so one undecodable line costs one record.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from esdedup.errors import DecodeError
from esdedup.readers.encodings import LEGACY_CODECS, SAMPLE_BYTES, LineCodec, detect_line_encoding, line_codec
from esdedup.readers.files import open_binary
from esdedup.readers.records import EXCERPT_CHARS, Rejected

logger = logging.getLogger(__name__)

_CHUNK_BYTES = 1 << 20
#: Bytes of a line kept for excerpts.
HEAD_BYTES = 4 * EXCERPT_CHARS


# Not frozen (a frozen dataclass pays a setattr a field, per record) and slotted (no dict an object).
@dataclass(slots=True)
class Line:
    offset: int  # file offset of the line's first byte
    length: int  # bytes, without the newline
    data: bytes | None  # None when length exceeds the limit (the bytes were not kept)
    terminated: bool  # ended by a newline (not by end of file)
    quotes: int  # number of '"' bytes (counted only for single-byte code units)
    kept_head: bytes = b""  # the first bytes of a line whose data was not kept

    @property
    def head(self) -> bytes:
        """The first bytes, for excerpts."""
        return self.kept_head if self.data is None else self.data[:HEAD_BYTES]


def _find_aligned(buf: bytearray, newline: bytes, start: int, line_start: int) -> int:
    unit = len(newline)
    i = buf.find(newline, start)
    while i >= 0 and (i - line_start) % unit:
        i = buf.find(newline, i + 1)
    return i


class _Splitter:
    """The state of :func:`split_lines`: a buffer of at most about ``limit`` plus one read chunk."""

    def __init__(self, start: int, newline: bytes, limit: int, count_quotes: bool) -> None:
        self.newline, self.unit, self.limit = newline, len(newline), limit
        self.count_quotes = count_quotes and self.unit == 1
        self.buf = bytearray()
        self.base = start  # file offset of buf[0]
        self.pos = 0  # start of the current line in buf
        self.scan = 0  # where to look for the next newline (everything before it was searched)
        self.over = False  # the current line exceeded the limit; its bytes before buf[0] are dropped
        self.over_start = self.over_length = self.over_quotes = 0
        self.over_head = b""

    def _quotes(self, start: int, end: int | None = None) -> int:
        return self.buf.count(b'"', start, len(self.buf) if end is None else end) if self.count_quotes else 0

    def _line(self, end: int, terminated: bool) -> Line:
        """The line from ``pos`` to ``end`` (exclusive) of the buffer."""
        buf, pos = self.buf, self.pos
        n_quotes = self._quotes(pos, end)
        if self.over:
            self.over = False
            return Line(self.over_start, self.over_length + end - pos, None, terminated, self.over_quotes + n_quotes,
                        self.over_head)
        return line_at(buf, self.base, pos, end, self.limit, terminated, n_quotes)

    def lines(self) -> Iterator[Line]:
        """Complete lines in the buffer."""
        return self._byte_lines() if self.unit == 1 and not self.count_quotes else self._aligned_lines()

    def _aligned_lines(self) -> Iterator[Line]:
        """`lines` of any code unit."""
        while True:
            i = _find_aligned(self.buf, self.newline, self.scan, self.pos)
            if i < 0:
                return
            yield self._line(i, True)
            self.pos = self.scan = i + self.unit

    def _byte_lines(self) -> Iterator[Line]:
        """`lines` of a single-byte code unit, without counting quotes: the same lines, found with fewer
        steps each (a JSONL file's lines are mostly short)."""
        buf, newline, limit, base = self.buf, self.newline, self.limit, self.base
        pos = self.pos
        i = buf.find(newline, max(pos, self.scan))
        try:
            while i >= 0:
                if self.over or i - pos > limit:
                    self.pos = pos
                    yield self._line(i, True)
                else:
                    yield Line(base + pos, i - pos, bytes(buf[pos:i]), True, 0)
                pos = i + 1
                i = buf.find(newline, pos)
        finally:
            self.pos = self.scan = pos

    def blocks(self) -> Iterator[Line | tuple[int, bytes]]:
        """`lines` of a file whose newline is one byte, as few objects as can be: the buffer's whole lines in one
        block (the offset of its first, and its bytes, up to and with the last newline), after the rest of a
        line that was over the limit (a `Line`, its bytes not kept)."""
        buf, pos = self.buf, self.pos
        if self.over:
            i = buf.find(self.newline, max(pos, self.scan))
            if i < 0:
                return
            yield self._line(i, True)
            pos = self.pos = self.scan = i + 1
        end = buf.rfind(self.newline, max(pos, self.scan))
        if end >= 0:
            yield self.base + pos, bytes(buf[pos:end + 1])
            self.pos = self.scan = end + 1

    def drop_long(self) -> None:
        """Drop the searched whole code units of a line that is over the limit (keep a partial unit)."""
        rest = len(self.buf) - self.pos
        if not (self.over or rest > self.limit):
            return
        if not self.over:
            self.over = True
            self.over_start, self.over_length, self.over_quotes = self.base + self.pos, 0, 0
            self.over_head = bytes(self.buf[self.pos:self.pos + HEAD_BYTES])
        drop = rest - rest % self.unit
        self.over_length += drop
        self.over_quotes += self._quotes(self.pos, self.pos + drop)
        self.pos += drop

    def feed(self, chunk: bytes) -> None:
        buf = self.buf
        self.scan = len(buf) - (len(buf) - self.pos) % self.unit  # whole units searched; compacted below
        del buf[:self.pos]
        self.base += self.pos
        self.scan -= self.pos
        self.pos = 0
        buf += chunk

    def last(self) -> Line | None:
        """The unterminated last line at end of file, if any."""
        if self.over or len(self.buf) > self.pos:
            return self._line(len(self.buf), False)
        return None


def split_lines(f: BinaryIO, start: int, newline: bytes, limit: int, *, quotes: bool = False) -> Iterator[Line]:
    """Split a binary stream into lines at code-unit-aligned newlines, holding at most about
    ``limit`` plus one read chunk in memory: longer lines are counted and dropped, not kept.
    With ``quotes`` (CSV), the '"' bytes of each line are counted (single-byte units only)."""
    state = _Splitter(start, newline, limit, quotes)
    return _split(f, state, state.lines)


def split_blocks(f: BinaryIO, start: int, limit: int) -> Iterator[Line | tuple[int, bytes]]:
    """`split_lines` of a stream whose newline is the byte ``\\n``, a buffer at a time (`_Splitter.blocks`): blocks
    of whole lines, as ``(offset, bytes)``, and as a `Line` a line longer than a buffer and the last line when
    no newline ends it. The lines of a block may be over the limit too (the caller measures them)."""
    state = _Splitter(start, b"\n", limit, False)
    return _split(f, state, state.blocks)


def _split(f: BinaryIO, state: _Splitter, pieces: Callable[[], Iterator[Line | tuple[int, bytes]]]) -> Iterator[Any]:
    """The ``pieces`` of the buffer read chunk by chunk, then the last line if no newline ends it."""
    while True:
        yield from pieces()
        state.drop_long()
        chunk = f.read(_CHUNK_BYTES)
        if not chunk:
            last = state.last()
            if last is not None:
                yield last
            return
        state.feed(chunk)


def line_at(buf: bytes | bytearray, base: int, pos: int, end: int, limit: int, terminated: bool = True,
            quotes: int = 0) -> Line:
    """The `Line` from ``pos`` to ``end`` (exclusive) of ``buf``, whose first byte is at file offset ``base``: its
    bytes not kept when it is over ``limit``, only its first bytes, for an excerpt."""
    if end - pos > limit:
        return Line(base + pos, end - pos, None, terminated, quotes, bytes(buf[pos:pos + HEAD_BYTES]))
    return Line(base + pos, end - pos, bytes(buf[pos:end]), terminated, quotes)


def excerpt(raw: bytes, codec: str) -> str:
    return raw.decode(codec, "backslashreplace")[:EXCERPT_CHARS]


def sniff(f: BinaryIO, source: str) -> LineCodec | Rejected:
    """Detect the encoding from the first SAMPLE_BYTES and position ``f`` after the BOM; a Rejected
    for an empty file, a binary file or a bad byte-order mark."""
    sample = f.read(SAMPLE_BYTES)
    if not sample:
        return Rejected(source, "", "empty file", offset=0)
    try:
        name = detect_line_encoding(sample, final=len(sample) < SAMPLE_BYTES)
    except DecodeError as exc:
        return Rejected(source, "", exc.reason, sample[:EXCERPT_CHARS].decode("ascii", "backslashreplace"), 0)
    codec = line_codec(name, sample)
    f.seek(codec.bom)
    return codec


def decode_line(data: bytes, enc: LineCodec, path: Path, offset: int) -> tuple[str, str]:
    """Decode one line strictly: ``(text, encoding)``; raises UnicodeDecodeError.

    In a legacy-encoded file (GB18030, Big5, Shift-JIS, ...) a line that is valid UTF-8 is UTF-8 (files
    get concatenated; legacy text is practically never valid UTF-8). A file that started as pure ASCII
    is re-examined at its first line that is not UTF-8, and may continue in a legacy encoding.
    """
    if enc.codec in LEGACY_CODECS and not data.isascii():
        try:
            return _strip_bom(data.decode("utf-8")), "utf-8"
        except UnicodeDecodeError:
            pass
    try:
        text = data.decode(enc.codec)
    except UnicodeDecodeError:
        if not enc.provisional:
            raise
        enc.provisional = False
        name = _redetect(path, offset)
        if name is None:
            raise
        logger.debug("%s: pure ASCII up to byte %d, continuing as %s", path, offset, name)
        enc.name = enc.codec = name
        return decode_line(data, enc, path, offset)
    enc.read_line(data)
    return _strip_bom(text), enc.name


def decode_reason(exc: UnicodeDecodeError, enc: LineCodec) -> str:
    return f"cannot decode as {enc.codec}: {exc.reason} at byte {exc.start} of the record"


def _redetect(path: Path, offset: int) -> str | None:
    """A legacy codec if that is what the file holds from ``offset`` on, else None."""
    with open_binary(path) as g:
        g.seek(offset)
        sample = g.read(SAMPLE_BYTES)
    try:
        name = detect_line_encoding(sample, final=len(sample) < SAMPLE_BYTES)
    except DecodeError:
        return None
    return name if name in LEGACY_CODECS else None


def _strip_bom(text: str) -> str:
    """Concatenated files carry BOMs in the middle; a line never starts with U+FEFF on purpose."""
    return text[1:] if text.startswith("\ufeff") else text
