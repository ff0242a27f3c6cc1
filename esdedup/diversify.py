"""Diversify a page of search hits: find near-duplicates among them and drop, demote or group them.

`diversify` is pure: it takes the hit dicts of an Elasticsearch response (``resp["hits"]["hits"]``) and
returns new hit dicts; it makes no requests. Each hit's fingerprint is read from what the search returned:

* ``_source["dedup"]["simhash"]`` / ``["vector"]`` / ``["empty"]`` (the stored layout, `esdedup.schema`),
  or the same names as dotted keys of ``_source``;
* ``fields["dedup.simhash"]`` / ``fields["dedup.vector"]`` / ``fields["dedup.empty"]`` (the ``fields`` or
  ``docvalue_fields`` style, where each value is a list).

A vector that is not a list of numbers (e.g. a base64 string) counts as absent. When a hit carries
nothing the active tests can use (no SimHash for ``hamming_k``, no vector for ``cosine``), its text (``_source[text_field]``, else
``fields[text_field]``) is fingerprinted with the given `Fingerprinter` (or a default one, created only
when some hit needs it). That fingerprint must come from the index's config to be comparable; pass the
index's fingerprinter. A hit with neither a fingerprint nor text is returned untouched, in place: it is
never dropped, never a duplicate and never gets a ``_duplicates`` key.

The near-duplicate rule (``hamming_k`` and ``cosine`` are the two tests; at least one must be given):

* only ``hamming_k``: a pair is a duplicate when their SimHashes differ in at most ``hamming_k`` bits;
* only ``cosine``: when the cosine of their TF vectors is at least ``cosine``;
* both: when *both* hold.

Cosines are compared in float32 with a tolerance of 1e-6, so ``cosine=1.0`` still matches identical
stored vectors.

A test decides a pair only when both hits carry what it needs. With both tests, a hit without a vector
is judged by Hamming alone (and one without a SimHash by cosine alone). With ``cosine`` only, a hit
without a vector (and without text to fingerprint) is compared with nothing, so it stays, on its own.
Empty texts (``dedup.empty`` true; when that flag was not returned, a SimHash of 0, which is what an
empty text gets) are never duplicates of anything, nor is anything a duplicate of them.

Grouping is greedy in rank order: the first hit of a group is its representative, and each later hit
is compared with the representatives kept so far; it joins the first (highest ranked) one it matches,
else it becomes a representative itself. The comparisons run in numpy: a block of hits (a page of up to
1,024 hits is one block) is compared at once with the representatives of earlier blocks and
with itself; a short pass in rank order over the matching pairs then keeps only the matches with
representatives. With both tests only the vectors of pairs within ``hamming_k`` are ever converted
from their JSON float lists (by far the dearest part of a hit to read).

>>> hits = [{"_id": "a", "_source": {"dedup": {"simhash": "00000000000000ff"}}},
...         {"_id": "b", "_source": {"dedup": {"simhash": "00000000000000fe"}}},
...         {"_id": "c", "_source": {"dedup": {"simhash": "ffff0000000000ff"}}}]
>>> [h["_id"] for h in diversify(hits)]
['a', 'c']
>>> [(h["_id"], h.get("_duplicate_of")) for h in diversify(hits, mode="demote")]
[('a', None), ('c', None), ('b', 'a')]
>>> [(h["_id"], [d["_id"] for d in h["_duplicates"]]) for h in diversify(hits, mode="group")]
[('a', ['b']), ('c', [])]
"""
from __future__ import annotations

import numbers
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .config import FingerprintConfig
from .fingerprint import Fingerprinter

__all__ = ["MODES", "diversify"]

#: The allowed values of ``mode``.
MODES = ("drop", "demote", "group")

#: Elements of one block of the pair matrices (bounds the temporary arrays to a few MB for long pages).
_BLOCK_ELEMENTS = 1 << 20
_MASK64 = (1 << 64) - 1
#: Up to this many pairs the cosines are dotted pair by pair, beyond it by one matrix product.
_PAIRWISE_MAX = 1024
#: Multiply-adds per matrix-product call (see `_gram`).
_GEMM_SLICE = 200_000

