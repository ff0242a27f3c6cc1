"""SimHash (Charikar 2002, as in design documents 000 and 001), vectorised with numpy.

Each term votes on every bit: +weight where its hash has a 1, -weight where it has a 0. A fingerprint bit
is 1 when the sum of votes is strictly positive, else 0 (a tie is 0, by definition here).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from esdedup.errors import ConfigError
from esdedup.fingerprint.hashing import token_digest
from esdedup.util.fieldtypes import checked_args


def vote_rows(digests: Sequence[bytes], bits: int = 64) -> np.ndarray:
    """Turn token digests into ±1 vote rows, shape (n, bits), int8; column i is bit i (LSB first)."""
    if not digests:
        return np.zeros((0, bits), dtype=np.int8)
    raw = np.frombuffer(b"".join(d[: bits // 8] for d in digests), dtype=np.uint8).reshape(len(digests), bits // 8)
    ones = np.unpackbits(raw, axis=1, bitorder="little")
    return (ones.astype(np.int8) * 2 - 1).astype(np.int8)


def pack_bits(bits: np.ndarray) -> list[int]:
    """Rows of 0/1 (shape (n, width), bit i in column i) to unsigned integers."""
    packed = np.packbits(np.asarray(bits, dtype=np.uint8), axis=-1, bitorder="little")
    if packed.ndim == 1:
        packed = packed[None, :]
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def simhash_from_votes(votes: np.ndarray, weights: np.ndarray) -> int:
    """SimHash of one document from its terms' vote rows and weights."""
    if len(weights) == 0:
        return 0
    sums = np.asarray(weights, dtype=np.float64) @ votes.astype(np.float64)
    return pack_bits(sums > 0)[0]


def simhash(weights: Mapping[str, float], bits: int = 64) -> int:
    """Reference SimHash of a {term: weight} mapping (no caching; `Fingerprinter` is the fast path).

    >>> simhash({}) == 0
    True
    >>> simhash({"中国": 1.0}) == __import__("esdedup.fingerprint.hashing").fingerprint.hashing.token_hash("中国")
    True
    """
    terms = list(weights)
    votes = vote_rows([token_digest(t, bits) for t in terms], bits)
    return simhash_from_votes(votes, np.array([weights[t] for t in terms], dtype=np.float64))


@checked_args
def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints.

    >>> hamming(0b1000_0000, 0b0100_0000)
    2
    """
    return (a ^ b).bit_count()


def simhash_words(values: np.ndarray | Sequence[int], bits: int = 64) -> np.ndarray:
    """Fingerprints as an (n, words) uint64 array, 64 bits a word (one column for 64-bit fingerprints):
    the input of `hamming_rows`."""
    if bits <= 64:
        return np.asarray(values, dtype=np.uint64).reshape(-1, 1)
    words = (bits + 63) // 64
    mask = (1 << 64) - 1
    # numpy has no wider integers: split each Python int into 64-bit words.
    return np.array([[(v >> (64 * w)) & mask for w in range(words)] for v in values],
                    dtype=np.uint64).reshape(-1, words)


def hamming_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Hamming distances between the rows of two `simhash_words` arrays (numpy broadcasting applies)."""
    diff = np.ascontiguousarray(np.bitwise_xor(x, y))
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(diff).sum(axis=-1, dtype=np.int64)
    return np.unpackbits(diff.view(np.uint8), axis=-1).sum(axis=-1, dtype=np.int64)  # pragma: no cover


def hamming_many(a: int, others: np.ndarray | Sequence[int], bits: int = 64) -> np.ndarray:
    """Hamming distance from ``a`` to each fingerprint in ``others`` (vectorised popcount)."""
    try:
        return hamming_rows(simhash_words(others, bits), simhash_words([a], bits))
    except (TypeError, ValueError, OverflowError):
        raise ConfigError("hamming_many: a must be a whole number and others whole numbers of at most "
                          f"{bits} bits, got {type(a).__name__} {a!r:.40} and {type(others).__name__}") from None


def to_hex(simhash_value: int, bits: int = 64) -> str:
    """Fixed-width lowercase hex, as stored in indexes (16 characters for 64 bits)."""
    return f"{simhash_value:0{bits // 4}x}"


def from_hex(text: str) -> int:
    return int(text, 16)
