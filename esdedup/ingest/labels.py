"""Labelling: each record's write order and cluster, decided against the run's memory window and the store.

A cluster is a set of documents connected by near-duplicate pairs; its representative is its earliest member
by write order (``seq``, then id), and every member carries the representative's id (``cluster_id``;
``duplicate_of`` on all but the representative). A document that joins two clusters joins them (the later
representative's members move to the earlier one).

A batch is looked up and its candidate pairs measured at once (`BatchCandidates`); its records are then
labelled one after the other, each against the documents before it, from those verdicts.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence, Set
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from esdedup.errors import StoreError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.values import FingerprintBlock
from esdedup.ingest import native_keys
from esdedup.ingest.accounting import Ledger
from esdedup.ingest.clock import WRITE_CLOCK
from esdedup.ingest.doccolumns import DocColumns
from esdedup.ingest.documents import (
    FingerprintedRecord,
    Labels,
    as_stored,
    new_doc,
    same_labels,
    same_text,
    stored_row,
)
from esdedup.ingest.options import LOOKUP_LIMIT, SUMMARY_IDS
from esdedup.ingest.runindex import (
    EMPTY,
    MAX_PER_KEY,
    KeyLists,
    RunIndex,
    counts_kept,
    held_keys,
    run_positions,
    run_starts,
)
from esdedup.ingest.runverdicts import QueryTexts, near_in_batch, near_in_run
from esdedup.ingest.window import MemoryWindow
from esdedup.match.lookup import lookup_keys, near_positions, probe_for, with_exact_copies
from esdedup.match.rule import Sketch
from esdedup.match.thresholds import Thresholds
from esdedup.store.base import LabelledStore, NewDoc, Root, StoredDoc
from esdedup.util.arrays import member_of, unique_sorted
from esdedup.util.unionfind import UnionFind

log = logging.getLogger(__name__)


#: Documents `Labeller.relabel_replaced` labels again at most (it compares every pair of them).
MAX_RELABEL = 2000


class NearDuplicates:
    """The candidates that are near-duplicates of a text by the rule (what `esdedup.match.lookup.verify`
    keeps, without ranking them: labelling joins them all)."""

    def __init__(self, config: FingerprintConfig, thresholds: Thresholds) -> None:
        self.config = config
        self.thresholds = thresholds

    def among(self, sketch: Sketch, own_id: str, cands: list[StoredDoc], sha1: str | None) -> list[StoredDoc]:
        """``sha1``: the text's content SHA-1, which decides a text without words (rule 0, `exact_copies`)."""
        return [cands[j] for j in self.many([sketch], [cands], [own_id], [sha1])[0]]

    def many(self, sketches: Sequence[Sketch], cands: Sequence[Sequence[StoredDoc]], own_ids: Sequence[str],
             sha1s: Sequence[str | None]) -> list[list[int]]:
        """`among` of several texts, measured together: the positions of each one's near-duplicates in its
        candidates."""
        return near_positions(sketches, cands, self.config, self.thresholds, exclude=own_ids, sha1s=sha1s)

    def in_batch(self, block: FingerprintBlock, items: Sequence[FingerprintedRecord], peers: Sequence[Sequence[int]],
                 todo: Sequence[int]) -> list[list[int]]:
        """`many` of the records ``todo`` of a batch against their peers in it (``peers[i]``: positions in
        ``items``, which came in ``block``), measured from its arrays: positions in each one's peers."""
        return near_in_batch(block, [d.row for d in items], peers, todo, self.config, self.thresholds,
                             ids=[d.id for d in items], sha1s=[d.sha1 for d in items], fps=lambda i: items[i].fp)

    def in_run(self, docs: DocColumns, items: Sequence[FingerprintedRecord], positions: Sequence[Sequence[int]]
               ) -> list[list[int]]:
        """`many` of records (``items``) against candidates in the run index (``positions`` in its ``docs``),
        measured from its columns and, for records that came in one block of arrays, from those: each
        record's near-duplicates among them, as positions in ``docs``."""
        block = _one_block(items)
        queries = (QueryTexts.of([d.fp for d in items], self.config) if block is None else
                   QueryTexts.in_block(block, [d.row for d in items], lambda i: items[i].fp, self.config))
        return near_in_run(docs, queries, positions, self.config, self.thresholds, exclude=[d.id for d in items],
                           sha1s=[d.sha1 for d in items])


def run_keys(d: FingerprintedRecord, config: FingerprintConfig, *, probing: bool) -> list[str]:
    """The keys this run's memory (run index, frozen keys) finds a record by: those it holds (`held_keys`), or
    with ``probing`` those it looks up (its band keys' neighbours too, where the band layout probes them)."""
    if probing and not d.fp.empty:
        return lookup_keys(d.fp, config)
    return held_keys(d.fp.bands, d.fp.lsh, d.fp.empty, d.sha1)


