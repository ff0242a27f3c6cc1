"""`Fingerprinter`: text -> `Fingerprint` (SimHash, band keys, hashed TF vector, exact TF, MinHash keys).

The pipeline is normalise -> segment -> keep words, map synonyms, drop stopwords -> weight -> SimHash and
vector. A per-instance table remembers each term's hash rows, so a term seen before costs one dict lookup;
a batch (`fingerprint_many`) does the vote sums for all documents in one numpy pass.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from itertools import chain, islice, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from esdedup.errors import InputError
from esdedup.fingerprint import minhash as mh
from esdedup.fingerprint import native_steps
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.features import char_shingles, term_of, term_weights
from esdedup.fingerprint.hashing import token_digest
from esdedup.fingerprint.normalize import normalize, normalize_many
from esdedup.fingerprint.resources import Resources, load_resources
from esdedup.fingerprint.simhash import pack_bits
from esdedup.fingerprint.tokenize import PIECE_CHARS, Tokenizer, iter_pieces

# Re-exported: this module is where a program has always imported them from.
from esdedup.fingerprint.values import Fingerprint as Fingerprint
from esdedup.fingerprint.values import FingerprintColumns as FingerprintColumns
from esdedup.util.arrays import unique_sorted
from esdedup.util.fieldtypes import checked_args

#: The term table is cleared when it grows past this many terms (bounds memory on endless streams).
MAX_CACHED_TERMS = 2_000_000
_NO_HASHES = np.zeros(0, dtype=np.uint64)
#: Characters of a long text turned into n-grams at a time (bounds the memory of the MinHash part).
_SHINGLE_CHUNK = 1 << 16
#: What is not a letter or digit (``str.isalnum``: ``\w`` is exactly that and the underscore). A regex, not
#: ``"".join(filter(str.isalnum, text))``, which makes one string object per character (each many times the
#: size of the character itself).
_NOT_ALNUM = re.compile(r"[\W_]+")


class _TermTable:
    """Term -> row of cached hash data: the SimHash digest bytes, the vector bucket and sign, and the weight
    of one occurrence (1, the term's length or its idf, by the config's weighting)."""

    def __init__(self, bits: int, dims: int) -> None:
        self.bits, self.dims = bits, dims
        self.index: dict[str, int] = {}
        self.terms: list[str] = []  # row -> term
        self.digest = np.zeros((1024, bits // 8), dtype=np.uint8)  # token_hash bytes, little-endian
        self.bucket = np.zeros(1024, dtype=np.int64)
        self.sign = np.zeros(1024, dtype=np.float32)
        self.factor = np.ones(1024, dtype=np.float64)
        self._pending: list[tuple[str, float]] = []

    def __len__(self) -> int:
        return len(self.terms)

    def clear(self) -> None:
        self.index.clear()
        self.terms = []  # a new list: fingerprints made before still read their terms from the old one
        self._pending.clear()

    def reserve_many(self, terms: list[str], factors: list[float]) -> None:
        """Rows for distinct new terms, in order, each with the weight of one occurrence; their hash data is
        computed by the next `flush` (in one numpy pass)."""
        start = len(self.terms)
        self.index.update(zip(terms, range(start, start + len(terms)), strict=True))
        self.terms.extend(terms)
        self._pending.extend(zip(terms, factors, strict=True))

    def flush(self) -> None:
        if not self._pending:
            return
        new, self._pending = self._pending, []
        start, need = len(self.terms) - len(new), len(self.terms)
        self._grow(need)
        digests = [token_digest(t, self.bits) for t, _ in new]
        nbytes = self.bits // 8
        self.digest[start:need] = np.frombuffer(b"".join(d[:nbytes] for d in digests),
                                                dtype=np.uint8).reshape(len(new), nbytes)
        tail = np.frombuffer(b"".join(d[nbytes:] for d in digests), dtype="<u8")
        self.bucket[start:need] = (tail % np.uint64(self.dims)).astype(np.int64)
        self.sign[start:need] = np.where(tail >> np.uint64(63), -1.0, 1.0).astype(np.float32)
        self.factor[start:need] = [f for _, f in new]

    def _grow(self, need: int) -> None:
        if need > len(self.bucket):
            size = max(need, 2 * len(self.bucket))
            self.digest = np.resize(self.digest, (size, self.bits // 8))
            self.bucket = np.resize(self.bucket, size)
            self.sign = np.resize(self.sign, size)
            self.factor = np.resize(self.factor, size)

    def row_data(self, start: int) -> tuple[bytes, bytes, bytes, bytes]:
        """The hash data of rows ``start..`` as the native core takes it: digest bytes, buckets as int64,
        signs as float32 and factors as float64, little-endian."""
        self.flush()
        end = len(self.terms)
        return (self.digest[start:end].tobytes(), self.bucket[start:end].astype("<i8").tobytes(),
                self.sign[start:end].astype("<f4").tobytes(), self.factor[start:end].astype("<f8").tobytes())

    def extend(self, terms: list[str], digest: bytes, bucket: bytes, sign: bytes, factor: bytes) -> None:
        """Rows for distinct new terms whose hash data was computed elsewhere (the native core), given in
        `row_data`'s form."""
        self.flush()
        start, end = len(self.terms), len(self.terms) + len(terms)
        self.index.update(zip(terms, range(start, end), strict=True))
        self.terms.extend(terms)
        self._grow(end)
        self.digest[start:end] = np.frombuffer(digest, dtype=np.uint8).reshape(len(terms), self.bits // 8)
        self.bucket[start:end] = np.frombuffer(bucket, dtype="<i8")
        self.sign[start:end] = np.frombuffer(sign, dtype="<f4")
        self.factor[start:end] = np.frombuffer(factor, dtype="<f8")

    def rows(self, term_list: Sequence[str]) -> np.ndarray:
        """Rows of some terms, adding the new ones."""
        index = self.index
        new = list(dict.fromkeys(t for t in term_list if t not in index))
        self.reserve_many(new, [1.0] * len(new))
        self.flush()
        return np.fromiter(map(index.__getitem__, term_list), dtype=np.int64, count=len(term_list))


class Fingerprinter:
    """Turns text into `Fingerprint`s under one `FingerprintConfig`.

    >>> fp = Fingerprinter(FingerprintConfig()).fingerprint("今天天气很好，我们去公园散步。")
    >>> len(fp.hex), len(fp.bands), len(fp.lsh), fp.vector.shape, fp.empty
    (16, 0, 16, (256,), False)

    Raises:
        InputError: when given bytes or another non-text object.
        ConfigError / ConfigMismatchError: when the config's resource files are missing or changed.
    """

    @checked_args
    def __init__(self, config: FingerprintConfig | None = None, resources: Resources | None = None) -> None:
        self.config = config or FingerprintConfig()
        self.resources = resources if resources is not None else load_resources(self.config)
        self.layout: BandLayout = self.config.band_layout()
        self.tokenizer = Tokenizer(self.config.tokenizer, self.resources.user_words)
        self._table = _TermTable(self.config.bits, self.config.dims)
        # Raw token -> code: 2 * row when the token is itself a term (the usual case), 2 * row + 1 when it
        # stands for another term (a synonym, or spaces stripped), -1 when it is no term (punctuation, a
        # stopword). A plain dict of str -> int, which the garbage collector never has to scan.
        self._codes: dict[str, int] = {}
        # The MinHash step in the native extension when it is in use (esdedup.util.native), else None.
        self._native_minhash = native_steps.minhash_step(self.config, _SHINGLE_CHUNK)
        # The term step (token counts, weights, SimHash, vector sums) in the extension, else None.
        self._native_terms = native_steps.terms_step(self.config, self.resources.stopwords, self.resources.synonyms)
        # The batch forms of normalisation's first step, its t2s conversion and its case folding and
        # whitespace in the extension, else None.
        self._native_clean = native_steps.clean_step()
        self._native_t2s = native_steps.t2s_step() if self.config.t2s else None
        self._native_fold = native_steps.fold_step()
        # SimHash band keys of a batch in the extension, else None (`BandLayout.keys` text by text).
        self._native_bands = native_steps.band_keys_step(self.layout)

    @cached_property
    def _native_cut(self) -> Any:
        """The rjieba or jieba tokenizer inside the term step (tokens go from the cut to their codes without
        becoming Python str; a piece the core leaves is cut by self.tokenizer), else None. Loaded when a first
        text is segmented: its dictionary is half of a Fingerprinter's start-up, and under the ``auto``
        strategy a run of short texts segments none."""
        return native_steps.cut_step(self.config, self.resources.user_words) if self._native_terms else None

    # -- text to terms ---------------------------------------------------------------------------
    def normalize(self, text: str) -> str:
        if not isinstance(text, str):
            raise InputError(f"expected text (str), got {type(text).__name__}; decode bytes first "
                             "(esdedup.readers.decode_bytes)")
        return normalize(text, t2s=self.config.t2s)

    def normalize_many(self, texts: Sequence[str]) -> list[str]:
        """`normalize` of each text, its steps for all of them at once in the native core when it is in
        use."""
        for text in texts:
            if not isinstance(text, str):
                self.normalize(text)  # raises the InputError
        return normalize_many(texts, t2s=self.config.t2s, clean_many=self._native_clean, fold_many=self._native_fold,
                              t2s_many=self._native_t2s)

    def terms(self, text: str) -> list[str]:
        """The filtered term sequence of a text (what the weights count; used for containment)."""
        self._take_learned()
        table, out = self._table, list[str]()
        for tokens in self._token_lists(self.normalize(text)):
            out.extend(table.terms[code >> 1] for code in self._token_codes(tokens) if code >= 0)
        return out

    def term_counts(self, text: str) -> Counter[str]:
        """Term -> count for a text (filtered like `terms`), in first-occurrence order."""
        return Counter(self.terms(text))

    def _minhash_parts(self, norms: Sequence[str]) -> list[tuple[list[str], np.ndarray | None, int]]:
        """(LSH band keys, MinHash signature, number of distinct n-grams) of each text that gets a signature,
        all computed in one batch."""
        cfg = self.config
        out: list[tuple[list[str], np.ndarray | None, int]] = [([], None, 0)] * len(norms)
        if not cfg.gets_signatures:
            return out
        if self._native_minhash is not None:
            return self._native_minhash.parts(norms)
        sets = _shingle_sets([_word_chars(norm) for norm in norms], cfg.minhash_ngram)
        todo = [i for i, h in enumerate(sets) if len(h)]
        if not todo:
            return out
        sigs = mh.signatures([sets[i] for i in todo], cfg.minhash_perm)
        keys_of = mh.lsh_keys_many(sigs, cfg.minhash_bands, cfg.minhash_rows)
        for i, sig, keys in zip(todo, sigs, keys_of, strict=True):
            out[i] = (keys, sig, len(sets[i]))
        return out

    def _band_keys_many(self, simhashes: list[int]) -> list[list[str]]:
        """The SimHash band keys of each value (`BandLayout.keys`), in the native core when it is in use."""
        if self._native_bands is not None and simhashes:
            return self._native_bands(simhashes)
        return [self.layout.keys(h) for h in simhashes]

    def fingerprint(self, text: str) -> Fingerprint:
        """Fingerprint one text."""
        return self.fingerprint_many([text])[0]

    @checked_args
    def fingerprint_many(self, texts: Iterable[str]) -> list[Fingerprint]:
        """Fingerprint many texts. Texts are segmented one by one; everything after segmentation (term
        lookup, SimHash vote sums, vectors) runs in numpy passes over up to `_DOCS_PER_PASS` texts."""
        if self._native_clean is None:
            return self.fingerprint_normalized(map(self.normalize, texts))
        return self.fingerprint_normalized(chain.from_iterable(map(self.normalize_many, _batches(texts))))

    @checked_args
    def fingerprint_normalized(self, norms: Iterable[str]) -> list[Fingerprint]:
        """`fingerprint_many` of texts that have been through `normalize` already: for callers that need
        the normalised text too (ingest hashes it for exact duplicates) and would otherwise normalise twice.
        Text that was not normalised gives other fingerprints."""
        return list(chain.from_iterable(c.fingerprints() for c in self.fingerprint_columns(norms)))

    def fingerprint_columns(self, norms: Iterable[str]) -> list[FingerprintColumns]:
        """`fingerprint_normalized` as columns, one `FingerprintColumns` per `_DOCS_PER_PASS` texts (at
        least one): for a caller that reads a few fields of many fingerprints and needs no object for each."""
        out: list[FingerprintColumns] = []
        chunk: list[str] = []
        for text in norms:
            chunk.append(text)
            if len(chunk) == _DOCS_PER_PASS:
                out.append(self._fingerprint_chunk(chunk))
                chunk = []
        if chunk or not out:
            out.append(self._fingerprint_chunk(chunk))
        return out

    def _fingerprint_chunk(self, norms: list[str]) -> FingerprintColumns:
        cfg, n = self.config, len(norms)
        chars = list(map(len, norms))
        termed = [i for i, yes in enumerate(cfg.gets_terms_many(chars)) if yes]
        if len(termed) == n:
            simhashes, rows, weights, kept, lengths, raw = self._term_step(norms)
            vectors = _unit_rows(raw)
        else:
            # The texts that get no terms (`FingerprintConfig.gets_terms`) are never segmented: SimHash 0, no
            # term, a zero vector; the others go through the term step together.
            simhashes, lengths = [0] * n, [0] * n
            kept = np.zeros(n, dtype=np.int64)
            vectors = np.zeros((n, cfg.dims), dtype=np.float32)
            rows, weights = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
            if termed:
                sims, rows, weights, some_kept, some_lengths, raw = self._term_step([norms[i] for i in termed])
                for i, h, count in zip(termed, sims, some_lengths, strict=True):
                    simhashes[i], lengths[i] = h, count
                kept[termed] = some_kept
                vectors[termed] = _unit_rows(raw)
        ends = np.cumsum(kept).tolist()
        empties = (kept == 0).tolist()
        lean = set(range(n)).difference(termed)
        minhash_parts = self._minhash_parts(["" if empty and i not in lean else norm
                                             for i, (norm, empty) in enumerate(zip(norms, empties, strict=True))])
        for i in lean:  # a text without terms is empty when it has no n-gram (no letter or digit)
            empties[i] = minhash_parts[i][2] == 0
        banded = [i for i, (yes, empty) in enumerate(zip(cfg.gets_simhash_bands_many(chars), empties, strict=True))
                  if yes and not empty]
        bands: list[list[str]] = [[] for _ in range(n)]
        for i, keys in zip(banded, self._band_keys_many([simhashes[i] for i in banded]), strict=True):
            bands[i] = keys
        return FingerprintColumns(
            simhashes=[0 if empty else h for h, empty in zip(simhashes, empties, strict=True)],
            bands=bands, vectors=vectors,
            lengths=[0 if empty else count for count, empty in zip(lengths, empties, strict=True)], empties=empties,
            lsh=[part[0] for part in minhash_parts], minhash=[part[1] for part in minhash_parts],
            chars=chars, shingles=[part[2] for part in minhash_parts], bits=cfg.bits,
            terms=self._table.terms, rows=rows, weights=weights, ends=ends,
            complete_terms=self._take_learned if self._native_terms is not None else None)

    def _term_step(self, norms: list[str]) -> native_steps.TermParts:
        """SimHash values, term rows and weights, terms per text, total counts and unnormalised vectors of some
        normalised texts (`_term_parts`), in the native core when it is in use."""
        table = self._table
        learned = self._native_terms.learned_rows if self._native_terms is not None else 0
        if len(table) + learned > MAX_CACHED_TERMS:  # between chunks only: a chunk's rows stay valid
            self._take_learned()  # into the old table, whose terms the chunks before read
            table.clear()
            self._codes.clear()
            if self._native_terms is not None:
                self._native_terms.clear()
        if self._native_terms is not None:
            # Rows that `terms` added since the last batch reach the core first: it may decide new terms itself.
            self._native_terms.add_rows(table.terms, table.row_data)
        if self._native_cut is not None:
            assert self._native_terms is not None
            return self._native_terms.run_cut(self._native_cut, *_pieces(norms), self._native_register,
                                              self.tokenizer.cut_many)
        if self._native_terms is not None:
            return self._native_terms.run(self._tokens_many(norms), self._native_register)
        return self._term_parts(norms)

    def _term_parts(self, norms: list[str]) -> native_steps.TermParts:
        """SimHash values, term rows and weights, terms per text, total counts and unnormalised vectors of
        some normalised texts: the definition of what the native term step computes."""
        cfg, table, n = self.config, self._table, len(norms)
        rows, counts, kept = self._terms_of(norms)
        weights = counts.astype(np.float64)
        if cfg.weighting != "tf":
            weights *= table.factor[rows]
        owner = np.repeat(np.arange(n, dtype=np.int64), kept)
        sums = _vote_sums(table, rows, weights, owner, n)
        vectors = np.bincount(owner * cfg.dims + table.bucket[rows], weights=table.sign[rows] * weights,
                              minlength=n * cfg.dims).astype(np.float64).reshape(n, cfg.dims)  # int if empty
        lengths = np.bincount(owner, weights=counts, minlength=n).astype(np.int64).tolist()
        return pack_bits(sums > 0), rows, weights, kept, lengths, vectors

    def _native_register(self, tokens: list[str], have: int,
                         learned: native_steps.Learned | None) -> tuple[list[int], bytes, bytes, bytes, bytes, list[str]]:
        """What the native term step asks for tokens it has no code for: their codes (registering the new
        ones here, as the Python path does), and the hash data and terms of the table's rows from ``have`` on;
        ``learned``: what the core decided itself and the table has not taken yet (`_learn`), taken first."""
        if learned is not None:
            self._learn(*learned)
        codes = self._token_codes(tokens)
        return (codes, *self._table.row_data(have), self._table.terms[have:])

    def _learn(self, tokens: list[str], codes: list[int], terms: list[str], *data: bytes) -> None:
        """Take what the native term step decided itself (`native_steps.NativeTerms.decides`) into `_codes` and the
        table: the codes of new tokens, and the new rows (their terms and hash data, as `_TermTable.row_data`
        gives them)."""
        self._codes.update(zip(tokens, codes, strict=True))
        self._table.extend(terms, *data)

    def _take_learned(self) -> None:
        """Take in what the native term step decided itself and the table does not hold yet, before the table
        is read: only then (a worker that sends columns never reads it)."""
        if self._native_terms is not None:
            self._native_terms.take_learned(self._learn)

    # -- the fast path: raw token counts -> term-table rows --------------------------------------------
    def _register(self, tokens: list[str]) -> list[int]:
        """Codes of distinct tokens not seen before (see ``self._codes``), their new terms added to the
        table in the order of their first token."""
        if self.config.tokenizer == "char":
            terms: list[str | None] = list(tokens)  # character n-grams are used as they are (see _counts_of_normalized)
        else:
            terms = list(map(term_of, tokens, repeat(self.resources.stopwords), repeat(self.resources.synonyms)))
        table = self._table
        index = table.index
        new = list(dict.fromkeys(t for t in terms if t is not None and t not in index))
        if new:
            table.reserve_many(new, self._factors(new))
        return [-1 if term is None else 2 * index[term] + (term != token)
                for token, term in zip(tokens, terms, strict=True)]

    def _factors(self, terms: list[str]) -> list[float]:
        """What one occurrence of each of some distinct terms weighs (`term_weights` is count x this factor)."""
        return list(term_weights(dict.fromkeys(terms, 1), self.config.weighting, self.resources.idf).values())

    def _token_lists(self, norm: str) -> Iterable[list[str]]:
        """The raw tokens of a normalised text: one list, or one per piece of a long text."""
        cfg = self.config
        if cfg.tokenizer == "char":
            return [char_shingles(norm, cfg.shingle)]
        if len(norm) <= PIECE_CHARS:  # iter_pieces would yield the text itself
            return [self.tokenizer.cut(norm)]
        return map(self.tokenizer.cut, iter_pieces(norm))

    def _tokens_many(self, norms: list[str]) -> list[list[str]]:
        """The raw tokens of each normalised text (`_token_lists` joined), segmented as one batch."""
        if self.config.tokenizer == "char":
            return [char_shingles(norm, self.config.shingle) for norm in norms]
        return self.tokenizer.cut_many(norms)

    def _token_codes(self, tokens: list[str]) -> list[int]:
        """The code of each token (see ``self._codes``); the tokens seen for the first time are filtered."""
        known = self._codes
        codes = list(map(known.get, tokens, repeat(-2)))
        if codes and min(codes) == -2:
            new = list(dict.fromkeys(t for t, code in zip(tokens, codes, strict=True) if code == -2))
            known.update(zip(new, self._register(new), strict=True))
            codes = list(map(known.__getitem__, tokens))
        return codes

    def _terms_of(self, norms: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For several normalised texts: the term-table rows of their terms, one text after the other,
        each text's in first-occurrence order (as `count_filtered` gives them); their counts; and how many
        terms each text has.

        Each text's raw tokens are counted first (one C loop), and only its distinct tokens are then mapped
        to codes (one more): a long text repeats most of its tokens (a classical one has a thousand tokens
        and a few hundred distinct), and a token stands for one code, so counting tokens or codes gives the
        same counts in the same order."""
        table, known = self._table, self._codes
        code_lists: list[Sequence[int]] = []
        count_lists: list[Iterable[int]] = []
        for raw in self._tokens_many(norms):
            tokens = Counter(raw)  # raw token -> count, in first-occurrence order
            try:
                # One C call looks up every distinct token (a KeyError means a token is new to the table).
                found = itemgetter(*tokens)(known) if len(tokens) > 1 else [known[t] for t in tokens]
            except KeyError:
                found = self._token_codes(list(tokens))
            code_lists.append(found)
            count_lists.append(tokens.values())
        table.flush()
        sizes = np.fromiter(map(len, code_lists), dtype=np.int64, count=len(code_lists))
        total = int(sizes.sum())
        codes = np.fromiter(chain.from_iterable(code_lists), dtype=np.int64, count=total)
        counts = np.fromiter(chain.from_iterable(count_lists), dtype=np.int64, count=total)
        owner = np.repeat(np.arange(len(norms), dtype=np.int64), sizes)
        terms = codes >= 0  # -1: no term (punctuation, a stopword)
        codes, counts, owner = codes[terms], counts[terms], owner[terms]
        if (codes & 1).any():  # a token stood for another term: merge rows within those texts
            return _merge_mapped(codes, counts, owner, len(norms))
        return codes >> 1, counts, np.bincount(owner, minlength=len(norms)).astype(np.int64)


_QUANT = 1024.0
#: Texts handled per numpy pass, and term rows per pass of the vote sums (bounds temporary arrays).
_DOCS_PER_PASS = 256
_ROWS_PER_PASS = 1 << 16
# _BYTE_BITS[v, k] = bit k of the byte value v (little-endian bit order, as in hashing.py).
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row of some unnormalised term vectors scaled to length 1 (a zero row stays zero), as float32. Only
    the texts with terms are scaled: a row is scaled by its own length alone, so the bits are those of scaling
    the whole chunk."""
    vectors = np.asarray(vectors, dtype=np.float64)
    lengths = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, lengths, out=np.zeros_like(vectors), where=lengths > 0).astype(np.float32)


def _vote_sums(table: _TermTable, rows: np.ndarray, weights: np.ndarray, owner: np.ndarray,
               n: int) -> np.ndarray:
    """SimHash vote sums, shape (n, bits): for text j and bit i, the sum over its terms of the weight
    (quantised to 1/1024) times +1 where the term's hash has bit i set, else -1.

    Quantised weights make every product and partial sum an integer, so the bits never depend on
    summation order, CPU or BLAS: float64 adds integers below 2^53 exactly in any order (texts whose
    total weight reaches 2^52 are summed in int64 instead). Per text, the weight is first added up per
    (byte position, byte value) of the term hashes, a histogram of 256 bins for each of the bits/8 bytes;
    the histogram times the bits of each byte value gives, per bit, the weight of the terms that have
    it set (``ones``), and the sum is ``2 * ones - total``."""
    nbytes = table.bits // 8
    wq = np.rint(weights * _QUANT)
    total = np.bincount(owner, weights=wq, minlength=n)
    hist = np.zeros(n * nbytes * 256, dtype=np.float64)
    lanes = np.arange(nbytes, dtype=np.int64) * 256
    for lo in range(0, len(rows), _ROWS_PER_PASS):
        hi = lo + _ROWS_PER_PASS
        index = (owner[lo:hi, None] * (nbytes * 256) + lanes) + table.digest[rows[lo:hi]]
        hist += np.bincount(index.ravel(), weights=np.repeat(wq[lo:hi], nbytes), minlength=len(hist))
    ones = (hist.reshape(n, nbytes, 256) @ _BYTE_BITS).reshape(n, table.bits)
    sums = 2.0 * ones - total[:, None]
    for j in np.flatnonzero(total >= 2.0**52).tolist():  # pragma: no cover - needs ~4e12 weighted tokens
        mine = owner == j
        votes = np.unpackbits(table.digest[rows[mine]], axis=1, bitorder="little").astype(np.int64) * 2 - 1
        sums[j] = np.sign((votes * wq[mine].astype(np.int64)[:, None]).sum(axis=0))
    return sums


def _pieces(norms: list[str]) -> tuple[list[str], list[int] | None]:
    """The pieces `Tokenizer.cut` segments the texts in, one after the other, and how many each text has
    (None when each text is one piece)."""
    if all(len(norm) <= PIECE_CHARS for norm in norms):
        return norms, None
    split = [[norm] if len(norm) <= PIECE_CHARS else list(iter_pieces(norm)) for norm in norms]
    return list(chain.from_iterable(split)), [len(p) for p in split]


def _batches(texts: Iterable[str]) -> Iterator[list[str]]:
    """Lists of up to `_DOCS_PER_PASS` texts, in order."""
    it = iter(texts)
    while batch := list(islice(it, _DOCS_PER_PASS)):
        yield batch


def _merge_mapped(codes: np.ndarray, counts: np.ndarray, owner: np.ndarray,
                  n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, counts and sizes with the counts of each row added up per text (codes ``2 * row`` and
    ``2 * row + 1`` are one row), rows in the order of their first code."""
    rows: list[int] = []
    summed: list[int] = []
    kept = np.zeros(n, dtype=np.int64)
    by_text: list[dict[int, int]] = [{} for _ in range(n)]
    for code, c, i in zip((codes >> 1).tolist(), counts.tolist(), owner.tolist(), strict=True):
        by_row = by_text[i]
        by_row[code] = by_row.get(code, 0) + c
    for i, by_row in enumerate(by_text):
        rows.extend(by_row)
        summed.extend(by_row.values())
        kept[i] = len(by_row)
    return np.array(rows, dtype=np.int64), np.array(summed, dtype=np.int64), kept


def _word_chars(norm: str) -> str:
    """The letters and digits of a text, in order (a long text a piece at a time: the regex keeps every run
    between two deletions as a string of its own until it joins them)."""
    if len(norm) <= _SHINGLE_CHUNK:
        return _NOT_ALNUM.sub("", norm)
    return "".join([_NOT_ALNUM.sub("", norm[i:i + _SHINGLE_CHUNK]) for i in range(0, len(norm), _SHINGLE_CHUNK)])


def _distinct_ngrams(chars: str, n: int) -> np.ndarray:
    """The distinct n-gram hashes of a long text, read `_SHINGLE_CHUNK` characters at a time. The new
    chunks are merged into the distinct hashes so far only once they outnumber them, so each hash is sorted
    a few times in all (merging every chunk made a 62 MB text take hours) and memory follows the number of
    distinct n-grams. The hashes are 32-bit values, kept as uint32 here (half the memory of uint64)."""
    acc, pending, size = _NO_HASHES.astype(np.uint32), [], 0
    for start in range(0, len(chars) - n + 1, _SHINGLE_CHUNK):
        part = unique_sorted(mh.ngram_hashes(chars[start:start + _SHINGLE_CHUNK + n - 1], n).astype(np.uint32))
        pending.append(part)
        size += len(part)
        if size > max(len(acc), _SHINGLE_CHUNK):
            acc, pending, size = unique_sorted(np.concatenate([acc, *pending])), [], 0
    return unique_sorted(np.concatenate([acc, *pending])) if pending else acc


def _shingle_sets(word_chars: Sequence[str], n: int) -> list[np.ndarray]:
    """The distinct n-gram hashes (`esdedup.fingerprint.minhash.ngram_hashes`, sorted) of each text of word characters.

    Texts up to `_SHINGLE_CHUNK` characters are hashed together in one numpy pass over their concatenation
    (n-grams that would cross from one text into the next are dropped); a longer text is read a chunk at
    a time, so memory follows its number of distinct n-grams, not its size."""
    out = [_NO_HASHES] * len(word_chars)
    batch = [i for i, c in enumerate(word_chars) if 0 < len(c) <= _SHINGLE_CHUNK]
    for i, chars in enumerate(word_chars):
        if len(chars) > _SHINGLE_CHUNK:
            out[i] = _distinct_ngrams(chars, n)
    if not batch:
        return out
    lengths = np.array([len(word_chars[i]) for i in batch], dtype=np.int64)
    owner = np.repeat(np.arange(len(batch), dtype=np.uint64), lengths)
    local = np.arange(len(owner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    hashes = mh.ngram_hashes("".join(word_chars[i] for i in batch), n) if len(owner) >= n else _NO_HASHES
    keep = local[:len(hashes)] <= np.repeat(lengths - n, lengths)[:len(hashes)]
    keys = [(owner[:len(hashes)][keep] << np.uint64(32)) | hashes[keep]]
    # A text shorter than n is one n-gram: itself.
    for k in np.flatnonzero(lengths < n).tolist():
        keys.append(np.array([(k << 32) | int(mh.ngram_hashes(word_chars[batch[k]], n)[0])], dtype=np.uint64))
    uniq = unique_sorted(np.concatenate(keys))  # sorted by text, then hash
    docs = (uniq >> np.uint64(32)).astype(np.int64)
    cuts = np.flatnonzero(np.diff(docs)) + 1
    for k, part in zip(docs[np.r_[0, cuts]].tolist(), np.split(uniq & np.uint64(0xFFFFFFFF), cuts), strict=True):
        out[batch[k]] = part
    return out
