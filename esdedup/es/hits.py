"""The one reader of search hits: which ``dedup`` fields a search asks for, and how the parts of a fingerprint
are read from a hit.

A hit carries a part under ``_source["dedup"]`` (or as a dotted ``_source`` key), or under
``fields["dedup.<name>"]`` (``fields`` / ``docvalue_fields``, where each value is a list). The store reads
its own hits here (doc values, with the vector and signature from ``_source``), and `esdedup.search.diversify`
reads the hits of any search the same way.
"""
from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from esdedup.errors import InputError
from esdedup.fingerprint.minhash import SIGNATURE_DTYPE
from esdedup.fingerprint.values import zero_vector
from esdedup.schema import (
    CHARS,
    CLUSTER_ID,
    CLUSTER_SEQ,
    CONTENT_SHA1,
    DEDUP,
    DUPLICATE_OF,
    EMPTY,
    MINHASH,
    SEQ,
    SHINGLES,
    SIMHASH,
    TOKENS,
    VECTOR,
)
from esdedup.util import native

#: Doc-value fields every lookup returns (cheap, columnar).
FINGERPRINT_FIELDS = [SIMHASH, TOKENS, CHARS, EMPTY, CLUSTER_ID, DUPLICATE_OF, SHINGLES, SEQ, CLUSTER_SEQ, CONTENT_SHA1]
#: ``_source`` paths every lookup returns: the vector and the signature have no doc values to read.
VECTOR_SOURCE = [VECTOR, MINHASH]
#: Dedup fields the near-duplicate rule reads of any search's hits through doc values (small: keywords,
#: numbers, booleans).
SKETCH_DOCVALUE_FIELDS = (SIMHASH, EMPTY, CHARS, SHINGLES, CLUSTER_ID, CONTENT_SHA1)
#: Dedup fields the rule needs from ``_source`` (the signature is a binary field without doc values).
SKETCH_SOURCE_FIELDS = (MINHASH,)

#: The parts (names inside ``dedup``) the near-duplicate rule reads of a hit.
SKETCH_PARTS = ("simhash", "vector", "empty", "minhash", "shingles", "chars", "cluster_id", "content_sha1")
#: The parts of a stored document the store reads of its own hits.
STORED_PARTS = SKETCH_PARTS + ("tokens", "duplicate_of", "seq", "cluster_seq")


def first(value: Any) -> Any:
    """A ``fields`` value is a list: its first element (None for an empty list)."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def hit_parts(hit: Mapping[str, Any], names: Sequence[str] = SKETCH_PARTS) -> dict[str, Any]:
    """The raw values of the ``dedup`` parts ``names`` of a hit (None where it carries none), from ``_source``
    first, then ``fields``."""
    out: dict[str, Any] = dict.fromkeys(names)
    src = hit.get("_source")
    if isinstance(src, Mapping):
        d = src.get(DEDUP)
        if isinstance(d, Mapping):
            out = {k: d.get(k) for k in names}
        else:
            out = {k: src.get(f"{DEDUP}.{k}") for k in names}
    fields = hit.get("fields")
    if isinstance(fields, Mapping):
        for k in names:
            if out[k] is None:
                value = fields.get(f"{DEDUP}.{k}")
                if k == "vector":
                    if type(value) is list and value and isinstance(value[0], (list, tuple)):
                        value = value[0]  # a dense_vector can come back wrapped in one more list
                    out[k] = value
                else:
                    out[k] = first(value)
    return out


def hit_version(hit: Mapping[str, Any]) -> tuple[int, int] | None:
    """A hit's ``(_seq_no, _primary_term)``, when the search asked for them (``seq_no_primary_term``)."""
    return (int(hit["_seq_no"]), int(hit["_primary_term"])) if "_seq_no" in hit else None


def parse_simhash(raw: Any, bits: int, hit: Mapping[str, Any]) -> int:
    """A hit's SimHash from its hex (or integer) value; InputError when it is not hex or wider than ``bits``."""
    if type(raw) is int:
        value = raw
    else:
        try:
            value = int(raw, 16)
        except (TypeError, ValueError):
            raise InputError(f"hit {hit.get('_id')!r}: {SIMHASH} {raw!r} is not a hex SimHash") from None
    if value < 0 or value >> bits:
        raise InputError(f"hit {hit.get('_id')!r}: {SIMHASH} {raw!r} is wider than {bits} bits"
                         + (" (is the index's config a 128-bit one?)" if bits == 64 else ""))
    return value


def parse_vector(raw: Any, dims: int) -> np.ndarray:
    """A hit's TF vector as float32; one shared read-only zero vector (`zero_vector`) for a document stored
    without one (most short texts), as the embedded store reads them: a scan would otherwise make a kilobyte of
    zeros a document."""
    return np.asarray(raw, dtype=np.float32) if raw is not None else zero_vector(dims)


def parse_minhash(raw: Any, hit: Mapping[str, Any], perm: int | None = None) -> np.ndarray | None:
    """A hit's MinHash signature (uint32 values) from its base64, None when it carries none; InputError when
    it is not base64 or (given ``perm``) does not hold ``perm`` values."""
    if raw is None:
        return None
    try:
        sig = np.frombuffer(base64.b64decode(raw, validate=True), dtype=SIGNATURE_DTYPE)
    except (TypeError, ValueError, binascii.Error):
        raise InputError(f"hit {hit.get('_id')!r}: {MINHASH} is not a base64 MinHash signature") from None
    if perm is not None and len(sig) != perm:
        raise InputError(f"hit {hit.get('_id')!r}: {MINHASH} has {len(sig)} values, the index's config "
                         f"{perm}: fingerprints of different configs are not comparable")
    return sig.astype(np.uint32)


