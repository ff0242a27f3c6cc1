"""The near-duplicate rule: the one place that decides whether two texts are near-duplicates.

Every path that asks (ingest labels, `similar`, `dups`, `eval`, `diversify`, `search_diversified`) measures
the pair and calls `decide` with the same `Thresholds`, so they give the same answer for the same pair.

The rule:

0. Two texts with the same content SHA-1 (the SHA-1 of the normalised text, `esdedup.schema.content_sha1`)
   are exact copies, and an exact copy is a duplicate. For texts with words the measures below say so too
   (identical sketches pass every test in force). A text without words once normalised (``empty``: blank,
   only punctuation or emoji; or only stopwords, for a text that is segmented into terms at all:
   `FingerprintConfig.gets_terms`) has nothing to measure and no band keys: it is a duplicate of its
   exact copies and of nothing else (`exact_copies`). Callers find those by content SHA-1
   (`esdedup.store.base.Store.copies`), not by keys, and report them decided by `EXACT_COPY`.

For two texts with words:

1. Both carry a MinHash signature (every text under the default ``auto`` strategy): their character n-grams
   decide. A pair is a near-duplicate when the MinHash estimate of its Jaccard is at least ``jaccard``, or the
   estimated share of the smaller text's n-grams found in the other (containment) is at least
   ``containment``. (With both of those switched off, the cosine alone decides, as in 2.)
2. Both are short texts without signatures (documents written by an older esdedup under ``auto``): the TF
   cosine alone decides.
3. Otherwise (``simhash`` strategy): the SimHash Hamming distance is at most ``hamming_k`` and the TF
   cosine is at least ``cosine``. Each test decides only where both texts carry what it needs (a search hit
   may come without its vector); a pair that no test can answer is not a near-duplicate.
4. Two documents that carry the same stored ``cluster_id`` are near-duplicates whatever their measures
   (search-time only: the labels were decided by this rule when the documents were written).

Cosines are float32 products of unit vectors; a cosine within 1e-6 below the threshold counts as reaching
it, so ``cosine=1.0`` matches identical vectors however their floats were rounded on the way.

Why n-grams decide when they can (measured with `esdedup synth` on real Chinese text, BENCHMARKS.md): a
64-bit SimHash moves about 64 * angle / pi bits, so variants with 3 % of their characters edited sit 6-14
bits apart on long texts, beyond any cheap band layout, and the hashed TF cosine of unrelated long texts
comes close to that of edited variants; character-bigram Jaccard keeps the two far apart, long or short.

The measures (`measure`, `minhash_estimates`, `row_cosines`) work on anything shaped like a stored
document or a fingerprint (`Sketch`): no store, no client, no I/O. Many pairs at once are measured from
the texts' sketches as arrays (`SketchColumns`: given pairs, or a grid of rows by columns), which may lack
a part (a search hit without its SimHash or vector): the all-pairs join and `diversify` both measure so.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from esdedup.fingerprint import native
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.simhash import hamming_many, hamming_rows, simhash_words
from esdedup.match.thresholds import Thresholds

__all__ = ["EXACT_COPY", "Measures", "Sketch", "are_duplicates", "decide", "decided_by", "decided_by_many",
           "exact_copies", "hamming_of", "is_duplicate", "measure", "measured", "minhash_estimates", "row_cosines"]

#: Containment is only trusted when the smaller text has at least this many distinct n-grams (a few
#: characters are "contained" in almost anything) ...
MIN_CONTAINMENT_SHINGLES = 8
#: ... and the larger has at most this many times as many (the estimate degrades with the size ratio).
MAX_CONTAINMENT_RATIO = 4.0
#: How far below the cosine threshold a float32 cosine may fall and still reach it (rounding).
COSINE_TOLERANCE = 1e-6
#: What decided a pair of exact copies of a text without words (rule 0 of the module docstring): `decided_by`
#: of such a pair, where no measure could.
EXACT_COPY = "content_sha1"


class Copy(Protocol):
    """What rule 0 reads of a stored text (`esdedup.store.base.StoredDoc`)."""

    @property
    def id(self) -> str: ...
    @property
    def empty(self) -> bool: ...
    @property
    def content_sha1(self) -> str | None: ...


def exact_copies(empty: bool, sha1: str | None, docs: Sequence[Copy], *, exclude: str | None = None) -> list[int]:
    """Rule 0 for a text without words (``empty``) whose content SHA-1 is ``sha1``: the positions of ``docs``
    that are its exact copies (empty, the same content SHA-1; not the document ``exclude``). A text with words
    gets none here: its measures decide (`decide`). Nor does a text of unknown SHA-1 (None or "": documents
    written without one, which would otherwise all be copies of each other).

    >>> from types import SimpleNamespace as D
    >>> exact_copies(True, "ab", [D(id="x", empty=True, content_sha1="ab"), D(id="y", empty=True, content_sha1="cd"),
    ...                          D(id="z", empty=True, content_sha1="ab")], exclude="z")
    [0]
    >>> exact_copies(True, "", [D(id="x", empty=True, content_sha1="")])
    []
    """
    if not empty or not sha1:
        return []
    return [i for i, d in enumerate(docs) if d.empty and d.content_sha1 == sha1 and d.id != exclude]


class Sketch(Protocol):
    """What the rule reads of a text: a `Fingerprint` or a stored document (`esdedup.store.base.StoredDoc`)."""

    @property
    def simhash(self) -> int: ...
    @property
    def vector(self) -> np.ndarray: ...
    @property
    def empty(self) -> bool: ...
    @property
    def chars(self) -> int: ...
    @property
    def minhash(self) -> np.ndarray | None: ...
    @property
    def shingles(self) -> int: ...


class PartialSketch(Protocol):
    """What `SketchColumns` reads of a text: a `Sketch`, or what a search hit carries, which may lack its SimHash,
    its vector, its signature or its length (None)."""

    @property
    def simhash(self) -> int | None: ...
    @property
    def vector(self) -> Any: ...  # a vector, or None
    @property
    def chars(self) -> int | None: ...
    @property
    def minhash(self) -> np.ndarray | None: ...
    @property
    def shingles(self) -> int: ...


def has_signature(s: PartialSketch) -> bool:
    return s.minhash is not None and s.shingles > 0


def decide(t: Thresholds, *, hamming: ArrayLike, cosine: ArrayLike, jaccard: ArrayLike,
           containment: ArrayLike, legacy_short: np.ndarray | bool = False,
           same_cluster: np.ndarray | bool = False) -> np.ndarray:
    """The rule of the module docstring over arrays of pairs (any shape that broadcasts).

    ``hamming`` and ``cosine`` are NaN where a pair lacks what they need; ``jaccard`` and ``containment`` are
    NaN where the two do not both carry a signature. ``legacy_short``: both are short texts without
    signatures. ``same_cluster``: both carry the same stored cluster id. Returns a bool array.
    """
    ham, cos = np.asarray(hamming, dtype=np.float64), np.asarray(cosine, dtype=np.float64)
    jac, cont = np.asarray(jaccard, dtype=np.float64), np.asarray(containment, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # NaN compares False, which is what an unknown measure means
        signatures = ~np.isnan(jac)
        if (t.jaccard is not None or t.containment is not None) and signatures.all():
            # Every pair carries two signatures: the n-grams decide them all (the first branch below), and
            # the other tests need not be computed (a page of hits of one index is mostly so).
            shape = np.broadcast_shapes(ham.shape, cos.shape, jac.shape, cont.shape, np.shape(legacy_short))
            ngrams = np.broadcast_to(_at_least(jac, t.jaccard) | _at_least(cont, t.containment), shape)
            return ngrams | np.asarray(same_cluster, dtype=bool)
        by_ngrams = signatures & (t.jaccard is not None or t.containment is not None)
        ngram_ok = _at_least(jac, t.jaccard) | _at_least(cont, t.containment)
        cos_ok = _at_least(cos, None if t.cosine is None else t.cosine - COSINE_TOLERANCE)
        ham_tested = ~np.isnan(ham) & (t.hamming_k is not None)
        cos_tested = ~np.isnan(cos) & (t.cosine is not None)
        ham_ok = ham <= (t.hamming_k if t.hamming_k is not None else np.inf)
        simhash_ok = (ham_tested | cos_tested) & (~ham_tested | ham_ok) & (~cos_tested | cos_ok)
    cosine_alone = (signatures | (np.asarray(legacy_short) & ~signatures)) & ~by_ngrams & (t.cosine is not None)
    verdict = np.where(by_ngrams, ngram_ok, np.where(cosine_alone, cos_tested & cos_ok, simhash_ok))
    return verdict | np.asarray(same_cluster, dtype=bool)


def decided_by(t: Thresholds, *, hamming: float | None, cosine: float | None, jaccard: float | None,
               containment: float | None, legacy_short: bool = False) -> str:
    """Which measure `decide` judged one near-duplicate pair by (None or NaN: a measure the pair lacks): "jaccard"
    or "containment" (the n-gram estimate that passed), "cosine" (alone), "hamming", "hamming and cosine", or
    "cluster" (a shared stored cluster, no measure)."""
    def known(x: float | None) -> bool:
        return x is not None and not np.isnan(x)

    signed = known(jaccard)
    return _decided_by(t, signed, legacy_short, known(hamming), known(cosine),
                       signed and t.jaccard is not None and jaccard >= t.jaccard)  # type: ignore[operator]


def decided_by_many(t: Thresholds, *, hamming: ArrayLike, cosine: ArrayLike, jaccard: ArrayLike,
                    legacy_short: ArrayLike = False) -> list[str]:
    """`decided_by` of several near-duplicate pairs (arrays that broadcast, NaN where a pair lacks a measure),
    one name a pair, flattened."""
    jac = np.asarray(jaccard, dtype=np.float64)
    signed = ~np.isnan(jac)
    with np.errstate(invalid="ignore"):
        passed = signed & (jac >= t.jaccard) if t.jaccard is not None else np.zeros(jac.shape, dtype=bool)
    flags = np.broadcast_arrays(signed, np.asarray(legacy_short, dtype=bool),
                                ~np.isnan(np.asarray(hamming, dtype=np.float64)),
                                ~np.isnan(np.asarray(cosine, dtype=np.float64)), passed)
    # What the name depends on, as one number a pair: each of the few combinations named once.
    codes = sum(f.ravel().astype(np.int64) << k for k, f in enumerate(flags))
    names = {code: _decided_by(t, *(bool(code >> k & 1) for k in range(len(flags))))
             for code in np.unique(codes).tolist()}
    return [names[c] for c in codes.tolist()]  # type: ignore[union-attr]


def _decided_by(t: Thresholds, signed: bool, legacy_short: bool, hamming: bool, cosine: bool,
                jaccard_passed: bool, /) -> str:
    """`decided_by` from what it reads of a pair: whether both carry signatures (``signed``), are legacy short
    texts, have a Hamming distance and a cosine, and whether the Jaccard estimate reached its threshold."""
    if signed and (t.jaccard is not None or t.containment is not None):
        return "jaccard" if jaccard_passed else "containment"
    if (signed or legacy_short) and t.cosine is not None:
        return "cosine"
    tested = [name for name, present, limit in (("hamming", hamming, t.hamming_k), ("cosine", cosine, t.cosine))
              if present and limit is not None]
    return " and ".join(tested) or "cluster"


def _at_least(values: np.ndarray, threshold: float | None) -> np.ndarray:
    if threshold is None:
        return np.zeros(values.shape, dtype=bool)
    return values >= threshold


def is_duplicate(hamming: int | None, cosine: float | None, t: Thresholds, ngram: bool = False, *,
                 jaccard: float | None = None, containment: float | None = None) -> bool:
    """`decide` for one pair (`are_duplicates` of one)."""
    return bool(are_duplicates([hamming], [cosine], t, [ngram], jaccard=[jaccard], containment=[containment])[0])


def are_duplicates(hamming: Sequence[int | None], cosine: Sequence[float | None], t: Thresholds,
                   ngram: Sequence[bool], *, jaccard: Sequence[float | None],
                   containment: Sequence[float | None]) -> np.ndarray:
    """`decide` for pairs given by their measures, None where a measure is missing; a bool array.
    ``ngram``: both texts of a pair are on the n-gram path (they carry signatures, then ``jaccard`` and
    ``containment`` are their estimates; or they are legacy short texts, then those are None)."""
    nan = float("nan")
    return decide(t, hamming=np.array([nan if h is None else h for h in hamming], dtype=np.float64),
                  cosine=np.array([nan if c is None else c for c in cosine], dtype=np.float64),
                  jaccard=np.array([j if g and j is not None else nan for j, g in zip(jaccard, ngram, strict=True)],
                                   dtype=np.float64),
                  containment=np.array([c if g and c is not None else nan
                                        for c, g in zip(containment, ngram, strict=True)], dtype=np.float64),
                  legacy_short=np.array([g and j is None for j, g in zip(jaccard, ngram, strict=True)], dtype=bool))


def reads_cosine(t: Thresholds, *, all_signed: bool) -> bool:
    """Whether `decide` reads the cosine of some pair among pairs that (``all_signed``) all carry two signatures
    of the config's length (n-gram estimates) or not; a caller whose cosines are costly skips them when it
    does not."""
    return t.cosine is not None and not (all_signed and (t.jaccard is not None or t.containment is not None))


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


def measures_row(hamming: int | None, cosine: float | None, jaccard: float | None, containment: float | None,
                 decided_by: str) -> dict[str, Any]:
    """A pair's measures as output shows them (`dups`, `similar`): Hamming None where a text has no SimHash
    (`FingerprintConfig.gets_terms`), cosine None where no vector was compared, the n-gram estimates only where both texts carry signatures, and the measure that decided.

    >>> measures_row(3, None, 0.81234, None, "jaccard")
    {'hamming': 3, 'cosine': None, 'jaccard': 0.8123, 'containment': 0.0, 'decided_by': 'jaccard'}
    """
    row: dict[str, Any] = {"hamming": hamming, "cosine": None if cosine is None else round(cosine, 6)}
    if jaccard is not None:
        row["jaccard"] = round(jaccard, 4)
        row["containment"] = round(containment or 0.0, 4)
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
        sel = np.flatnonzero(np.fromiter((has_signature(d) for d in docs), dtype=bool, count=n))
        if len(sel):
            sigs = np.stack([docs[int(i)].minhash for i in sel])  # type: ignore[misc]
            jac[sel], cont[sel] = minhash_estimates(a.minhash, a.shingles, sigs,  # type: ignore[arg-type]
                                                    np.array([docs[int(i)].shingles for i in sel]))
    elif not config.gets_simhash_bands(a.chars):
        legacy = np.array([not has_signature(d) and not config.gets_simhash_bands(d.chars) for d in docs],
                          dtype=bool)
    return Measures(hams, coss, jac, cont, legacy)


def measure_pairs(docs: Sequence[Sketch], left: np.ndarray, right: np.ndarray, config: FingerprintConfig) -> Measures:
    """`measure` of ``docs[left[x]]`` against ``docs[right[x]]`` for every x, in numpy: the same numbers (the
    same products summed the same way), without a call a document (the store-side join measures its
    candidate pairs in bulk with it)."""
    cols = SketchColumns.of(docs, config)
    m = cols.measure(left, right)
    # Signatures of another length (written under an older config): measured one pair at a time.
    for x in np.flatnonzero(cols.signed[left] & cols.signed[right] & ~(cols.full[left] & cols.full[right])):
        one = measure(docs[int(left[x])], [docs[int(right[x])]], config)
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
           vectors: Callable[[], np.ndarray] | None = None) -> SketchColumns:
        """The columns of ``docs``. A text may lack its SimHash, its vector or its length (None): the
        measures that need them are NaN for its pairs, and a text of unknown length is not taken for a
        short one. ``vectors``: what reads the texts' vectors as an (n, dims) float32 array (any values
        where a text has none), called once, when a cosine is first wanted; default: ``d.vector`` stacked."""
        n, perm = len(docs), config.minhash_perm
        signed = np.fromiter((has_signature(d) for d in docs), dtype=bool, count=n)
        full = signed & np.fromiter((d.minhash is not None and len(d.minhash) == perm for d in docs),
                                    dtype=bool, count=n)
        sigs = np.zeros((n, perm), dtype=np.uint32)
        if full.any():
            sigs[full] = np.stack([d.minhash for d, f in zip(docs, full, strict=True) if f])  # type: ignore[misc]
        has_vector = np.fromiter((d.vector is not None for d in docs), dtype=bool, count=n)
        return cls.from_parts(config, simhash=[d.simhash for d in docs], sigs=sigs, signed=signed, full=full,
                              shingles=[d.shingles for d in docs], chars=[d.chars for d in docs],
                              has_vector=has_vector,
                              vectors=(lambda: _stacked_vectors(docs, has_vector, config)) if vectors is None
                              else vectors, read_vectors_now=vectors is None)

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
        has_simhash = np.fromiter((h is not None for h in simhash), dtype=bool, count=len(simhash))
        known = [0 if c is None else c for c in chars]
        bands = config.gets_simhash_bands_many(known)
        # A text without terms has SimHash 0, which is no SimHash (`FingerprintConfig.gets_terms`).
        has_simhash &= np.fromiter((c is None or x for c, x in zip(chars, config.gets_terms_many(known), strict=True)),
                                   dtype=bool, count=len(chars))
        banded = np.fromiter((c is None or b for c, b in zip(chars, bands, strict=True)), dtype=bool, count=len(chars))
        return cls(simhash_words([h or 0 for h in simhash], config.bits), vectors() if read_vectors_now else vectors,
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


def _stacked_vectors(docs: Sequence[PartialSketch], present: np.ndarray, config: FingerprintConfig) -> np.ndarray:
    """The texts' vectors as an (n, dims) float32 array, zeros where a text has none."""
    given = [d.vector for d in docs if d.vector is not None]
    if len(given) == len(docs):
        return (np.stack(given).astype(np.float32) if given else np.zeros((0, config.dims), dtype=np.float32))
    out = np.zeros((len(docs), len(given[0]) if given else config.dims), dtype=np.float32)
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
    native core when it is in use (`esdedup.fingerprint.native.equal_positions`), else in numpy; both count
    exactly, so the two give the same numbers. ``b`` the very array ``a``: the rows against themselves (the
    native core then counts each pair once)."""
    same = b is a
    a = np.ascontiguousarray(a, dtype=np.uint32)
    b = a if same else np.ascontiguousarray(b, dtype=np.uint32)
    n, m, perm = a.shape[0], b.shape[0], a.shape[1]
    if not n or not m or not perm:
        return np.zeros((n, m), dtype=np.int64)
    counted = native.equal_positions(a, b)
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
    core when it is in use (`esdedup.fingerprint.native.pair_equal_positions`), else in numpy; both count
    exactly."""
    left, right = np.asarray(left, dtype=np.int64).reshape(-1), np.asarray(right, dtype=np.int64).reshape(-1)
    if not len(left) or not sigs.shape[1]:
        return np.zeros(len(left), dtype=np.int64)
    counted = native.pair_equal_positions(sigs, left, right)
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
