"""The token hash: fixed, documented, the same on every machine and in every process.

A token's UTF-8 bytes go through BLAKE2b (RFC 7693) with ``digest_size = bits/8 + 8`` and the
personalisation string ``b"esdedup-v1"``. The first ``bits/8`` bytes, read little-endian, are the token's
SimHash contribution (bit i of that integer votes on bit i of the fingerprint); the last 8 bytes, read
little-endian as an unsigned 64-bit integer ``h``, place the token in the hashed TF vector: bucket
``h % dims``, sign ``+1`` if bit 63 of ``h`` is 0 else ``-1``.

Python's ``hash()`` is salted per process and is never used for anything that is stored.
"""
from __future__ import annotations

import hashlib

PERSON = b"esdedup-v1"


def token_digest(token: str, bits: int = 64) -> bytes:
    """The raw digest of one token: ``bits/8`` bytes of SimHash votes, then 8 bytes for the vector."""
    return hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=bits // 8 + 8,
                           person=PERSON).digest()


def token_hash(token: str, bits: int = 64) -> int:
    """The token's ``bits``-wide hash as an unsigned integer (little-endian reading of the digest).

    >>> token_hash("中国")  # golden value: must never change within schema 1
    7297876748237075362
    """
    return int.from_bytes(token_digest(token, bits)[: bits // 8], "little")
