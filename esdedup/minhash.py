"""MinHash signatures and LSH band keys for short texts, where SimHash has too few features to be stable.

Shingles are hashed to 32 bits with BLAKE2b (personalised ``esdedup-mh-v1``, little-endian). Permutation
i is ``((a_i * x + b_i) mod (2^61 - 1)) mod 2^32`` with ``a_i, b_i`` read from BLAKE2b of ``"a<i>"`` and
``"b<i>"``, so signatures are identical on every machine and numpy version (no random generator).
An LSH band is ``rows`` consecutive signature values; its key is ``"m<band>:<16 hex>"``.
The chance that a pair with Jaccard s shares a band is 1 - (1 - s^rows)^bands.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
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


def shingle_hashes(shingles: Iterable[str]) -> np.ndarray:
    """32-bit hash of each distinct shingle, as uint64 (sorted, duplicates removed)."""
    return np.array(sorted({_h(s.encode("utf-8", "surrogatepass"), 4) for s in shingles}), dtype=np.uint64)


def signature(hashes: np.ndarray, n_perm: int = 128) -> np.ndarray:
    """MinHash signature (uint32, length n_perm); all 0xFFFFFFFF for an empty set."""
    if len(hashes) == 0:
        return np.full(n_perm, 0xFFFFFFFF, dtype=np.uint32)
    a, b = permutations(n_perm)
    x = np.asarray(hashes, dtype=np.uint64)
    values = ((a[:, None] * x[None, :] + b[:, None]) % MERSENNE_61) & _MASK32
    return values.min(axis=1).astype(np.uint32)


def lsh_keys(sig: np.ndarray, bands: int) -> list[str]:
    """One key per band: BLAKE2b-64 of the band's rows, tagged with the band number."""
    rows = len(sig) // bands
    data = np.ascontiguousarray(sig, dtype="<u4").tobytes()
    width = rows * 4
    return [f"m{i}:{_h(data[i * width:(i + 1) * width], 8):016x}" for i in range(bands)]


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Share of equal signature positions: an unbiased estimate of the shingle sets' Jaccard."""
    return float(np.mean(np.asarray(sig_a) == np.asarray(sig_b)))


def collision_probability(s: float, bands: int, rows: int) -> float:
    """Probability that two sets with Jaccard ``s`` share at least one LSH band."""
    return 1.0 - (1.0 - s**rows) ** bands
