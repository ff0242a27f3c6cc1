"""The storage protocol: what esdedup needs from a place that keeps fingerprints.

Two implementations: `esdedup.store.local.LocalStore` (SQLite, embedded default) and
`esdedup.store.elastic.store.ElasticStore`. The protocol is a core every store implements (`StoreCore`) and
protocols a store opts into by declaring them (`Capability`): the label coordination ingest uses
(`ClusterLabels`), the scans all-pairs search reads (`KeyScans`) and the queries of the review page
(`Browsing`); each caller is written against the ones it uses, and a contract suite per protocol runs on both
stores (tests/contract). What only an Elasticsearch index offers (its client, raw hits, conditional updates of
other programs' documents) is the `ElasticsearchBacked` protocol.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, overload

import numpy as np

from esdedup.errors import StoreError, Unsupported
from esdedup.es.hits import FINGERPRINT_FIELDS
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint
from esdedup.fingerprint.values import FingerprintBlock

#: A lookup: band name (a SimHash band field, or an LSH band ``lsh_<i>`` of the field ``lsh_keys``; see
#: `esdedup.schema.key_field`) -> band keys to match in that band.
Probe = Mapping[str, Sequence[str]]
#: A document's place in the write order, ``(seq, id)``: the smaller was written first. A cluster's
#: representative is its earliest member; every member carries the representative's ``Root``.
Root = tuple[int, str]


# Not frozen, and slotted, like the other values ingest makes once a record (`NewDoc`, `WriteResult`,
# `Record` with its `Line` and `Where`, `Fingerprint`, `FingerprintedRecord`, `Labels`): a frozen dataclass's
# __init__ sets each field through object.__setattr__, and an object without slots carries a dict of its own,
# costs paid for every record of every run. They are read-only all the same: nothing assigns to their fields
# but labelling, which gives a peer its labels once they are decided.
@dataclass(slots=True)
class StoredDoc:
    """The parts of a stored document that lookups and verification need (never the full text).

    ``minhash`` (signature values as uint32) and ``shingles`` (distinct character n-grams behind it) are set for
    documents with a MinHash signature (`FingerprintConfig.gets_signatures`), and None / 0 otherwise."""

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
    #: Write order (`Root`): ``seq`` of this document and of its cluster's representative; 0 for documents
    #: written before esdedup kept it.
    seq: int = 0
    cluster_seq: int = 0
    #: The stored version (Elasticsearch ``_seq_no``, ``_primary_term``) for a conditional update or delete;
    #: None where the store serialises its writers.
    version: tuple[int, int] | None = field(default=None, compare=False)
    #: SHA-1 of the normalised text (tells a re-ingest of the same text from a new text under the same id).
    content_sha1: str | None = field(default=None, compare=False)

    @property
    def root(self) -> Root:
        """The representative of this document's cluster (itself when it has no label)."""
        return root_of(self.id, self.seq, self.cluster_id, self.cluster_seq)


def root_of(doc_id: str, seq: int, cluster_id: str | None, cluster_seq: int) -> Root:
    """`StoredDoc.root` of a document with these fields (the ingest's run index reads them from its columns)."""
    if cluster_id is None:
        return (seq, doc_id)
    return (cluster_seq, cluster_id)


def band_keys(doc: StoredDoc, config: FingerprintConfig) -> list[str]:
    """The SimHash band keys the store holds for ``doc`` (none for a text without words or too short for bands):
    what ingest indexed, from the stored fingerprint."""
    if not holds_band_keys(doc.empty, doc.chars, config):
        return []
    return config.band_layout().keys(doc.simhash)


def holds_band_keys(empty: bool, chars: int, config: FingerprintConfig) -> bool:
    """Whether the store holds SimHash band keys (`band_keys`) for a document: a text with words (not ``empty``)
    of ``chars`` normalised characters, long enough for them."""
    return not empty and config.gets_simhash_bands(chars)


def lsh_signature(doc: StoredDoc, config: FingerprintConfig) -> np.ndarray | None:
    """The values of ``doc``'s MinHash signature its LSH keys are made of (the first bands x rows), None when it
    holds no LSH key (no signature, no n-gram, or fewer values than that)."""
    width = config.minhash_bands * config.minhash_rows
    if doc.minhash is None or not doc.shingles or len(doc.minhash) < width:
        return None
    return doc.minhash[:width]