_default_lock = threading.Lock()
_default_fingerprinters: dict[int, Fingerprinter] = {}


def diversify(hits: Sequence[Mapping], *, mode: str = "drop", hamming_k: int | None = 3,
              cosine: float | None = None, fingerprinter: Fingerprinter | None = None,
              text_field: str = "text", bits: int = 64) -> list[dict]:
    """Drop, demote or group the near-duplicates among search hits (see the module docstring).

    A pair is a near-duplicate when every given test that both hits can answer holds (and at least one
    can): Hamming distance <= ``hamming_k`` (both need a SimHash), cosine >= ``cosine`` (both need a
    vector). So with both tests a hit without a vector is judged by Hamming alone. Each hit joins the
    first earlier representative it matches, or becomes one.

    Args:
        hits: the hit dicts of a search response, in rank order. They are never modified.
        mode: ``"drop"``: the representatives (and untouched hits), in their original order.
            ``"demote"``: the same, followed by the duplicates in their original order, each a copy with
            ``"_duplicate_of"`` set to its representative's ``_id``.
            ``"group"``: the representatives only, each a copy with ``"_duplicates"``: the list of its
            duplicates (copies, in order), possibly empty; hits that were not compared (no
            fingerprint the tests can use and no text) are returned as plain copies, without the key.
        hamming_k: the largest SimHash Hamming distance of a near-duplicate pair; None to not test it.
        cosine: the smallest TF-vector cosine of a near-duplicate pair; None to not test it.
        fingerprinter: fingerprints hits that carry no stored fingerprint (from ``text_field``); it must
            use the index's config. Default: a `Fingerprinter` with the default config, created on first
            need and shared by later calls.
        text_field: the ``_source`` field holding a hit's text.
        bits: the SimHash width of the stored fingerprints, 64 or 128.

    Returns:
        New dicts (shallow copies of the hits, plus the keys above).

    Raises:
        ValueError: unknown mode, both tests None, a threshold out of range, a fingerprinter of another
            width than ``bits``, a SimHash that is not hex or is wider than ``bits``, vectors of
            different lengths.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    if bits not in (64, 128):
        raise ValueError(f"bits must be 64 or 128, got {bits!r}")
    if hamming_k is None and cosine is None:
        raise ValueError("give hamming_k, cosine or both: with neither, nothing is a near-duplicate")
    if hamming_k is not None and (isinstance(hamming_k, bool) or not isinstance(hamming_k, numbers.Integral)
                                  or not 0 <= hamming_k <= bits):
        raise ValueError(f"hamming_k must be an integer between 0 and {bits}, or None, got {hamming_k!r}")
    if cosine is not None and (isinstance(cosine, bool) or not isinstance(cosine, numbers.Real)
                               or not 0.0 < cosine <= 1.0):  # also rejects NaN
        raise ValueError(f"cosine must be a number in (0, 1], or None, got {cosine!r}")
    if fingerprinter is not None and fingerprinter.config.bits != bits:
        raise ValueError(f"the fingerprinter makes {fingerprinter.config.bits}-bit SimHashes but bits={bits}")

    use_ham, use_cos = hamming_k is not None, cosine is not None
    n = len(hits)
    # Per participant (a hit that takes part in the comparisons): hit index, SimHash or None, vector.
    part: list[int] = []
    simhashes: list[int | None] = []
    vectors: list[Any] = []
    fingerprinted: set[int] = set()  # hits with a fingerprint (participants and empty texts)
    todo: list[tuple[int, str]] = []  # (hit index, text) still to fingerprint

    for i, hit in enumerate(hits):
        sh_raw, vec, empty, text = _read(hit, text_field)
        sh = _parse_simhash(sh_raw, bits, hit) if sh_raw is not None else None
        if empty is None and sh is not None:
            empty = sh == 0  # an empty text's SimHash; the flag itself was not returned
        if empty:
            fingerprinted.add(i)
        elif (use_ham and sh is not None) or (use_cos and vec is not None):
            fingerprinted.add(i)
            part.append(i)
            simhashes.append(sh)
            vectors.append(vec)
        elif isinstance(text, str):
            if text.strip():
                todo.append((i, text))
            else:
                fingerprinted.add(i)  # a blank text is an empty text
    if todo:
        fps = _fingerprint([t for _, t in todo], fingerprinter, bits)
        for (i, _), fp in zip(todo, fps, strict=True):
            fingerprinted.add(i)
            if not fp.empty:
                part.append(i)
                simhashes.append(fp.simhash)
                vectors.append(fp.vector)
        if len(part) > 1:  # back into rank order: the fingerprinted hits were appended at the end
            order = sorted(range(len(part)), key=part.__getitem__)
            part = [part[j] for j in order]
            simhashes = [simhashes[j] for j in order]
            vectors = [vectors[j] for j in order]

    rep_of = _greedy(simhashes, vectors, hamming_k, cosine, bits)  # participant -> its rep's position

    dup_of: dict[int, int] = {}  # hit index -> representative's hit index
    for p, r in enumerate(rep_of):
        if r >= 0:
            dup_of[part[p]] = part[r]

    if mode == "drop":
        return [dict(h) for i, h in enumerate(hits) if i not in dup_of]
    if mode == "demote":
        out = [dict(h) for i, h in enumerate(hits) if i not in dup_of]
        for i in sorted(dup_of):
            d = dict(hits[i])
            d["_duplicate_of"] = hits[dup_of[i]].get("_id")
            out.append(d)
        return out
    members: dict[int, list[dict]] = {}
    for i in sorted(dup_of):
        members.setdefault(dup_of[i], []).append(dict(hits[i]))
    out = []
    for i in range(n):
        if i in dup_of:
            continue
        d = dict(hits[i])
        if i in fingerprinted:
            d["_duplicates"] = members.get(i, [])
        out.append(d)
    return out


# -- reading a hit ---------------------------------------------------------------------------------
def _first(value: Any) -> Any:
    """A ``fields`` value is a list; take its first element (None for an empty list)."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _read(hit: Mapping, text_field: str) -> tuple[Any, Any, bool | None, Any]:
    """(raw simhash, raw vector, empty flag, text) of a hit; None for what it does not carry."""
    # `type(x) is dict` first: JSON gives dicts and lists, and the ABC checks cost more than the rest.
    sh = vec = empty = text = None
    src = hit.get("_source")
    if src is not None and (type(src) is dict or isinstance(src, Mapping)):
        d = src.get("dedup")
        if d is not None and (type(d) is dict or isinstance(d, Mapping)):
            sh, vec, empty = d.get("simhash"), d.get("vector"), d.get("empty")
        else:
            sh, vec, empty = src.get("dedup.simhash"), src.get("dedup.vector"), src.get("dedup.empty")
        text = src.get(text_field)
    fields = hit.get("fields")
    if fields is not None and (type(fields) is dict or isinstance(fields, Mapping)):
        if sh is None:
            sh = _first(fields.get("dedup.simhash"))
        if vec is None:
            vec = fields.get("dedup.vector")
            if type(vec) is list and vec and isinstance(vec[0], (list, tuple)):
                vec = vec[0]
        if empty is None:
            empty = _first(fields.get("dedup.empty"))
        if text is None:
            text = _first(fields.get(text_field))
    if vec is not None and (not (type(vec) is list or isinstance(vec, (tuple, np.ndarray))) or len(vec) == 0):
        vec = None  # empty, or a form this reader does not decode (e.g. a base64 string)
    if empty is not None and empty is not True and empty is not False:
        empty = isinstance(empty, str) and empty.lower() == "true"
    return sh, vec, empty, text


def _parse_simhash(raw: Any, bits: int, hit: Mapping) -> int:
    if type(raw) is int:
        value = raw
    else:
        try:
            value = int(raw, 16)
        except (TypeError, ValueError):
            raise ValueError(f"hit {hit.get('_id')!r}: dedup.simhash {raw!r} is not a hex SimHash") from None
    if value < 0 or value >> bits:
        raise ValueError(f"hit {hit.get('_id')!r}: dedup.simhash {raw!r} is wider than {bits} bits"
                         + (" (pass bits=128)" if bits == 64 else ""))
    return value


def _fingerprint(texts: list[str], fingerprinter: Fingerprinter | None, bits: int) -> list:
    if fingerprinter is not None:
        return fingerprinter.fingerprint_many(texts)
    with _default_lock:  # a Fingerprinter's term table is not thread-safe; the default one is shared
        fp = _default_fingerprinters.get(bits)
        if fp is None:
            fp = _default_fingerprinters[bits] = Fingerprinter(FingerprintConfig(bits=bits))
        return fp.fingerprint_many(texts)


# -- the comparisons -------------------------------------------------------------------------------
def _popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    # numpy < 2.0 has no bitwise_count: count the bits of each byte
    by = x.view(np.uint8).reshape(*x.shape, 8)  # pragma: no cover
    return np.unpackbits(by, axis=-1).sum(axis=-1, dtype=np.uint8)  # pragma: no cover


