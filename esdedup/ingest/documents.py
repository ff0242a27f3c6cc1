"""From a record read to the document written: its id, the fields it is stored with (and the clash rule for
a record's own fields of those names), and the shapes a fingerprinted record takes in the run."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; still work without it
    orjson = None  # type: ignore[assignment]

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint
from esdedup.fingerprint.normalize import normalize
from esdedup.fingerprint.values import FingerprintBlock
from esdedup.ingest.options import BATCH_CHARS
from esdedup.ingest.runindex import HeldHashes
from esdedup.readers import Record, Rejected
from esdedup.readers.records import has_lone_surrogate, id_size_reason, wide_number_reason
from esdedup.schema import DEDUP, INPUT_FIELDS, content_sha1
from esdedup.store.base import NewDoc, Root, StoredDoc

#: Fields of a stored document that ingest fills: ``id``, ``title`` and ``text`` from the fields chosen for
#: them, ``dedup`` with the fingerprint. A record's own fields of these names (when other fields were chosen,
#: e.g. ``id_field="doc_id"`` on records that also have an ``id``), and its dotted keys under ``dedup``, are
#: kept under `INPUT_FIELDS`.
FILLED_FIELDS = ("id", "title", "text", DEDUP)


@dataclass(slots=True)  # not frozen: see esdedup.store.base.StoredDoc
class FingerprintedRecord:
    """A record with its fingerprint, as it comes back from a worker (compact: no exact TF table)."""

    record: Record
    #: None until it is first read (`fp`) where its batch's block makes it (`FingerprintBlock.fingerprint_of`),
    #: and when the run reads none (`esdedup.ingest.driver.IngestRun.reads_fingerprints`): its workers sent
    #: back the SimHash and the encoded ``dedup`` fields only.
    fingerprint: Fingerprint | None
    #: The text's SimHash (`same_text` reads it where a stored document has no content SHA-1).
    simhash: int
    sha1: str
    id: str
    #: The ``dedup`` fields encoded by the worker (`NewDoc.dedup_json`), when the store takes them.
    dedup_json: bytes | None = None
    #: The `esdedup.ingest.runindex.key_hashes` of its batch's `esdedup.ingest.runindex.held_keys`, when the
    #: worker made them (its own at ``row``).
    held: HeldHashes | None = None
    #: The arrays its batch's fingerprints came in (`esdedup.ingest.workers.Fingerprinted.block`), when the batch
    #: came from a worker process; its row there, and in ``held``.
    block: FingerprintBlock | None = None
    row: int = 0

    @property
    def fp(self) -> Fingerprint:
        """The fingerprint, for the steps that read it (labelling in every mode but ``index``, settling)."""
        if self.fingerprint is None and self.block is not None and self.block.fingerprint_of is not None:
            self.fingerprint = self.block.fingerprint_of(self.row)
        if self.fingerprint is None:
            raise ValueError(f"record {self.id!r} came from the workers without its fingerprint: the run said it "
                             "would read none")
        return self.fingerprint


@dataclass(slots=True)  # not frozen: see esdedup.store.base.StoredDoc
class Labels:
    """What labelling decided for one record: its write order and cluster, or that it is skipped."""

    seq: int
    root: Root
    skip_for: str | None = None  # ``skip``: the representative of the stored near-duplicate
    replaces: Root | None = None  # a new text under a stored id: the cluster the old text was in
    stored: StoredDoc | None = None  # the document stored under this id with this text already


def doc_id(rec: Record, sha1: str) -> str:
    """The id a record is stored under: its own, else the SHA-1 of its normalised text."""
    return rec.id if rec.id is not None else sha1


def ids_for_texts(texts: Sequence[str], config: FingerprintConfig) -> list[str]:
    """The ids ingest gives records without an id: SHA-1 of the normalised text."""
    return [content_sha1(normalize(x, t2s=config.t2s)) for x in texts]


_DOTTED_DEDUP = DEDUP + "."


#: `_own_filled` of the key tuples met so far (the records of a file mostly share theirs), at most `_KEY_SETS`.
_own_filled_of: dict[tuple[Any, ...], tuple[str, ...]] = {}
_KEY_SETS = 4096


def _own_filled(fields: dict[str, Any]) -> tuple[str, ...]:
    """The record's keys that would land on a field ingest fills: those of `FILLED_FIELDS`, and dotted keys
    under ``dedup`` (``"dedup.cluster_id"``: Elasticsearch expands the dots, and the document would carry a
    second cluster id beside the one ingest writes)."""
    keys = tuple(fields)
    own = _own_filled_of.get(keys)
    if own is None:
        own = tuple(k for k in keys if k in FILLED_FIELDS or k.startswith(_DOTTED_DEDUP))
        if len(_own_filled_of) < _KEY_SETS:
            _own_filled_of[keys] = own
    return own


def field_clash(rec: Record) -> str | None:
    """Why a record cannot keep its own fields of `FILLED_FIELDS` (it has an `INPUT_FIELDS` already), or None."""
    if INPUT_FIELDS not in rec.fields:
        return None
    own = _own_filled(rec.fields)
    if own:
        return (f"the record's own field(s) {', '.join(map(repr, own))} would be kept under {INPUT_FIELDS!r} (other "
                f"fields were chosen as id, title or text), but it has a field {INPUT_FIELDS!r} already")
    return None


def unstorable_reason(rec: Record) -> str | None:
    """Why no store can carry ``rec`` as it is, or None: the rule a reader applies to what it reads from a
    file (`esdedup.readers`), for a record a program made itself (`esdedup.ingest.service.Ingester`), so that
    such a record is refused with a reason, on every store alike, before anything of it is labelled or
    written. A lone surrogate in its text, id, title, any field's name or value (UTF-8 cannot encode it);
    an id longer than Elasticsearch takes; a field named by anything but a string (a reader's fields are named
    by the file's strings); fields that cannot be encoded as JSON (a circular reference, a
    key that is not a string or number, a NaN where the JSON cannot say null); a number in a field beyond
    Elasticsearch's (an integer beyond a signed 64 bits, a float beyond a 32-bit float)."""
    for name, value in (("text", rec.text), ("id", rec.id), ("title", rec.title)):
        if value is not None and has_lone_surrogate(value):
            return f"{name} has an unpaired surrogate"
    if rec.id is not None:
        reason = id_size_reason(rec.id)
        if reason is not None:
            return reason
    named = next((k for k in rec.fields if type(k) is not str), None)
    if named is not None:
        return f"field name {named!r} is not a string (a JSON object's names are strings): name it by a string"
    return _fields_reason(rec.fields) or wide_number_reason(rec.fields)