@dataclass(slots=True)  # not frozen: see StoredDoc
class NewDoc:
    """A document to write: its id, fingerprint, article fields, dedup labels and write order."""

    id: str
    #: None when ``dedup_json`` holds its fields: a store that takes them (`StoreCore.takes_dedup_json`) needs
    #: nothing else of the fingerprint, and ingest's workers then send none (`esdedup.ingest.workers`).
    fingerprint: Fingerprint | None
    source: dict[str, Any]
    content_sha1: str
    cluster_id: str | None = None
    duplicate_of: str | None = None
    seq: int = 0
    cluster_seq: int = 0
    #: The fingerprint's ``dedup`` fields (`esdedup.schema.dedup_source`) as JSON object members without the
    #: braces, when they were encoded in advance (ingest does it in its worker processes): a store that
    #: sends JSON uses them instead of encoding ``fingerprint`` again.
    dedup_json: bytes | None = None
    #: The arrays ``fingerprint`` came in between processes (`FingerprintBlock`), and its row there, when it
    #: did: a store may write a batch of documents of one block from its arrays.
    block: FingerprintBlock | None = field(default=None, repr=False, compare=False)
    row: int = 0

    def __post_init__(self) -> None:
        if self.fingerprint is None and self.dedup_json is None and self._maker is None:
            raise ValueError(f"document {self.id!r} has neither a fingerprint nor its dedup fields encoded")

    @property
    def _maker(self) -> Callable[[int], Fingerprint] | None:
        """What makes the fingerprint from ``block`` when it is read (`FingerprintBlock.fingerprint_of`)."""
        return None if self.block is None else self.block.fingerprint_of

    @property
    def fp(self) -> Fingerprint:
        """The fingerprint, for a store that encodes the ``dedup`` fields itself (made from ``block`` where the
        document came with none of its own).

        Raises:
            ValueError: the document carries its fields encoded only, which such a store cannot read.
        """
        make = self._maker if self.fingerprint is None else None
        if make is not None:
            self.fingerprint = make(self.row)
        if self.fingerprint is None:
            raise ValueError(f"document {self.id!r} carries its dedup fields encoded only, without the fingerprint "
                             "this store encodes them from")
        return self.fingerprint


@dataclass(slots=True)  # not frozen: see StoredDoc
class WriteResult:
    """One document's outcome: ``ok`` (created or updated), or the reason it was rejected."""

    id: str
    ok: bool
    created: bool = False
    error: str | None = None
    status: int | None = None


class AllCreated(Sequence[WriteResult]):
    """The results of a write that created every one of its documents, in their order (ids ``ids``): one object
    for a batch where a `WriteResult` a document would cost a microsecond each, and a reader that counts them
    (`esdedup.ingest.accounting.Ledger.count_writes`) needs none of them one by one."""

    __slots__ = ("ids",)

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> WriteResult: ...

    @overload
    def __getitem__(self, i: slice) -> list[WriteResult]: ...

    def __getitem__(self, i: int | slice) -> WriteResult | list[WriteResult]:
        if isinstance(i, slice):
            return [WriteResult(doc_id, True, created=True) for doc_id in self.ids[i]]
        return WriteResult(self.ids[i], True, created=True)


@dataclass(frozen=True)
class KeyBatch:
    """Some of the band keys held by two or more documents (`KeyScans.key_batches`).

    ``groups``: each key, how many documents hold it, and their ids (sorted; only the first ``max_bucket``
    when more hold it: a crowded key). ``keys``: every member's keys of the fields read, less the crowded
    ones, so that a caller can tell under which shared key a pair turns up first and count it once without
    remembering the pairs it has seen. ``fetched``: the members whose keys were read from the store for this
    batch (the others' were read for an earlier batch), where the store counts them. ``docs``: members the
    store read whole to give their keys (computed from their fingerprints), so that measuring their pairs
    need not read them again. ``held``: the key entries (a key of a document) the store held in memory to
    find these groups, where it counts them (a partition's key table)."""

    groups: list[tuple[str, int, list[str]]]
    keys: dict[str, frozenset[str]]
    fetched: int = 0
    docs: Mapping[str, StoredDoc] = field(default_factory=dict)
    held: int = 0


