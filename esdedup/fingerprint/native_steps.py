"""The fingerprint's native steps (in the extension that `esdedup.util.native` loads): the MinHash step,
the term step, the band keys and the steps of normalisation (cleaning, t2s, folding) of
`Fingerprinter.fingerprint_many` for a whole batch, in Rust, with the GIL released.

It computes what the Python path computes, bit for bit (tests/unit/test_native.py): normalised texts ->
word characters -> distinct character n-gram hashes -> b-bit MinHash signatures -> LSH band keys, and the
number of distinct n-grams. The Python side stays the definition: it hands the extension the permutation
coefficients (`esdedup.fingerprint.minhash.permutations`) and which code points are word characters
(``str.isalnum`` of this interpreter, what the n-grams are made of), so the two cannot drift apart on a
Unicode version.

The term step (`NativeTerms`) takes each text's raw tokens and gives its term rows and weights, SimHash and
unnormalised TF vector: what `Fingerprinter._terms_of` and `_vote_sums` compute. It keeps a copy of the
Fingerprinter's token codes and term hash data. Which term a new token is, and a new term's hash data and
weight factor, it decides itself under the weightings of `DECIDED_WEIGHTINGS`, by `term_of`'s rules handed
over as data (this interpreter's ``str.isspace`` and ``str.isalnum``, the stopwords and synonyms), and keeps
what it decided until the Fingerprinter reads its table (`NativeTerms.take_learned`); otherwise (tfidf, or a
token with a lone surrogate) it asks the Fingerprinter.

For the ``rjieba`` and ``jieba`` tokenizers the term step segments the texts itself (`cut_step`,
`NativeTerms.run_cut`), with the jieba-rs version rjieba is built with (for ``jieba``, the core's copy of
`esdedup.fingerprint.jieba_fast` with jieba's own HMM tables), so a token becomes a Python str only when the
Fingerprinter reads its table or decides the token itself. A text the core does not cut as jieba would (a
block only jieba itself cuts) is handed back and cut by the Fingerprinter's Python tokenizer.

The cleaning step (`clean_step`) is `esdedup.fingerprint.normalize._clean_nfkc` for the texts it can do
from the tables `_clean_nfkc` itself reads (made by this interpreter's unicodedata), and hands the others
(any character whose NFKC needs unicodedata) back to it. The folding step (`fold_step`) is the case folding
and whitespace of `esdedup.fingerprint.normalize._after_clean`, from this interpreter's ``str.casefold`` and
``str.isspace`` (`esdedup.fingerprint.normalize.fold_tables`).

The t2s step (`t2s_step`) is OpenCC's ``t2s`` conversion, with the dictionaries of the installed OpenCC
read by `esdedup.fingerprint.opencc_tables` and checked on samples against OpenCC when it is made; an OpenCC,
config or dictionary it does not recognise leaves the conversion to OpenCC.

Used when the native core is in use (`esdedup.util.native.enabled`) when a `Fingerprinter` is made;
otherwise everything runs in Python, with the same results.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, partial
from typing import Any

import numpy as np

from esdedup.fingerprint import minhash as mh
from esdedup.fingerprint import normalize as nz
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.normalize import is_word_char
from esdedup.fingerprint.tokenize import jieba_fast_applies
from esdedup.util import native

#: (LSH band keys, MinHash signature, number of distinct n-grams) of one text, as `Fingerprint` keeps them.
MinHashPart = tuple[list[str], np.ndarray | None, int]


def reproduces(config: FingerprintConfig) -> bool:
    """Whether the native core computes this config's MinHash parts: every config whose texts get
    signatures (`FingerprintConfig.gets_signatures`), whatever its n-gram size, permutation count and LSH
    layout; the other configs have no MinHash step."""
    return config.gets_signatures


@lru_cache(maxsize=1)
def word_table() -> bytes:
    """One byte per code point: 1 for a word character (`esdedup.fingerprint.normalize.is_word_char`, what the
    n-grams are made of), else 0. Made once per process, on the first native step, 256 code points at a
    time: a block of word characters only, or (``\\w`` less the underscore) of none, is one answer; only a
    block of both is asked character by character."""
    every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    parts = []
    for start in range(0, 0x110000, 256):
        block = every[start:start + 256]
        if block.isalnum():
            parts.append(b"\x01" * 256)
        elif _WORD_CHAR.search(block) is None:
            parts.append(bytes(256))
        else:
            parts.append(bytes(map(is_word_char, block)))
    return b"".join(parts)


_WORD_CHAR = re.compile(r"[^\W_]")


class NativeMinHash:
    """The MinHash step of one MinHash layout, in the extension: `parts` is what `Fingerprinter` keeps of
    each text. Immutable; one instance serves any number of threads at once."""

    def __init__(self, perm: int, bands: int, rows: int, ngram: int, chunk: int, kernel: str | None = None) -> None:
        """``perm``, ``bands``, ``rows``, ``ngram``: a config's ``minhash_*`` settings; ``chunk`` as in
        `minhash_step`; ``kernel``: which compiled form of the extension's loops runs (one of `kernels`; by
        default the fastest this CPU has)."""
        if native.loaded() is None:
            raise RuntimeError(native.extension_missing())
        a, b = mh.permutations(perm)
        self.n_perm = perm
        self._core: Any = native.loaded().MinHashCore(word_table(), a.tolist(), b.tolist(), ngram, bands, rows, chunk,
                                                 kernel)

    @classmethod
    def for_config(cls, config: FingerprintConfig, chunk: int, kernel: str | None = None) -> NativeMinHash:
        return cls(config.minhash_perm, config.minhash_bands, config.minhash_rows, config.minhash_ngram, chunk,
                   kernel)

    @property
    def kernel(self) -> str:
        """The compiled form of the loops in use: portable, avx2 or avx512."""
        return str(self._core.kernel)

    def parts(self, norms: Sequence[str]) -> list[MinHashPart]:
        """(LSH band keys, signature, distinct n-grams) of each normalised text; ([], None, 0) for a text
        without word characters."""
        raw, keys, counts = self._core.sketch(list(norms))
        sigs = np.frombuffer(raw, dtype="<u4").reshape(len(counts), self.n_perm).astype(np.uint32, copy=False)
        return [(keys[i], sigs[i], count) if count else ([], None, 0) for i, count in enumerate(counts)]


def minhash_step(config: FingerprintConfig, chunk: int) -> NativeMinHash | None:
    """The native MinHash step for ``config``, or None when the Python path is to run it (the extension is
    not in use, or the config has no MinHash step). ``chunk``: the word characters the Python path turns
    into n-grams at a time (it decides which n-grams a text longer than that has when n exceeds it). One
    step per layout is made and shared by every Fingerprinter."""
    if not native.enabled() or not reproduces(config):
        return None
    return _shared_step(config.minhash_perm, config.minhash_bands, config.minhash_rows, config.minhash_ngram, chunk)


_shared_step = lru_cache(maxsize=16)(NativeMinHash)


#: The weightings whose weight is the count times a per-term factor computed in Python (all there are now);
#: a config with another one runs the term step in Python.
TERM_WEIGHTINGS = ("tf", "tf_length", "tfidf")
#: (SimHash values; term rows and weights of all texts, one after the other; terms per text; each text's
#: total count; unnormalised vectors, len(texts) x dims float64), as `NativeTerms.run` gives them.
TermParts = tuple[list[int], np.ndarray, np.ndarray, np.ndarray, list[int], np.ndarray]
#: What the term step decided itself, as `NativeTerms.take_learned` hands it on: (new tokens; their codes; the
#: new rows' terms; their digest bytes, buckets as int64, signs as float32, factors as float64, little-endian).
Learned = tuple[list[str], list[int], list[str], bytes, bytes, bytes, bytes]


class NativeTerms:
    """The term step of one Fingerprinter, in the extension. Holds that Fingerprinter's token codes and
    term hash data (a copy, grown as new tokens come), so it is not shared. New tokens are decided by the
    Fingerprinter (``register``) or, once `decide_terms` was given its rules, by the core itself, which keeps
    what it decided until the Fingerprinter takes it (`take_learned`): a worker that only sends columns
    never reads it, and makes no Python object for it."""

    def __init__(self, bits: int, dims: int, weighted: bool) -> None:
        if native.loaded() is None:
            raise RuntimeError(native.extension_missing())
        self.dims = dims
        self._core: Any = native.loaded().TermCore(bits, dims, weighted)
        # The core changes its table during a batch and lets go of the GIL meanwhile: a second thread calling
        # it then would be refused (PyO3's borrow check), so threads that share a Fingerprinter take turns.
        self._lock = threading.Lock()
        #: Whether the core decides new tokens itself (`decide_terms`).
        self.decides = False

    @property
    def rows(self) -> int:
        """How many rows of the term table the core holds."""
        return int(self._core.rows)

    @property
    def learned_rows(self) -> int:
        """Rows the core decided itself (its last ones) that `take_learned` has not given yet."""
        with self._lock:
            return int(self._core.learned_rows)

    def take_learned(self, take: Callable[..., None]) -> None:
        """Hand what the core decided itself since it was last asked to ``take(tokens, codes, terms,
        *hash_data)`` (`esdedup.fingerprint.fingerprinter.Fingerprinter._learn`), in the order decided; the
        core then forgets it. Nothing when it decided nothing."""
        with self._lock:  # taken and handed on as one step: two threads never take them out of order
            learned = self._core.take_learned()
            if learned is not None:
                take(*learned)

    def clear(self) -> None:
        """Forget every token and term (the Fingerprinter cleared its table)."""
        with self._lock:
            self._core.clear()

    def decide_terms(self, stopwords: frozenset[str], synonyms: Mapping[str, str], *, raw: bool,
                     by_length: bool) -> bool:
        """Have the core decide new tokens itself, as `esdedup.fingerprint.features.term_of` and
        `Fingerprinter._factors` would (``raw``: tokens are terms as they are; ``by_length``: one occurrence
        weighs the term's length, else 1), from this interpreter's ``str.isspace`` and ``str.isalnum``.
        False, and the Fingerprinter keeps deciding, when a stopword or synonym is no UTF-8 (a lone
        surrogate)."""
        try:
            self._core.decide_terms(_fold_tables()[1], word_table(), list(stopwords), list(synonyms.items()),
                                    raw, by_length)
        except UnicodeEncodeError:
            return False
        self.decides = True
        return True

    def add_rows(self, terms: list[str], row_data: Callable[[int], tuple[bytes, ...]]) -> None:
        """Hand the core the rows of the Fingerprinter's table it does not hold yet (``terms``: the table's
        terms; ``row_data(start)``: the hash data of rows ``start..``, `_TermTable.row_data`)."""
        with self._lock:
            have = int(self._core.rows)
            if len(terms) > have:
                self._core.add_rows(terms[have:], *row_data(have))

    def run(self, token_lists: list[list[str]], register: Any) -> TermParts:
        """The term parts of texts given as their raw tokens. ``register(tokens, rows, learned)`` gets the
        tokens the core has no code for, the number of rows it holds, and what `take_learned` would hand on
        (None when nothing; the Fingerprinter takes it first), and returns the tokens' codes and the hash
        data and terms of the rows from there on
        (`esdedup.fingerprint.fingerprinter.Fingerprinter._native_register`); when the core decides itself,
        it keeps what it decided for `take_learned`."""
        with self._lock:
            simhashes, rows, weights, kept, lengths, vectors = self._core.run(token_lists, register)
        return self._parts(simhashes, rows, weights, kept, lengths, vectors, len(token_lists))

    def run_cut(self, jieba: Any, texts: list[str], pieces: list[int] | None, register: Any,
                cut_left: Callable[[list[str]], list[list[str]]] | None = None) -> TermParts:
        """`run` of texts segmented by the core with ``jieba`` (`cut_step`): ``texts`` are the pieces of
        all texts one after the other (`esdedup.fingerprint.tokenize.iter_pieces`), ``pieces`` how many each
        text has (None: one each). ``cut_left`` gives the tokens of the pieces the core leaves to Python
        (for ``jieba``, those only jieba itself cuts), called once with all of them."""
        with self._lock:
            simhashes, rows, weights, kept, lengths, vectors = self._core.run_cut(jieba, texts, pieces, register,
                                                                                  cut_left)
        return self._parts(simhashes, rows, weights, kept, lengths, vectors, len(kept))

    def _parts(self, simhashes: list[int], rows: bytes, weights: bytes, kept: list[int], lengths: list[int],
               vectors: bytes, n: int) -> TermParts:
        return (simhashes, np.frombuffer(rows, dtype="<i8").astype(np.int64, copy=False),
                np.frombuffer(weights, dtype="<f8").astype(np.float64, copy=False),
                np.array(kept, dtype=np.int64), lengths,
                np.frombuffer(vectors, dtype="<f8").astype(np.float64, copy=False).reshape(n, self.dims))


def reproduces_terms(config: FingerprintConfig) -> bool:
    """Whether the native term step computes this config's terms, SimHash and vector: any width esdedup
    has (64, 128) and any weighting of `TERM_WEIGHTINGS`."""
    return config.bits in (64, 128) and config.weighting in TERM_WEIGHTINGS


#: The weightings whose weight of one occurrence the core computes itself (1, the term's length), so that
#: it decides new tokens without asking Python; a tfidf factor (from an idf table) stays Python's.
DECIDED_WEIGHTINGS = ("tf", "tf_length")


def terms_step(config: FingerprintConfig, stopwords: frozenset[str] = frozenset(),
               synonyms: Mapping[str, str] | None = None) -> NativeTerms | None:
    """A native term step for a new Fingerprinter of ``config`` (with its loaded stopwords and synonyms),
    or None when the Python path is to run it (the extension is not in use, or the config is not
    reproduced). It decides new tokens itself where the config's weighting is one of `DECIDED_WEIGHTINGS`."""
    if not native.enabled() or not reproduces_terms(config):
        return None
    step = NativeTerms(config.bits, config.dims, config.weighting != "tf")
    if config.weighting in DECIDED_WEIGHTINGS:
        step.decide_terms(stopwords, synonyms or {}, raw=config.tokenizer == "char",
                          by_length=config.weighting == "tf_length")
    return step


