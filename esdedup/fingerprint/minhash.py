"""MinHash signatures and LSH band keys over a text's character n-grams.

Every non-empty text has them unless the strategy is ``simhash`` (`FingerprintConfig.gets_signatures`), and
then they decide its pairs (the matching layer's rule); under the default ``auto`` a short text, whose SimHash has
too few features to be stable, has no other band keys (`FingerprintConfig.gets_simhash_bands`).

Everything here is integer arithmetic on numpy ``uint64`` (wrapping multiplication), so signatures and keys
are identical on every machine and numpy version, and whole batches are hashed without a Python step per
n-gram or per band:

* ``mix64`` is the SplitMix64 finaliser (xor-shift-multiply, a bijection on 64 bits).
* A shingle (a string) hashes to 32 bits by folding its code points: ``h = SEED``, then for each code point
  ``c``: ``h = mix64(h ^ c)``; the hash is the top 32 bits of ``h``. `ngram_hashes` computes the same values
  for every n-gram of a text at once.
* Permutation i is ``(a_i * x + b_i) mod 2^64 >> 32`` (multiply-add-shift, a 2-universal family for 32-bit
  ``x``) with ``a_i`` (odd) and ``b_i`` read from BLAKE2b of ``"a<i>"`` and ``"b<i>"``.
* The signature keeps the low `SIGNATURE_BITS` (16) bits of each permutation's minimum (b-bit MinHash, Li and
  König 2010): stored in half the bytes. Two unequal minima agree on their low 16 bits with probability
  2^-16, so the share of equal positions estimates Jaccard s with a bias of (1 - s) / 65536, below 2e-5
  (measured on the natural short-text set of bench/quality.py: not one of its 175,578 labelled pairs
  changes verdict against full 32-bit values).
* An LSH band is ``rows`` consecutive signature values, band i the values ``[i * rows, (i + 1) * rows)``
  (values past ``bands * rows`` are in no band and serve the Jaccard estimate only): ``h = mix64(band)``,
  then ``h = mix64(h ^ v)`` for each row value ``v``; the band's key is the top `LSH_KEY_BITS` (40) bits of
  ``h``, written in decimal: at most 13 digits in a bulk body, and exact in JSON, Elasticsearch's ``long``
  and JavaScript (Kibana). The band number is mixed into ``h``, so the keys of all bands can share one
  field. Collisions by chance: an unrelated document holds one of a lookup's 16 keys (the default 16 bands)
  with probability 16 * 16 / 2^40 (2.3e-10), 0.02 random candidates per lookup in 100 million documents
  (each verified and dropped like any other candidate).

The chance that a pair with Jaccard s shares a band is 1 - (1 - s^rows)^bands.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from esdedup.util.arrays import unique_sorted

_PERSON = b"esdedup-mh-v2"
_SEED = np.uint64(0x6573646564757032)  # "esdedup2"
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S32 = (np.uint64(s) for s in (30, 27, 31, 32))
#: Bits kept of each permutation's minimum (b-bit MinHash), and the byte layout of a stored signature.
SIGNATURE_BITS = 16
SIGNATURE_DTYPE = "<u2"
_LOW_BITS = np.uint32((1 << SIGNATURE_BITS) - 1)
#: Bits of an LSH key (the top bits of the band hash): exact as a JSON or JavaScript number (< 2^53).
LSH_KEY_BITS = 40
_KEY_SHIFT = np.uint64(64 - LSH_KEY_BITS)


def mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def _h(data: bytes, size: int) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=size, person=_PERSON).digest(), "little")


@lru_cache(maxsize=8)
def permutations(n_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed (a, b) coefficients of the n_perm permutations, uint64 each, a odd."""
    a = np.array([_h(f"a{i}".encode(), 8) | 1 for i in range(n_perm)], dtype=np.uint64)
    b = np.array([_h(f"b{i}".encode(), 8) for i in range(n_perm)], dtype=np.uint64)
    return a, b


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as uint64 (lone surrogates kept as they are)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.uint64)


def ngram_hashes(chars: str, n: int) -> np.ndarray:
    """The 32-bit hash (as uint64) of every n-gram of ``chars`` in order, duplicates kept: the values
    `shingle_hashes` gives the strings ``chars[i:i+n]``. A text shorter than n is its own single n-gram."""
    cp = code_points(chars)
    if len(cp) == 0:
        return np.zeros(0, dtype=np.uint64)
    n = min(n, len(cp))
    count = len(cp) - n + 1
    return _fold((cp[j:j + count] for j in range(n)), count)