@dataclass
class OpenResult:
    """What `StoreCore.open` found: the config in force and whether the collection was just created."""

    config: FingerprintConfig
    created: bool


@dataclass(frozen=True)
class ClusterSize:
    """A cluster of two or more documents: its representative's id (the cluster id) and its size."""

    cluster_id: str
    size: int


@dataclass(frozen=True)
class ClusterSummary:
    """The clusters of two or more documents (`Browsing.cluster_summary`).

    ``sizes``: (size, clusters of that size), smallest first. ``exact`` is False when a store counted the
    sizes over its ``counted`` largest clusters only and estimated ``clusters`` and ``clustered`` (an
    Elasticsearch index with more clusters than one aggregation returns)."""

    clusters: int
    clustered: int
    sizes: list[tuple[int, int]]
    exact: bool = True
    counted: int | None = None


@dataclass(frozen=True)
class TopKeys:
    """The most shared key values (`Browsing.top_keys`), most held first, with how many documents hold each
    (exact counts). ``sampled``: None when the values were chosen among every value; otherwise among the
    values of that many documents chosen at random (a store without a count of every value: a value held
    by many documents is all but sure to be among them)."""

    values: list[tuple[str, int]]
    sampled: int | None = None


@dataclass(frozen=True)
class FoundDoc:
    """A document found by `Browsing.search_text`: its id, article fields, score (None: not ranked) and
    cluster (its ``cluster_id`` label)."""

    id: str
    source: dict[str, Any]
    score: float | None = None
    cluster_id: str | None = None


@dataclass(frozen=True)
class SearchPage:
    """One page of `Browsing.search_text`. ``total``: the matches counted, at most ``total_cap`` (then
    ``capped``). ``searched``: None when an index of every document answered; otherwise the number of
    documents read (a store without a text index reads a bounded number of them and says so)."""

    hits: list[FoundDoc]
    total: int
    capped: bool = False
    searched: int | None = None


class Capability(enum.Enum):
    """A protocol a store offers beyond `StoreCore`, declared in its ``capabilities``: a new engine implements
    the core and opts into the rest one protocol at a time."""

    #: `ClusterLabels`: the label coordination that ingest and labelling use.
    LABELS = "cluster labels"
    #: `KeyScans`: the scans that all-pairs search reads.
    KEY_SCANS = "key scans"
    #: `Browsing`: the bounded queries of the review page.
    BROWSING = "browsing"
    #: `ElasticsearchBacked`: an Elasticsearch index's client, raw hits and conditional updates.
    ELASTICSEARCH = "Elasticsearch requests"
    #: `esdedup.store.columns.SignatureColumnsStore`: signatures read as columns, without a `StoredDoc` each.
    SIGNATURE_COLUMNS = "signature columns"
    #: `esdedup.store.columns.CopyColumnsStore`: every document's content SHA-1 read as columns, for grouping
    #: exact copies without reading every document whole.
    COPY_COLUMNS = "copy columns"
    #: `esdedup.store.partition.PartitionedKeys`: a share of the shared keys, for all-pairs search in partitions.
    PARTITIONED_KEYS = "partitioned key scans"
    #: `esdedup.store.partition.PartitionedPairs`: a share of the candidate pairs, read from every shared key.
    PARTITIONED_PAIRS = "partitioned candidate pairs"
    #: `BackgroundWrites`: a batch written while the caller goes on with the next one.
    BACKGROUND_WRITES = "background writes"


