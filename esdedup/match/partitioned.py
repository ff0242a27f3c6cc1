"""All-pairs search in partitions: one partition's share of the pairs of `esdedup.match.pairs.find_pairs`, read
from its share of the store's shared keys (`esdedup.store.partition`), verified by the same rule."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from esdedup.errors import ConfigError
from esdedup.match.pairs import VERDICT_BATCH, CopyGroups, Pair, PairScorer, ScoredPair, kept_pairs
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, lookup_thresholds
from esdedup.store.base import Capability, KeyBatch, Store, offers, require
from esdedup.store.partition import Partition, PartitionedKeys, PartitionedPairs, pair_share
from esdedup.util.spill import SortedSpill

log = logging.getLogger(__name__)

#: Pairs a partition holds in memory before it sorts them and writes them out as one sorted run
#: (`SortedPairs`): about 0.4 KB each in memory, some 20 MB a run, whatever the partition's number of pairs.
PAIRS_A_RUN = 50_000


@dataclass
class PartitionStats:
    """What one partition of all-pairs search did (`partition_pairs`): the shared keys it read (``keys``;
    ``members``: their documents, counted once a key), the candidate pairs it measured, the pairs the rule
    kept, and the seconds it took. ``fetched``: the documents whose keys the partition read from the store
    (Elasticsearch: the members of its key groups, read whole, their keys computed from their fingerprints).
    ``held``: the key entries (a key of a document) it held in memory to find its groups, where the store
    counts them (Elasticsearch: its share of the index's keys)."""

    partition: str
    keys: int = 0
    members: int = 0
    fetched: int = 0
    held: int = 0
    candidates: int = 0
    pairs: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {"partition": self.partition, "keys": self.keys, "members": self.members, "fetched": self.fetched,
                "held": self.held, "candidates": self.candidates, "pairs": self.pairs, "seconds": round(self.seconds, 3)}


def partition_pairs(store: Store, partition: Partition, *, thresholds: Thresholds | ThresholdOverrides | None = None,
                    max_bucket: int = 1000, stats: PartitionStats | None = None,
                    progress: Callable[[PartitionStats], None] | None = None) -> Iterator[Pair]:
    """The near-duplicate pairs of one partition of a store (`esdedup.store.partition`): its candidate pairs
    as the store shares them out (`PartitionedPairs`: those `pair_share` gives it; `PartitionedKeys`: those
    whose smallest shared key is in its share, and those sharing crowded keys only that `pair_share` gives
    it), and the pairs of exact copies (`CopyGroups`) that `pair_share` gives it. The partitions of one count
    together give exactly the pairs of `find_pairs`, each once. The store's key groups are read, the LSH keys
    among them, never the whole store's signatures. ``stats`` is kept up to date as the pairs come, and
    handed to ``progress`` after each batch.

    Raises:
        ConfigError: the store cannot read a share of its keys, or the band layout probes neighbouring keys
            (those pairs share no stored key, so no key says whose they are).
    """
    if not offers(store, Capability.PARTITIONED_PAIRS):
        require(store, Capability.PARTITIONED_KEYS, "all-pairs search in partitions")
    if store.config.band_layout().radius > 0:
        raise ConfigError("an index whose band layout probes neighbouring keys (probe_radius above 0) cannot be "
                          "searched in partitions: its probed pairs share no stored key")
    t = lookup_thresholds(thresholds, store.config)
    stats = stats if stats is not None else PartitionStats(str(partition))
    start = time.monotonic()
    scorer = PairScorer(store, t.hamming_k)

    def counted() -> Iterator[KeyBatch]:
        for b in cast(PartitionedKeys, store).partition_key_batches(partition, max_bucket=max_bucket, lsh=True):
            stats.keys += len(b.groups)
            stats.members += sum(len(ids) for _, _, ids in b.groups)
            stats.fetched += b.fetched
            stats.held = max(stats.held, b.held)
            yield b
            stats.seconds = time.monotonic() - start
            if progress is not None:
                progress(stats)

    def candidates() -> Iterator[ScoredPair]:
        """The partition's candidate pairs, measured: from its pairs (`PartitionedPairs`), or from its keys."""
        if not offers(store, Capability.PARTITIONED_PAIRS):
            yield from scorer.key_groups(max_bucket, lsh=True, batches=counted(), share=share)
            return
        for b in cast(PartitionedPairs, store).partition_candidates(partition, max_bucket=max_bucket, lsh=True):
            for key, n in b.crowded:
                log.warning("band value %s is shared by %d documents; only %d were compared (boilerplate? see the "
                            "index's crowded band values)", key, n, max_bucket)
            stats.keys += b.keys
            stats.members += b.members
            yield from scorer.score_pairs(b.pairs)
            stats.seconds = time.monotonic() - start
            if progress is not None:
                progress(stats)

    share = None if partition.whole else partition
    batch: list[ScoredPair] = []

    def judged(scored: list[ScoredPair]) -> Iterator[Pair]:
        stats.candidates += len(scored)
        for p in kept_pairs(scored, t, store.config.stores_vector):
            stats.pairs += 1
            yield p

    copies = CopyGroups.of(store, max_bucket=max_bucket)

    def mine(a: str, b: str) -> bool:
        return share is None or pair_share(a, b, share.count) == share.index

    def same_copies(a: str, b: str) -> bool:
        g = copies.member.get(a)
        return g is not None and copies.member.get(b) == g

    # The pairs of a group of copies are judged apart, each by the partition `pair_share` gives it: their
    # measures are the same whichever key brought them, and one run judges those no key brought too.
    for scored in candidates():
        if same_copies(scored.a, scored.b):
            continue
        batch.append(scored)
        if len(batch) >= VERDICT_BATCH:
            yield from judged(batch)
            batch = []
    yield from judged(batch)
    yield from judged(list(scorer.score_pairs([(a, b) for a, b in copies.unpaired() if mine(a, b)])))
    for copy in copies.empty_pairs():
        if mine(copy.a, copy.b):
            stats.candidates += 1
            stats.pairs += 1
            yield copy
    stats.seconds = time.monotonic() - start


#: A pair as written: ``a``, ``b``, the order it was found in (equal ids keep it, as a stable sort does), its
#: measures.
_Record = tuple[str, str, int, Any, Any, Any, Any, str]


class SortedPairs:
    """A partition's pairs sorted by ``(a, b)``, as ``sorted(pairs, key=lambda p: (p.a, p.b))`` orders them, without
    holding them: `keeping` passes the pairs on as they are found and writes them, every `PAIRS_A_RUN` (or ``run``)
    of them, as one sorted run to a private temporary file (`esdedup.util.spill.SortedSpill`: each pair a record
    of its fields, read back exactly); iterating merges the runs. ``len`` is the number of pairs. Read it as often
    as wanted until `close` (or the end of a ``with`` block), which deletes the file: memory is one run of pairs
    while they are found and a block of each run while they are read."""

    def __init__(self, *, run: int | None = None) -> None:
        self._spill = SortedSpill[_Record](run=run or PAIRS_A_RUN)

    def keeping(self, pairs: Iterable[Pair]) -> Iterator[Pair]:
        """``pairs``, passed on one by one, each kept here first."""
        add = self._spill.add
        for n, p in enumerate(pairs, len(self._spill)):
            add((p.a, p.b, n, p.hamming, p.cosine, p.jaccard, p.containment, p.decided_by))
            yield p

    @property
    def runs(self) -> int:
        """The sorted runs written to the file (0: the pairs fit one run, and are held in memory)."""
        return self._spill.runs

    def __len__(self) -> int:
        return len(self._spill)

    def __iter__(self) -> Iterator[Pair]:
        return (Pair(a, b, h, c, j, k, d) for a, b, _, h, c, j, k, d in self._spill)

    def close(self) -> None:
        self._spill.close()

    def __enter__(self) -> SortedPairs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
