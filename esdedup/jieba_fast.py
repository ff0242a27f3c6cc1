"""jieba's precise mode (``jieba.lcut(text, HMM=True)``), token for token, several times faster.

jieba cuts a block of Chinese in two steps: the most probable route through its dictionary, then its HMM
(`esdedup.jieba_hmm`) on each run of characters the route leaves single, unless the run is itself a word.
jieba-rs (`rjieba`) ships the same dictionary and finds the same route in native code, but its HMM tables
differ in the last digits, so on near-ties it cuts differently (``常在前``: jieba 常/在/前, jieba-rs 常在/前;
13 texts in 100,000 poems). So this takes the route from jieba-rs (HMM off), finds the single-character
runs, and cuts them with jieba's own HMM, for a whole batch at once.

The split into blocks is jieba's: where jieba and jieba-rs split differently (letters, digits and
``+#&._%-`` inside a Chinese block, CJK extension characters, which jieba does not count as Chinese), the
text's blocks are cut by jieba itself, or, outside Chinese blocks, the way jieba does (one token a
character, whitespace as it comes). Equality with jieba is checked by the tests on poems, news text and
random mixed-script strings; `Tokenizer` falls back to jieba itself when user words are added.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

from .jieba_hmm import FIRST, LAST, cut_runs

#: jieba's blocks (``jieba.re_han_default``, ``jieba.re_skip_default``).
_HAN_BLOCK = re.compile(r"([\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]+)")
_SKIP = re.compile(r"(\r\n|\s)")
_CHINESE_BLOCK = re.compile(r"[\u4E00-\u9FD5]+")
#: A character outside what both libraries treat alike (Chinese of jieba's range, ASCII and CJK punctuation
#: other than jieba's in-block ``+#&._%-``, plain whitespace): a text with none is cut by jieba-rs in one call.
_NOT_ALIKE = re.compile(r"[^\u4E00-\u9FD5 \t\n\r\u3000-\u303F!\"'(),/:;<=>?@\[\]^`{|}~\\*$·—…‘’“”]")


class JiebaFast:
    """Segments like ``jieba.Tokenizer().lcut(text, HMM=True)`` with jieba's default dictionary.

    >>> JiebaFast().cut("造次常在前，我们去公园散步。")
    ['造次', '常', '在', '前', '，', '我们', '去', '公园', '散步', '。']
    """

    def __init__(self) -> None:
        import jieba
        import rjieba

        self._route = rjieba.Jieba()
        self._jieba = jieba.Tokenizer()
        self._jieba.initialize()
        self._freq: dict[str, int] = self._jieba.FREQ

    def cut(self, text: str) -> list[str]:
        return self.cut_many([text])[0]

    def cut_many(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens of each text."""
        parts = [[text] if not _NOT_ALIKE.search(text) else self._blocks(text) for text in texts]
        # Every str among the parts is cut by the route + HMM below, every list is final already.
        routed = [p for p in chain.from_iterable(parts) if isinstance(p, str)]
        cut = iter(self._route_and_hmm(routed))
        return [[*chain.from_iterable(next(cut) if isinstance(p, str) else p for p in text_parts)]
                for text_parts in parts]

    def _blocks(self, text: str) -> list[Any]:
        """A text jieba-rs would split otherwise, as jieba does: Chinese blocks left as str (to be routed),
        other blocks as their final tokens."""
        out: list[Any] = []
        for block in _HAN_BLOCK.split(text):
            if not block:
                continue
            if _CHINESE_BLOCK.fullmatch(block):
                out.append(block)
            elif _HAN_BLOCK.fullmatch(block):
                out.append(self._jieba.lcut(block, HMM=True))
            else:
                out.append([t for piece in _SKIP.split(block) if piece
                            for t in ([piece] if _SKIP.fullmatch(piece) else piece)])
        return out

    def _route_and_hmm(self, texts: list[str]) -> list[list[str]]:
        """Texts of Chinese blocks and the characters both libraries treat alike: jieba-rs's route, its
        runs of single Chinese characters (within a text) cut by jieba's HMM unless a run is a word."""
        if not texts:
            return []
        routes = [self._route.cut(t, False) for t in texts]
        sizes = np.fromiter(map(len, routes), dtype=np.int64, count=len(routes))
        tokens = list(chain.from_iterable(routes))
        lens = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        joined = "".join(tokens)
        starts = np.cumsum(lens) - lens
        first_char = np.frombuffer(joined.encode("utf-32-le"), dtype="<u4")[starts]
        single = (lens == 1) & (first_char >= FIRST) & (first_char <= LAST)
        first_tok = np.cumsum(sizes) - sizes
        runs_from, runs_to = _runs(single, first_tok[sizes > 0], (first_tok + sizes - 1)[sizes > 0])
        runs = [joined[a:a + n] for a, n in zip(starts[runs_from].tolist(), (runs_to - runs_from + 1).tolist(),
                                                strict=True)]
        hmm = [i for i, run in enumerate(runs) if not self._freq.get(run)]  # a run that is a word stays single
        words, counts = cut_runs([runs[i] for i in hmm])
        out: list[str] = []
        done, w = 0, 0
        new_sizes = sizes.copy()
        owner = np.searchsorted(first_tok, runs_from[hmm], side="right") - 1 if hmm else np.zeros(0, np.int64)
        for a, b, c, text in zip(runs_from[hmm].tolist(), runs_to[hmm].tolist(), counts.tolist(), owner.tolist(),
                                 strict=True):
            out.extend(tokens[done:a])
            out.extend(words[w:w + c])
            new_sizes[text] += c - (b - a + 1)
            done, w = b + 1, w + c
        out.extend(tokens[done:])
        bounds = np.cumsum(new_sizes).tolist()
        return [out[a:b] for a, b in zip([0, *bounds[:-1]], bounds, strict=True)]


def _runs(flags: np.ndarray, firsts: np.ndarray, lasts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) index of each run of 2+ consecutive True ``flags``, runs cut at each ``firsts`` /
    ``lasts`` index (where one text's tokens end and the next one's begin)."""
    f = flags.astype(np.int8)
    prev = np.r_[np.int8(0), f[:-1]]
    prev[firsts] = 0
    nxt = np.r_[f[1:], np.int8(0)]
    nxt[lasts] = 0
    begin = np.flatnonzero(f & (1 - prev))
    end = np.flatnonzero(f & (1 - nxt))
    long = end > begin
    return begin[long], end[long]