class StoreCore(Protocol):
    """A named collection of fingerprinted documents: what every store implements (open, write, look up, read
    by id, drop). The other protocols (`ClusterLabels`, `KeyScans`, `Browsing`) are opted into by
    ``capabilities``."""

    @property
    def name(self) -> str:
        """The collection's name."""
        ...

    #: What the store offers beyond this core (`Capability`), declared by its class: a caller asks this set
    #: (`offers`, `require`) rather than probing for methods.
    capabilities: frozenset[Capability]

    @property
    def retried(self) -> int:
        """Documents re-sent after a retryable rejection (a full write queue) since the store was made; ingest
        reports the growth during its run."""
        ...

    #: True when the store writes `NewDoc.dedup_json` as it is (it sends documents as JSON), so that a writer
    #: encodes the ``dedup`` fields where it fingerprints (ingest's worker processes).
    takes_dedup_json: bool

    def open(self, config: FingerprintConfig | None = None, *, create: bool = True) -> OpenResult:
        """Create the collection with ``config`` or check that the stored config is compatible.

        With ``config=None`` the stored config is used (error if the collection does not exist).
        Raises ConfigMismatchError when the stored config differs, IndexNotFound when missing and
        ``create`` is False.
        """
        ...

    @property
    def config(self) -> FingerprintConfig: ...

    def count(self) -> int: ...

    def write(self, docs: Iterable[NewDoc]) -> Iterator[WriteResult]:
        """Write documents (insert or overwrite by id), yielding one result per document in order."""
        ...

    def lookup(self, probes: Sequence[Probe], *, limit: int = 1000) -> list[list[StoredDoc]]:
        """For each probe, the stored documents that match any of its band keys: at most ``limit``, those
        sharing the most keys with the probe (the most likely near-duplicates) when more match."""
        ...

    def copies(self, sha1s: Sequence[str], *, limit: int = 1000) -> list[list[StoredDoc]]:
        """For each content SHA-1, the stored documents that hold it (the exact copies of a text), at most
        ``limit``, by id: what a text without words, which has no band keys, is looked up by (rule 0 of
        `esdedup.match.rule`), and what finds a text's exact copies where a crowded band lookup cut its
        candidates (`esdedup.match.lookup.with_exact_copies`)."""
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

    def members(self, cluster_ids: Sequence[str]) -> list[StoredDoc]:
        """The documents labelled with any of ``cluster_ids`` (to label a cluster again)."""
        ...

    def refresh(self) -> None:
        """Make everything written so far visible to lookups."""
        ...

    def drop(self) -> None:
        """Delete the collection and everything in it."""
        ...

    def close(self) -> None: ...


#: What a write gives back: the results the store gave (`AllCreated` where it created them all), and the error
#: that stopped it (the rest unconfirmed).
Outcome = tuple[Sequence[WriteResult], StoreError | None]


def write_outcome(store: StoreCore, docs: list[NewDoc]) -> Outcome:
    """Write ``docs``; the results the store gave, and the error that stopped it (the rest unconfirmed)."""
    out: list[WriteResult] = []
    try:
        out.extend(store.write(docs))
    except StoreError as exc:
        return out, exc
    return out, None


class PendingWrite(Protocol):
    """A write under way (`BackgroundWrites.start_write`)."""

    def result(self) -> Outcome:
        """Wait for the write to end; what it gave back."""
        ...


class BackgroundWrites(Protocol):
    """A batch written in the background while the caller reads the next one: declared by a store whose write
    holds the GIL for little of its time (the embedded store's is SQLite's, on a thread of its own)."""

    def start_write(self, docs: list[NewDoc]) -> PendingWrite:
        """Start writing ``docs`` (as `StoreCore.write` does); its outcome is taken with `PendingWrite.result`,
        before anything else reads or writes the store (the caller holds the write lock meanwhile)."""
        ...


class ClusterLabels(Protocol):
    """How writers keep cluster labels right together (`Capability.LABELS`): what ingest and labelling use."""

    #: True when writers must settle their labels after writing: other writers' documents become visible
    #: to lookups only later (Elasticsearch). False when `write_lock` makes a batch's lookup and write one
    #: step for every writer (the embedded store).
    settles: bool

    def alone(self) -> bool:
        """True while no other writer has written to the collection since this store opened it: a writer
        that ``settles`` need not settle a batch written while it was alone (any writer that comes later
        finds the batch by itself). False when unknown."""
        ...

    def write_lock(self) -> AbstractContextManager[bool]:
        """Hold the collection's write lock for one batch (lookup, labelling, write), waiting for other
        writers; yields True when another writer changed the collection since this store last held it.
        A store that cannot lock (``settles``) yields False at once."""
        ...

    def merge_clusters(self, groups: Iterable[Collection[Root]]) -> int:
        """Make each group of clusters one cluster: every document labelled with one of a group's roots
        gets the earliest of them (``cluster_id``, ``cluster_seq``, and ``duplicate_of`` = that root, None
        for the root itself), whatever other writers do meanwhile. Returns the documents relabelled."""
        ...

    def relabel(self, labels: Mapping[str, Root]) -> int:
        """Give documents (by id) the cluster of a representative: ``cluster_id``, ``cluster_seq``, and
        ``duplicate_of`` = the representative (None for itself); returns the documents relabelled."""
        ...

    def delete_if_unchanged(self, docs: Sequence[StoredDoc]) -> list[str]:
        """Delete documents as they were read (a document changed or deleted since stays as it is);
        returns the ids deleted."""
        ...

    def set_labels(self, labels: Mapping[str, tuple[str, str | None]]) -> int:
        """Write (cluster_id, duplicate_of) for documents by id; returns how many were updated."""
        ...

    def move_dotted_keys_aside(self) -> int:
        """Mend documents that carry a record's own keys under ``dedup.`` beside the store's fields (dotted
        keys such as ``"dedup.cluster_id"``, which an older esdedup stored as given and Elasticsearch reads
        as a second cluster id, so that ``collapse`` on it fails): those keys are moved under
        ``input_fields``, where ingest keeps them now. Returns the documents mended."""
        ...