def run_key_lists(items: list[FingerprintedRecord], config: FingerprintConfig) -> tuple[KeyLists, KeyLists]:
    """The `run_keys` each record of a batch probes and holds: one list for both where the band layout probes
    no neighbouring keys (a record then looks up the keys it holds). The hashes of the keys held come from the
    workers when they made them (`FingerprintedRecord.held`)."""
    held = items[0].held if items else None
    if held is not None and all(d.held is held for d in items):
        hashes, counts = held.of_rows([d.row for d in items])
        holds = KeyLists.hashed(hashes, counts, lambda r: run_keys(items[r], config, probing=False))
    else:
        holds = KeyLists([run_keys(d, config, probing=False) for d in items])
    if not config.band_layout().radius:
        return holds, holds
    return KeyLists([run_keys(d, config, probing=True) for d in items]), holds


def connected(docs: list[StoredDoc], matches: Callable[[StoredDoc], list[StoredDoc]]) -> list[list[StoredDoc]]:
    """``docs`` grouped by the near-duplicate pairs among them (``matches(a)``: the docs paired with a)."""
    sets = UnionFind[str](d.id for d in docs)
    for a in docs:
        for b in matches(a):
            sets.union(a.id, b.id)
    groups: dict[str, list[StoredDoc]] = {}
    for d in docs:
        groups.setdefault(sets.find(d.id), []).append(d)
    return list(groups.values())


