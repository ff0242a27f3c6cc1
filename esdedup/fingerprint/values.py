"""What a `esdedup.fingerprint.fingerprinter.Fingerprinter` makes: one text's `Fingerprint`, and a batch's
fingerprints as columns (`FingerprintColumns`, what ingest's worker processes send). A leaf: it needs neither
the Fingerprinter nor any step of it."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from esdedup.fingerprint.simhash import to_hex


# Not frozen, and slotted: a frozen dataclass's __init__ sets each field through object.__setattr__, and an
# object without slots carries a dict of its own, costs paid for every text fingerprinted. Read-only all the
# same: nothing assigns to its fields.
@dataclass(eq=False, slots=True)
class Fingerprint:
    """What esdedup stores and compares for one text.

    Attributes:
        simhash: the SimHash as an unsigned integer (0 for an empty text; check ``empty``).
        bands: band keys, one per table of the layout; empty for an empty text, so an empty text never
            collides with anything.
        vector: hashed TF vector, float32, unit length (all zero for an empty text).
        tf: exact term weights (for exact cosine and the novel measures).
        length: number of terms after filtering.
        empty: True when the text had no words at all.
        lsh: MinHash LSH band keys when the config gives texts signatures (`FingerprintConfig.gets_signatures`), else empty.
        minhash: the MinHash signature likewise, else None.
        chars: normalised characters.
        shingles: distinct character n-grams behind ``minhash`` (0 when there is no signature); with the
            signature it gives the containment estimate of the n-gram rule (of the matching layer).
    """

    simhash: int
    bands: list[str]
    vector: np.ndarray = field(repr=False)
    tf: Mapping[str, float] = field(repr=False)
    length: int
    empty: bool = False
    lsh: list[str] = field(default_factory=list)
    minhash: np.ndarray | None = field(default=None, repr=False)
    chars: int = 0
    bits: int = 64
    shingles: int = 0

    @property
    def hex(self) -> str:
        return to_hex(self.simhash, self.bits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fingerprint):
            return NotImplemented
        return (self.simhash == other.simhash and self.bands == other.bands and self.tf == other.tf
                and self.lsh == other.lsh and np.array_equal(self.vector, other.vector))

    __hash__ = None  # type: ignore[assignment]


#: The shared zero vectors (`zero_vector`), by length and dtype.
_ZEROS: dict[tuple[int, str], np.ndarray] = {}
#: Their object ids (`is_zero_vector`): they are never freed.
_ZERO_IDS: set[int] = set()


def zero_vector(dims: int, dtype: np.dtype | type = np.float32) -> np.ndarray:
    """One read-only all-zero vector of ``dims`` values, shared: the vector of every text without terms
    (`FingerprintConfig.gets_terms`: most short texts), which fingerprints sent between processes need not
    carry once a text."""
    key = (dims, np.dtype(dtype).str)
    zero = _ZEROS.get(key)
    if zero is None:
        zero = np.zeros(dims, dtype=dtype)
        zero.flags.writeable = False
        _ZEROS[key] = zero
        _ZERO_IDS.add(id(zero))
    return zero


def is_zero_vector(a: object) -> bool:
    """Whether ``a`` is one of the shared `zero_vector` objects (kept by reference, never copied)."""
    return id(a) in _ZERO_IDS


class _TermWeights(Mapping[str, float]):
    """One text's term -> weight, made into a dict on first use: ingest and lookups never read it, and
    building hundreds of dict entries per text would be a Python step per term that nothing needs."""

    __slots__ = ("_terms", "_rows", "_weights", "_dict")

    def __init__(self, terms: list[str], rows: np.ndarray, weights: np.ndarray) -> None:
        self._terms, self._rows, self._weights = terms, rows, weights
        self._dict: dict[str, float] | None = None

    def _items(self) -> dict[str, float]:
        if self._dict is None:
            self._dict = dict(zip(map(self._terms.__getitem__, self._rows.tolist()), self._weights.tolist(),
                                  strict=True))
        return self._dict

    def __getitem__(self, term: str) -> float:
        return self._items()[term]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, term: object) -> bool:
        return term in self._items()

    def get(self, term: str, default: float | None = None) -> float | None:  # type: ignore[override]
        return self._items().get(term, default)

    def keys(self):  # type: ignore[no-untyped-def]  # the dict's own views: C speed
        return self._items().keys()

    def values(self):  # type: ignore[no-untyped-def]
        return self._items().values()

    def items(self):  # type: ignore[no-untyped-def]
        return self._items().items()

    def __repr__(self) -> str:
        return repr(self._items())

    def __reduce__(self) -> tuple[type, tuple[dict[str, float]]]:
        return dict, (self._items(),)  # a plain dict travels to other processes, not the term table


@dataclass(frozen=True, eq=False)
class FingerprintBlock:
    """A batch's fingerprints as the arrays they travelled between processes in, by row: row r's fields are
    those of the batch's r-th `Fingerprint` as the receiving process made it (its vector the shared
    `zero_vector` where ``vector_row[r]`` is -1, its signature None where ``sig_row[r]`` is -1): what a
    consumer of many of them copies in one step a field, without reading each `Fingerprint`."""

    simhash: np.ndarray  # uint64
    lengths: np.ndarray  # int64
    chars: np.ndarray  # int64
    shingles: np.ndarray  # int64
    empties: np.ndarray  # bool
    #: Whether the row has SimHash band keys (bool).
    banded: np.ndarray
    #: The rows that have a vector, stacked (None: no row has one), and each row's place in it (-1: none).
    vectors: np.ndarray | None = field(repr=False)
    vector_row: np.ndarray = field(repr=False)
    #: The zero vector of the rows without one.
    zero: np.ndarray = field(repr=False)
    #: The signatures, stacked (None: no row has one), and each row's place in it (-1: none).
    sigs: np.ndarray | None = field(repr=False)
    sig_row: np.ndarray = field(repr=False)
    #: Row r's `Fingerprint`, made from the columns the block came in when a consumer first reads it (most
    #: rows of a batch are written from the arrays and never read as objects); None where there is no maker.
    fingerprint_of: Callable[[int], Fingerprint] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.simhash)


@dataclass(frozen=True, eq=False)
class FingerprintColumns:
    """The fingerprints of a batch of texts as columns: entry i of each list (row i of ``vectors``) is text
    i's `Fingerprint` field of that name (``empties`` its ``empty``), ``bits`` theirs all; each text's exact
    term weights are its stretch of ``rows`` (rows of ``terms``) and ``weights``, up to ``ends[i]``.
    `fingerprints` makes the objects (``complete_terms``: what completes ``terms`` first, when the native term
    step has decided terms the Fingerprinter has not taken in yet)."""

    simhashes: list[int]
    bands: list[list[str]]
    vectors: np.ndarray = field(repr=False)
    lengths: list[int]
    empties: list[bool]
    lsh: list[list[str]]
    minhash: list[np.ndarray | None] = field(repr=False)
    chars: list[int]
    shingles: list[int]
    bits: int
    terms: list[str] = field(repr=False)
    rows: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    ends: list[int] = field(repr=False)
    complete_terms: Callable[[], None] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.simhashes)

    def fingerprints(self) -> list[Fingerprint]:
        if self.complete_terms is not None:
            self.complete_terms()
        out: list[Fingerprint] = []
        bits, vectors, terms, rows, weights = self.bits, self.vectors, self.terms, self.rows, self.weights
        start = 0
        for i, end in enumerate(self.ends):
            if self.empties[i]:
                out.append(Fingerprint(0, [], vectors[i], {}, 0, empty=True, chars=self.chars[i], bits=bits))
                continue
            tf = _TermWeights(terms, rows[start:end], weights[start:end])
            start = end
            out.append(Fingerprint(self.simhashes[i], self.bands[i], vectors[i], tf, self.lengths[i],
                                   lsh=self.lsh[i], minhash=self.minhash[i], chars=self.chars[i], bits=bits,
                                   shingles=self.shingles[i]))
        return out