def cut_step(config: FingerprintConfig, user_words: Sequence[tuple[str, int | None]]) -> Any:
    """The core's own segmenter for ``config``'s tokenizer (for `NativeTerms.run_cut`), or None when the
    tokens come from Python: the extension is not in use, the tokenizer is ``char``, or it is ``jieba``
    cut by jieba itself (`esdedup.fingerprint.tokenize.jieba_fast_applies`). One per list of user words
    and process (loading the dictionary is most of a worker's start-up)."""
    if not native.enabled():
        return None
    if config.tokenizer == "rjieba":
        return _jieba_core(tuple(user_words))
    if config.tokenizer == "jieba" and jieba_fast_applies(user_words):
        return _jieba_precise_core()
    return None


@lru_cache(maxsize=1)
def _jieba_precise_core() -> Any:
    """The core's copy of `esdedup.fingerprint.jieba_fast.JiebaFast`, with jieba's own HMM tables."""
    from esdedup.fingerprint.jieba_hmm import tables

    assert native.loaded() is not None
    return native.loaded().JiebaCore([], tuple(t.astype("<f8").tobytes() for t in tables()))


@lru_cache(maxsize=4)
def _jieba_core(user_words: tuple[tuple[str, int | None], ...]) -> Any:
    assert native.loaded() is not None
    return native.loaded().JiebaCore(list(user_words))