class BatchCandidates:
    """One batch's candidates in this run's memory, and the rule's verdicts on them, found before the batch is
    labelled record by record (where a record's labels depend on those before it), so that the pairs are
    measured together: those with the run index's documents from its columns (`NearDuplicates.in_run`), the
    others as documents (`NearDuplicates.many`).

    A record's candidates are its stored ones (``found``), the documents of the run index as the batch began
    that share a run key with it, and the records of the batch before it that the run index then holds under
    such a key: `candidates` gives what labelling reads of exactly what a lookup of the run index would give
    at that point (of the run index's documents, their latest write order and the clusters of those the rule
    pairs with the record, so that none is made a `StoredDoc`). The verdicts
    are measured beforehand over a superset: the earlier records of the batch among the first `MAX_PER_KEY` to
    hold a key of the same hash (the run index holds no more under a key, so a batch of copies of one text
    costs a few pairs a record, not one per earlier copy). A record past those that the run index still
    takes under such a key (some before it were not added: repeats, skipped) is a late peer: its pairs are
    measured when a later record meets it."""

    def __init__(self, labeller: Labeller, items: list[FingerprintedRecord], found: list[list[StoredDoc]],
                 probes: KeyLists, holds: KeyLists) -> None:
        self.holds, self._probes = holds, probes
        #: Where each record's hashes start in ``holds.flat`` and ``probes.flat`` (and the end).
        self._hold_at = run_starts(holds.counts).tolist()
        self._probe_at = self._hold_at if probes is holds else run_starts(probes.counts).tolist()
        run_index = labeller.window.run_index
        #: Each record's candidates in the run index as the batch began, by position in its documents (`docs`),
        #: measured from its columns: labelling reads of them only the latest write order and the clusters of
        #: the near-duplicates (`candidates`), and no `StoredDoc` is made of them.
        self._earlier = run_index.lookup_positions(probes)
        self._docs = run_index.docs
        #: The hashes of the keys the run index holds `MAX_PER_KEY` documents under already, which crowd out
        #: every record of the batch that holds one, when it holds the records under every other key they hold
        #: (`RunIndex.takes_whole`): most batches, whose records then go into it together
        #: (`RunIndex.add_all_later`). None for a batch it does not take whole.
        self._crowded_out = run_index.takes_whole(holds.hashes)
        self._later = self._crowded_out is not None
        self._peers, self._past_first = batch_peers(probes, self.holds, self._crowded_out)
        #: Position in the batch -> the write order and cluster it went into the run index with (`add`), the
        #: document made of it once a later record names it (`_added_doc`), and, in a batch not taken whole, the
        #: hashes of the run keys it is not held under (crowded).
        self._added: dict[int, tuple[int, Root]] = {}
        self._added_docs: dict[int, StoredDoc] = {}
        #: Records added to a batch the run index takes whole, with their rows, until `added_all`.
        self._added_rows: list[tuple[int, tuple[Any, ...]]] = []
        self._crowded_of: dict[int, frozenset[int]] = {}
        self._position_of: dict[int, int] = {}
        #: Hash -> the late peers held under it (see the class docstring), and what measuring them needs.
        self._late: dict[int, list[int]] = {}
        self._items, self._rule = items, labeller.rule
        #: One document a record, however many later records it is a peer of (`_added_doc` labels it later).
        self._peer_docs: dict[int, StoredDoc] = {}
        near = self._measured(found)
        in_run = [r for r, e in enumerate(self._earlier) if e]
        #: The positions of each record's near-duplicates among its candidates in the run index, in order.
        self._near_run: list[list[int]] = [[]] * len(items)  # one empty list, never changed
        #: The latest write order among each record's candidates in the run index (0: none).
        self._run_after = _latest(self._docs, self._earlier)
        for r, positions in zip(in_run, labeller.rule.in_run(self._docs, [items[r] for r in in_run],
                                                             [self._earlier[r] for r in in_run]), strict=True):
            self._near_run[r] = positions
        # The verdicts: on the candidates found by now by identity, on the batch's own records by position (most
        # records: no near-duplicate at all, one shared empty set).
        self._near: list[Set[int]] = [EMPTY] * len(items)
        self._near_peers: list[Set[int]] = [EMPTY] * len(items)
        for r, positions in enumerate(near):
            if positions:
                f, peers = found[r], self._peers[r]
                known = len(f)  # its candidates: the stored ones, then its peers
                self._near[r] = {id(f[p]) for p in positions if p < known}
                self._near_peers[r] = {peers[p - known] for p in positions if p >= known}

    def _measured(self, found: list[list[StoredDoc]]) -> list[list[int]]:
        """The rule's verdicts on each record's stored candidates (``found``) and its peers, as positions in
        their list (the stored ones, then the peers). Only the records with a candidate are measured: a
        record's verdicts are its pairs' alone, and one without a candidate has none (most of a batch). Those
        with peers alone, in a batch that came in one block of arrays, are measured from them; the others
        against their candidates as documents."""
        items, peers = self._items, self._peers
        block = _one_block(items)
        from_block = ([r for r, (f, p) in enumerate(zip(found, peers, strict=True)) if p and not f]
                      if block is not None else [])
        as_docs = [r for r, (f, p) in enumerate(zip(found, peers, strict=True)) if f or (p and block is None)]
        self._peer_docs.update((j, self._as_peer(j)) for r in as_docs for j in peers[r])
        near: list[list[int]] = [[]] * len(items)  # one empty list, never changed
        for r, positions in zip(as_docs, self._rule.many(
                [items[r].fp for r in as_docs], [[*found[r], *map(self._peer_docs.__getitem__, peers[r])]
                                                 for r in as_docs],
                [items[r].id for r in as_docs], [items[r].sha1 for r in as_docs]), strict=True):
            near[r] = positions
        if block is not None and from_block:
            for r, positions in zip(from_block, self._rule.in_batch(block, items, peers, from_block), strict=True):
                near[r] = positions
        return near

    def add(self, i: int, seq: int, root: Root, run_index: RunIndex) -> None:
        """Record ``i`` goes into the run index with write order ``seq`` in cluster ``root``."""
        d = self._items[i]
        self._added[i] = (seq, root)  # its StoredDoc is made when a later record of the batch names it (`_added_doc`)
        # Copied from its batch's arrays, where it has them, with the documents added with it.
        row = stored_row(d, seq, root) if d.block is None else (d.block, d.row, d.id, d.sha1, seq, root)
        if self._later:  # held under every key: nothing crowded out, no late peer; added with the batch
            self._added_rows.append((i, row))
            return
        crowded_out = run_index.add_row(row, self._held(i), lambda: self.holds.keys_of(i))
        if crowded_out:
            self._crowded_of[i] = crowded_out
        past_first = self._past_first.get(i)
        if past_first:
            for h in past_first - crowded_out:
                self._late.setdefault(h, []).append(i)

    def added_all(self, run_index: RunIndex) -> None:
        """The batch is labelled: the records `add` took in a batch the run index takes whole go into it, in
        the order they were added."""
        if not self._added_rows:
            return
        at = [i for i, _ in self._added_rows]
        taken = np.zeros(len(self._items), dtype=bool)
        taken[at] = True
        counts, holds, crowded_out = self.holds.counts, self.holds, self._crowded_out
        assert crowded_out is not None  # records are added later only in a batch taken whole
        run_index.add_all_later([row for _, row in self._added_rows], holds.hashes[np.repeat(taken, counts)],
                                [counts[i] for i in at], crowded_out, lambda d: holds.keys_of(at[d]))
        self._added_rows = []

    def none_in_run(self, i: int) -> bool:
        """Record ``i`` shares no run key with the run's documents nor with the batch's records before it
        (most records of a run: they are labelled without a candidate list)."""
        return not self._earlier[i] and not self._peers[i] and not (self._late and self._late_peers(i))

    def candidates(self, i: int, found: list[StoredDoc],
                   deleted: set[str]) -> tuple[list[StoredDoc], int, list[Root]]:
        """Record ``i``'s candidates: the stored ones, the run's documents sharing a run key with it, and the
        batch's records before it that the run index holds under such a key (the store's copy of a document
        wins: its labels may have moved since this run wrote it). Returned as what labelling reads of them:
        the stored ones and the batch's as documents (`near` picks the near-duplicates among them), the latest
        write order (``seq``) among them all, and the clusters (`StoredDoc.root`) of the run index's documents
        that the rule pairs with the record."""
        earlier, near_run = self._earlier[i], self._near_run[i]
        run: list[StoredDoc] = []
        late = self._late_peers(i) if self._late else []
        if self._later:  # each peer is held under every key, one of which the record looks up (`batch_peers`)
            run = [doc for doc in map(self._added_doc, self._peers[i]) if doc is not None]
        elif self._peers[i] or late:
            probes = set(self._probed(i))
            for j in sorted({*self._peers[i], *late}):
                doc = self._added_doc(j)
                if doc is not None and probes.intersection(self._held(j)) - self._crowded_of.get(j, frozenset()):
                    run.append(doc)
        docs = self._docs
        if not found and not deleted:  # an index this run created, and nothing deleted again by settling
            return (run, max(self._run_after[i], max(map(_seq, run), default=0)),
                    docs.roots(near_run) if near_run else [])
        seen = {c.id for c in found}
        cands = [c for c in [*found, *(c for c in run if c.id not in seen)] if c.id not in deleted]
        counted = [p for p in earlier if docs.id_at(p) not in seen and docs.id_at(p) not in deleted]
        after = int(docs.seqs(np.array(counted, dtype=np.int64)).max()) if counted else 0
        kept = set(counted)
        return (cands, max(after, max(map(_seq, cands), default=0)),
                docs.roots([p for p in near_run if p in kept]))

    def near_roots(self, i: int, found: list[StoredDoc], deleted: set[str]) -> tuple[int, list[Root]]:
        """What labelling reads of record ``i``'s candidates (`candidates`): the latest write order among them,
        and the clusters of those the rule pairs with it. A record of a batch the run index takes whole, with
        no stored candidate (a fresh run's), reads its peers' write orders and clusters as they were added: no
        document is made of them."""
        if not (self._later and not found and not deleted):
            cands, after, run_near = self.candidates(i, found, deleted)
            return after, [c.root for c in self.near(i, cands)] + run_near if cands else run_near
        added = self._added
        seqs = [added[j][0] for j in self._peers[i] if j in added]
        after = max(self._run_after[i], max(seqs)) if seqs else self._run_after[i]
        run_near = self._docs.roots(self._near_run[i]) if self._near_run[i] else []
        return after, [added[j][1] for j in self._near_peers[i] if j in added] + run_near

    def near(self, i: int, cands: list[StoredDoc]) -> list[StoredDoc]:
        """Those of ``cands`` (from `candidates`) that the rule pairs with record ``i``."""
        near, peers, position_of = self._near[i], self._near_peers[i], self._position_of
        late = self._late_peers(i) if self._late else []
        if late:
            peers = {*peers, *self._paired_late(i, late)}
        if not near and not peers:
            return []
        return [c for c in cands if id(c) in near or position_of.get(id(c), -1) in peers]

    def _held(self, i: int) -> list[int]:
        """The hashes of the run keys record ``i`` holds."""
        return self.holds.flat[self._hold_at[i]:self._hold_at[i + 1]]

    def _probed(self, i: int) -> list[int]:
        """The hashes of the run keys record ``i`` looks up."""
        return self._probes.flat[self._probe_at[i]:self._probe_at[i + 1]]

    def _added_doc(self, j: int) -> StoredDoc | None:
        """The document record ``j`` went into the run index as (`add`), one object however often it is named;
        None when it was not added."""
        doc = self._added_docs.get(j)
        if doc is None and j in self._added:
            seq, root = self._added[j]
            doc = self._peer_docs.get(j)
            if doc is None:
                doc = as_stored(self._items[j], seq, root)
            else:  # the document its verdicts were measured on (`_as_peer`), labelled now
                doc.seq, doc.cluster_seq, doc.cluster_id = seq, root[0], root[1]
                doc.duplicate_of = root[1] if root[1] != doc.id else None
            self._added_docs[j] = doc
            self._position_of[id(doc)] = j
        return doc

    def _late_peers(self, i: int) -> list[int]:
        """The late peers of record ``i`` held under a hash it probes that its measured peers leave out."""
        late = {j for h in self._probed(i) for j in self._late.get(h, ())}
        return sorted(late.difference(self._peers[i])) if late else []

    def _paired_late(self, i: int, late: list[int]) -> list[int]:
        """Those of ``late`` that the rule pairs with record ``i``, measured now."""
        d = self._items[i]
        return [late[p] for p in self._rule.many([d.fp], [[self._as_peer(j) for j in late]], [d.id], [d.sha1])[0]]

    def _as_peer(self, j: int) -> StoredDoc:
        """Record ``j`` as a candidate the rule measures (its fingerprint; its labels are not decided yet)."""
        return as_stored(self._items[j], 0, (0, self._items[j].id))


