"""MinHash signatures and LSH band keys for short texts, where SimHash has too few features to be stable.

Shingles are hashed to 32 bits with BLAKE2b (personalised ``esdedup-mh-v1``, little-endian). Permutation
i is ``((a_i * x + b_i) mod (2^61 - 1)) mod 2^32`` with ``a_i, b_i`` read from BLAKE2b of ``"a<i>"`` and
``"b<i>"``, so signatures are identical on every machine and numpy version (no random generator).
An LSH band is ``rows`` consecutive signature values; its key is ``"m<band>:<16 hex>"``.
The chance that a pair with Jaccard s shares a band is 1 - (1 - s^rows)^bands.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

MERSENNE_61 = np.uint64((1 << 61) - 1)
_MASK32 = np.uint64(0xFFFFFFFF)
_PERSON = b"esdedup-mh-v1"


def _h(data: bytes, size: int) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=size, person=_PERSON).digest(), "little")


@lru_cache(maxsize=8)
def permutations(n_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed (a, b) coefficients; a in [1, 2^31), b in [0, 2^32) so a*x+b never overflows 64 bits."""
    a = np.array([(_h(f"a{i}".encode(), 4) & 0x7FFFFFFF) | 1 for i in range(n_perm)], dtype=np.uint64)
    b = np.array([_h(f"b{i}".encode(), 4) for i in range(n_perm)], dtype=np.uint64)
    return a, b


#: Shingle -> 32-bit hash, shared by every signature of the process (n-grams repeat across documents);
#: cleared when it grows past `_CACHE_MAX` entries.
_SHINGLE_CACHE: dict[str, int] = {}
_CACHE_MAX = 1_000_000


def _shingle_hash(s: str) -> int:
    h = _SHINGLE_CACHE.get(s)
    if h is None:
        if len(_SHINGLE_CACHE) >= _CACHE_MAX:
            _SHINGLE_CACHE.clear()
        h = _SHINGLE_CACHE[s] = _h(s.encode("utf-8", "surrogatepass"), 4)
    return h


def shingle_hashes(shingles: Iterable[str], *, cache: bool = True) -> np.ndarray:
    """32-bit hash of each distinct shingle, as uint64 (sorted, duplicates removed). ``cache=False`` reads
    the shared cache but adds nothing to it (for the n-grams of one huge text)."""
    uniq = set(shingles)
    known = list(map(_SHINGLE_CACHE.get, uniq))
    if None in known:
        new = _shingle_hash if cache else (lambda s: _h(s.encode("utf-8", "surrogatepass"), 4))
        known = [h if h is not None else new(s) for s, h in zip(uniq, known, strict=True)]
    return np.unique(np.array(known, dtype=np.uint64))


def _mod_m61(v: np.ndarray) -> np.ndarray:
    """``v % (2^61 - 1)`` for uint64 ``v``, without a division (Mersenne reduction)."""
    r = (v & MERSENNE_61) + (v >> np.uint64(61))
    return np.where(r >= MERSENNE_61, r - MERSENNE_61, r)


def signature(hashes: np.ndarray, n_perm: int = 128) -> np.ndarray:
    """MinHash signature (uint32, length n_perm); all 0xFFFFFFFF for an empty set."""
    if len(hashes) == 0:
        return np.full(n_perm, 0xFFFFFFFF, dtype=np.uint32)
    return signatures([hashes], n_perm)[0]


def signatures(hash_sets: Sequence[np.ndarray], n_perm: int = 128, *, group: int = 1024) -> np.ndarray:
    """`signature` of many sets at once, shape (len(hash_sets), n_perm); every set must be non-empty.

    Hashes are taken ``group`` at a time (a big set in several slices), so each (n_perm x group) block of
    permuted values stays in the CPU cache and memory stays bounded whatever the set sizes."""
    out = np.full((len(hash_sets), n_perm), 0xFFFFFFFF, dtype=np.uint32)
    if not len(hash_sets):
        return out
    a, b = permutations(n_perm)
    a, b = a[:, None], b[:, None]
    slices: list[tuple[int, np.ndarray]] = []
    for k, h in enumerate(hash_sets):
        if len(h) == 0:
            raise ValueError("signatures() needs non-empty sets; use signature() for an empty one")
        h = np.asarray(h, dtype=np.uint64)
        slices.extend((k, h[i:i + group]) for i in range(0, len(h), group))
    i = 0
    while i < len(slices):
        j, total = i, 0
        while j < len(slices) and (total == 0 or total + len(slices[j][1]) <= group):
            total += len(slices[j][1])
            j += 1
        x = np.concatenate([sl for _, sl in slices[i:j]])
        sizes = np.fromiter((len(sl) for _, sl in slices[i:j]), dtype=np.int64, count=j - i)
        values = _mod_m61(a * x[None, :] + b) & _MASK32
        mins = np.minimum.reduceat(values, np.concatenate(([0], np.cumsum(sizes)[:-1])), axis=1).T
        owners = np.fromiter((k for k, _ in slices[i:j]), dtype=np.int64, count=j - i)
        np.minimum.at(out, owners, mins.astype(np.uint32))
        i = j
    return out


def lsh_keys(sig: np.ndarray, bands: int) -> list[str]:
    """One key per band: BLAKE2b-64 of the band's rows, tagged with the band number."""
    rows = len(sig) // bands
    data = np.ascontiguousarray(sig, dtype="<u4").tobytes()
    width = rows * 4
    out = []
    for i in range(bands):
        h = _BAND_HASH.copy()
        h.update(data[i * width:(i + 1) * width])
        # The hex of the little-endian integer is the hex of the reversed digest.
        out.append(f"m{i}:{h.digest()[::-1].hex()}")
    return out


_BAND_HASH = hashlib.blake2b(digest_size=8, person=_PERSON)


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Share of equal signature positions: an unbiased estimate of the shingle sets' Jaccard."""
    return float(np.mean(np.asarray(sig_a) == np.asarray(sig_b)))


def collision_probability(s: float, bands: int, rows: int) -> float:
    """Probability that two sets with Jaccard ``s`` share at least one LSH band."""
    return 1.0 - (1.0 - s**rows) ** bands