def shingle_hashes(shingles: Iterable[str]) -> np.ndarray:
    """32-bit hash of each distinct shingle, as uint64 (sorted, duplicates removed)."""
    by_len: dict[int, list[str]] = {}
    for s in set(shingles):
        by_len.setdefault(len(s), []).append(s)
    parts = [np.zeros(0, dtype=np.uint64)]
    for length, group in by_len.items():
        cps = code_points("".join(group)).reshape(len(group), length)
        parts.append(_fold((cps[:, j] for j in range(length)), len(group)))
    return unique_sorted(np.concatenate(parts))


def _fold(columns: Iterable[np.ndarray], count: int) -> np.ndarray:
    """The shingle hash of the module docstring for ``count`` strings at once, given one code-point column
    per character position: ``h = SEED``, ``h = mix64(h ^ c)`` per column, the top 32 bits."""
    h = np.full(count, _SEED, dtype=np.uint64)
    for col in columns:
        h = mix64(h ^ col)
    return h >> _S32


def signature(hashes: np.ndarray, n_perm: int = 128) -> np.ndarray:
    """MinHash signature: the low `SIGNATURE_BITS` bits of each permutation's minimum (uint32 values, length
    n_perm); all 0xFFFF for an empty set."""
    if len(hashes) == 0:
        return np.full(n_perm, _LOW_BITS, dtype=np.uint32)
    return signatures([hashes], n_perm)[0]


def signatures(hash_sets: Sequence[np.ndarray], n_perm: int = 128, *, group: int = 4096) -> np.ndarray:
    """`signature` of many sets at once, shape (len(hash_sets), n_perm); every set must be non-empty."""
    return low_bits(minima(hash_sets, n_perm, group=group))


def low_bits(minima: np.ndarray) -> np.ndarray:
    """Signatures from permutation minima: their low `SIGNATURE_BITS` bits (uint32)."""
    return np.asarray(minima, dtype=np.uint32) & _LOW_BITS


def minima(hash_sets: Sequence[np.ndarray], n_perm: int = 128, *, group: int = 4096) -> np.ndarray:
    """Each permutation's minimum over each set (32 bits, uint32), shape (len(hash_sets), n_perm)."""
    for h in hash_sets:
        if len(h) == 0:
            raise ValueError("signatures() needs non-empty sets; use signature() for an empty one")
    if not len(hash_sets):
        return np.full((0, n_perm), 0xFFFFFFFF, dtype=np.uint32)
    if len(hash_sets) == 1:  # one (perhaps huge) set: no copy of it, no owner per value
        return _one_signature(np.asarray(hash_sets[0]), n_perm, group)[None, :]
    sizes = np.fromiter((len(h) for h in hash_sets), dtype=np.int64, count=len(hash_sets))
    return segment_signatures(np.concatenate([np.asarray(h, dtype=np.uint64) for h in hash_sets]), sizes, n_perm,
                              group=group)


def _one_signature(hashes: np.ndarray, n_perm: int, group: int) -> np.ndarray:
    """`segment_signatures` of a single set (the same minima, ``group`` hashes at a time)."""
    a, b = permutations(n_perm)
    a, b = a[:, None], b[:, None]
    out = np.full(n_perm, 0xFFFFFFFF, dtype=np.uint64)
    values = np.empty((n_perm, min(group, len(hashes))), dtype=np.uint64)
    for lo in range(0, len(hashes), group):
        block = _permuted(a, b, hashes[lo:lo + group].astype(np.uint64, copy=False), values)
        np.minimum(out, block.min(axis=1), out=out)
    return out.astype(np.uint32)


