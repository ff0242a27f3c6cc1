"""Streaming record readers for ``ingest``: txt, JSONL, JSON, CSV/TSV.

* ``txt``: one document per file (novels of tens of MB are normal and read in one go); its id is derived
  from the file's path (see :mod:`esdedup.readers.files`).
* ``jsonl``: one JSON object per line, read line by line in binary with a bounded buffer.
* ``json``: a file holding one JSON object or an array of objects (read whole, so at most the record
  limit); a ``.json`` file that holds JSON Lines is read as JSONL.
* ``csv`` / ``tsv``: a header row, then one record per row (CSV: quoted fields may span lines; TSV has no
  quoting: one record per line, a '"' is text).

Format 'auto' goes by the file name (:func:`esdedup.readers.files.detect_format`); a file without an extension
is looked into: JSON Lines or a JSON object/array of objects is read as such, anything else as txt.

Every input yields either a :class:`Record` or a :class:`Rejected` describing exactly what was wrong and
where, so a caller can make its counts add up. The only things skipped without an item are blank JSONL
lines, blank CSV rows and a CSV file holding only its header row.

This module never prints and never configures logging.
"""
from __future__ import annotations

import codecs
import csv
import io
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from esdedup.errors import ConfigError, DecodeError
from esdedup.readers.encodings import SAMPLE_BYTES, LineCodec, decode_bytes, detect_encoding, line_codec
from esdedup.readers.files import (
    Found,
    as_paths,
    detect_format,
    file_id,
    open_binary,
    os_reason,
    read_limited,
    too_long,
    walk,
)
from esdedup.readers.lines import (
    HEAD_BYTES,
    Line,
    decode_line,
    decode_reason,
    excerpt,
    line_at,
    sniff,
    split_blocks,
    split_lines,
)
from esdedup.readers.records import (
    DEFAULT_MAX_RECORD_BYTES,
    EXCERPT_CHARS,
    STRICT_JSON,
    FieldNames,
    Record,
    Rejected,
    Where,
    build_record,
    id_size_reason,
    json_error,
    json_type,
    plain_record,
    strict_json,
)
from esdedup.util import native
from esdedup.util.fieldtypes import checked_args

__all__ = ["FORMATS", "read_records"]

logger = logging.getLogger(__name__)

FORMATS = frozenset({"auto", "txt", "jsonl", "json", "csv", "tsv"})

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
# The start of a JSON object with a key, or of an array of objects: what a file without an extension
# must begin with to be read as JSON ("[第一章]" and "{注}" stay text).
_JSON_START = re.compile(r'\s*(\{\s*"|\{\s*\}|\[\s*\{|\[\s*\])')
_WHITESPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True)
class _Options:
    names: FieldNames
    max_record_bytes: int
    skip: Callable[[str, int], bool] | None
    skip_file: Callable[[str], bool] | None = None

    def skipped(self, source: str, offset: int | None) -> bool:
        return self.skip is not None and offset is not None and self.skip(source, offset)


class _FileIds:
    """The file-derived ids of one run: distinct files never share one (the second is rejected)."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}

    def claim(self, record_id: str, source: str) -> str | None:
        """None when ``record_id`` is now ``source``'s; else the reason to reject ``source``."""
        owner = self._owner.setdefault(record_id, source)
        if owner == source:
            return None
        return (f"id {record_id!r} is already the id of {owner} in this run (a file's id is its path inside "
                "the folder given: give one folder that holds both)")


def _has_surrogate_escape(text: str) -> bool:
    return "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None


def _json_record(text: str, where: Where, names: FieldNames) -> Record | Rejected:
    """One JSON object (a JSONL line) as a record."""
    if "\x00" in text:
        return Rejected(where.source, where.location, "raw NUL byte in the line (not valid JSON text)",
                        where.excerpt.replace("\x00", "\\x00"), where.offset)
    try:
        obj = strict_json(text)
    except (ValueError, RecursionError) as exc:
        return where.reject(json_error(exc))
    if not isinstance(obj, dict):
        return where.reject(f"not a JSON object (got {json_type(obj)})")
    return build_record(obj, names, where, escapes=_has_surrogate_escape(text))


# -- txt -------------------------------------------------------------------------------------------

