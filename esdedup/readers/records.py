"""What the readers yield, and the rules that turn one JSON object or CSV row into a record.

Every input yields either a :class:`Record` or a :class:`Rejected` describing exactly what was wrong
and where, so a caller can make its counts add up. A record is accepted only when every later stage
can carry it: its strings are valid Unicode (no unpaired surrogate anywhere, field names included), its
numbers are finite and convertible, its fields' numbers fit Elasticsearch's (`wide_number_reason`), its id
fits Elasticsearch's limit. What fails these rules is
rejected here, at read time, with the line it came from, never later in a batch of good records.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; still work without it
    orjson = None  # type: ignore[assignment]

__all__ = ["DEFAULT_MAX_RECORD_BYTES", "EXCERPT_CHARS", "MAX_ID_BYTES", "Record", "Rejected"]

#: Default limit of one record (a JSONL line, a CSV row, a whole txt or JSON file).
DEFAULT_MAX_RECORD_BYTES = 64 * 2**20
#: Elasticsearch refuses document ids longer than 512 bytes.
MAX_ID_BYTES = 512
#: Characters of the raw record kept in ``Rejected.excerpt``.
EXCERPT_CHARS = 200
#: The integers a field may hold: Elasticsearch maps a JSON integer to a signed 64-bit ``long`` and refuses a
#: document with one beyond it, which the embedded store would keep; so no store is given one.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: The largest finite 32-bit float, and the smallest number that rounds to an infinite one: Elasticsearch maps
#: a new field's JSON float to ``float`` and refuses a document whose number would be infinite, which the
#: embedded store would keep.
FLOAT32_MAX, FLOAT32_OVERFLOW = 3.4028234663852886e38, (2 - 2**-24) * 2.0**127


@dataclass(slots=True)  # not frozen: a frozen dataclass pays a setattr a field, per record
class Record:
    """One input document."""

    id: str | None
    """The given id, or for txt files the path relative to its root; None means "derive one"."""
    text: str
    title: str | None
    fields: dict[str, Any]
    """Every other field of the JSON object or CSV row (url, source, timestamp, ...)."""
    source: str
    """The file's canonical name (see :func:`esdedup.readers.files.source_name`)."""
    location: str
    """``"line 12"`` (jsonl), ``"row 5"`` (csv, 1-based data row), ``"item 3"`` (an array in a .json
    file, 1-based) or ``""`` (a whole file)."""
    offset: int
    """Byte offset of the record's start in the file (0 for txt), for resume checkpoints."""
    encoding: str
    """The codec the record was decoded with."""


@dataclass(frozen=True)
class Rejected:
    """An input (file, line or row) that could not be turned into a Record, and why."""

    source: str
    location: str
    reason: str
    excerpt: str | None = None
    """The first ~200 characters of the raw record, for the dead-letter file."""
    offset: int | None = field(default=None, compare=False)
    """Byte offset of the rejected line or row (0 for a whole file), for resume checkpoints: a resumed
    run passes over it like over a Record; None when unknown (then it may be reported again). Not part of
    equality: two rejections of the same thing compare equal however they were found."""


@dataclass(frozen=True)
class FieldNames:
    """Which fields of an object or row hold the id, the text and the title."""

    id: str = "id"
    text: str = "text"
    title: str = "title"


@dataclass(slots=True)  # not frozen: a frozen dataclass pays a setattr a field, per record
class Where:
    """Where a record came from: file, location, offset, codec, and the raw excerpt for a rejection."""

    source: str
    location: str
    offset: int
    encoding: str
    excerpt: str

    def reject(self, reason: str) -> Rejected:
        return Rejected(self.source, self.location, reason, self.excerpt, self.offset)


# -- strict JSON -----------------------------------------------------------------------------------

class _BadNumber(ValueError):
    """A number Python's json module would accept but no store can carry."""