def fold_step() -> Any:
    """The native case folding and whitespace of a batch (`esdedup.fingerprint.normalize.normalize_many`'s
    ``fold_many``), or None when the extension is not in use. One per process."""
    if not native.enabled():
        return None
    return _fold_core().fold


@lru_cache(maxsize=1)
def _fold_core() -> Any:
    assert native.loaded() is not None
    return native.loaded().FoldCore(*_fold_tables())


@lru_cache(maxsize=1)
def _fold_tables() -> tuple[list[tuple[int, str]], list[int]]:
    """`esdedup.fingerprint.normalize.fold_tables`, made once per process (the folding step and the term
    rules' whitespace)."""
    return nz.fold_tables()


def clean_step() -> Any:
    """The native `_clean_nfkc` of a batch (`esdedup.fingerprint.normalize.normalize_many`'s ``clean_many``),
    or None when the extension is not in use. One per process."""
    if not native.enabled():
        return None
    return _clean_core().clean


@lru_cache(maxsize=1)
def _clean_core() -> Any:
    classes, replace = nz._tables()
    assert native.loaded() is not None
    return native.loaded().CleanCore(classes.astype(np.uint8).tobytes(), replace.astype("<u4").tobytes())


def _ids_tree(depth: int) -> str:
    """An ideographic description sequence of ``depth`` levels of ⿰ over 臺 (2^(depth+1) - 1 code points)."""
    return "臺" if depth == 0 else "⿰" + _ids_tree(depth - 1) * 2