def _read_txt(found: Found, opts: _Options, ids: _FileIds) -> Iterator[Record | Rejected]:
    source = found.source
    record_id = file_id(found.path, found.root)
    clash = ids.claim(record_id, source)  # before the skip: a resumed run sees the same owners
    if opts.skipped(source, 0):
        return
    if clash is not None:
        yield Rejected(source, "", clash, offset=0)
        return
    limit = opts.max_record_bytes
    with open_binary(found.path) as f:
        data = read_limited(f, limit)
    if isinstance(data, int):
        yield Rejected(source, "", too_long(data, limit), offset=0)
        return
    if not data:
        yield Rejected(source, "", "empty file", offset=0)
        return
    try:
        text, encoding = decode_bytes(data)
    except DecodeError as exc:
        yield Rejected(source, "", exc.reason, data[:EXCERPT_CHARS].decode("ascii", "backslashreplace"), 0)
        return
    if not text or text.isspace():
        yield Rejected(source, "", "empty file", offset=0)
        return
    reason = id_size_reason(record_id)
    if reason is not None:
        yield Rejected(source, "", reason, text[:EXCERPT_CHARS], 0)
        return
    yield Record(id=record_id, text=text, title=None, fields={}, source=source, location="",
                 offset=0, encoding=encoding)


# -- jsonl -----------------------------------------------------------------------------------------

def _read_jsonl(found: Found, opts: _Options) -> Iterator[Record | Rejected]:
    source, path = found.source, found.path
    limit = opts.max_record_bytes
    with open_binary(path) as f:
        enc = sniff(f, source)
        if isinstance(enc, Rejected):
            if not opts.skipped(source, 0):
                yield enc
            return
        names = opts.names
        read_block = native.function("jsonl_records")
        if read_block is not None and enc.codec == "utf-8" and len({names.id, names.text, names.title}) == 3:
            yield from _jsonl_blocks(f, enc, found, opts, read_block)
            return
        for lineno, line in enumerate(split_lines(f, enc.bom, enc.newline, limit), 1):
            item = _jsonl_line(line, lineno, enc, found, opts)
            if item is not None:
                yield item


def _jsonl_line(line: Line, lineno: int, enc: LineCodec, found: Found, opts: _Options) -> Record | Rejected | None:
    """One JSONL line as a record or a rejection; None for a blank line or one a resumed run skips. Most lines of
    a UTF-8 file are read from their bytes; a resumed run skips a line after it is read."""
    if line.data is not None and enc.codec == "utf-8":
        record = _plain_line(line.data, line.offset, lineno, enc, found.source, opts.names)
        if record is not None:
            return None if opts.skipped(found.source, line.offset) else record
    return _decoded_line(line, lineno, enc, found, opts)


def _jsonl_blocks(f: BinaryIO, enc: LineCodec, found: Found, opts: _Options,
                  read_block: Callable[..., tuple[list[Any], int | None]]) -> Iterator[Record | Rejected]:
    """`_read_jsonl` of a UTF-8 file with the native core: each block of whole lines read at once
    (``read_block``, the core's ``jsonl_records``), which makes the record of each line `plain_record` would
    read and leaves the others to `_jsonl_line`, in their places. A line read the long way may find the file is
    not UTF-8 after all (`decode_line`): the rest of its block is then read a line at a time too."""
    source, names, limit, skipped = found.source, opts.names, opts.max_record_bytes, opts.skipped
    lineno = 0
    for block in split_blocks(f, enc.bom, limit):
        if isinstance(block, Line):
            lineno += 1
            item = _jsonl_line(block, lineno, enc, found, opts)
            if item is not None:
                yield item
            continue
        offset, data = block
        if enc.codec != "utf-8":  # re-decided by a line read the long way
            yield from _rest_of_block(data, offset, 0, lineno, enc, found, opts)
            lineno += data.count(b"\n")
            continue
        entries, first_not_ascii = read_block(data, offset, lineno + 1, names, source, enc.name, Record, limit)
        for x, entry in enumerate(entries):
            lineno += 1
            if type(entry) is Record:
                if not skipped(source, entry.offset):
                    yield entry
                continue
            if first_not_ascii is not None and first_not_ascii < x:
                enc.provisional = False  # a line before it was read as UTF-8, and was not ASCII (`read_line`)
            start, length = entry
            item = _jsonl_line(line_at(data, offset, start, start + length, limit), lineno, enc, found, opts)
            if item is not None:
                yield item
            if enc.codec != "utf-8":
                yield from _rest_of_block(data, offset, start + length + 1, lineno, enc, found, opts)
                lineno += data.count(b"\n", start + length + 1)
                break
        else:
            if first_not_ascii is not None:
                enc.provisional = False