class KeyScans(Protocol):
    """Reading every document or every shared band key (`Capability.KEY_SCANS`): what all-pairs search reads."""

    def scan(self, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
        """Every stored document, in batches of at most ``batch`` (used by all-pairs search when the band
        layout probes neighbours, which exact key groups cannot serve)."""
        ...

    def scan_empty(self, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
        """Every stored document without words, in batches of at most ``batch`` (all-pairs search pairs
        their exact copies)."""
        ...

    def key_batches(self, *, max_bucket: int = 1000, lsh: bool = True) -> Iterator[KeyBatch]:
        """Every band key held by two or more documents, with their ids (sorted), in batches of a few
        thousand members, with every member's other keys (`KeyBatch`); each key comes in one batch only.
        A key held by more than ``max_bucket`` documents comes with only ``max_bucket`` ids, and is
        reported by `crowded_keys` (boilerplate that collides with everything). ``lsh=False``: SimHash
        band keys only (all-pairs search then groups the MinHash LSH bands itself, from `scan`).
        `shared_keys` gives the keys and ids alone."""
        ...

    def crowded_keys(self, *, min_count: int, limit: int = 20, lsh: bool = True) -> list[tuple[str, int]]:
        """Band keys held by at least ``min_count`` documents, most crowded first; ``lsh=False``: SimHash
        band keys only."""
        ...


class Browsing(Protocol):
    """What a person browsing the index reads (`Capability.BROWSING`, the review page): each a bounded query."""

    def cluster_summary(self) -> ClusterSummary:
        """How many clusters of two or more documents, how many documents they hold, and how many
        clusters have each size."""
        ...

    def cluster_page(self, *, offset: int, size: int) -> list[ClusterSize]:
        """Clusters of two or more documents, largest first (ties by cluster id), ``size`` of them from
        ``offset`` on."""
        ...

    def cluster_sizes(self, cluster_ids: Sequence[str]) -> dict[str, int]:
        """The size of each cluster named (a cluster id no document carries is absent)."""
        ...

    def top_keys(self, *, lsh: bool, limit: int = 15) -> TopKeys:
        """The values of the SimHash band fields (``lsh=False``) or of the MinHash LSH keys (``lsh=True``)
        held by the most documents (two or more), with how many hold each, most first (ties by value)."""
        ...

    def search_text(self, query: str, *, offset: int = 0, size: int = 20) -> SearchPage:
        """Documents whose id is ``query`` (as given, in lower or in upper case: `id_variants`) or whose
        title or text contains it (Chinese characters in sequence, words of other scripts whole, any case),
        ``size`` of them from ``offset`` on (`SearchPage`)."""
        ...

    def prepare_text_search(self) -> None:
        """Get `search_text` ready ahead of a first search, without waiting for it: the embedded store starts
        bringing its text index up to date in the background (it is caught up when searched, not when
        written); Elasticsearch indexes text as it is written and has nothing to do."""
        ...

    def sample(self, n: int, *, seed: int = 0) -> list[StoredDoc]:
        """About ``n`` documents chosen at random (the same ones for the same ``seed`` and contents)."""
        ...


class LabelledStore(StoreCore, ClusterLabels, Protocol):
    """A store with `ClusterLabels`: what ingest writes to."""


class ScannableStore(StoreCore, KeyScans, Protocol):
    """A store with `KeyScans`: what all-pairs search reads."""


class BrowsableStore(StoreCore, Browsing, Protocol):
    """A store with `Browsing`: what the review page reads."""


class Store(StoreCore, ClusterLabels, KeyScans, Browsing, Protocol):
    """A store with every protocol: both stores of esdedup (`esdedup.api.open_store` returns one)."""


def offers(store: StoreCore, capability: Capability) -> bool:
    """Whether ``store`` declares ``capability``."""
    return capability in store.capabilities


def require(store: StoreCore, capability: Capability, what: str) -> None:
    """Refuse ``what`` (a task, in words) on a store that does not declare ``capability``.

    Raises:
        Unsupported: the store does not offer it.
    """
    if capability not in store.capabilities:
        raise Unsupported(f"{what} needs a store with {capability.value}, which index {store.name!r} "
                          f"({type(store).__name__}) does not offer")


class ElasticsearchBacked(Protocol):
    """What a store backed by an Elasticsearch index offers beyond `Store`: its client (for requests of
    other kinds, such as an ingest pipeline), pages of its raw hits and their reading, conditional updates of
    ``dedup`` fields, its count of indexing operations and node-side verification. Only the Elasticsearch
    store has them: it declares `Capability.ELASTICSEARCH` (`elasticsearch_backed` tells, also for a store not
    yet opened)."""

    #: The ``elasticsearch.Elasticsearch`` client (the caller owns it).
    client: Any

    @property
    def display_url(self) -> str:
        """The server as messages name it: its node URLs, without credentials."""
        ...

    def hit_pages(self, what: str, *, query: Mapping[str, Any] | None = None, batch: int = 5000,
                  docvalue_fields: Sequence[str] = FINGERPRINT_FIELDS, versions: bool = False,
                  keep_alive: str = "2m") -> Iterator[list[dict[str, Any]]]:
        """The raw hits of ``query`` (default: every document) as the index held them when the call started,
        in pages of at most ``batch``, with the doc values ``docvalue_fields`` and the vector and signature
        from ``_source``; ``versions`` adds each hit's ``_seq_no``/``_primary_term``. ``what`` names the
        reading in errors."""
        ...

    def stored_doc(self, hit: Mapping[str, Any]) -> StoredDoc:
        """A hit of `hit_pages` as a `StoredDoc` (with its version when the hit has one)."""
        ...

    def update_dedup_if_unchanged(self, changes: Mapping[str, tuple[StoredDoc, dict[str, Any]]]) -> dict[str, StoredDoc]:
        """Partial updates of ``dedup`` fields (id -> (the document as read, its new fields)), each conditional
        on the version read. Returns the documents updated, with their new version and write order; a document
        changed or deleted since it was read is left out."""
        ...

    def indexed_total(self) -> int | None:
        """The index's count of indexing operations (each write and partial update is one), None when it
        cannot be read."""
        ...

    def verified_on_node(self, probe: Probe, params: Mapping[str, Any], *, size: int) -> list[dict[str, Any]]:
        """The hits the node itself verifies as near-duplicates of one probe (needs the esdedup plugin),
        nearest first, each with its measures in ``fields``."""
        ...


class ElasticsearchBackedStore(Store, ElasticsearchBacked, Protocol):
    """A `Store` that is `ElasticsearchBacked`: the type of a store that passed `elasticsearch_backed`."""


def elasticsearch_backed(store: StoreCore) -> TypeGuard[ElasticsearchBackedStore]:
    """Whether ``store`` declares `Capability.ELASTICSEARCH` (and with it every other protocol)."""
    return Capability.ELASTICSEARCH in store.capabilities


def writes_in_background(store: StoreCore) -> TypeGuard[BackgroundWrites]:
    """Whether ``store`` declares `Capability.BACKGROUND_WRITES`."""
    return Capability.BACKGROUND_WRITES in store.capabilities


def shared_keys(store: KeyScans, *, max_bucket: int = 1000, lsh: bool = True) -> Iterator[tuple[str, list[str]]]:
    """Every band key held by two or more documents in ``store``, with their ids (sorted): the groups of
    `KeyScans.key_batches` without the batches (a crowded key, held by more than ``max_bucket`` documents,
    with only ``max_bucket`` ids). ``lsh=False``: SimHash band keys only."""
    for batch in store.key_batches(max_bucket=max_bucket, lsh=lsh):
        for key, _, ids in batch.groups:
            yield key, ids