def _fields_reason(fields: dict[str, Any]) -> str | None:
    """Why ``fields`` cannot be encoded as the stores encode them (`esdedup.schema.json_bytes`: orjson, else
    the standard library, which turns what it does not know into its ``str``), or None."""
    if orjson is not None:
        try:
            orjson.dumps(fields)
            return None
        except TypeError:  # orjson.JSONEncodeError: the standard library is tried, as the stores do
            pass
    try:
        json.dumps(fields, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        # Encoded, so not circular: the field that holds the surrogate can be looked for.
        for key, value in fields.items():
            if has_lone_surrogate(key):
                return f"field name {key!r} has an unpaired surrogate"  # repr() escapes it: valid text
            if has_lone_surrogate(value):
                return f"field {key!r} has an unpaired surrogate"
        return "a field has an unpaired surrogate"
    except Exception as exc:  # noqa: BLE001 - a program's own value may raise anything as it is encoded
        detail = str(exc).encode("utf-8", "backslashreplace").decode("utf-8")
        return f"the fields cannot be stored as JSON ({type(exc).__name__}: {detail})"
    return None


def source_fields(rec: Record) -> dict[str, Any]:
    """The article fields a record is stored with (its own fields of `FILLED_FIELDS` under `INPUT_FIELDS`)."""
    src = dict(rec.fields)
    own = _own_filled(src)
    if own:
        src[INPUT_FIELDS] = {k: src.pop(k) for k in own}
    if rec.id is not None:
        src["id"] = rec.id
    if rec.title is not None:
        src["title"] = rec.title
    src["text"] = rec.text
    return src


def new_doc(d: FingerprintedRecord, seq: int, root: Root, *, duplicate_of: str | None) -> NewDoc:
    """The document to write for ``d``, in cluster ``root``."""
    # By position: a call by keyword costs twice as much, once a record.
    return NewDoc(d.id, d.fingerprint, source_fields(d.record), d.sha1, root[1], duplicate_of, seq, root[0],
                  d.dedup_json, d.block, d.row)


def as_stored(d: FingerprintedRecord, seq: int, root: Root) -> StoredDoc:
    """A record of this run as the run index keeps it."""
    return StoredDoc(*stored_row(d, seq, root))


def stored_row(d: FingerprintedRecord, seq: int, root: Root) -> tuple[Any, ...]:
    """`as_stored`'s fields, in `StoredDoc`'s order, without the object (the run index keeps a row of them, and
    makes the document only when a lookup names it)."""
    fp = d.fp
    return (d.id, fp.simhash, fp.vector, fp.empty, fp.length, fp.chars, root[1], root[1] if root[1] != d.id else None,
            fp.minhash, fp.shingles, seq, root[0], None, d.sha1)


def same_labels(stored: StoredDoc, new: NewDoc) -> bool:
    """The stored document carries the write order and cluster labels ``new`` would write."""
    return (stored.seq, stored.cluster_id, stored.duplicate_of, stored.cluster_seq) == (
        new.seq, new.cluster_id, new.duplicate_of, new.cluster_seq)


def same_text(stored: StoredDoc, d: FingerprintedRecord) -> bool:
    """The stored document under ``d``'s id has ``d``'s text (its SimHash, where the store kept no SHA-1)."""
    if stored.content_sha1 is not None:
        return stored.content_sha1 == d.sha1
    return stored.simhash == d.simhash


def batches(items: Iterable[Record | Rejected], size: int,
            max_chars: int = BATCH_CHARS) -> Iterator[list[Record | Rejected]]:
    """Batches of at most ``size`` records and about ``max_chars`` characters of text, so that a folder
    of novels does not travel to a worker (and sit in memory several times) as one task."""
    batch: list[Record | Rejected] = []
    chars = 0
    for item in items:
        batch.append(item)
        if isinstance(item, Record):
            chars += len(item.text)
        if len(batch) >= size or chars >= max_chars:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch
