"""The measures the near-duplicate rule reads (`esdedup.match.rule`), of one text against several (`measure`)
or of many pairs at once (`measure_pairs`, `SketchColumns`): the SimHash Hamming distance, the cosine of TF
vectors (`row_cosines`, `grid_cosines`) and the MinHash estimates of Jaccard and containment
(`minhash_estimates`, `equal_positions`, `containment_estimate`).

They work on anything shaped like a stored document or a fingerprint (`esdedup.match.rule.Sketch`): no store,
no client, no I/O. Many pairs at once are measured from the texts' sketches as arrays (`SketchColumns`: given
pairs, or a grid of rows by columns), which may lack a part (a search hit without its SimHash or vector): the
all-pairs join and `diversify` both measure so.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.simhash import hamming_many, hamming_rows, simhash_words
from esdedup.match import native_kernels
from esdedup.match.rule import (
    MAX_CONTAINMENT_RATIO,
    MIN_CONTAINMENT_SHINGLES,
    PartialSketch,
    Sketch,
    decide,
    has_signature,
    reads_cosine,
)
from esdedup.match.thresholds import Thresholds

__all__ = ["COSINE_PLACES", "ESTIMATE_PLACES", "Measures", "SketchColumns", "hamming_of", "measure", "measure_pairs",
           "measure_column_pairs", "measured", "measures_row", "minhash_estimates", "row_cosines", "shown",
           "signature_rows", "stacked_vectors"]


@dataclass
class Measures:
    """Every measure of several pairs (arrays of one shape): between one text and each of several (`measure`),
    or of the pairs of `SketchColumns`."""

    hamming: np.ndarray  # int64; float64, NaN where a side lacks its SimHash (`SketchColumns.has_simhash`)
    cosine: np.ndarray  # float32, clipped to [0, 1]; NaN where a side lacks its vector or it was not wanted
    jaccard: np.ndarray  # float64, NaN where not both carry signatures
    containment: np.ndarray  # float64, likewise
    legacy_short: np.ndarray  # bool

    @property
    def ngram(self) -> np.ndarray:
        """Pairs on the n-gram path: both carry signatures, or both are legacy short texts."""
        return ~np.isnan(self.jaccard) | self.legacy_short

    def decide(self, t: Thresholds, same_cluster: np.ndarray | bool = False) -> np.ndarray:
        return decide(t, hamming=self.hamming, cosine=self.cosine, jaccard=self.jaccard,
                      containment=self.containment, legacy_short=self.legacy_short, same_cluster=same_cluster)


def measured(value: Any) -> float | None:
    """One value of `Measures` as a float, None where it was not measured (NaN).

    >>> measured(np.float64("nan")) is None, measured(np.float32(0.5))
    (True, 0.5)
    """
    return None if np.isnan(value) else float(value)


def hamming_of(value: Any) -> int | None:
    """One Hamming distance of `Measures` as an int, None where a side carries no SimHash (NaN)."""
    return None if np.isnan(value) else int(value)


#: Decimal places a shown cosine and a shown MinHash estimate keep (`measures_row`).
COSINE_PLACES, ESTIMATE_PLACES = 6, 4
#: Values `shown` remembers for each number of places before it starts over.
_SHOWN_MAX = 1 << 16
_SHOWN: dict[int, dict[float, float]] = {}


def shown(value: float, places: int) -> float:
    """``round(value, places)``, remembered: the output of an all-pairs search rounds tens of thousands of
    measures that take a few thousand values (a Jaccard estimate is a whole count over the signature's length),
    and `round` converts through decimal digits each time. Only a nonzero float is remembered: ``-0.0`` equals
    ``0.0`` and ``1`` equals ``1.0`` as keys, yet they round to numbers shown differently.

    >>> shown(0.84375, 4), shown(0.84375, 4), shown(-0.0, 4), shown(1, 4)
    (0.8438, 0.8438, -0.0, 1)
    """
    if type(value) is not float or not value or value != value:
        return round(value, places)
    seen = _SHOWN.setdefault(places, {})
    out = seen.get(value)
    if out is None:
        if len(seen) >= _SHOWN_MAX:
            seen.clear()
        out = seen[value] = round(value, places)
    return out


def measures_row(hamming: int | None, cosine: float | None, jaccard: float | None, containment: float | None,
                 decided_by: str) -> dict[str, Any]:
    """A pair's measures as output shows them (`dups`, `similar`): Hamming None where a text has no SimHash
    (`FingerprintConfig.gets_terms`), cosine None where no vector was compared, the n-gram estimates only where both texts carry signatures, and the measure that decided.

    >>> measures_row(3, None, 0.81234, None, "jaccard")
    {'hamming': 3, 'cosine': None, 'jaccard': 0.8123, 'containment': 0.0, 'decided_by': 'jaccard'}
    """
    row: dict[str, Any] = {"hamming": hamming, "cosine": None if cosine is None else shown(cosine, COSINE_PLACES)}
    if jaccard is not None:
        row["jaccard"] = shown(jaccard, ESTIMATE_PLACES)
        row["containment"] = shown(containment or 0.0, ESTIMATE_PLACES)
    if decided_by:
        row["decided_by"] = decided_by
    return row


def measure(a: Sketch, docs: Sequence[Sketch], config: FingerprintConfig) -> Measures:
    """Hamming, cosine, n-gram estimates and the legacy-short mask of ``a`` against each of ``docs``."""
    n = len(docs)
    if not n:
        empty = np.zeros(0)
        return Measures(np.zeros(0, dtype=np.int64), empty.astype(np.float32), empty, empty, np.zeros(0, bool))
    hams = hamming_many(a.simhash, [d.simhash for d in docs], config.bits)
    if not config.gets_terms(a.chars):
        hams = np.full(n, np.nan)
    elif not all(terms := config.gets_terms_many([d.chars for d in docs])):
        hams = np.where(terms, hams, np.nan)
    coss = row_cosines(np.stack([d.vector for d in docs]).astype(np.float32),
                       np.asarray(a.vector, dtype=np.float32)[None, :])
    jac = np.full(n, np.nan)
    cont = np.full(n, np.nan)
    legacy = np.zeros(n, dtype=bool)
    if has_signature(a):
        # Only signatures of ``a``'s length are compared: a pair of two lengths (a document another config or
        # client wrote) has no n-gram estimate, and is decided as a pair that does not carry two signatures.
        width = len(a.minhash)  # type: ignore[arg-type]
        sel = np.flatnonzero(np.fromiter((has_signature(d) and len(d.minhash) == width  # type: ignore[arg-type]
                                          for d in docs), dtype=bool, count=n))
        if len(sel):
            sigs = np.stack([docs[int(i)].minhash for i in sel])  # type: ignore[misc]
            jac[sel], cont[sel] = minhash_estimates(a.minhash, a.shingles, sigs,  # type: ignore[arg-type]
                                                    np.array([docs[int(i)].shingles for i in sel]))
    elif not config.gets_simhash_bands(a.chars):
        legacy = np.array([not has_signature(d) and not config.gets_simhash_bands(d.chars) for d in docs],
                          dtype=bool)
    return Measures(hams, coss, jac, cont, legacy)


def measure_pairs(docs: Sequence[Sketch], left: np.ndarray, right: np.ndarray, config: FingerprintConfig,
                  t: Thresholds | None = None) -> Measures:
    """`measure` of ``docs[left[x]]`` against ``docs[right[x]]`` for every x, in numpy: the same numbers (the
    same products summed the same way), without a call a document (the store-side join measures its
    candidate pairs in bulk with it). ``t``: the thresholds the caller decides by; where the config stores
    no vector (no cosine is shown) and ``t`` reads none of these pairs' (`reads_cosine`), the cosines are
    left NaN and no vector is read."""
    cols = SketchColumns.of(docs, config, read_vectors=t is None or config.stores_vector)
    return measure_column_pairs(cols, left, right, config, t, lambda x: (docs[int(left[x])], docs[int(right[x])]))


def measure_column_pairs(cols: SketchColumns, left: np.ndarray, right: np.ndarray, config: FingerprintConfig,
                         t: Thresholds | None, pair: Callable[[int], tuple[Sketch, Sketch]]) -> Measures:
    """`measure_pairs` of rows of ``cols`` already made (the ingest's run index keeps its documents as
    columns); ``pair(x)``: the two texts of pair x, for the few whose signatures are of another length."""
    cosine = t is None or config.stores_vector or reads_cosine(
        t, all_signed=bool(cols.full[left].all() and cols.full[right].all()))
    m = cols.measure(left, right, cosine=cosine)
    # Signatures of another length (written under an older config): measured one pair at a time.
    for x in np.flatnonzero(cols.signed[left] & cols.signed[right] & ~(cols.full[left] & cols.full[right])):
        a, b = pair(int(x))
        one = measure(a, [b], config)
        m.jaccard[x], m.containment[x] = one.jaccard[0], one.containment[0]
    return m


@dataclass
class SketchColumns:
    """Texts' sketches as arrays, row i for text i, to measure many pairs among them at once: given pairs
    (`measure`; `measure_pairs`, and all-pairs search keeps the columns of every signed document of a store) or
    every pair of two sets of rows (`measure_grid`; `esdedup.search.diversify` measures a page of hits so). Only the
    arrays: the texts themselves need not be kept. This is the one place that turns columns into measures."""

    words: np.ndarray  # (n, words) uint64, `simhash_words`; 0 where ``has_simhash`` says none
    vectors: np.ndarray | Callable[[], np.ndarray]  # (n, dims) float32, or what gives them on first need
    sigs: np.ndarray  # (n, perm) uint32, zeros where not ``full``
    shingles: np.ndarray  # (n,) int64
    signed: np.ndarray  # bool: carries a signature (`has_signature`)
    full: np.ndarray  # bool: ... of the config's length
    banded: np.ndarray  # bool: long enough for SimHash bands, or of unknown length (not a legacy short text)
    has_simhash: np.ndarray | None = None  # bool: carries a SimHash; None: every text does
    has_vector: np.ndarray | None = None  # bool: carries a vector; None: every text does

    @classmethod
    def of(cls, docs: Sequence[PartialSketch], config: FingerprintConfig, *,
           vectors: Callable[[], np.ndarray] | None = None, read_vectors: bool = True) -> SketchColumns:
        """The columns of ``docs``. A text may lack its SimHash, its vector or its length (None): the
        measures that need them are NaN for its pairs, and a text of unknown length is not taken for a
        short one. ``vectors``: what reads the texts' vectors as an (n, dims) float32 array (any values
        where a text has none), called once, when a cosine is first wanted; default: ``d.vector`` stacked,
        here (``read_vectors`` False: when first wanted, for a caller that may want none)."""
        sigs, signed, full = signature_rows(docs, config.minhash_perm)
        has_vector = np.fromiter((d.vector is not None for d in docs), dtype=bool, count=len(docs))
        return cls.from_parts(config, simhash=[d.simhash for d in docs], sigs=sigs, signed=signed, full=full,
                              shingles=[d.shingles for d in docs], chars=[d.chars for d in docs],
                              has_vector=has_vector,
                              vectors=(lambda: stacked_vectors([d.vector for d in docs], has_vector, config))
                              if vectors is None
                              else vectors, read_vectors_now=vectors is None and read_vectors)

    @classmethod
    def from_parts(cls, config: FingerprintConfig, *, simhash: Sequence[int | None], sigs: np.ndarray,
                   signed: np.ndarray, full: np.ndarray, shingles: Sequence[int], chars: Sequence[int | None],
                   has_vector: np.ndarray, vectors: Callable[[], np.ndarray],
                   read_vectors_now: bool = False) -> SketchColumns:
        """The columns from what a caller has already read of each text (`of` reads it from the texts;
        `esdedup.search.diversify` from a page of hits, without an object per hit): the SimHash or None, the
        signatures as an (n, perm) uint32 array (zeros where not ``full``), whether each is signed
        (`has_signature`) and of the config's length, the n-gram counts, the lengths or None, whether each
        carries a vector, and what reads the vectors (``read_vectors_now``: call it here)."""
        n = len(chars)
        # A step a text only where some value is missing (None): most callers miss none.
        some_simhash = None in simhash
        has_simhash = (np.fromiter((h is not None for h in simhash), dtype=bool, count=len(simhash)) if some_simhash
                       else np.ones(len(simhash), dtype=bool))
        if None in chars:
            known = [0 if c is None else c for c in chars]
            unknown = np.fromiter((c is None for c in chars), dtype=bool, count=n)
        else:
            known, unknown = list(chars), np.zeros(n, dtype=bool)  # type: ignore[arg-type]
        # A text of unknown length is taken for one with bands and terms.
        banded = unknown | np.array(config.gets_simhash_bands_many(known), dtype=bool).reshape(n)
        # A text without terms has SimHash 0, which is no SimHash (`FingerprintConfig.gets_terms`).
        has_simhash &= unknown | np.array(config.gets_terms_many(known), dtype=bool).reshape(n)
        words = simhash_words([h or 0 for h in simhash] if some_simhash else simhash, config.bits)  # type: ignore[arg-type]
        return cls(words, vectors() if read_vectors_now else vectors,
                   sigs, np.array(shingles, dtype=np.int64).reshape(-1), signed, full, banded,
                   None if has_simhash.all() else has_simhash, None if has_vector.all() else has_vector)

    def vector_rows(self) -> np.ndarray:
        """The vectors as an (n, dims) array (read now if they were given as a function)."""
        if callable(self.vectors):
            self.vectors = self.vectors()
        return self.vectors

    def measure(self, left: np.ndarray, right: np.ndarray, *, cosine: bool = True) -> Measures:
        """`measure` of row ``left[x]`` against row ``right[x]`` for every x; the n-gram estimates of a pair
        whose signatures differ in length from the config's are left NaN (`measure_pairs` measures those
        one by one, from the texts). ``cosine`` False leaves the cosines NaN and reads no vector (for a
        caller whose thresholds do not read them, `reads_cosine`, and who shows none)."""
        return self._measure(left, right,
                             (lambda: row_cosines(self.vector_rows()[left], self.vector_rows()[right]))
                             if cosine else None,
                             lambda: pair_equal_positions(self.sigs, left, right))

    def measure_grid(self, rows: np.ndarray, cols: np.ndarray, t: Thresholds | None = None) -> Measures:
        """`measure` of every row ``rows[i]`` against every row ``cols[j]``: arrays of shape (len(rows),
        len(cols)). The cosines come from one matrix product (`grid_cosines`); they are left NaN when the
        thresholds ``t`` do not read them (`reads_cosine`), and the vectors are then not read at all; so are
        the containment estimates when ``t`` has no containment threshold."""
        all_full = bool(self.full[rows].all() and self.full[cols].all())
        want_cosine = t is None or reads_cosine(t, all_signed=all_full)
        if self.has_vector is not None and not (self.has_vector[rows].any() and self.has_vector[cols].any()):
            want_cosine = False  # no pair carries two vectors (a page of the default config carries none)
        return self._measure(rows[:, None], cols[None, :],
                             (lambda: grid_cosines(self.vector_rows()[rows], self.vector_rows()[cols]))
                             if want_cosine else None,
                             lambda: _grid_equal_positions(self.sigs, rows, cols),
                             containment=t is None or t.containment is not None)

    def _measure(self, left: np.ndarray, right: np.ndarray, cosines: Callable[[], np.ndarray] | None,
                 equal: Callable[[], np.ndarray], containment: bool = True) -> Measures:
        """The measures of the pairs of rows (``left``, ``right``): index arrays that broadcast to the
        measures' shape. ``cosines``: the cosines of all those pairs, called only if some pair carries two
        vectors; None: leave the cosines NaN. ``equal``: the equal signature positions of all those pairs
        (`equal_positions` of a grid, `pair_equal_positions` of given pairs), called only if some pair
        carries two signatures of the config's length; ``containment`` False leaves the containment
        estimates NaN."""
        shape = np.broadcast_shapes(left.shape, right.shape)
        ham = hamming_rows(self.words[left], self.words[right])
        if self.has_simhash is not None:
            ham = np.where(self.has_simhash[left] & self.has_simhash[right], ham, np.nan)
        cos = np.full(shape, np.nan, dtype=np.float32)
        if cosines is not None:
            if self.has_vector is None:
                cos = cosines()
            else:
                both = self.has_vector[left] & self.has_vector[right]
                if both.any():
                    cos[both] = cosines()[both]
        fast = self.full[left] & self.full[right]
        if fast.any():
            # The share of equal positions, a whole count over the length (the float64 `minhash_estimates`
            # gives the same pair).
            share = equal() / self.sigs.shape[1]
            every = bool(fast.all())
            jac = share if every else np.where(fast, share, np.nan)
            if containment:
                cont = containment_estimate(share, self.shingles[left], self.shingles[right])
                cont = cont if every else np.where(fast, cont, np.nan)
            else:
                cont = np.full(shape, np.nan)
        else:
            jac, cont = np.full(shape, np.nan), np.full(shape, np.nan)
        # Rule 2 of the module docstring: both short, neither signed.
        short = ~self.signed & ~self.banded
        return Measures(ham, cos, jac, cont, short[left] & short[right])


def signature_rows(docs: Sequence[PartialSketch], perm: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The texts' signatures as `SketchColumns` holds them: an (n, perm) uint32 array (zeros where a text has
    none of ``perm`` values), whether each is signed (`has_signature`), and whether it is of that length."""
    n = len(docs)
    signed = np.fromiter((has_signature(d) for d in docs), dtype=bool, count=n)
    full = signed & np.fromiter((d.minhash is not None and len(d.minhash) == perm for d in docs), dtype=bool, count=n)
    sigs = np.zeros((n, perm), dtype=np.uint32)
    if full.any():
        sigs[full] = np.stack([d.minhash for d, f in zip(docs, full, strict=True) if f])  # type: ignore[misc]
    return sigs, signed, full


def stacked_vectors(vectors: Sequence[Any], present: np.ndarray, config: FingerprintConfig) -> np.ndarray:
    """Texts' vectors (None where a text has none: ``present`` False) as an (n, dims) float32 array, zeros
    where a text has none."""
    given = [v for v in vectors if v is not None]
    if len(given) == len(vectors):
        return (np.stack(given).astype(np.float32) if given else np.zeros((0, config.dims), dtype=np.float32))
    out = np.zeros((len(vectors), len(given[0]) if given else config.dims), dtype=np.float32)
    if given:
        out[present] = np.stack(given)
    return out


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of unit float32 vectors, clipped to [0, 1]. Every path computes cosines here,
    the same products summed the same way, so `similar` and `dups` agree to the last bit."""
    return np.clip((a * b).sum(axis=1, dtype=np.float32), 0.0, 1.0)


#: Multiply-adds per matrix-product call (see `grid_cosines`).
_GEMM_SLICE = 200_000


def grid_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosines of every row of ``a`` with every row of ``b`` (unit float32 vectors), clipped to [0, 1] as
    `row_cosines` clips them. A matrix product, for speed: it may sum in another order than `row_cosines`
    and differ from it in the last bits (a verdict could only move for a pair within a few float32 steps of
    the threshold less `COSINE_TOLERANCE`). In slices of rows small enough that a threaded BLAS runs each
    one on the calling thread (OpenBLAS threads products above 2**18 multiply-adds, and waking its threads
    on a busy machine takes longer than the small product itself)."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.float32)
    step = max(1, _GEMM_SLICE // max(1, b.shape[0] * a.shape[1]))
    bt = b.T
    for i in range(0, a.shape[0], step):
        np.matmul(a[i:i + step], bt, out=out[i:i + step])
    return np.clip(out, 0.0, 1.0, out=out)


def minhash_estimates(sig: np.ndarray, n: int, sigs: np.ndarray, ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MinHash estimates for one text against several: (Jaccard, containment).

    Jaccard is the share of equal signature positions. Containment, the share of the smaller n-gram set
    found in the other, follows from it and the set sizes: ``|A & B| = J / (1 + J) * (|A| + |B|)``; it is
    0 where the smaller set is too small or the sizes too far apart for the estimate to mean anything
    (`MIN_CONTAINMENT_SHINGLES`, `MAX_CONTAINMENT_RATIO`)."""
    sigs = np.asarray(sigs).reshape(len(ns), -1)
    jac = (sigs == np.asarray(sig)[None, :]).mean(axis=1)
    return jac, containment_estimate(jac, np.full(len(ns), n), ns)


def _grid_equal_positions(sigs: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """`equal_positions` of the signatures of ``rows`` against those of ``cols``; the same array twice when
    the two are the same rows (a page's first block of hits against itself)."""
    a = sigs[rows]
    return equal_positions(a, a if np.array_equal(rows, cols) else sigs[cols])


#: Bytes of the temporary (rows, columns, positions) comparison `equal_positions` makes at a time in numpy.
_EQUAL_SLICE = 1 << 22


def equal_positions(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many positions each row of ``a`` shares with each row of ``b`` (signatures of one length, any
    unsigned integers): a (len(a), len(b)) integer array, what `minhash_estimates` counts for one row. By the
    native core when it is in use (`esdedup.fingerprint.native_kernels.equal_positions`), else in numpy; both count
    exactly, so the two give the same numbers. ``b`` the very array ``a``: the rows against themselves (the
    native core then counts each pair once)."""
    same = b is a
    a = np.ascontiguousarray(a, dtype=np.uint32)
    b = a if same else np.ascontiguousarray(b, dtype=np.uint32)
    n, m, perm = a.shape[0], b.shape[0], a.shape[1]
    if not n or not m or not perm:
        return np.zeros((n, m), dtype=np.int64)
    counted = native_kernels.equal_positions(a, b)
    if counted is not None:
        return counted
    out = np.empty((n, m), dtype=np.int64)
    step = max(1, _EQUAL_SLICE // (m * perm))
    lanes = perm % 8 == 0 and perm <= 255
    for i in range(0, n, step):
        eq = a[i:i + step, None, :] == b[None, :, :]
        if lanes:
            # Summing the bools eight at a time as the bytes of a uint64 (no byte exceeds perm / 8), then
            # adding the eight bytes with one multiply, is several times faster than bool.sum.
            v = eq.view(np.uint64).sum(axis=2, dtype=np.uint64)
            out[i:i + step] = (v * np.uint64(0x0101010101010101)) >> np.uint64(56)
        else:
            out[i:i + step] = eq.sum(axis=2)
    return out


#: Pairs whose equal positions `pair_equal_positions` counts at a time in numpy (two gathered signature arrays).
_PAIR_SLICE = 16384


def pair_equal_positions(sigs: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """How many positions row ``left[x]`` of ``sigs`` (a (rows, perm) uint32 array, `SketchColumns.sigs`)
    shares with row ``right[x]``, for every x: what `minhash_estimates` counts for one pair. By the native
    core when it is in use (`esdedup.fingerprint.native_kernels.pair_equal_positions`), else in numpy; both count
    exactly."""
    left, right = np.asarray(left, dtype=np.int64).reshape(-1), np.asarray(right, dtype=np.int64).reshape(-1)
    if not len(left) or not sigs.shape[1]:
        return np.zeros(len(left), dtype=np.int64)
    counted = native_kernels.pair_equal_positions(sigs, left, right)
    if counted is not None:
        return counted
    out = np.empty(len(left), dtype=np.int64)
    for i in range(0, len(left), _PAIR_SLICE):
        a, b = left[i:i + _PAIR_SLICE], right[i:i + _PAIR_SLICE]
        out[i:i + _PAIR_SLICE] = (sigs[a] == sigs[b]).sum(axis=1)
    return out


def containment_estimate(jac: np.ndarray, n_a: np.ndarray, n_b: np.ndarray) -> np.ndarray:
    """Estimated containment from estimated Jaccard and the two n-gram set sizes (see `minhash_estimates`)."""
    n_a, n_b = np.asarray(n_a, dtype=np.float64), np.asarray(n_b, dtype=np.float64)
    lo, hi = np.minimum(n_a, n_b), np.maximum(n_a, n_b)
    ok = (lo >= MIN_CONTAINMENT_SHINGLES) & (hi <= MAX_CONTAINMENT_RATIO * lo)
    inter = jac / (1.0 + jac) * (n_a + n_b)
    return np.where(ok, np.minimum(1.0, inter / np.maximum(lo, 1.0)), 0.0)