def _one_block(items: Sequence[FingerprintedRecord]) -> FingerprintBlock | None:
    """The block of arrays every record of a batch came in, if one did (`FingerprintedRecord.block`)."""
    block = items[0].block if items else None
    return block if block is not None and all(d.block is block for d in items) else None


def _latest(docs: DocColumns, positions: list[list[int]]) -> list[int]:
    """The latest write order (``seq``) among the documents of each list of ``positions`` (0 for none)."""
    counts = np.fromiter(map(len, positions), dtype=np.int64, count=len(positions))
    if not counts.any():
        return [0] * len(positions)
    seqs = docs.seqs(np.fromiter(chain.from_iterable(positions), dtype=np.int64, count=int(counts.sum())))
    out = np.zeros(len(positions), dtype=np.int64)
    held = counts > 0
    out[held] = np.maximum.reduceat(seqs, (np.cumsum(counts) - counts)[held])
    return out.tolist()  # type: ignore[no-any-return]


def batch_peers(probes: KeyLists, holds: KeyLists, crowded_out: np.ndarray | None = None
                ) -> tuple[list[list[int]], dict[int, frozenset[int]]]:
    """For each record of a batch, the earlier records (positions, ascending) among the first `MAX_PER_KEY` of
    the batch to hold a key of the same hash as one it probes: a superset of those the run index can hold under
    a key it shares, as long as it takes every record (see `BatchCandidates`). And for each record past the
    first `MAX_PER_KEY` of some hash, those hashes. No record is held under a hash of ``crowded_out`` (the run
    index holds `MAX_PER_KEY` documents under it already). In the extension when it is in use (one pass over a
    table of the batch's keys), else `_batch_peers` in numpy; the two give the same."""
    if crowded_out is not None and len(crowded_out):
        holds = _held_but(holds, crowded_out)
    found = native_keys.batch_peers(probes.hashes, probes.counts, holds.hashes, holds.counts, MAX_PER_KEY)
    if found is None:
        return _batch_peers(probes, holds)
    peers, records, keys = found
    return peers, _past_first(records, keys)