def _refuse_constant(name: str) -> Any:
    raise _BadNumber(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _BadNumber(f"number {text[:40]} is out of range")
    return value


#: RFC 8259 JSON, nothing more: no NaN/Infinity literals, no float that overflows to infinity.
STRICT_JSON = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
def strict_json(text: str) -> Any:
    """``STRICT_JSON.decode(text)``: the same value, or the same error. orjson reads the texts it reads
    alike; what it refuses (NaN and Infinity, numbers that overflow, lone surrogate escapes, control
    characters, deep nesting, any syntax error) is read again by `STRICT_JSON`, for its value or its error,
    and so is a value holding a float (orjson reads an integer beyond 64 bits as one) or an integer beyond a
    signed 64 bits (for `build_record` to name it)."""
    value = _orjson_value(text)
    return STRICT_JSON.decode(text) if value is _NOT_READ else value


def plain_record(data: bytes, names: FieldNames, source: str, location: str, offset: int,
                 encoding: str) -> Record | None:
    """The record of the UTF-8 bytes ``data`` when orjson reads them as `strict_json` would read their text
    and `build_record` makes a record of the object, else None: the caller then decodes the text and reads it
    the long way, for its record or the reason it makes none (a blank line, a byte-order mark, bytes that are
    not UTF-8, anything orjson refuses, a value holding a float or an integer beyond a signed 64 bits, one that
    is not an object, one `build_record` rejects). orjson refuses lone surrogates, escaped or not, and raw
    control characters, so an object it reads has neither. `build_record`'s rules, spelt out for the common
    object (string values, a string or integer id): a JSONL file's lines are read here, one call a line."""
    obj = _orjson_loads(data)
    if type(obj) is not dict:
        return None
    top = INT64_MAX
    for value in obj.values():
        kind = type(value)
        if kind is not str and (kind is float or (kind is int and value > top)
                                or ((kind is dict or kind is list) and _holds_float_or_wide_int(value))):
            return None
    text = obj.get(names.text)
    if type(text) is not str or not text or text.isspace():
        return None
    raw_id = obj.get(names.id)
    if type(raw_id) is str:
        record_id: str | None = raw_id or None
    elif type(raw_id) is int or raw_id is None:
        record_id = None if raw_id is None else str(raw_id)
    else:
        return None
    if record_id is not None and id_size_reason(record_id) is not None:
        return None
    title = obj.get(names.title)
    if title is not None and type(title) is not str:
        if type(title) is not int:  # a float was refused above; a bool, a list or an object makes no title
            return None
        title = str(title)
    for key in (names.text, names.id, names.title):
        obj.pop(key, None)  # the rest are the record's fields
    return Record(record_id, text, title or None, obj, source, location, offset, encoding)


#: What `_orjson_value` gives for a text it leaves to `STRICT_JSON`.
_NOT_READ = object()


def _orjson_value(text: str | bytes) -> Any:
    """orjson's value of ``text`` where it is `STRICT_JSON`'s too (see `strict_json`), else `_NOT_READ`."""
    value = _orjson_loads(text)
    return _NOT_READ if value is _NOT_READ or _holds_float_or_wide_int(value) else value


def _orjson_loads(text: str | bytes) -> Any:
    """orjson's value of ``text``, or `_NOT_READ` where orjson refuses it (or is not installed)."""
    if orjson is None:
        return _NOT_READ
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_READ


def _holds_float_or_wide_int(value: Any) -> bool:
    """Whether orjson's value of a JSON text is or holds a float or an integer beyond a signed 64 bits, at any
    depth (without recursion: any depth is fine). orjson reads an integer below -2**63 or above 2**64 - 1 as
    a float, so an integer here is too wide only above `INT64_MAX`."""
    top = INT64_MAX
    if type(value) is not dict and type(value) is not list:
        return type(value) is float or (type(value) is int and value > top)
    todo = [value]
    while todo:
        container = todo.pop()
        for item in container.values() if type(container) is dict else container:
            kind = type(item)
            if kind is float or (kind is int and item > top):
                return True
            if kind is dict or kind is list:
                todo.append(item)
    return False


def wide_number_reason(fields: Mapping[str, Any]) -> str | None:
    """The rejection reason for the first number (in the fields' order, nested objects and arrays looked
    into) that Elasticsearch's mapping of a new field refuses, naming its path (``a.b[2]``), or None: an
    integer that does not fit a signed 64 bits (``long``), a finite float beyond a 32-bit float's range
    (``float``). Such a record is rejected on every store alike; its id and title are not fields here (they
    are kept as their digits)."""
    todo: list[tuple[str, Any]] = [(str(k), v) for k, v in fields.items()][::-1]  # popped in order
    while todo:
        path, value = todo.pop()
        if isinstance(value, Mapping):
            todo.extend([(f"{path}.{k}", v) for k, v in value.items()][::-1])
        elif isinstance(value, (list, tuple)):
            todo.extend([(f"{path}[{i}]", v) for i, v in enumerate(value)][::-1])
        elif isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
            try:
                digits = str(value)
            except ValueError:  # over sys.get_int_max_str_digits(): a program's own value, not a file's
                digits = f"of {value.bit_length()} bits"
            shown = digits if len(digits) <= 40 else f"{digits[:30]}... ({len(digits)} digits)"
            return (f"field {path!r} holds the integer {shown}, beyond a signed 64-bit integer ({INT64_MIN} to "
                    f"{INT64_MAX}), which Elasticsearch refuses: write it as a string (in quotes)")
        elif isinstance(value, float) and abs(value) >= FLOAT32_OVERFLOW and not math.isinf(value):
            return (f"field {path!r} holds the number {value!r}, beyond a 32-bit float (-{FLOAT32_MAX:.8g} to "
                    f"{FLOAT32_MAX:.8g}), which Elasticsearch refuses in a new number field: write it as a string "
                    "(in quotes)")
    return None


def json_error(exc: Exception) -> str:
    """The rejection reason for what :data:`STRICT_JSON` raised (JSON syntax, a bad number, depth)."""
    if isinstance(exc, json.JSONDecodeError):
        where = f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        return f"invalid JSON: {exc.msg} at {where}"
    if isinstance(exc, RecursionError):
        return "invalid JSON: nested too deeply"
    if isinstance(exc, _BadNumber):
        return f"invalid JSON: {exc}"
    # int() refuses integers of more than sys.get_int_max_str_digits() digits (4,300 by default).
    return f"invalid JSON: a number cannot be read ({str(exc).split(';')[0]})"


def json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, dict):
        return "object"
    return "null"


