"""The rule's verdicts on a batch's candidates in the run index, measured from the index's columns
(`esdedup.ingest.doccolumns.DocColumns.sketches`), and on its records' peers in the batch, measured from the
arrays the batch came in (`near_in_batch`): the decisions `esdedup.match.lookup.near_positions` takes of
the same texts and documents, without a `StoredDoc` made for each candidate (a batch names thousands of them,
and most are no near-duplicate). The measures and the decision are the rule's own (`measure_column_pairs`,
`Measures.decide`); only where the numbers come from differs."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.values import FingerprintBlock
from esdedup.ingest.doccolumns import DocColumns, RunSketches
from esdedup.match.lookup import VERIFY_BATCH
from esdedup.match.measures import SketchColumns, measure_column_pairs, signature_rows, stacked_vectors
from esdedup.match.rule import CopyOf, Sketch, exact_copies
from esdedup.match.thresholds import Thresholds
from esdedup.util.arrays import unique_sorted


@dataclass(frozen=True)
class QueryTexts:
    """The texts `near_in_run` measures against their candidates: whether each has no words (``empty``), what
    the rule reads of some of them (``sketches``, by position), and each one's fingerprint (``fp``), read only
    for a pair the columns cannot decide (two signatures of different lengths)."""

    empty: Sequence[bool]
    sketches: Callable[[list[int]], RunSketches]
    fp: Callable[[int], Sketch]

    @classmethod
    def of(cls, fps: Sequence[Sketch], config: FingerprintConfig) -> QueryTexts:
        """Texts given by their fingerprints."""
        def sketches(at: list[int]) -> RunSketches:
            q = [fps[i] for i in at]
            sigs, signed, full = signature_rows(q, config.minhash_perm)
            return RunSketches([f.simhash for f in q], [f.chars for f in q], np.array([f.shingles for f in q]),
                               np.array([f.empty for f in q], dtype=bool), sigs, signed, full,
                               np.array([f.vector is not None for f in q], dtype=bool), lambda: [f.vector for f in q])

        return cls([f.empty for f in fps], sketches, fps.__getitem__)

    @classmethod
    def in_block(cls, block: FingerprintBlock, rows: Sequence[int], fp: Callable[[int], Sketch],
                 config: FingerprintConfig) -> QueryTexts:
        """Texts given as ``rows`` of the arrays their batch came in (`FingerprintBlock`), read from them: no
        fingerprint is made of a text for this (``fp(i)``: text i's, for the rare pair that needs it)."""
        at_rows = np.asarray(rows, dtype=np.int64)

        return cls(block.empties[at_rows].tolist(),
                   lambda at: _block_parts(block, at_rows[at], config.minhash_perm), fp)


def near_in_run(docs: DocColumns, queries: QueryTexts, positions: Sequence[Sequence[int]], config: FingerprintConfig,
                t: Thresholds, *, exclude: Sequence[str], sha1s: Sequence[str | None]) -> list[list[int]]:
    """Which of each text's candidates in the run index (``positions[i]``: positions in ``docs``) are its
    near-duplicates by the rule, in the order given: what `near_positions` decides of the same documents
    (a text without words: its exact copies, rule 0; a text with words: each candidate with words but the one
    of id ``exclude[i]``, measured `VERIFY_BATCH` pairs at a time)."""
    out: list[list[int]] = [[]] * len(positions)  # one empty list, never changed: each answer is a list of its own
    todo: list[int] = []
    pairs = 0
    for i, (empty, found) in enumerate(zip(queries.empty, positions, strict=True)):
        if not found:
            continue
        if empty:
            out[i] = _copies(docs, found, exclude[i], sha1s[i])
            continue
        todo.append(i)
        pairs += len(found)
        if pairs >= VERIFY_BATCH:
            _judge(docs, queries, positions, todo, config, t, exclude, out)
            todo, pairs = [], 0
    if todo:
        _judge(docs, queries, positions, todo, config, t, exclude, out)
    return out


def _copies(docs: DocColumns, found: Sequence[int], own_id: str, sha1: str | None) -> list[int]:
    """Rule 0 (`exact_copies`) for a text without words: the documents read are the empty ones alone (the
    only ones that can be exact copies), few."""
    if not sha1:
        return []
    empty = [p for p, e in zip(found, docs.empties(np.array(found, dtype=np.int64)).tolist(), strict=True) if e]
    return [empty[x] for x in exact_copies(True, sha1, [docs[p] for p in empty], exclude=own_id)]


def _judge(docs: DocColumns, queries: QueryTexts, positions: Sequence[Sequence[int]], todo: list[int],
           config: FingerprintConfig, t: Thresholds, exclude: Sequence[str], out: list[list[int]]) -> None:
    """Measure the texts ``todo`` (with words) against their candidates and add the near ones to ``out``."""
    counts = [len(positions[i]) for i in todo]
    flat = np.fromiter(chain.from_iterable(positions[i] for i in todo), dtype=np.int64, count=sum(counts))
    owner = np.repeat(np.arange(len(todo)), counts)  # the pair's text, by its place in todo
    uniq, right = np.unique(flat, return_inverse=True)
    run = docs.sketches(uniq, config.minhash_perm)
    # Left out: candidates without words, and a text's own id (its hash first; the few equal hashes by id).
    keep = ~run.empty[right]
    own = np.array([hash(exclude[i]) for i in todo], dtype=np.int64)
    for x in np.flatnonzero(keep & (docs.id_hashes(uniq)[right] == own[owner])).tolist():
        keep[x] = docs.id_at(int(flat[x])) != exclude[todo[int(owner[x])]]
    flat, owner, right = flat[keep], owner[keep], right[keep]
    if not len(flat):
        return
    # Rows: the texts measured, then the candidates.
    texts = unique_sorted(owner)
    left = np.searchsorted(texts, owner)
    right = right + len(texts)
    measured = [todo[k] for k in texts.tolist()]
    q = queries.sketches(measured)
    has_vector = np.concatenate((q.has_vector, run.has_vector))

    def vectors() -> np.ndarray:
        return stacked_vectors([*q.vectors(), *run.vectors()], has_vector, config)

    cols = SketchColumns.from_parts(
        config, simhash=[*q.simhash, *run.simhash], sigs=np.concatenate((q.sigs, run.sigs)),
        signed=np.concatenate((q.signed, run.signed)), full=np.concatenate((q.full, run.full)),
        shingles=[*q.shingles.tolist(), *run.shingles.tolist()], chars=[*q.chars, *run.chars],
        has_vector=has_vector, vectors=vectors)
    m = measure_column_pairs(cols, left, right, config, t,
                             lambda x: (queries.fp(measured[int(left[x])]), docs[int(flat[x])]))
    near = np.flatnonzero(m.decide(t))
    if not len(near):
        return
    by_text: dict[int, set[int]] = {}
    for k, p in zip(owner[near].tolist(), flat[near].tolist(), strict=True):
        by_text.setdefault(todo[k], set()).add(p)
    for i, chosen in by_text.items():
        out[i] = [p for p in positions[i] if p in chosen]


def near_in_batch(block: FingerprintBlock, rows: Sequence[int], peers: Sequence[Sequence[int]], todo: Sequence[int],
                  config: FingerprintConfig, t: Thresholds, *, ids: Sequence[str], sha1s: Sequence[str],
                  fps: Callable[[int], Sketch]) -> list[list[int]]:
    """Which of each text's peers are its near-duplicates by the rule, as positions in its list of them: what
    `near_positions` decides of each text of ``todo`` against its peers made as documents, measured from the
    arrays the batch came in. Texts and peers are positions in one batch: ``rows[i]``, text i's row in
    ``block``; ``peers[i]``, its peers; ``ids``, ``sha1s``, each text's id and content SHA-1; ``fps(i)``, its
    fingerprint (for a pair of signatures of two lengths, which one config does not make)."""
    out: list[list[int]] = [[] for _ in todo]
    row = np.asarray(rows, dtype=np.int64)
    empty = block.empties[row]  # by batch position
    counts = [len(peers[i]) for i in todo]
    owner = np.repeat(np.arange(len(todo)), counts)  # the pair's text, by its place in todo
    text = np.asarray(todo, dtype=np.int64)[owner]
    peer = np.fromiter(chain.from_iterable(peers[i] for i in todo), dtype=np.int64, count=sum(counts))
    position = np.arange(len(peer)) - np.repeat(np.cumsum(counts) - counts, counts)  # in the text's peers
    for k in np.flatnonzero(empty[np.asarray(todo, dtype=np.int64)]).tolist():  # rule 0: exact copies alone
        i = todo[k]
        out[k] = exact_copies(True, sha1s[i], [CopyOf(ids[j], bool(empty[j]), sha1s[j]) for j in peers[i]],
                              exclude=ids[i])
    # Measured: a text with words against each peer with words but one of its own id (hashes first).
    keep = ~empty[text] & ~empty[peer]
    id_hash = np.array([hash(i) for i in ids], dtype=np.int64)
    for x in np.flatnonzero(keep & (id_hash[text] == id_hash[peer])).tolist():
        keep[x] = ids[int(text[x])] != ids[int(peer[x])]
    owner, text, peer, position = owner[keep], text[keep], peer[keep], position[keep]
    if not len(text):
        return out
    both = unique_sorted(np.concatenate((text, peer)))
    left, right = np.searchsorted(both, text), np.searchsorted(both, peer)
    cols = _block_sketches(block, row[both], config)
    m = measure_column_pairs(cols, left, right, config, t, lambda x: (fps(int(text[x])), fps(int(peer[x]))))
    near = np.flatnonzero(m.decide(t))
    # The pairs come by text, each text's by position in its peers: each text's near ones are one run of them.
    owners, positions = owner[near], position[near].tolist()
    starts = np.flatnonzero(np.diff(owners, prepend=-1)).tolist()
    ends = [*starts[1:], len(positions)] if starts else []
    for k, a, b in zip(owners[starts].tolist(), starts, ends, strict=True):
        out[k] = positions[a:b]
    return out


def _block_sketches(block: FingerprintBlock, rows: np.ndarray, config: FingerprintConfig) -> SketchColumns:
    """`SketchColumns.of` the fingerprints of ``rows`` of ``block``, from its arrays."""
    p = _block_parts(block, rows, config.minhash_perm)
    return SketchColumns.from_parts(config, simhash=p.simhash, sigs=p.sigs, signed=p.signed, full=p.full,
                                    shingles=p.shingles.tolist(), chars=p.chars, has_vector=p.has_vector,
                                    vectors=lambda: np.asarray(p.vectors()))


def _block_parts(block: FingerprintBlock, rows: np.ndarray, perm: int) -> RunSketches:
    """What the rule reads of the fingerprints of ``rows`` of ``block``, from its arrays: what a `Fingerprint`
    made of each row holds (a row without a vector of its own reads the zero vector)."""
    sig_row, shingles = block.sig_row[rows], block.shingles[rows]
    signed = (sig_row >= 0) & (shingles > 0)
    full = signed & (block.sigs is not None and block.sigs.shape[1] == perm)
    sigs = np.zeros((len(rows), perm), dtype=np.uint32)
    if full.any():
        assert block.sigs is not None
        sigs[full] = block.sigs[sig_row[full]]
    vector_row = block.vector_row[rows]

    def vectors() -> np.ndarray:
        out = np.zeros((len(rows), len(block.zero)), dtype=np.float32)
        if block.vectors is not None and (vector_row >= 0).any():
            out[vector_row >= 0] = block.vectors[vector_row[vector_row >= 0]]
        return out

    return RunSketches(block.simhash[rows].tolist(), block.chars[rows].tolist(), shingles, block.empties[rows], sigs,
                       signed, full, np.ones(len(rows), dtype=bool), vectors)