def _rest_of_block(data: bytes, offset: int, start: int, lineno: int, enc: LineCodec, found: Found,
                   opts: _Options) -> Iterator[Record | Rejected]:
    """The lines of a block of `split_blocks` from ``start`` on (after line ``lineno``), a line at a time."""
    lines = split_lines(io.BytesIO(data[start:]), offset + start, b"\n", opts.max_record_bytes)
    for n, line in enumerate(lines, lineno + 1):
        item = _jsonl_line(line, n, enc, found, opts)
        if item is not None:
            yield item


def _decoded_line(line: Line, lineno: int, enc: LineCodec, found: Found, opts: _Options
                  ) -> Record | Rejected | None:
    """A JSONL line as a record or a rejection, the long way: any line of any encoding, decoded, then read by
    `_json_record`; None for a blank line or one a resumed run skips."""
    source, location, limit = found.source, f"line {lineno}", opts.max_record_bytes
    rejected = None
    if line.data is None:
        rejected = Rejected(source, location, too_long(line.length, limit), excerpt(line.head, enc.codec),
                            line.offset)
    else:
        try:
            text, encoding = decode_line(line.data, enc, found.path, line.offset)
        except UnicodeDecodeError as exc:
            rejected = Rejected(source, location, decode_reason(exc, enc), excerpt(line.head, enc.codec),
                                line.offset)
        else:
            if not text or text.isspace():
                return None  # a blank line is not a record
    if opts.skipped(source, line.offset):
        return None
    if rejected is not None:
        return rejected
    where = Where(source, location, line.offset, encoding, text[:EXCERPT_CHARS])
    return _json_record(text, where, opts.names)


def _plain_line(data: bytes, offset: int, lineno: int, enc: LineCodec, source: str,
                names: FieldNames) -> Record | None:
    """The record of most lines of a UTF-8 file, read from the bytes as they are (`plain_record`), without
    decoding the line. None for any other line, which `_decoded_line` reads the long way, for its record or the
    reason it makes none (and an excerpt for its rejection)."""
    record = plain_record(data, names, source, f"line {lineno}", offset, enc.name)
    if record is not None:
        enc.read_line(data)
    return record


# -- json (one object, or an array of objects) -----------------------------------------------------

def _looks_like_jsonl(head: str) -> bool:
    """The first non-blank line is a whole JSON object and another line starts like one."""
    lines = [line for line in head.split("\n") if line.strip()]
    if len(lines) < 2 or not lines[1].lstrip().startswith("{"):
        return False
    try:
        return isinstance(STRICT_JSON.decode(lines[0]), dict)
    except (ValueError, RecursionError):
        return False


def _head_text(found: Found) -> str:
    """The file's first bytes, decoded leniently (enough to tell its format), without a BOM."""
    with open_binary(found.path) as f:
        head = f.read(SAMPLE_BYTES)
    try:
        codec = detect_encoding(head, final=len(head) < SAMPLE_BYTES)
    except DecodeError:
        return ""
    return codecs.getincrementaldecoder(codec)("replace").decode(head).lstrip("\ufeff")


def _sniff_format(found: Found) -> str:
    """The format of a file without an extension: 'jsonl', 'json' or 'txt'."""
    head = _head_text(found)
    if _looks_like_jsonl(head):
        return "jsonl"
    return "json" if _JSON_START.match(head) else "txt"


def _read_json(found: Found, opts: _Options) -> Iterator[Record | Rejected]:
    source = found.source
    if _looks_like_jsonl(_head_text(found)):
        yield from _read_jsonl(found, opts)  # JSON Lines under a .json name
        return
    limit = opts.max_record_bytes
    with open_binary(found.path) as f:
        data = read_limited(f, limit)
    if isinstance(data, int):
        rejected = Rejected(source, "", too_long(data, limit) + " (a JSON file is read whole; write large "
                            "inputs as JSON Lines)", offset=0)
    elif not data:
        rejected = Rejected(source, "", "empty file", offset=0)
    else:
        try:
            text, encoding = decode_bytes(data)
        except DecodeError as exc:
            rejected = Rejected(source, "", exc.reason, data[:EXCERPT_CHARS].decode("ascii", "backslashreplace"), 0)
        else:
            doc = _JsonDocument(text, line_codec(encoding, data[:4]), encoding, source)
            del data  # only the text is needed from here on
            yield from (item for item in doc.items(opts.names) if not opts.skipped(source, item.offset))
            return
    if not opts.skipped(source, 0):
        yield rejected