class _Vectors:
    """Unit vectors of the participants, converted from their JSON lists only when first needed."""

    def __init__(self, raw: list[Any]) -> None:
        self.raw = raw
        self.has = np.fromiter((v is not None for v in raw), dtype=bool, count=len(raw))
        self.unit: np.ndarray | None = None
        self.done = np.zeros(len(raw), dtype=bool)

    def rows(self, idx: np.ndarray) -> np.ndarray:
        todo = idx[~self.done[idx]]
        if todo.size:
            mark = np.zeros(len(self.raw), dtype=bool)
            mark[todo] = True
            todo = np.flatnonzero(mark)  # sorted, each row once
            try:
                m = np.array([self.raw[i] for i in todo.tolist()], dtype=np.float32)
            except ValueError:
                m = None
            if self.unit is None and m is not None and m.ndim == 2:
                self.unit = np.zeros((len(self.raw), m.shape[1]), dtype=np.float32)
            if m is None or m.ndim != 2 or self.unit is None or m.shape[1] != self.unit.shape[1]:
                lengths = sorted({len(self.raw[i]) for i in np.flatnonzero(self.has).tolist()})
                raise ValueError(f"dedup.vector: the hits' vectors are not numeric lists of one length "
                                 f"(lengths {lengths}); fingerprints of different configs are not "
                                 "comparable (pass the index's fingerprinter)")
            norms = np.linalg.norm(m, axis=1, keepdims=True)
            self.unit[todo] = np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
            self.done[todo] = True
        assert self.unit is not None
        return self.unit[idx]