# -- field rules -----------------------------------------------------------------------------------

def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_unicode(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def has_lone_surrogate(value: Any) -> bool:
    """Whether a value holds an unpaired surrogate in any string, keys and nested values included (a JSON
    value, or a program's own: mappings, lists, tuples and sets are looked into). Such a string cannot be
    encoded as UTF-8 (hashed, stored, sent to Elasticsearch): the record is rejected, by every store alike."""
    if isinstance(value, str):
        return not _is_unicode(value)
    if isinstance(value, Mapping):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(has_lone_surrogate(v) for v in value)
    return False


def _surrogate_reason(mapping: dict[str, Any], names: FieldNames) -> str | None:
    """The first field (in the object's order) with an unpaired surrogate escape, as a reason."""
    roles = {names.text: "text field", names.id: "id field", names.title: "title field"}
    for key, value in mapping.items():
        if not _is_unicode(key):  # repr() escapes the surrogate, so the reason itself is valid text
            return f"field name {key!r} has an unpaired surrogate escape"
        if has_lone_surrogate(value):
            return f"{roles.get(key, 'field')} {key!r} has an unpaired surrogate escape"
    return None


def _text_reason(mapping: dict[str, Any], name: str) -> str | None:
    if name not in mapping:
        return f"text field {name!r} is missing"
    text = mapping[name]
    if not isinstance(text, str):
        return f"text field {name!r} is not a string (got {_type_name(text)})"
    if not text or text.isspace():
        return f"text field {name!r} is empty"
    return None


def _record_id(raw: Any, name: str) -> tuple[str | None, str | None]:
    """``(id, None)`` or ``(None, reason)``; an absent or empty id is ``(None, None)``: derive one."""
    if raw is None or raw == "":
        return None, None
    if isinstance(raw, str):
        record_id = raw
    elif isinstance(raw, int) and not isinstance(raw, bool):
        record_id = str(raw)
    else:
        return None, f"id field {name!r} is not a string or integer (got {_type_name(raw)})"
    return record_id, id_size_reason(record_id)


def id_size_reason(record_id: str) -> str | None:
    """The rejection reason for an id longer than :data:`MAX_ID_BYTES` in UTF-8, or None."""
    if len(record_id) <= MAX_ID_BYTES // 4:
        return None  # four bytes a character at most: cannot be too long
    size = len(record_id.encode("utf-8", "surrogatepass"))
    return f"id of {size} bytes exceeds {MAX_ID_BYTES}" if size > MAX_ID_BYTES else None


def _title(raw: Any, name: str) -> tuple[str | None, str | None]:
    if raw is None or raw == "":
        return None, None
    if isinstance(raw, str):
        return raw, None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return str(raw), None
    return None, f"title field {name!r} is not a string (got {_type_name(raw)})"


def build_record(mapping: dict[str, Any], names: FieldNames, where: Where, *,
                 escapes: bool = False, narrow_numbers: bool = False) -> Record | Rejected:
    """Apply the field rules shared by JSON objects and CSV rows.

    ``escapes`` says the JSON text had a \\uD800-\\uDFFF escape, which may have produced an unpaired
    surrogate: such a string cannot be encoded (hashed, stored, sent to Elasticsearch) later, in whichever
    field it sits, so the record is rejected now. ``narrow_numbers`` says every number of ``mapping`` is known
    to fit Elasticsearch's (a CSV row's strings; an object `plain_object` read: no float, no integer beyond a
    signed 64 bits), so `wide_number_reason` is not asked.
    """
    reason = _text_reason(mapping, names.text)
    record_id = title = None
    if reason is None:
        record_id, reason = _record_id(mapping.get(names.id), names.id)
    if reason is None and escapes:
        reason = _surrogate_reason(mapping, names)
    if reason is None:
        title, reason = _title(mapping.get(names.title), names.title)
    if reason is not None:
        return where.reject(reason)
    fields = dict(mapping)
    for key in (names.text, names.id, names.title):
        fields.pop(key, None)
    if not narrow_numbers and fields:
        reason = wide_number_reason(fields)
        if reason is not None:
            return where.reject(reason)
    # By position: a call by keyword costs twice as much, once a record.
    return Record(record_id, mapping[names.text], title, fields, where.source, where.location, where.offset,
                  where.encoding)