class _JsonDocument:
    """A decoded JSON file, read value by value (one object, or the objects of an array), with the byte
    offset of each for the checkpoint. A syntax error inside the array ends the reading there: the values
    after it cannot be found reliably, and the rejection says so."""

    def __init__(self, text: str, codec: LineCodec, encoding: str, source: str) -> None:
        self.text, self.codec, self.encoding, self.source = text, codec, encoding, source
        self._char, self._byte = 0, codec.bom

    def _offset(self, pos: int) -> int:
        """The byte offset of character ``pos`` (positions are asked in increasing order)."""
        self._byte += len(self.text[self._char:pos].encode(self.codec.codec))
        self._char = pos
        return self._byte

    def _skip_ws(self, pos: int) -> int:
        match = _WHITESPACE.match(self.text, pos)
        return match.end() if match else pos

    def _at(self, pos: int) -> str:
        return self.text[pos] if pos < len(self.text) else ""

    def _where(self, location: str, pos: int) -> Where:
        return Where(self.source, location, self._offset(pos), self.encoding, self.text[pos:pos + EXCERPT_CHARS])

    def items(self, names: FieldNames) -> Iterator[Record | Rejected]:
        pos = self._skip_ws(0)
        if pos == len(self.text):
            yield Rejected(self.source, "", "empty file", offset=0)
            return
        if self._at(pos) == "[":
            yield from self._array(pos, names)
            return
        where = self._where("", pos)
        try:
            obj, end = STRICT_JSON.raw_decode(self.text, pos)
        except (ValueError, RecursionError) as exc:
            yield where.reject(json_error(exc))
            return
        if self._skip_ws(end) != len(self.text):
            yield where.reject("invalid JSON: extra data after the first value")
        elif not isinstance(obj, dict):
            yield where.reject(f"a JSON file must hold an object or an array of objects (got {json_type(obj)})")
        else:
            yield build_record(obj, names, where, escapes=_has_surrogate_escape(self.text[pos:end]))

    def _array(self, start: int, names: FieldNames) -> Iterator[Record | Rejected]:
        """The items of the array at ``start``; an empty array yields nothing (like a header-only CSV)."""
        pos, n = self._skip_ws(start + 1), 0
        while self._at(pos) not in ("]", ""):
            n += 1
            where = self._where(f"item {n}", pos)
            try:
                obj, end = STRICT_JSON.raw_decode(self.text, pos)
            except (ValueError, RecursionError) as exc:
                yield where.reject(json_error(exc) + "; the rest of the file is not read")
                return
            if isinstance(obj, dict):
                yield build_record(obj, names, where, escapes=_has_surrogate_escape(self.text[pos:end]))
            else:
                yield where.reject(f"not a JSON object (got {json_type(obj)})")
            pos = self._skip_ws(end)
            if self._at(pos) == ",":
                pos = self._skip_ws(pos + 1)
            elif self._at(pos) not in ("]", ""):
                yield self._where(f"item {n + 1}", pos).reject(
                    "invalid JSON: expecting ',' or ']' after an item; the rest of the file is not read")
                return
        if self._at(pos) == "":
            yield self._where(f"item {n + 1}", pos).reject("invalid JSON: the array is not closed")
        elif self._skip_ws(pos + 1) != len(self.text):
            yield self._where("", pos + 1).reject("invalid JSON: extra data after the array")


# -- csv / tsv -------------------------------------------------------------------------------------

