"""`Fingerprinter`: text -> `Fingerprint` (SimHash, band keys, hashed TF vector, exact TF, MinHash keys).

The pipeline is normalise -> segment -> keep words, map synonyms, drop stopwords -> weight -> SimHash and
vector. A per-instance table remembers each term's hash rows, so a term seen before costs one dict lookup;
a batch (`fingerprint_many`) does the vote sums for all documents in one numpy pass.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from . import minhash as mh
from .bands import BandLayout
from .config import FingerprintConfig
from .errors import InputError
from .features import char_shingles, count_filtered, term_weights, terms
from .hashing import token_digest
from .normalize import normalize
from .resources import Resources, load_resources
from .simhash import pack_bits, to_hex
from .tokenize import Tokenizer, iter_pieces

#: The term table is cleared when it grows past this many terms (bounds memory on endless streams).
MAX_CACHED_TERMS = 2_000_000


@dataclass(frozen=True, eq=False)
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
        lsh: MinHash LSH band keys when the short-text path applies, else empty.
        minhash: the MinHash signature when the short-text path applies, else None.
        chars: normalised characters.
    """

    simhash: int
    bands: list[str]
    vector: np.ndarray = field(repr=False)
    tf: dict[str, float] = field(repr=False)
    length: int
    empty: bool = False
    lsh: list[str] = field(default_factory=list)
    minhash: np.ndarray | None = field(default=None, repr=False)
    chars: int = 0
    bits: int = 64

    @property
    def hex(self) -> str:
        return to_hex(self.simhash, self.bits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fingerprint):
            return NotImplemented
        return (self.simhash == other.simhash and self.bands == other.bands and self.tf == other.tf
                and self.lsh == other.lsh and np.array_equal(self.vector, other.vector))

    __hash__ = None  # type: ignore[assignment]


class _TermTable:
    """Term -> row of cached hash data (vote signs for SimHash, bucket and sign for the vector)."""

    def __init__(self, bits: int, dims: int) -> None:
        self.bits, self.dims = bits, dims
        self.index: dict[str, int] = {}
        self.votes = np.zeros((1024, bits), dtype=np.int8)
        self.bucket = np.zeros(1024, dtype=np.int64)
        self.sign = np.zeros(1024, dtype=np.float32)

    def rows(self, term_list: Sequence[str]) -> np.ndarray:
        index = self.index
        missing = [t for t in term_list if t not in index]
        if missing:
            if len(index) + len(missing) > MAX_CACHED_TERMS:
                index.clear()
                missing = list(dict.fromkeys(term_list))
            self._add(missing)
        return np.fromiter((index[t] for t in term_list), dtype=np.int64, count=len(term_list))

    def _add(self, new_terms: list[str]) -> None:
        start = len(self.index)
        need = start + len(new_terms)
        if need > len(self.bucket):
            size = max(need, 2 * len(self.bucket))
            self.votes = np.resize(self.votes, (size, self.bits))
            self.bucket = np.resize(self.bucket, size)
            self.sign = np.resize(self.sign, size)
        digests = [token_digest(t, self.bits) for t in new_terms]
        nbytes = self.bits // 8
        raw = np.frombuffer(b"".join(d[:nbytes] for d in digests), dtype=np.uint8).reshape(len(digests), nbytes)
        self.votes[start:need] = np.unpackbits(raw, axis=1, bitorder="little").astype(np.int8) * 2 - 1
        tail = np.frombuffer(b"".join(d[nbytes:] for d in digests), dtype="<u8")
        self.bucket[start:need] = (tail % np.uint64(self.dims)).astype(np.int64)
        self.sign[start:need] = np.where(tail >> np.uint64(63), -1.0, 1.0).astype(np.float32)
        for i, t in enumerate(new_terms):
            self.index[t] = start + i