def _greedy(simhashes: list[int | None], vectors: list[Any], hamming_k: int | None, cosine: float | None,
            bits: int) -> list[int]:
    """For each participant in rank order, the position of the representative it duplicates, or -1."""
    m = len(simhashes)
    rep_of = [-1] * m
    if m < 2:
        return rep_of
    use_ham, use_cos = hamming_k is not None, cosine is not None
    if use_ham:
        hs = np.fromiter((s is not None for s in simhashes), dtype=bool, count=m)
        all_hs = bool(hs.all())
        vals = [s or 0 for s in simhashes] if not all_hs else simhashes
        lo = np.fromiter((s & _MASK64 for s in vals), dtype=np.uint64, count=m)  # type: ignore[operator]
        hi = np.fromiter((s >> 64 for s in vals), dtype=np.uint64, count=m) if bits > 64 else None  # type: ignore[operator]
    vec = _Vectors(vectors) if use_cos else None
    if use_cos and not vec.has.any():  # type: ignore[union-attr]
        if not use_ham:
            return rep_of  # cosine only and no vectors: nothing can be compared
        use_cos, vec = False, None  # no vectors at all: Hamming alone decides every pair

    reps = np.zeros(0, dtype=np.int64)  # representatives of the blocks done so far (positions)
    block = max(64, _BLOCK_ELEMENTS // m)
    for a in range(0, m, block):
        b = min(m, a + block)
        rows = np.arange(a, b)
        cols = np.concatenate((reps, rows))  # earlier representatives, then the block itself
        # Earlier representatives always count; within the block only columns before the row do.
        tri = np.ones((b - a, len(cols)), dtype=bool)
        tri[:, len(reps):] = np.tri(b - a, k=-1, dtype=bool)
        if use_ham:
            dist = _popcount(lo[rows, None] ^ lo[None, cols])
            if hi is not None:
                dist = dist + _popcount(hi[rows, None] ^ hi[None, cols])
            ham_ok = dist <= hamming_k
            ham_app = None if all_hs else hs[rows, None] & hs[None, cols]
        if use_cos:
            cos_app = vec.has[rows, None] & vec.has[None, cols]  # type: ignore[union-attr]
            if use_ham:
                # Hamming decides the pairs cosine cannot; cosine still has to agree where it can.
                if ham_app is None:
                    dup = tri & ham_ok & ~cos_app
                    need = tri & ham_ok & cos_app
                else:
                    dup = tri & ham_app & ham_ok & ~cos_app
                    need = tri & cos_app & (ham_ok | ~ham_app)
            else:
                dup = np.zeros_like(tri)
                need = tri & cos_app
            r, c = np.nonzero(need)
            if r.size:
                if r.size <= _PAIRWISE_MAX:  # the usual case with both tests: a few pairs, dot them
                    ri, ci = rows[r], cols[c]
                    sims = np.einsum("ij,ij->i", vec.rows(ri), vec.rows(ci))  # type: ignore[union-attr]
                    ok = sims >= _cos_floor(cosine)
                    dup[r[ok], c[ok]] = True
                else:  # many pairs (cosine alone): one matrix product over the rows and columns involved
                    rmask, cmask = need.any(axis=1), need.any(axis=0)
                    gram = _gram(vec.rows(rows[rmask]), vec.rows(cols[cmask]))  # type: ignore[union-attr]
                    sub = np.ix_(rmask, cmask)
                    dup[sub] |= need[sub] & (gram >= _cos_floor(cosine))
        else:
            dup = tri & ham_ok if ham_app is None else tri & ham_app & ham_ok

        nrep = len(reps)
        is_dup = [False] * (b - a)
        if nrep:
            prev = dup[:, :nrep]
            hit_prev = prev.any(axis=1)
            first = prev.argmax(axis=1)
            for r_ in np.flatnonzero(hit_prev).tolist():
                is_dup[r_] = True
                rep_of[a + r_] = int(reps[first[r_]])
        # Within the block, in rank order: a row joins the first earlier row that is a representative.
        # Pairs come sorted by row, and a row's own status is settled before any later row asks about it.
        pr, pc = np.nonzero(dup[:, nrep:])
        for r_, c_ in zip(pr.tolist(), pc.tolist(), strict=True):
            if not is_dup[r_] and not is_dup[c_]:
                is_dup[r_] = True
                rep_of[a + r_] = a + c_
        new = [a + r_ for r_ in range(b - a) if not is_dup[r_]]
        reps = np.concatenate((reps, np.array(new, dtype=np.int64)))
    return rep_of


def _gram(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T``, in slices of rows small enough that a threaded BLAS runs each one on the calling
    thread (OpenBLAS threads products above 2**18 multiply-adds; waking its threads on a busy machine
    costs milliseconds, far more than a 100 x 100 product)."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.float32)
    step = max(1, _GEMM_SLICE // max(1, b.shape[0] * a.shape[1]))
    bt = b.T
    for i in range(0, a.shape[0], step):
        np.matmul(a[i:i + step], bt, out=out[i:i + step])
    return out


def _cos_floor(cosine: float | None) -> float:
    """The threshold as compared with float32 cosines: a hair lower, so that a cosine of exactly the
    threshold (e.g. 1.0 for identical vectors) is not lost to rounding."""
    assert cosine is not None
    return float(cosine) - 1e-6
