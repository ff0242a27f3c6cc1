"""jieba's HMM for runs of characters its dictionary leaves single (`jieba.finalseg`), over many runs at once.

jieba's precise mode cuts a run of single Chinese characters, which is not a dictionary word, with a
four-state HMM (B begins a word, M is inside one, E ends it, S stands alone) decoded by Viterbi. This module
computes the same cuts, bit for bit, for a whole batch of runs in one numpy pass per character position:
the same float64 sums in the same order (previous score + transition, then + emission; an emission jieba
lacks is its ``MIN_FLOAT``), and the same tie-breaking (among equal scores jieba's ``max`` over
``(score, state)`` keeps the state whose name sorts last). Pure: the probability tables are jieba's own,
read once from its files; no other I/O.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

B, M, E, S = 0, 1, 2, 3
_MIN_FLOAT = -3.14e100  # jieba.finalseg.MIN_FLOAT
#: The characters jieba's HMM sees (its ``re_han``): runs hold nothing else.
FIRST, LAST = 0x4E00, 0x9FD5
#: The longest run decoded in one piece (`_bounded`); a longer run is decoded as runs of this length.
MAX_RUN = 500


@lru_cache(maxsize=1)
def tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start scores (4,), transition scores (4, 4) as [from, to], emission scores (chars, 4)), states in
    the order B, M, E, S: what the HMM decodes with here and in the native core (`esdedup.util.native`)."""
    emit, start, trans = (_jieba_table(name) for name in ("prob_emit", "prob_start", "prob_trans"))
    names = "BMES"
    start_ = np.array([start[s] for s in names], dtype=np.float64)
    trans_ = np.array([[trans[a].get(b, _MIN_FLOAT) for b in names] for a in names], dtype=np.float64)
    emit_ = np.full((LAST - FIRST + 1, 4), _MIN_FLOAT, dtype=np.float64)
    for k, s in enumerate(names):
        for ch, p in emit[s].items():
            if FIRST <= ord(ch) <= LAST:
                emit_[ord(ch) - FIRST, k] = p
    return start_, trans_, emit_


def _jieba_table(name: str) -> dict[str, Any]:
    """``jieba.finalseg.<name>.P``: from the module when jieba is imported, else read from jieba's file
    without importing the package, whose import loads ``pkg_resources`` (in every ingest worker) for nothing
    these tables need."""
    module_name = f"jieba.finalseg.{name}"
    if "jieba" in sys.modules:
        return importlib.import_module(module_name).P  # type: ignore[no-any-return]
    package = importlib.util.find_spec("jieba")
    if package is None or not package.submodule_search_locations:
        raise ModuleNotFoundError("jieba is not installed", name="jieba")
    spec = importlib.util.spec_from_file_location(
        module_name, os.path.join(package.submodule_search_locations[0], "finalseg", f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.P  # type: ignore[no-any-return]


def _best(a: np.ndarray, a_state: int, b: np.ndarray, b_state: int) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise the larger of two candidate scores and its previous state; on a tie, the state whose
    name sorts last (``b_state`` must be that one), as jieba's ``max((score, state), ...)``."""
    take_b = b >= a
    return np.where(take_b, b, a), np.where(take_b, b_state, a_state).astype(np.int8)


def _viterbi_states(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The decoded state of every character: ``codes`` are the runs' characters one run after another
    (code point - `FIRST`), ``lengths`` each run's length; the result is aligned with ``codes``."""
    start, trans, emit = tables()
    order = np.argsort(-lengths, kind="stable")  # longest first: the runs still going are a prefix
    offsets = (np.cumsum(lengths) - lengths)[order]
    lens = lengths[order]
    longest = int(lens[0])
    active = np.searchsorted(-lens, -np.arange(longest), side="left")  # runs longer than t, per t
    score = start + emit[codes[offsets]]
    back: list[np.ndarray] = []
    for t in range(1, longest):
        k = int(active[t])
        v, e = score[:k], emit[codes[offsets[:k] + t]]
        nb, pb = _best((v[:, E] + trans[E, B]) + e[:, B], E, (v[:, S] + trans[S, B]) + e[:, B], S)
        nm, pm = _best((v[:, B] + trans[B, M]) + e[:, M], B, (v[:, M] + trans[M, M]) + e[:, M], M)
        ne, pe = _best((v[:, B] + trans[B, E]) + e[:, E], B, (v[:, M] + trans[M, E]) + e[:, E], M)
        ns, ps = _best((v[:, E] + trans[E, S]) + e[:, S], E, (v[:, S] + trans[S, S]) + e[:, S], S)
        score[:k] = np.stack([nb, nm, ne, ns], axis=1)
        back.append(np.stack([pb, pm, pe, ps], axis=1))
    state = np.where(score[:, S] >= score[:, E], S, E).astype(np.int8)  # a run ends a word: E or S
    out = np.empty(len(codes), dtype=np.int8)
    for t in range(longest - 1, -1, -1):
        k = int(active[t])
        out[offsets[:k] + t] = state[:k]
        if t:
            state[:k] = back[t - 1][np.arange(k), state[:k]]
    return out


def _bounded(lengths: np.ndarray) -> np.ndarray:
    """The runs' lengths with every run longer than `MAX_RUN` cut into runs of `MAX_RUN` characters (and
    what is left): the decoding loop steps once per character of the longest run, each step costing the
    same whatever the number of runs, so a text of one long run (one character repeated) would cost a
    hundred times what any other text of its length costs. Normal text has no run near that long, so
    its words are jieba's."""
    if int(lengths.max()) <= MAX_RUN:
        return lengths
    out: list[int] = []
    for n in lengths.tolist():
        out.extend([MAX_RUN] * (n // MAX_RUN))
        if n % MAX_RUN or not n:
            out.append(n % MAX_RUN)
    return np.asarray(out, dtype=np.int64)


def cut_runs(runs: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """jieba's HMM cut of each run (``jieba.finalseg.cut``, for runs of 2+ characters of `FIRST`..`LAST`):
    the words of all runs one run after another, and how many words each run gave. A run longer than
    `MAX_RUN` characters is decoded `MAX_RUN` characters at a time (a word may end where jieba's would not).

    >>> cut_runs(["常在", "常在前"])
    (['常在', '常', '在', '前'], array([1, 3]))
    """
    if not runs:
        return [], np.zeros(0, dtype=np.int64)
    lengths = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
    joined = "".join(runs)
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype="<u4").astype(np.int64) - FIRST
    # a word ends at every E and S (jieba's transitions allow no other)
    ends = _viterbi_states(codes, _bounded(lengths)) >= E
    cuts = (np.flatnonzero(ends) + 1).tolist()
    words = [joined[a:b] for a, b in zip([0, *cuts][:-1], cuts, strict=True)]
    per_run = np.add.reduceat(ends.astype(np.int64), np.cumsum(lengths) - lengths)
    return words, per_run