class Fingerprinter:
    """Turns text into `Fingerprint`s under one `FingerprintConfig`.

    >>> fp = Fingerprinter(FingerprintConfig()).fingerprint("今天天气很好，我们去公园散步。")
    >>> len(fp.hex), len(fp.bands), fp.vector.shape, fp.empty
    (16, 4, (256,), False)

    Raises:
        InputError: when given bytes or another non-text object.
        ConfigError / ConfigMismatchError: when the config's resource files are missing or changed.
    """

    def __init__(self, config: FingerprintConfig | None = None, resources: Resources | None = None) -> None:
        self.config = config or FingerprintConfig()
        self.resources = resources if resources is not None else load_resources(self.config)
        self.layout: BandLayout = self.config.band_layout()
        self.tokenizer = Tokenizer(self.config.tokenizer, self.resources.user_words)
        self._table = _TermTable(self.config.bits, self.config.dims)
        self._term_cache: dict[str, str | None] = {}

    # -- text to terms ---------------------------------------------------------------------------
    def normalize(self, text: str) -> str:
        if not isinstance(text, str):
            raise InputError(f"expected text (str), got {type(text).__name__}; decode bytes first "
                             "(esdedup.readers.decode_bytes)")
        return normalize(text, t2s=self.config.t2s)

    def _terms_of_normalized(self, norm: str) -> Iterable[list[str]]:
        cfg, res = self.config, self.resources
        if cfg.tokenizer == "char":
            # Shingles must not be cut at piece borders, so the whole text goes at once; char configs are
            # meant for short texts and a 50 MB document still makes only one list of n-grams.
            yield char_shingles(norm, cfg.shingle)
            return
        for piece in iter_pieces(norm):
            yield terms(self.tokenizer.cut(piece), res.stopwords, res.synonyms)

    def terms(self, text: str) -> list[str]:
        """The filtered term sequence of a text (what the weights count; used for containment)."""
        out: list[str] = []
        for piece in self._terms_of_normalized(self.normalize(text)):
            out.extend(piece)
        return out

    def term_counts(self, text: str) -> Counter[str]:
        """Term -> count for a text (filtered like `terms`)."""
        return self._counts_of_normalized(self.normalize(text))

    def _counts_of_normalized(self, norm: str) -> Counter[str]:
        cfg, res = self.config, self.resources
        if cfg.tokenizer == "char":
            return Counter(char_shingles(norm, cfg.shingle))
        raw: Counter[str] = Counter()
        for piece in iter_pieces(norm):
            raw.update(self.tokenizer.cut(piece))
        if len(self._term_cache) > MAX_CACHED_TERMS:
            self._term_cache.clear()
        return count_filtered(raw, res.stopwords, res.synonyms, self._term_cache)

    # -- fingerprints ------------------------------------------------------------------------------
    def _prepare(self, text: str) -> tuple[dict[str, float], int, str]:
        norm = self.normalize(text)
        counts = self._counts_of_normalized(norm)
        return term_weights(counts, self.config.weighting, self.resources.idf), sum(counts.values()), norm

    def _uses_minhash(self, norm: str) -> bool:
        s = self.config.strategy
        return s == "minhash" or (s == "auto" and len(norm) < self.config.short_text_chars)

    def _minhash_part(self, norm: str) -> tuple[list[str], np.ndarray | None]:
        if not self._uses_minhash(norm):
            return [], None
        hashes = mh.shingle_hashes(char_shingles(norm, self.config.minhash_ngram))
        if len(hashes) == 0:
            return [], None
        sig = mh.signature(hashes, self.config.minhash_perm)
        return mh.lsh_keys(sig, self.config.minhash_bands), sig

    def fingerprint(self, text: str) -> Fingerprint:
        """Fingerprint one text."""
        return self.fingerprint_many([text])[0]

    def fingerprint_many(self, texts: Iterable[str]) -> list[Fingerprint]:
        """Fingerprint many texts; vote sums and vectors of a whole batch are computed in numpy passes."""
        cfg = self.config
        prepared = [self._prepare(t) for t in texts]
        n = len(prepared)
        sums = np.zeros((n, cfg.bits), dtype=np.int64)
        flat_vectors = np.zeros(n * cfg.dims, dtype=np.float64)
        docs = [i for i, (w, _, _) in enumerate(prepared) if w]
        for group in _groups(docs, [len(prepared[i][0]) for i in docs], _ROWS_PER_PASS):
            r = np.concatenate([self._table.rows(list(prepared[i][0])) for i in group])
            w = np.concatenate([np.fromiter(prepared[i][0].values(), np.float64, len(prepared[i][0]))
                                for i in group])
            sizes = np.array([len(prepared[i][0]) for i in group], dtype=np.int64)
            owner = np.repeat(np.array(group, dtype=np.int64), sizes)
            t = self._table
            # SimHash votes in exact integer arithmetic (weights quantised to 1/1024) so that the bits
            # never depend on floating-point summation order, CPU or BLAS.
            wq = np.rint(w * _QUANT).astype(np.int64)
            offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
            sums[group] = np.add.reduceat(t.votes[r].astype(np.int64) * wq[:, None], offsets, axis=0)
            flat_vectors += np.bincount(owner * cfg.dims + t.bucket[r], weights=t.sign[r] * w,
                                        minlength=n * cfg.dims)
        vectors = flat_vectors.reshape(n, cfg.dims)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0).astype(np.float32)
        simhashes = pack_bits(sums > 0)
        out = []
        for i, (w, length, norm) in enumerate(prepared):
            if not w:
                out.append(Fingerprint(0, [], vectors[i], {}, 0, empty=True, chars=len(norm), bits=cfg.bits))
                continue
            lsh, sig = self._minhash_part(norm)
            out.append(Fingerprint(simhashes[i], self.layout.keys(simhashes[i]), vectors[i], w, length,
                                   lsh=lsh, minhash=sig, chars=len(norm), bits=cfg.bits))
        return out


_QUANT = 1024.0
#: Term rows handled per numpy pass (bounds the temporary vote matrix to about 128 MB).
_ROWS_PER_PASS = 1 << 18


def _groups(items: list[int], sizes: list[int], limit: int) -> Iterable[list[int]]:
    """Consecutive groups of items whose sizes add up to at most ``limit`` (an item larger than the
    limit forms a group of its own)."""
    group: list[int] = []
    total = 0
    for item, size in zip(items, sizes):
        if group and total + size > limit:
            yield group
            group, total = [], 0
        group.append(item)
        total += size
    if group:
        yield group