def b64_form(perm: int) -> tuple[int, str]:
    """The length and the padding of the base64 of a ``perm``-value signature (`esdedup.schema.encode_minhash`)."""
    nbytes = perm * np.dtype(SIGNATURE_DTYPE).itemsize
    return 4 * -(-nbytes // 3), "=" * (-nbytes % 3)


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#: A `bytes.translate` table: each base64 digit to its six bits, every other byte (padding too) to 255.
_B64_SIXES = bytes(_B64_ALPHABET.index(c) if c in _B64_ALPHABET else 255 for c in range(256))


def decode_signatures(encoded: list[str], perm: int) -> np.ndarray | None:
    """Signatures from their base64 strings, each of the length and padding `b64_form` gives: what
    `parse_minhash` decodes, as a (len(encoded), perm) uint32 array, in one step over the
    whole page instead of a call a hit (in the native core when it is in use, else in numpy). None when a
    string holds a character outside the base64 alphabet before its padding (the general reader then says
    which hit)."""
    width, padding = b64_form(perm)
    k = len(encoded)
    if not k:
        return np.zeros((0, perm), dtype=np.uint32)
    try:
        joined = "".join(encoded).encode("ascii")
    except UnicodeEncodeError:
        return None
    nbytes = perm * np.dtype(SIGNATURE_DTYPE).itemsize
    raw = decode_base64(joined, width, nbytes)
    if raw is not False:
        return None if raw is None else np.frombuffer(raw, dtype=SIGNATURE_DTYPE).reshape(k, perm).astype(np.uint32)
    sixes = joined.translate(_B64_SIXES)
    # Each string ends in its padding (checked as it was read), which maps to 255: any other 255 is a
    # character outside the alphabet.
    if sixes.count(255) != k * len(padding):
        return None
    q = np.frombuffer(sixes, dtype=np.uint8).reshape(k, width // 4, 4)
    out = np.empty((k, width // 4, 3), dtype=np.uint8)
    # Four digits make three bytes; where a digit is padding, the bytes it reaches are cut off below.
    out[..., 0] = (q[..., 0] << 2) | (q[..., 1] >> 4)
    out[..., 1] = (q[..., 1] << 4) | (q[..., 2] >> 2)
    out[..., 2] = (q[..., 2] << 6) | q[..., 3]
    return out.reshape(k, -1)[:, :nbytes].copy().view(SIGNATURE_DTYPE).astype(np.uint32)


def decode_base64(joined: bytes, width: int, nbytes: int) -> bytes | None | Literal[False]:
    """The bytes of base64 strings of ``width`` characters laid end to end, each holding ``nbytes`` bytes and
    ending in its padding, decoded by the extension: what `base64.b64decode` gives each of them; None when a
    character before the padding is not a base64 digit; False when the native core is not in use (then
    `decode_signatures` decodes in numpy)."""
    kernel = native.function("decode_base64")
    return False if kernel is None else kernel(joined, width, nbytes)


class PlainHits(NamedTuple):
    """What the native core read of a page's hits (`signature_hits`): whether it read each hit, and a row for
    each hit read: its id, SimHash, chars, n-grams, `empty`, whether it has a signature, the signature
    (its uint16 values as stored; zeros for none), whether it has a vector; and the vectors there are, in
    their order."""

    read: np.ndarray
    ids: list[str]
    simhash: np.ndarray
    chars: np.ndarray
    shingles: np.ndarray
    empty: np.ndarray
    signed: np.ndarray
    sigs: np.ndarray
    has_vector: np.ndarray
    vectors: np.ndarray


def plain_signature_hits(hits: list[dict[str, Any]], perm: int, bits: int, dims: int) -> PlainHits | None:
    """What all-pairs search reads of a scan page's hits of the plain form (`PlainHits`), read by the native
    core's ``signature_hits`` without a Python step a hit, as `hit_parts` and the ``parse_*`` functions read
    them; the rest are left to those. None when the core is not in use or does not read pages of a config
    of ``perm`` signature values and ``bits``-bit SimHashes."""
    kernel = native.function("signature_hits")
    if kernel is None or np.dtype(SIGNATURE_DTYPE).itemsize != 2:
        return None
    width, _ = b64_form(perm)
    out = kernel(hits, perm, width, 2 * perm, bits, dims)
    if out is None:
        return None
    ids, (read, simhash, chars, shingles, empty, signed, sigs, has_vector, vectors) = out
    flags = functools.partial(np.frombuffer, dtype=np.bool_)
    return PlainHits(flags(read), ids, np.frombuffer(simhash, dtype="<u8"), np.frombuffer(chars, dtype="<i8"),
                     np.frombuffer(shingles, dtype="<i8"), flags(empty), flags(signed),
                     np.frombuffer(sigs, dtype="<u2").reshape(-1, perm), flags(has_vector),
                     np.frombuffer(vectors, dtype="<f4").reshape(-1, dims))