#: Texts the t2s step converts with both the core and OpenCC when it is made; they must agree. Traditional
#: text with phrases of TSPhrases, compatibility ideographs (the normalization dictionary; one that only it
#: changes, before a phrase that maps to itself), ideographic description sequences (kept whole when
#: complete; 臺 inside the ones just past OpenCC's bounds of 64 code points and 16 levels is converted), a
#: NUL, text the tables do not touch.
T2S_SAMPLES = ("臺灣居民明起來北京，乾斷食、乾紅、黃樑美夢。沈澱出來的頭髮", "\uf900\uf9a8\U0002f800豈", "\ufa0c於其一",
               "⿰氵義義⿰義⿱⿰", "⿲臺" + _ids_tree(4) + "⿾" + _ids_tree(4), "⿰臺" + "⿾" * 15 + "臺",
               "a\x00臺灣b Ｆｕｌｌ 😀 𠀀", "")


def t2s_step() -> Callable[[list[str]], list[str | None]] | None:
    """OpenCC's ``t2s`` conversion of a batch in the extension (`esdedup.fingerprint.normalize.normalize_many`'s
    ``t2s_many``; None for a text with a lone surrogate), from the dictionaries of the installed OpenCC
    (`esdedup.fingerprint.opencc_tables`). None when the extension is not in use, or the OpenCC, its config
    or its dictionaries are not what the core reproduces (`t2s_unavailable` says why): OpenCC converts."""
    if not native.enabled():
        return None
    core, _ = _t2s_core()
    return None if core is None else core.convert


