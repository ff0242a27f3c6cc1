"""The storage protocol: what esdedup needs from a place that keeps fingerprints.

Two implementations: `esdedup.store.local.LocalStore` (SQLite, embedded default) and
`esdedup.store.elastic.ElasticStore`. Everything above this layer (ingest, similar, dups, eval) is written
against `Store` only, and one contract test suite runs on both.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..config import FingerprintConfig
from ..fingerprint import Fingerprint

#: A lookup: stored field name (inside ``dedup``) -> band keys to match in that field.
Probe = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class StoredDoc:
    """The parts of a stored document that lookups and verification need (never the full text).

    ``minhash`` (uint32 signature) and ``shingles`` (distinct character n-grams behind it) are set for
    documents on the short-text path, and None / 0 otherwise."""

    id: str
    simhash: int
    vector: np.ndarray = field(repr=False)
    empty: bool = False
    tokens: int = 0
    chars: int = 0
    cluster_id: str | None = None
    duplicate_of: str | None = None
    minhash: np.ndarray | None = field(default=None, repr=False, compare=False)
    shingles: int = 0


@dataclass(frozen=True)
class NewDoc:
    """A document to write: its id, fingerprint, article fields and dedup labels."""

    id: str
    fingerprint: Fingerprint
    source: dict[str, Any]
    content_sha1: str
    cluster_id: str | None = None
    duplicate_of: str | None = None


@dataclass(frozen=True)
class WriteResult:
    """One document's outcome: ``ok`` (created or updated), or the reason it was rejected."""

    id: str
    ok: bool
    created: bool = False
    error: str | None = None
    status: int | None = None


@dataclass
class OpenResult:
    """What `Store.open` found: the config in force and whether the collection was just created."""

    config: FingerprintConfig
    created: bool


@runtime_checkable
class Store(Protocol):
    """A named collection of fingerprinted documents."""

    name: str
    #: Documents re-sent after a retryable rejection (a full write queue) since the store was made; ingest
    #: reports the growth during its run.
    retried: int

    def open(self, config: FingerprintConfig | None = None, *, create: bool = True) -> OpenResult:
        """Create the collection with ``config`` or check that the stored config is compatible.

        With ``config=None`` the stored config is used (error if the collection does not exist).
        Raises ConfigMismatchError when the stored config differs, IndexNotFound when missing and
        ``create`` is False.
        """
        ...

    @property
    def config(self) -> FingerprintConfig: ...

    def write(self, docs: Iterable[NewDoc]) -> Iterator[WriteResult]:
        """Write documents (insert or overwrite by id), yielding one result per document in order."""
        ...

    def lookup(self, probes: Sequence[Probe], *, limit: int = 1000) -> list[list[StoredDoc]]:
        """For each probe, the stored documents that match any of its band keys (at most ``limit``)."""
        ...

    def knn(self, vector: np.ndarray, k: int = 10) -> list[StoredDoc]:
        """The ``k`` documents whose vectors are nearest (cosine) to ``vector``."""
        ...

    def get(self, ids: Sequence[str]) -> dict[str, StoredDoc]:
        """Stored documents by id (missing ids are absent from the result)."""
        ...

    def get_source(self, doc_id: str) -> dict[str, Any] | None:
        """The article fields of one document (title, text, ...), or None."""
        ...

    def scan(self, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
        """Every stored document, in batches of at most ``batch`` (used by all-pairs search when the band
        layout probes neighbours, which exact key groups cannot serve)."""
        ...

    def shared_keys(self, *, max_bucket: int = 1000, lsh: bool = True) -> Iterator[tuple[str, list[str]]]:
        """Every band key held by two or more documents, with their ids (sorted). A key held by more than
        ``max_bucket`` documents is yielded with only ``max_bucket`` ids, and reported by
        `crowded_keys` (boilerplate that collides with everything). ``lsh=False``: SimHash band keys
        only (all-pairs search then groups the MinHash LSH bands itself, from `scan`)."""
        ...

    def crowded_keys(self, *, min_count: int, limit: int = 20, lsh: bool = True) -> list[tuple[str, int]]:
        """Band keys held by at least ``min_count`` documents, most crowded first; ``lsh=False``: SimHash
        band keys only."""
        ...

    def set_labels(self, labels: Mapping[str, tuple[str, str | None]]) -> int:
        """Write (cluster_id, duplicate_of) for documents by id; returns how many were updated."""
        ...

    def count(self) -> int: ...

    def refresh(self) -> None:
        """Make everything written so far visible to lookups."""
        ...

    def drop(self) -> None:
        """Delete the collection and everything in it."""
        ...

    def close(self) -> None: ...
