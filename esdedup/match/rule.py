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

The rule reads measures; `esdedup.match.measures` takes them (Hamming distance, cosine, the MinHash estimates)
from anything shaped like a stored document or a fingerprint (`Sketch`). Both are pure: no store, no client,
no I/O.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from esdedup.match.thresholds import Thresholds

__all__ = ["EXACT_COPY", "Sketch", "are_duplicates", "decide", "decided_by", "decided_by_many", "exact_copies",
           "is_duplicate"]

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


@dataclass(frozen=True)
class CopyOf:
    """What rule 0 reads of a text that no stored document stands for (`Copy`): a member of a group of
    copies, or a record of the batch being labelled."""

    id: str
    empty: bool
    content_sha1: str | None


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
    listed: list[int] = codes.tolist()  # type: ignore[union-attr]
    # The distinct codes by a set of the list made anyway: `np.unique` would sort them, and imports numpy.ma.
    names = {code: _decided_by(t, *(bool(code >> k & 1) for k in range(len(flags)))) for code in set(listed)}
    return [names[c] for c in listed]


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