def _permuted(a: np.ndarray, b: np.ndarray, x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Every permutation (rows ``a``, ``b``) of the uint64 hashes ``x``: ``(a * x + b) >> 32``, computed in
    place in the first ``len(x)`` columns of the preallocated ``values``, which it returns (no temporary array
    per operation, which the plain expression would allocate and fill for every step)."""
    block = values[:, :len(x)]
    np.multiply(a, x[None, :], out=block)
    block += b
    block >>= _S32
    return block


def segment_signatures(hashes: np.ndarray, sizes: np.ndarray, n_perm: int = 128, *, group: int = 4096
                       ) -> np.ndarray:
    """Signatures of consecutive segments of ``hashes`` (segment i has ``sizes[i]`` > 0 values), shape
    (len(sizes), n_perm). Hashes are permuted ``group`` at a time, so each (n_perm x group) block stays in
    the CPU cache and memory stays bounded whatever the set sizes."""
    out = np.full((len(sizes), n_perm), 0xFFFFFFFF, dtype=np.uint32)
    if not len(sizes):
        return out
    a, b = permutations(n_perm)
    a, b = a[:, None], b[:, None]
    hashes = np.asarray(hashes, dtype=np.uint64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    owner = np.repeat(np.arange(len(sizes)), sizes)
    values = np.empty((n_perm, min(group, len(hashes))), dtype=np.uint64)
    for lo in range(0, len(hashes), group):
        x = hashes[lo:lo + group]
        own = owner[lo:lo + group]
        block = _permuted(a, b, x, values)
        # Segment boundaries inside this slice: where the owner changes.
        cuts = np.flatnonzero(np.r_[True, own[1:] != own[:-1]])
        mins = np.minimum.reduceat(block, cuts, axis=1).T
        rows = own[cuts]
        first = rows[0]
        if lo > starts[first]:  # the first segment began in an earlier slice
            out[first] = np.minimum(out[first], mins[0])
            out[rows[1:]] = mins[1:]
        else:
            out[rows] = mins
    return out


def lsh_key_values(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """The 64-bit hash of every band of every signature, shape (len(sigs), bands); band ``i`` hashes the
    signature values ``[i * rows, (i + 1) * rows)`` (values past ``bands * rows`` are in no band). A key is
    the hash's top `LSH_KEY_BITS` bits (`lsh_keys_many`)."""
    sigs = np.asarray(sigs, dtype=np.uint32).reshape(-1, np.shape(sigs)[-1])
    if bands < 1 or rows < 1 or bands * rows > sigs.shape[1]:
        raise ValueError(f"{bands} bands of {rows} rows need {bands * rows} signature values, "
                         f"the signatures have {sigs.shape[1]}")
    h = np.broadcast_to(mix64(np.arange(bands, dtype=np.uint64)), (len(sigs), bands)).copy()
    cols = sigs[:, :bands * rows].astype(np.uint64).reshape(len(sigs), bands, rows)
    for r in range(rows):
        h = mix64(h ^ cols[:, :, r])
    return h


def lsh_keys_many(sigs: np.ndarray, bands: int, rows: int) -> list[list[str]]:
    """`lsh_keys` of each signature (rows of ``sigs``)."""
    flat = lsh_keys_flat(sigs, bands, rows)
    return [flat[i:i + bands] for i in range(0, len(flat), bands)]


def lsh_keys_flat(sigs: np.ndarray, bands: int, rows: int) -> list[str]:
    """`lsh_keys_many` in one list: the keys of signature i are items ``[i * bands, (i + 1) * bands)`` (no list
    a signature, for millions of keys at once)."""
    return list(map(str, (lsh_key_values(sigs, bands, rows) >> _KEY_SHIFT).ravel().tolist()))


def lsh_keys(sig: np.ndarray, bands: int, rows: int) -> list[str]:
    """One key per band of one signature (``bands`` bands of ``rows`` consecutive values from the first):
    the band hash's top `LSH_KEY_BITS` bits, in decimal. Raises ValueError when the signature has fewer than
    ``bands * rows`` values.

    >>> keys = lsh_keys(signature(shingle_hashes(["ab", "bc"]), 8), 4, 2)
    >>> len(keys), all(0 <= int(k) < 2**40 for k in keys)
    (4, True)
    """
    return lsh_keys_many(np.asarray(sig)[None, :], bands, rows)[0]


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Share of equal signature positions: an estimate of the shingle sets' Jaccard s (biased by
    (1 - s) / 2^16 through the b-bit values, see the module docstring)."""
    return float(np.mean(np.asarray(sig_a) == np.asarray(sig_b)))


def collision_probability(s: float, bands: int, rows: int) -> float:
    """Probability that two sets with Jaccard ``s`` share at least one LSH band."""
    return 1.0 - (1.0 - s**rows) ** bands
