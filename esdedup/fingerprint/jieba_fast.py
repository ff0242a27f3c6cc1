"""jieba's precise mode (``jieba.lcut(text, HMM=True)``), token for token, its dictionary route in native code.

jieba cuts a block of Chinese in two steps: the most probable route through its dictionary, then its HMM
(`esdedup.fingerprint.jieba_hmm`) on each run of characters the route leaves single, unless the run is itself a word.
jieba-rs (`rjieba`) ships the same dictionary and finds the same route in native code, but its HMM tables
differ in the last digits, so on near-ties it cuts differently (``常在前``: jieba 常/在/前, jieba-rs 常在/前;
13 texts in 100,000 poems). So this takes the route from jieba-rs (HMM off), finds the single-character
runs, and cuts them with jieba's own HMM, for a whole batch at once.

The split into blocks is jieba's: where jieba and jieba-rs split differently (CJK extension characters,
which jieba does not count as Chinese; letters, digits and ``+#&._%-`` inside a Chinese block), the text is
taken block by block. Outside Chinese blocks the tokens are jieba's one token a character, whitespace as it
comes. A block mixing Chinese and letters or digits takes jieba-rs's route too, whose letter and digit
steps jieba-rs runs together (they are single steps to jieba), and the runs of single steps are cut as
``jieba.finalseg`` cuts them (letters and digits by its pattern, Chinese by the HMM); a block whose route
jieba-rs makes ambiguous (a run of letters that is also a dictionary word) is cut by jieba itself. Equality
with jieba is checked by the tests on poems, news text and random mixed-script strings; `Tokenizer` falls
back to jieba itself when user words are added. The native core's copy of this (native/src/segment.rs, used
by the Fingerprinter's term step) follows this module, which stays the definition.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

from esdedup.fingerprint.jieba_hmm import FIRST, LAST, cut_runs

#: jieba's blocks (``jieba.re_han_default``, ``jieba.re_skip_default``).
_HAN_BLOCK = re.compile(r"([\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]+)")
_SKIP = re.compile(r"(\r\n|\s)")
_CHINESE_BLOCK = re.compile(r"[\u4E00-\u9FD5]+")
#: How ``jieba.finalseg.cut`` splits a run of single steps: Chinese for the HMM, the rest by this pattern.
_FINALSEG_CHINESE = re.compile(r"([\u4E00-\u9FD5]+)")
_FINALSEG_SKIP = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")
#: A character outside what both libraries treat alike (Chinese of jieba's range, ASCII and CJK punctuation
#: other than jieba's in-block ``+#&._%-``, plain whitespace): a text with none is cut by jieba-rs in one call.
_NOT_ALIKE = re.compile(r"[^\u4E00-\u9FD5 \t\n\r\u3000-\u303F!\"'(),/:;<=>?@\[\]^`{|}~\\*$·—…‘’“”]")


@functools.lru_cache(maxsize=4)
def rjieba_segmenter(user_words: tuple[tuple[str, int | None], ...]) -> Any:
    """rjieba's segmenter with jieba's dictionary and ``user_words``, one per process for each set of user
    words: loading the dictionary takes 0.15 s and 24 MB, which every Fingerprinter made (a service's, a
    test's) paid again. Shared, it is never changed after it is made (its cuts only read it:
    threads may cut at once), so user words of one config still never reach another's."""
    import rjieba

    segmenter = rjieba.Jieba()
    for word, freq in user_words:
        # jieba-rs needs a frequency; None lets it pick one that keeps the word whole.
        segmenter.add_word(word, freq, None)
    return segmenter


