"""The native steps of matching (in the extension that `esdedup.util.native` loads), each beside the
Python step it replaces: the equal positions of MinHash signatures (`esdedup.match.measures.equal_positions`,
`esdedup.match.measures.pair_equal_positions`) and the LSH join of all-pairs search
(`esdedup.match.joins.lsh_pair_indices`), with the GIL released; and the lines `dups` prints of its pairs
(`text_rows`). Each gives None when the native core is not in use, and its caller then computes the same in
numpy or Python.
"""
from __future__ import annotations

import numpy as np

from esdedup.util import native


def equal_positions(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """How many positions each row of ``a`` shares with each row of ``b`` (C-contiguous uint32 signatures of
    one length; ``b`` the very array ``a`` for the rows against themselves), counted by the extension with
    the GIL released; None when the native core is not in use (then
    `esdedup.match.measures.equal_positions` counts in numpy)."""
    kernel = native.function("equal_positions")
    if kernel is None:
        return None
    perm, symmetric = a.shape[1], b is a  # the rows against themselves: each pair counted once
    # b-bit signatures of 16 bits or fewer (every config's) go as uint16: twice the positions a vector compare.
    narrow = perm < 1 << 16 and int(a.max()) <= 0xFFFF and int(b.max()) <= 0xFFFF
    width = 2 if narrow else 4
    left = a.astype("<u2" if narrow else "<u4").tobytes()
    right = left if symmetric else b.astype("<u2" if narrow else "<u4").tobytes()
    raw = kernel(left, right, perm, width, symmetric)
    return np.frombuffer(raw, dtype="<u4").reshape(a.shape[0], b.shape[0])


#: (left rows, right rows, crowded band values as (band, first row, rows), band values cut to max_bucket).
LshJoin = tuple[np.ndarray, np.ndarray, list[tuple[int, int, int]], int]


def lsh_pairs(sigs: np.ndarray, bands: int, rows: int, max_bucket: int) -> LshJoin | None:
    """The LSH join of `esdedup.match.joins.lsh_pair_indices` (``sigs``: a (rows, perm) array of uint32
    signatures; ``bands`` and ``rows`` already checked against it) by the extension, with the GIL released:
    the sorted pairs (int64 arrays), the crowded band values by band then first row, and how many band
    values were cut; None when the native core is not in use."""
    if not native.enabled():
        return None
    left, right, crowded, capped = native.loaded().lsh_pairs(
        np.ascontiguousarray(sigs, dtype=np.uint32), bands, rows, max_bucket)
    return (np.frombuffer(left, dtype="<i8").astype(np.int64, copy=False),
            np.frombuffer(right, dtype="<i8").astype(np.int64, copy=False), crowded, capped)


def pair_equal_positions(sigs: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray | None:
    """How many positions row ``left[x]`` of ``sigs`` (a (rows, perm) array of uint32 signatures) shares
    with row ``right[x]``, for every x, counted by the extension with the GIL released (a uint32 array);
    None when the native core is not in use (then `esdedup.match.measures.pair_equal_positions` counts in
    numpy)."""
    if not native.enabled():
        return None
    counted = native.loaded().pair_equal_positions(
        np.ascontiguousarray(sigs, dtype=np.uint32), np.ascontiguousarray(left, dtype=np.int64),
        np.ascontiguousarray(right, dtype=np.int64))
    return np.frombuffer(counted, dtype="<u4")


def text_rows(literals: list[str], codes: list[np.ndarray], tables: list[list[str]], sep: str, cuts: list[int]
              ) -> list[str] | None:
    """Row ``x`` is ``literals[0] + tables[0][codes[0][x]] + literals[1] + ... + literals[-1]`` (the code arrays
    of one length, each code within its table); the rows from ``cuts[i]`` to ``cuts[i + 1]`` (ascending, from 0
    to the rows' count) joined by ``sep`` are text ``i``: what `dups` prints of its pairs, every distinct value
    written once, put together by the extension. None when the native core is not in use, or a text holds a
    lone surrogate (not UTF-8): the caller puts them together in Python."""
    if not native.enabled():
        return None
    try:
        texts: list[str] = native.loaded().text_rows(
            literals, [np.ascontiguousarray(c, dtype=np.int64) for c in codes], tables, sep, cuts)
    except UnicodeEncodeError:
        return None
    return texts
