"""Word segmentation backends: jieba (the reference, precise mode), rjieba (jieba-rs) and characters.

User words added for one config never leak into another: jieba's dictionary is a `Tokenizer`'s own, and
rjieba's segmenter is shared only by tokenizers with the same user words
(`esdedup.fingerprint.jieba_fast.rjieba_segmenter`). Segmentation of very long text goes piece by piece
(`iter_pieces`), which keeps memory bounded.

``jieba`` gives jieba's tokens, computed by `esdedup.fingerprint.jieba_fast` (jieba-rs's dictionary route in
native code and jieba's own HMM, so the route costs no Python step per character) unless user words are
added, which only jieba itself takes as jieba does; the environment variable ``ESDEDUP_JIEBA=reference``
makes it run jieba itself always (to compare). Where the native core is in use, a Fingerprinter's term step
cuts those tokens itself (`esdedup.fingerprint.native_steps.cut_step`) and asks this one only for the pieces it
leaves.
"""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from esdedup.errors import ConfigError

#: Pieces of at most this many characters are segmented at a time (cut at a sentence end or space).
PIECE_CHARS = 1 << 16
_BREAK = re.compile(r"[\s。！？；!?;\n]")


def iter_pieces(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    """Split text into pieces of about ``size`` characters, each ending at a sentence break or space
    when one is near, so segmentation sees whole sentences and memory stays bounded."""
    start, n = 0, len(text)
    while start < n:
        end = min(start + size, n)
        if end < n:
            window = text[end - min(size // 4, end - start) : end]
            last = None
            for m in _BREAK.finditer(window):
                last = m
            if last is not None:
                end = end - len(window) + last.end()
        yield text[start:end]
        start = end


def jieba_fast_applies(user_words: Sequence[tuple[str, int | None]]) -> bool:
    """Whether the ``jieba`` tokenizer's tokens are computed (`esdedup.fingerprint.jieba_fast`, or the native
    core's copy of it) rather than cut by jieba itself: no user words, and ``ESDEDUP_JIEBA`` is not
    ``reference``."""
    return not user_words and os.environ.get("ESDEDUP_JIEBA") != "reference"


class Tokenizer:
    """Segments normalised text into words.

    Args:
        backend: ``jieba``, ``rjieba`` or ``char`` (every character is a token; n-grams are made later).
        user_words: extra dictionary entries as (word, frequency or None).
    """

    def __init__(self, backend: str = "jieba", user_words: Sequence[tuple[str, int | None]] = ()) -> None:
        self.backend = backend
        self._cut: Callable[[str], list[str]]
        self._cut_many: Callable[[Sequence[str]], list[list[str]]] | None = None
        if backend == "jieba" and jieba_fast_applies(user_words):
            self._cut = lambda s: self._fast.cut(s)
            self._cut_many = lambda texts: self._fast.cut_many(texts)
        elif backend == "jieba":
            import jieba

            self._jieba = jieba.Tokenizer()
            for word, freq in user_words:
                self._jieba.add_word(word, freq)
            self._cut = lambda s: self._jieba.lcut(s, HMM=True)
        elif backend == "rjieba":
            self._user_words = user_words
            self._cut = lambda s: self._rjieba.cut(s, True)
        elif backend == "char":
            self._cut = list
        else:
            raise ConfigError(f"unknown tokenizer {backend!r}; use jieba, rjieba or char")

    @functools.cached_property
    def _fast(self) -> Any:
        """`JiebaFast`, made on the first cut (a Fingerprinter whose native core segments by itself never
        loads its dictionary)."""
        from esdedup.fingerprint.jieba_fast import JiebaFast

        return JiebaFast()

    @functools.cached_property
    def _rjieba(self) -> Any:
        """rjieba's segmenter, its dictionary loaded on the first cut (a Fingerprinter whose native core
        segments by itself never loads it)."""
        from esdedup.fingerprint.jieba_fast import rjieba_segmenter

        return rjieba_segmenter(tuple((word, freq) for word, freq in self._user_words))

    def cut(self, text: str) -> list[str]:
        """Segment ``text`` (already normalised) into tokens, spaces and punctuation included."""
        if len(text) <= PIECE_CHARS:
            return self._cut(text)
        out: list[str] = []
        for piece in iter_pieces(text):
            out.extend(self._cut(piece))
        return out

    def cut_many(self, texts: Sequence[str]) -> list[list[str]]:
        """`cut` of each text; a backend that segments a batch faster than text by text gets it whole."""
        if self._cut_many is None:
            return [self.cut(t) for t in texts]
        # The short texts in one batch; a long one piece by piece, as `cut` does.
        short = iter(self._cut_many([t for t in texts if len(t) <= PIECE_CHARS]))
        return [next(short) if len(t) <= PIECE_CHARS else self.cut(t) for t in texts]