class JiebaFast:
    """Segments like ``jieba.Tokenizer().lcut(text, HMM=True)`` with jieba's default dictionary.

    >>> JiebaFast().cut("造次常在前，我们去公园散步。")
    ['造次', '常', '在', '前', '，', '我们', '去', '公园', '散步', '。']
    """

    def __init__(self) -> None:
        self._route = rjieba_segmenter(())  # the process's one, without user words: it is only read
        # "Is this a word of the dictionary" is asked of jieba-rs: the same dictionary, and the same answer
        # as ``bool(jieba's FREQ.get(s))`` for every key of FREQ (tested). jieba itself is loaded only for a
        # block only it can cut: loading its dictionary is a start-up cost every fingerprint worker would pay.
        self._is_word = self._route.has_word
        self._reference: Any = None

    def _jieba(self) -> Any:
        if self._reference is None:
            import jieba

            self._reference = jieba.Tokenizer()
            self._reference.initialize()
        return self._reference

    def cut(self, text: str) -> list[str]:
        return self.cut_many([text])[0]

    def cut_many(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens of each text."""
        held_runs: list[str] = []  # Chinese runs of mixed blocks, for the HMM (see _Held)
        parts = [[text] if not _NOT_ALIKE.search(text) else self._blocks(text, held_runs) for text in texts]
        # Every str among the parts is cut by the route + HMM below, every list is final already.
        routed = [p for p in chain.from_iterable(parts) if isinstance(p, str)]
        cut = iter(self._route_and_hmm(routed))
        words, counts = cut_runs(held_runs)
        bounds = np.cumsum(counts).tolist()
        run_words = [words[a:b] for a, b in zip([0, *bounds][:-1], bounds, strict=True)]

        def tokens(part: Any) -> list[str]:
            if isinstance(part, str):
                return next(cut)
            if isinstance(part, _Held):
                return part.fill(run_words)
            return part  # type: ignore[no-any-return]

        return [[*chain.from_iterable(map(tokens, text_parts))] for text_parts in parts]

    def _blocks(self, text: str, held_runs: list[str]) -> list[Any]:
        """A text jieba-rs would split otherwise, block by block as jieba splits it: Chinese blocks left as
        str (to be routed in the batch), mixed blocks as `_Held`, other blocks as their final tokens."""
        out: list[Any] = []
        alike: list[str] = []  # consecutive blocks jieba-rs cuts as jieba does: routed as one str
        for block in _HAN_BLOCK.split(text):
            if _CHINESE_BLOCK.fullmatch(block) or not (_HAN_BLOCK.fullmatch(block) or _NOT_ALIKE.search(block)):
                alike.append(block)
                continue
            if alike:
                out.append("".join(alike))
                alike = []
            if _HAN_BLOCK.fullmatch(block):
                out.append(self._mixed_block(block, held_runs))
            else:
                out.append([t for piece in _SKIP.split(block) if piece
                            for t in ([piece] if _SKIP.fullmatch(piece) else piece)])
        if alike:
            out.append("".join(alike))
        return out

    def _mixed_block(self, block: str, held_runs: list[str]) -> Any:
        """jieba's ``__cut_DAG`` of a block with letters or digits: jieba-rs's route (its letter and digit
        runs taken apart into the single steps they are), then each run of single steps cut as jieba does."""
        steps: list[str] = []
        for token in self._route.cut(block, False):
            if len(token) > 1 and token.isascii() and token.isalnum():
                if self._is_word(token):  # a word or single steps run together: only jieba can tell
                    return self._jieba().lcut(block, HMM=True)
                steps.extend(token)
            else:
                steps.append(token)
        held = _Held()
        single: list[str] = []
        for step in [*steps, ""]:  # "" flushes the last run
            if len(step) == 1:
                single.append(step)
                continue
            if single:
                self._cut_single_steps(single, held, held_runs)
                single = []
            if step:
                held.items.append(step)
        return held

    def _cut_single_steps(self, run: list[str], held: _Held, held_runs: list[str]) -> None:
        """A run of single route steps, as jieba cuts it: one step as it is, a dictionary word as single
        characters, anything else by ``jieba.finalseg.cut`` (Chinese runs held for the batch's HMM)."""
        joined = "".join(run)
        if len(run) == 1 or self._is_word(joined):
            held.items.extend(run)
            return
        for part in _FINALSEG_CHINESE.split(joined):
            if len(part) > 1 and _FINALSEG_CHINESE.fullmatch(part):
                held.items.append(len(held_runs))
                held_runs.append(part)
            elif _FINALSEG_CHINESE.fullmatch(part):
                held.items.append(part)
            else:
                held.items.extend(p for p in _FINALSEG_SKIP.split(part) if p)

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
        hmm = [i for i, run in enumerate(runs) if not self._is_word(run)]  # a run that is a word stays single
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
        return [out[a:b] for a, b in zip([0, *bounds][:-1], bounds, strict=True)]


class _Held:
    """A mixed block's tokens with holes: an int stands for the HMM's words of that Chinese run."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[str | int] = []

    def fill(self, run_words: list[list[str]]) -> list[str]:
        return [w for item in self.items for w in (run_words[item] if isinstance(item, int) else (item,))]


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