def t2s_unavailable() -> str:
    """Why the t2s step is not in the extension ("" when it is)."""
    return native.unavailable_reason() or _t2s_core()[1]


@lru_cache(maxsize=1)
def _t2s_core() -> tuple[Any, str]:
    """(the extension's converter of this process's ``opencc.OpenCC("t2s")``, "") or (None, why not)."""
    from esdedup.fingerprint import opencc_tables

    assert native.loaded() is not None
    opencc = nz._t2s()
    try:
        stages = opencc_tables.t2s_stages(opencc)
        core = native.loaded().OpenccCore(stages)
    except (opencc_tables.Unrecognised, ValueError) as exc:  # ValueError: tables the core refuses
        return None, f"the t2s tables are not read: {exc}"
    # Every 16th key of each table, apart and run together (where keys of one table meet keys of another).
    keys = [key for stage in stages for table in stage for key, _ in table[::16]]
    samples = [*T2S_SAMPLES, "".join(T2S_SAMPLES), "|".join(keys), "".join(keys)]
    got = [text if out is None else out for text, out in zip(samples, core.convert(samples), strict=True)]
    if got != [opencc.convert(text) for text in samples]:
        return None, "the core's t2s of the samples is not OpenCC's"
    return core, ""


def band_keys_step(layout: BandLayout) -> Callable[[list[int]], list[list[str]]] | None:
    """`BandLayout.keys` of many SimHash values at once in the extension (the layout's tables handed over as
    (start bit, width) blocks), or None when the extension is not in use."""
    if not native.enabled():
        return None
    tables = [[layout.spans[b] for b in table] for table in layout.tables]
    return partial(native.loaded().band_keys, tables=tables)