def _held_but(holds: KeyLists, hashes: np.ndarray) -> KeyLists:
    """The hashes of ``holds`` but those of ``hashes``, each record's that are left, for `batch_peers` (which reads
    the hashes alone: the key names stay those of ``holds``)."""
    kept = ~member_of(holds.hashes, hashes)
    return KeyLists.hashed(holds.hashes[kept], counts_kept(holds.counts, kept), holds.keys_of)


def _past_first(records: np.ndarray, hashes: np.ndarray) -> dict[int, frozenset[int]]:
    """Each record's hashes among (``records[x]``, ``hashes[x]``): the keys it holds past their first
    `MAX_PER_KEY` holders in the batch."""
    past_first: dict[int, set[int]] = {}
    for r, h in zip(records.tolist(), hashes.tolist(), strict=True):
        past_first.setdefault(r, set()).add(h)
    return {r: frozenset(hs) for r, hs in past_first.items()}


def _batch_peers(probes: KeyLists, holds: KeyLists) -> tuple[list[list[int]], dict[int, frozenset[int]]]:
    """`batch_peers` in numpy: the holders of each hash found by sorting the batch's hashes."""
    n = len(probes.counts)
    order = _stable_order(holds.hashes)  # the holders of a hash in batch order
    hold_hash, hold_of = holds.hashes[order], np.repeat(np.arange(n), holds.counts)[order]
    new_hash = np.ones(len(hold_hash), dtype=bool)
    new_hash[1:] = hold_hash[1:] != hold_hash[:-1]
    distinct = new_hash.copy()
    distinct[1:] |= hold_of[1:] != hold_of[:-1]
    hold_hash, hold_of, new_hash = hold_hash[distinct], hold_of[distinct], new_hash[distinct]
    starts = np.flatnonzero(new_hash)
    rank = np.arange(len(hold_hash)) - np.repeat(starts, np.diff(np.append(starts, len(hold_hash))))
    past = rank >= MAX_PER_KEY
    past_first = _past_first(hold_of[past], hold_hash[past])
    if probes is holds:
        # A record probes the keys it holds: a hash held once is probed by its holder alone and pairs no
        # two records, so only the hashes held twice or more are looked at (a few of a batch's).
        shared = ~new_hash
        shared[:-1] |= ~new_hash[1:]
        probe_hash, probe_of = hold_hash[shared], hold_of[shared]
        held = shared & ~past
    else:
        probe_hash, probe_of = probes.hashes, np.repeat(np.arange(n), probes.counts)
        held = ~past
    hold_hash, hold_of = hold_hash[held], hold_of[held]
    lo = np.searchsorted(hold_hash, probe_hash, side="left")
    count = np.searchsorted(hold_hash, probe_hash, side="right") - lo
    prober = np.repeat(probe_of, count)
    holder = hold_of[run_positions(lo, count)]  # the holders of each probe: hold_hash[lo:lo + count]
    earlier = holder < prober
    pairs = unique_sorted(prober[earlier].astype(np.int64) * n + holder[earlier])
    out: list[list[int]] = [[] for _ in range(n)]
    for i, j in zip((pairs // max(n, 1)).tolist(), (pairs % max(n, 1)).tolist(), strict=True):  # n = 0: none
        out[i].append(j)
    return out, past_first


def _stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")``, for values mostly distinct (hashes): a quicksort, then the few
    runs of equal values put back in their first order (a stable sort of 64-bit integers costs about three
    times a quicksort)."""
    order = np.argsort(values)
    ordered = values[order]
    equal = ordered[1:] == ordered[:-1]
    if equal.any():
        tied = np.zeros(len(order), dtype=bool)
        tied[1:] |= equal
        tied[:-1] |= equal
        at = np.flatnonzero(tied)
        order[at] = order[at][np.lexsort((order[at], ordered[at]))]
    return order


_seq = attrgetter("seq")


def _dup_of(doc_id: str, root: Root) -> str | None:
    return None if root[1] == doc_id else root[1]


class Labeller:
    """Looks a batch's records up (in the window, its frozen keys, the store), decides each one's fate and
    labels, and joins clusters in the run's view (`find`, `join`: what settling needs of it too)."""

    def __init__(self, store: LabelledStore, config: FingerprintConfig, thresholds: Thresholds, on_duplicate: str,
                 window: MemoryWindow, ledger: Ledger) -> None:
        self.store, self.config, self.on_duplicate = store, config, on_duplicate
        self.rule = NearDuplicates(config, thresholds)
        self.window = window
        self.ledger = ledger

    @property
    def holds_run_keys(self) -> bool:
        """Whether labelling looks records up by their run keys (`run_key_lists`): not in ``index`` mode, whose
        labels need no run memory."""
        return self.on_duplicate != "index"

    def find(self, root: Root) -> Root:
        return self.window.roots.find(root)

    def join(self, roots: set[Root]) -> Root:
        """Join clusters in this run's view; a record of this run that represented a cluster and now joins
        an earlier one becomes a near-duplicate."""
        top, demoted = self.window.join(roots)
        self.ledger.summary.duplicates += demoted
        return top

    # -- candidates -----------------------------------------------------------------------------------
    def lookup(self, items: list[FingerprintedRecord], probes: KeyLists | None) -> list[list[StoredDoc]]:
        """The stored candidates of each record: one batched band lookup, and the stored document under the
        same id (``index`` mode: only that one, whose labels an idempotent re-ingest keeps). An index this
        run created holds nothing this run did not write: what is not in the run index is among the
        documents its frozen keys name (``probes``: each record's run keys, None in ``index`` mode; a
        repeated id is found by `label`)."""
        if not items or self.window.run_index.complete:
            return self._frozen_candidates(items, probes)
        try:
            # The stored document under each id, whatever its text (a new text finds no band key of the old).
            have = self.store.get([d.id for d in items])
            if self.on_duplicate == "index":
                return [[have[d.id]] if d.id in have else [] for d in items]
            found = self.store.lookup([probe_for(d.fp, self.config) for d in items], limit=LOOKUP_LIMIT)
            found = with_exact_copies(self.store, [d.fp for d in items], [d.sha1 for d in items], found,
                                      limit=LOOKUP_LIMIT)
            return [cands if d.id not in have or any(c.id == d.id for c in cands) else [*cands, have[d.id]]
                    for d, cands in zip(items, found, strict=True)]
        except StoreError as exc:
            self.ledger.fail_unconfirmed(items, exc, "not written, the store failed")
            raise

    def _frozen_candidates(self, items: list[FingerprintedRecord],
                           probes: KeyLists | None) -> list[list[StoredDoc]]:
        """The documents of earlier windows sharing a band key with each record, as the store holds them
        (their labels may have moved since): one fetch for the batch."""
        named = None if probes is None else self.window.frozen_ids(probes, LOOKUP_LIMIT)
        if named is None:
            return [[] for _ in items]
        try:
            docs = self.store.get(sorted({i for ids in named for i in ids}))
        except StoreError as exc:
            self.ledger.fail_unconfirmed(items, exc, "not written, the store failed")
            raise
        return [[docs[i] for i in ids if i in docs] for ids in named]

    # -- labels ---------------------------------------------------------------------------------------
    def label(self, items: list[FingerprintedRecord]) -> list[tuple[FingerprintedRecord, Labels]]:
        """Look a batch up and decide each record's fate: a repeat within this run (skipped or failed), a
        near-duplicate to skip, or a document to write with its labels."""
        if not self.holds_run_keys:
            return self._label(items, self.lookup(items, None), None)
        probes, holds = run_key_lists(items, self.config)
        found = self.lookup(items, probes)
        return self._label(items, found, BatchCandidates(self, items, found, probes, holds))

    def _label(self, items: list[FingerprintedRecord], stored: list[list[StoredDoc]],
               batch: BatchCandidates | None) -> list[tuple[FingerprintedRecord, Labels]]:
        labelled: list[tuple[FingerprintedRecord, Labels]] = []
        window, summary, cur = self.window, self.ledger.summary, self.ledger.cur
        clusters = cur.clusters if self.ledger.keeps_fates else None
        earlier = window.earlier.get([d.id for d in items])
        for i, (d, found) in enumerate(zip(items, stored, strict=True)):
            first_sha1 = window.written.get(d.id) or earlier.get(d.id)
            if first_sha1 is not None:
                self._repeat(d, first_sha1)
                continue
            window.written[d.id] = d.sha1
            labels = self._labels_of(d, found, batch, i)
            if labels.skip_for is not None:
                summary.duplicates += 1
                self.ledger.skip(d, f"near-duplicate of {labels.skip_for}")
                continue
            if labels.root[1] != d.id:
                summary.duplicates += 1
            else:
                window.own_roots.add(d.id)
            if labels.replaces is not None:
                self._count_replaced(d, labels)
            labelled.append((d, labels))
            if clusters is not None:
                clusters[id(d.record)] = (d.id, labels.root)
            if batch is not None:
                batch.add(i, labels.seq, labels.root, window.run_index)
        if batch is not None:
            batch.added_all(window.run_index)
        return labelled

    def _count_replaced(self, d: FingerprintedRecord, labels: Labels) -> None:
        summary = self.ledger.summary
        summary.replaced += 1
        if len(summary.replaced_ids) < SUMMARY_IDS:
            summary.replaced_ids.append(d.id)
        assert labels.replaces is not None
        self.ledger.cur.replaced[d.id] = (labels.replaces, labels.root)

    def _repeat(self, d: FingerprintedRecord, first_sha1: str) -> None:
        """A second record with an id this run already wrote (with text ``first_sha1``)."""
        if first_sha1 == d.sha1:
            self.ledger.skip(d, "same id and text as a record already written in this run", listed=False)
        else:
            self.ledger.fail(d.record, "rejected", "duplicate id with different text (the first record with this "
                             "id was kept)", doc_id=d.id, excerpt=d.record.text[:200])

    def _labels_of(self, d: FingerprintedRecord, found: list[StoredDoc], batch: BatchCandidates | None,
                   i: int) -> Labels:
        """One record's write order and cluster (``i``: its position in the batch; ``batch`` None in ``index``
        mode).

        A document already stored with this content keeps its write order and labels (an idempotent
        re-ingest), joined with the clusters of its near-duplicates (a run killed after writing and before
        settling is mended by the next). A new document gets a write order after everything it was
        compared with, and joins the clusters of all its verified near-duplicates (``skip``: is skipped
        when it has any; ``index``: is its own cluster). A new text under a stored id is labelled as a new
        document, apart from the cluster the old text was in (`_labels_of_new_text`)."""
        if not found and batch is not None and batch.none_in_run(i):  # no candidate: a cluster of its own
            seq = WRITE_CLOCK.next()
            return Labels(seq, (seq, d.id))
        self_doc = next((s for s in found if s.id == d.id), None) if found else None
        # The latest write order among its candidates, and the clusters of its near-duplicates among them.
        after, near = ((max(map(_seq, found), default=0), []) if batch is None
                       else batch.near_roots(i, found, self.window.deleted))
        if self_doc is not None and not same_text(self_doc, d):
            return self._labels_of_new_text(d, after, near, self_doc)
        if batch is None:
            if self_doc is None:
                seq = WRITE_CLOCK.next()
                return Labels(seq, (seq, d.id))
            return Labels(self_doc.seq or WRITE_CLOCK.next(), self_doc.root, stored=self_doc)
        roots = {self.find(r) for r in near}
        if self_doc is not None:
            me = self.find(self_doc.root)
            seq = self_doc.seq or WRITE_CLOCK.next()
            if self.on_duplicate == "skip":  # stored already: settling decides whether it stays
                return Labels(seq, me, stored=self_doc)
        else:
            seq = WRITE_CLOCK.next(after=after)
            me = (seq, d.id)
            if roots and self.on_duplicate == "skip":
                return Labels(seq, me, skip_for=min(roots)[1])
        if not roots:  # a cluster of its own, or its stored one: nothing to join
            return Labels(seq, me, stored=self_doc)
        if self_doc is None and len(roots) == 1:  # a new document near one cluster (most near-duplicates)
            (top,) = roots
            if top < me:
                return Labels(seq, self.window.join_new(me, top))
        if len(roots - {me}) > (0 if self_doc is not None else 1):  # clusters already stored that this joins
            self.ledger.cur.joins.append(roots | {me})
        return Labels(seq, self.join(roots | {me}), stored=self_doc)

    def _labels_of_new_text(self, d: FingerprintedRecord, after: int, near: list[Root], old: StoredDoc) -> Labels:
        """A new text under an id already stored (``after``: the latest write order among its candidates,
        ``near``: the clusters of its near-duplicates among them): labelled as a new document, apart from the
        cluster the old text was in (whose label names the old text; `relabel_replaced` labels that one again
        after the write). ``skip``: a new text that duplicates another document is skipped, the old one
        stays."""
        self.window.roots.forget({d.id})
        seq = WRITE_CLOCK.next(after=after)
        me = (seq, d.id)
        if self.on_duplicate == "index":
            return Labels(seq, me, replaces=old.root)
        roots = {r for r in map(self.find, near) if r[1] != d.id}
        if roots and self.on_duplicate == "skip":
            return Labels(seq, me, skip_for=f"{min(roots)[1]} (the document stored under this id keeps its text)")
        if len(roots) > 1:
            self.ledger.cur.joins.append(roots | {me})
        return Labels(seq, self.join(roots | {me}), replaces=old.root)

    def new_docs(self, labelled: list[tuple[FingerprintedRecord, Labels]]) -> list[tuple[NewDoc, FingerprintedRecord]]:
        """The documents to write. Their clusters are read only now, when the batch is sent: a later record
        (of this batch, or of the next, labelled while the one before was written) or settling the batch
        before may have joined a record's cluster to another. A document stored already with the same id,
        text and labels is not sent again: it counts as indexed, unchanged (the index's config is the run's,
        so its fingerprint fields are the same)."""
        out = []
        # Clusters a replaced text was in are labelled again after the write: their members are sent.
        relabelled = {old for old, _ in self.ledger.cur.replaced.values()}
        for d, labels in labelled:
            root = self.find(labels.root)
            dup_of = root[1] if root[1] != d.id and self.on_duplicate != "index" else None
            new = new_doc(d, labels.seq, root, duplicate_of=dup_of)
            if labels.stored is not None and same_labels(labels.stored, new) and root not in relabelled:
                self.ledger.unchanged(d)
                continue
            out.append((new, d))
        return out

    # -- after the write ------------------------------------------------------------------------------
    def relabel_replaced(self, make_visible: Callable[[], None]) -> None:
        """Label again the clusters that texts replaced in this batch were in, and the clusters the new texts
        joined: their members form one cluster per set still joined by near-duplicate pairs, each
        represented by its earliest member (the old text's pairs are gone). ``make_visible``: what the
        store needs before it shows the batch just written."""
        cur = self.ledger.cur
        replaced, cur.replaced = cur.replaced, {}
        if not replaced or self.on_duplicate == "index":
            return
        make_visible()
        ids = {r[1] for old, new in replaced.values() for r in (old, self.find(new))} | set(replaced)
        members = self.store.members(sorted(ids))
        if len(members) > MAX_RELABEL:
            log.warning("%d documents share clusters with texts replaced under the same id: more than %d, not "
                        "labelled again (run 'dups' with cluster labels to do it)", len(members), MAX_RELABEL)
            return
        labels: dict[str, Root] = {}
        for group in connected(members, lambda a: self.rule.among(a, a.id, members, a.content_sha1)):
            root = min((m.seq, m.id) for m in group)
            labels.update((m.id, root) for m in group if m.root != root or m.duplicate_of != _dup_of(m.id, root))
        self.window.roots.forget({m.id for m in members})
        if labels:
            self.ledger.summary.relabelled += self.store.relabel(labels)
