"""Cluster labels in the ``docs`` table: written, merged and read. Writers are serialised here
(`esdedup.store.local.LocalStore.write_lock`), so each change is plain UPDATEs in one transaction."""
from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Mapping

from esdedup.store.base import Root
from esdedup.store.local.sqlite import MAX_PARAMS, chunks, marks
from esdedup.util.unionfind import union_groups


def set_labels(db: sqlite3.Connection, labels: Mapping[str, tuple[str, str | None]]) -> int:
    """See `esdedup.store.base.Store.set_labels`."""
    with db:
        cur = db.executemany("UPDATE docs SET cluster_id = ?, duplicate_of = ? WHERE id = ?",
                             [(c, d, i) for i, (c, d) in labels.items()])
    return cur.rowcount


def merge_clusters(db: sqlite3.Connection, groups: Iterable[Collection[Root]]) -> int:
    """See `esdedup.store.base.Store.merge_clusters`: one UPDATE per group."""
    relabelled = 0
    with db:
        for group in union_groups(groups):
            roots = {current_root(db, r) for r in group}
            target = min(roots)
            others = sorted({r[1] for r in roots | set(group)} - {target[1]})
            for chunk in chunks(others, MAX_PARAMS - 4):
                cur = db.execute(f"UPDATE docs SET cluster_id = ?, cluster_seq = ?, duplicate_of = CASE WHEN "
                                 f"id = ? THEN NULL ELSE ? END WHERE cluster_id IN ({marks(len(chunk))})",
                                 (target[1], target[0], target[1], target[1], *chunk))
                relabelled += cur.rowcount
    return relabelled


def current_root(db: sqlite3.Connection, root: Root) -> Root:
    """Where a cluster's representative now points: a representative merged into another cluster since
    ``root`` was read carries that cluster's labels."""
    for _ in range(64):
        row = db.execute("SELECT cluster_id, cluster_seq, wseq FROM docs WHERE id = ?", (root[1],)).fetchone()
        if row is None or row[0] is None or row[0] == root[1]:
            return (row[2], root[1]) if row is not None else root
        root = (row[1], row[0])
    return root


def relabel(db: sqlite3.Connection, labels: Mapping[str, Root]) -> int:
    """See `esdedup.store.base.Store.relabel`."""
    with db:
        cur = db.executemany("UPDATE docs SET cluster_id = ?, cluster_seq = ?, duplicate_of = ? WHERE id = ?",
                             [(root, seq, None if i == root else root, i) for i, (seq, root) in labels.items()])
    return cur.rowcount


def read_labels(db: sqlite3.Connection) -> dict[str, tuple[str | None, str | None]]:
    """Every document's (cluster_id, duplicate_of), by id."""
    return {i: (c, d) for i, c, d in db.execute("SELECT id, cluster_id, duplicate_of FROM docs")}
