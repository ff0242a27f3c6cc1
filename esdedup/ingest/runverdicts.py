"""The rule's verdicts on a batch's candidates in the run index, measured from the index's columns
(`esdedup.ingest.doccolumns.DocColumns.sketches`): the decisions `esdedup.match.lookup.near_positions` takes of
the same texts and documents, without a `StoredDoc` made for each candidate (a batch names thousands of them,
and most are no near-duplicate). The measures and the decision are the rule's own (`measure_column_pairs`,
`Measures.decide`); only where the numbers come from differs."""
from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest.doccolumns import DocColumns
from esdedup.match.lookup import VERIFY_BATCH
from esdedup.match.measures import SketchColumns, measure_column_pairs, signature_rows, stacked_vectors
from esdedup.match.rule import Sketch, exact_copies
from esdedup.match.thresholds import Thresholds


def near_in_run(docs: DocColumns, fps: Sequence[Sketch], positions: Sequence[Sequence[int]], config: FingerprintConfig,
                t: Thresholds, *, exclude: Sequence[str], sha1s: Sequence[str | None]) -> list[list[int]]:
    """Which of each text's candidates in the run index (``positions[i]``: positions in ``docs``) are its
    near-duplicates by the rule, in the order given: what `near_positions` decides of the same documents
    (a text without words: its exact copies, rule 0; a text with words: each candidate with words but the one
    of id ``exclude[i]``, measured `VERIFY_BATCH` pairs at a time)."""
    out: list[list[int]] = [[]] * len(fps)  # one empty list, never changed: each answer is a list of its own
    todo: list[int] = []
    pairs = 0
    for i, (fp, found) in enumerate(zip(fps, positions, strict=True)):
        if not found:
            continue
        if fp.empty:
            out[i] = _copies(docs, found, exclude[i], sha1s[i])
            continue
        todo.append(i)
        pairs += len(found)
        if pairs >= VERIFY_BATCH:
            _judge(docs, fps, positions, todo, config, t, exclude, out)
            todo, pairs = [], 0
    if todo:
        _judge(docs, fps, positions, todo, config, t, exclude, out)
    return out


def _copies(docs: DocColumns, found: Sequence[int], own_id: str, sha1: str | None) -> list[int]:
    """Rule 0 (`exact_copies`) for a text without words: the documents read are the empty ones alone (the
    only ones that can be exact copies), few."""
    if not sha1:
        return []
    empty = [p for p, e in zip(found, docs.empties(np.array(found, dtype=np.int64)).tolist(), strict=True) if e]
    return [empty[x] for x in exact_copies(True, sha1, [docs[p] for p in empty], exclude=own_id)]


def _judge(docs: DocColumns, fps: Sequence[Sketch], positions: Sequence[Sequence[int]], todo: list[int],
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
    texts = np.unique(owner)
    left = np.searchsorted(texts, owner)
    right = right + len(texts)
    q = [fps[todo[int(k)]] for k in texts]
    query_sigs, query_signed, query_full = signature_rows(q, config.minhash_perm)
    query_vector = np.array([f.vector is not None for f in q], dtype=bool)
    has_vector = np.concatenate((query_vector, run.has_vector))

    def vectors() -> np.ndarray:
        return stacked_vectors([*(f.vector for f in q), *run.vectors()], has_vector, config)

    cols = SketchColumns.from_parts(
        config, simhash=[*(f.simhash for f in q), *run.simhash], sigs=np.concatenate((query_sigs, run.sigs)),
        signed=np.concatenate((query_signed, run.signed)), full=np.concatenate((query_full, run.full)),
        shingles=[*(f.shingles for f in q), *run.shingles.tolist()], chars=[*(f.chars for f in q), *run.chars],
        has_vector=has_vector, vectors=vectors)
    m = measure_column_pairs(cols, left, right, config, t,
                             lambda x: (q[int(left[x])], docs[int(flat[x])]))
    near = np.flatnonzero(m.decide(t))
    if not len(near):
        return
    by_text: dict[int, set[int]] = {}
    for k, p in zip(owner[near].tolist(), flat[near].tolist(), strict=True):
        by_text.setdefault(todo[k], set()).add(p)
    for i, chosen in by_text.items():
        out[i] = [p for p in positions[i] if p in chosen]