class _RowFeeder:
    """Feeds decoded lines to ``csv.reader`` and tracks where each row starts and how big it is.

    Once a row is over the size limit, or one of its lines cannot be decoded or holds a NUL byte, the
    rest of the row is fed as a skeleton (its quote characters and newline only) so the csv module still
    finds where the row ends, without holding the row in memory.
    """

    def __init__(self, lines: Iterator[Line], enc: LineCodec, found: Found, limit: int) -> None:
        self._lines = lines
        self._enc = enc
        self._found = found
        self._limit = limit
        self.next_offset = enc.bom
        self.start = enc.bom
        self.problem: str | None = None
        self.head: bytes = b""
        self.encoding = enc.name

    def begin_row(self) -> None:
        self.start = self.next_offset
        self.problem = None
        self.head = b""
        self.encoding = self._enc.name

    @property
    def row_bytes(self) -> int:
        return self.next_offset - self.start

    def reason(self) -> str | None:
        """Why the current row cannot be a record (too long, undecodable, NUL), or None."""
        if self.problem == "too long":
            return too_long(self.row_bytes, self._limit)
        return self.problem

    def excerpt(self) -> str:
        return excerpt(self.head, self._enc.codec)

    def __iter__(self) -> _RowFeeder:
        return self

    def __next__(self) -> str:
        line = next(self._lines)  # StopIteration ends the reader
        enc = self._enc
        self.next_offset = line.offset + line.length + (enc.unit if line.terminated else 0)
        if len(self.head) < HEAD_BYTES:
            self.head += line.head + (enc.newline if line.terminated else b"")
        end = "\n" if line.terminated else ""
        if self.problem is None and (line.data is None or self.row_bytes > self._limit):
            self.problem = "too long"
        if self.problem is None:
            assert line.data is not None
            try:
                text, self.encoding = decode_line(line.data, enc, self._found.path, line.offset)
            except UnicodeDecodeError as exc:
                self.problem = decode_reason(exc, enc)
            else:
                if "\x00" not in text:
                    return text + end
                self.problem = "raw NUL byte in the row (not CSV text)"
        if line.data is not None and enc.unit > 1:
            quotes = line.data.decode(enc.codec, "replace").count('"')
        else:
            quotes = line.quotes
        return '"' * quotes + end


def _tsv_reader(lines: Iterator[str]) -> Iterator[list[str]]:
    """The rows of a tab-separated file: one per line, split at every tab. Tab-separated exports do not
    quote (a cell may start with '"'), so a quote never joins lines: each line is one record."""
    for line in lines:
        line = line[:-1] if line.endswith("\n") else line
        line = line[:-1] if line.endswith("\r") else line
        yield line.split("\t") if line else []


def _csv_header(reader: Iterator[list[str]], feeder: _RowFeeder, source: str) -> list[str] | Rejected | None:
    """The header row (names stripped), a Rejected for a bad one, or None for an empty file."""
    while True:
        feeder.begin_row()
        try:
            row = next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            return Rejected(source, "header", f"invalid CSV header: {exc}", feeder.excerpt(), 0)
        reason = feeder.reason()
        if reason is not None:
            return Rejected(source, "header", reason, feeder.excerpt(), 0)
        if row:
            return [name.strip() for name in row]


def _check_header(header: list[str], names: FieldNames, source: str, delimiter: str) -> Rejected | None:
    for key in (names.id, names.text, names.title):
        if header.count(key) > 1:
            return Rejected(source, "header", f"CSV header has column {key!r} more than once",
                            delimiter.join(header)[:EXCERPT_CHARS], 0)
    if names.text not in header:
        logger.warning("%s: the CSV header has no column %r; every row will be rejected", source, names.text)
    return None


def _read_csv(found: Found, opts: _Options, delimiter: str) -> Iterator[Record | Rejected]:
    source = found.source
    limit = opts.max_record_bytes
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)  # process-wide; only ever raised (the default is 128 KiB)
    with open_binary(found.path) as f:
        enc = sniff(f, source)
        if isinstance(enc, Rejected):
            if not opts.skipped(source, 0):
                yield enc
            return
        feeder = _RowFeeder(split_lines(f, enc.bom, enc.newline, limit, quotes=True), enc, found, limit)
        reader = _tsv_reader(feeder) if delimiter == "\t" else csv.reader(feeder, delimiter=delimiter, strict=True)
        header = _csv_header(reader, feeder, source)
        if header is None:
            yield Rejected(source, "", "empty file", offset=0)
            return
        bad = header if isinstance(header, Rejected) else _check_header(header, opts.names, source, delimiter)
        if bad is not None:
            yield bad
            return
        assert isinstance(header, list)
        yield from _csv_rows(reader, feeder, header, found, opts)


