"""A share of the band and LSH key space, so that all-pairs search can run as P processes, each keeping only its
share of the candidate pairs.

Where a pair belongs, decided here once, one of two ways as the store declares:

- `PartitionedKeys` (Elasticsearch): a pair of documents that share a key (not crowded) belongs to the
  partition of the smallest such key, so each key being held by exactly one partition (`key_share`) makes
  each pair come out of exactly one. A partition scans every document's keys and keeps its share only, and
  gives each member of its key groups its keys computed from the member's fingerprint (read for measuring
  anyway), which the smallest-key rule needs. Pairs that share crowded keys only have no such key, and are
  spread by `pair_share`.
- `PartitionedPairs` (the embedded store): every partition reads every shared key, and a pair belongs to the
  partition `pair_share` gives it. Reading the key index is cheap in-process (a second for 50,000 documents),
  while giving each member of a key group its keys for the smallest-key rule meant computing them from its
  stored fingerprint once a group it is in (a member of a near-duplicate pair is in ~15): most of a
  partition's time. A partition remembers the candidate pairs of its share, to measure each once.

Exact copies among texts without words have no key, and are spread by `sha1_share` (pairs of copies with
words by `pair_share`, `esdedup.match.partitioned`).

Labelling new documents in partitions (``esdedup label --partition``) splits documents rather than keys: by
content SHA-1 (`sha1_bounds`), each document labelled by one partition; the partitions agree on the clusters
as concurrent writers do (`esdedup.ingest.settle`).
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from esdedup.errors import ConfigError
from esdedup.store.base import KeyBatch

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Partition:
    """Partition ``index`` of ``count`` (0 <= index < count)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(f"a partition is I/P with 0 <= I < P, got {self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str) -> Partition:
        """``"I/P"``, e.g. ``"0/4"``.

        Raises:
            ConfigError: not two integers I/P with 0 <= I < P.
        """
        m = _SPEC.fullmatch(text)
        if not m:
            raise ConfigError(f"a partition is I/P with 0 <= I < P (for example 0/4), got {text!r}")
        return cls(int(m.group(1)), int(m.group(2)))

    @property
    def whole(self) -> bool:
        return self.count == 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def pair_share(a: str, b: str, count: int) -> int:
    """The partition of a pair: on the embedded store every pair's (`PartitionedPairs`); on Elasticsearch that of
    a pair that shares crowded keys only (every partition reads the crowded keys)."""
    return zlib.crc32(f"{a}\0{b}".encode()) % count


def key_share(key: str, count: int) -> int:
    """The partition of a shared key on Elasticsearch (`PartitionedKeys`): the one that holds it in memory."""
    return zlib.crc32(key.encode()) % count


def sha1_share(sha1: str, count: int) -> int:
    """The partition of the exact copies of one content SHA-1 among the texts without words."""
    return int(sha1[:8], 16) % count


def sha1_bounds(partition: Partition) -> tuple[str | None, str | None]:
    """A partition's share of documents by content SHA-1 (``esdedup label --partition``), as one range that a
    store reads through its terms dictionary: the SHA-1s whose first 8 hex digits are at least the first bound
    and below the second (None: unbounded). Contiguous rather than a modulo, so that a range query reads it;
    exact copies share a SHA-1, so they fall in one partition."""
    def bound(i: int) -> str:
        return f"{i * 2**32 // partition.count:08x}"

    return (None if partition.index == 0 else bound(partition.index),
            None if partition.index == partition.count - 1 else bound(partition.index + 1))


@dataclass
class PairBatch:
    """Some of a partition's candidate pairs (`PartitionedPairs`): ``pairs`` (a < b), each once in the
    partition's run; ``keys`` and ``members``: the shared keys read since the last batch and their documents
    (counted up to ``max_bucket`` a key); ``crowded``: the crowded keys among them, with their holders."""

    pairs: list[tuple[str, str]]
    keys: int
    members: int
    crowded: list[tuple[str, int]]


class PartitionedPairs(Protocol):
    """A store that reads a share of the candidate pairs (declared as `Capability.PARTITIONED_PAIRS`)."""

    def partition_candidates(self, partition: Partition, *, max_bucket: int = 1000,
                             lsh: bool = True) -> Iterator[PairBatch]:
        """The pairs of documents sharing a key (the first ``max_bucket`` holders of a crowded key, by id) that
        `pair_share` gives ``partition``, each once: the candidates of `Store.key_batches` in its share."""
        ...


class PartitionedKeys(Protocol):
    """A store that reads a share of its shared keys (declared as `Capability.PARTITIONED_KEYS`)."""

    def partition_key_batches(self, partition: Partition, *, max_bucket: int = 1000,
                              lsh: bool = True) -> Iterator[KeyBatch]:
        """`Store.key_batches` for the share of ``partition``: the shared keys (not crowded) in its share, and
        every crowded key (held by more than ``max_bucket`` documents: few, and read by every partition, whose
        pairs `pair_share` spreads). Each member's keys are all its keys, in any share, less the crowded."""
        ...