def _csv_rows(reader: Iterator[list[str]], feeder: _RowFeeder, header: list[str], found: Found,
              opts: _Options) -> Iterator[Record | Rejected]:
    source = found.source
    rowno = 0
    while True:
        feeder.begin_row()
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            rowno += 1
            if not opts.skipped(source, feeder.start):
                yield Rejected(source, f"row {rowno}", f"invalid CSV: {exc}", feeder.excerpt(), feeder.start)
            continue
        rowno += 1
        reason = feeder.reason()
        if (not row and reason is None) or opts.skipped(source, feeder.start):
            continue  # a blank line is not a record
        where = Where(source, f"row {rowno}", feeder.start, feeder.encoding, feeder.excerpt())
        if reason is None and len(row) > len(header):
            reason = f"row has {len(row)} fields but the header has {len(header)}"
        if reason is not None:
            yield where.reject(reason)
        else:
            yield build_record(dict(zip(header, row, strict=False)), opts.names, where, narrow_numbers=True)


# -- all files -------------------------------------------------------------------------------------

@checked_args
def read_records(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    format: str = "auto",
    id_field: str = "id",
    text_field: str = "text",
    title_field: str = "title",
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    skip: Callable[[str, int], bool] | None = None,
    skip_file: Callable[[str], bool] | None = None,
) -> Iterator[Record | Rejected]:
    """Stream the records of files and directories, in a deterministic order.

    ``format`` is 'auto' (by file name, see :func:`esdedup.readers.files.detect_format`; a file without an
    extension by its content), 'txt', 'jsonl', 'json', 'csv' or 'tsv' ('csv' reads .tsv files with tabs
    too). Sources are canonical file names and txt ids are derived from paths as
    :mod:`esdedup.readers.files` describes; a txt file whose id another file of this run already has is
    rejected. ``skip(source, offset)`` is asked for every record start (not for blank lines) and a True
    answer drops that record silently, so a resumed run can pass over what it already did; txt files
    are asked with offset 0 before being read. Rejections carry their offset and are asked the same way.
    ``skip_file(source)`` is asked before a file is opened: True means a resumed run finished it, and it
    is not read at all. Everything else yields a Record or a Rejected. Raises
    :class:`~esdedup.errors.ConfigError` at once for a bad ``format`` or ``max_record_bytes``.
    """
    if format not in FORMATS:
        raise ConfigError(f"unknown input format {format!r}; use one of {', '.join(sorted(FORMATS))}")
    if max_record_bytes < 1:
        raise ConfigError(f"max_record_bytes must be positive, got {max_record_bytes}")
    opts = _Options(FieldNames(id_field, text_field, title_field), max_record_bytes, skip, skip_file)
    return _read_all(as_paths(paths), format, opts)


def _read_all(paths: list[Path], format: str, opts: _Options) -> Iterator[Record | Rejected]:
    ids = _FileIds()
    for item in walk(paths):
        if isinstance(item, Rejected):
            if not opts.skipped(item.source, item.offset):
                yield item
            continue
        if opts.skip_file is not None and opts.skip_file(item.source):
            if format == "txt" or (format == "auto" and detect_format(item.path) == "txt" and item.path.suffix):
                ids.claim(file_id(item.path, item.root), item.source)  # its id stays taken
            continue  # finished by the run being resumed: not even opened
        try:
            yield from _read_file(item, format, opts, ids)
        except OSError as exc:
            yield Rejected(item.source, "", os_reason(exc, item.path))


def _read_file(found: Found, format: str, opts: _Options, ids: _FileIds) -> Iterator[Record | Rejected]:
    fmt = format
    if fmt == "auto":
        fmt = detect_format(found.path)
        if fmt == "txt" and not found.path.suffix:
            fmt = _sniff_format(found)
    if fmt == "jsonl":
        return _read_jsonl(found, opts)
    if fmt == "json":
        return _read_json(found, opts)
    if fmt in ("csv", "tsv"):
        tab = fmt == "tsv" or found.path.name.lower().endswith(".tsv")
        return _read_csv(found, opts, "\t" if tab else ",")
    return _read_txt(found, opts, ids)
