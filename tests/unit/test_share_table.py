"""`ShareTable`: the keys of a partition's share held by the documents of a scan, grouped by their hash."""
from __future__ import annotations

import random

from esdedup.store.elastic.keys import ShareTable
from esdedup.store.partition import Partition, key_share


def naive_groups(docs: list[tuple[str, list[str]]], partition: Partition, crowded: frozenset[str]
                 ) -> dict[int, list[str]]:
    by_hash: dict[int, list[str]] = {}
    for doc_id, keys in docs:
        for k in keys:
            if (partition.whole or key_share(k, partition.count) == partition.index) and k not in crowded:
                by_hash.setdefault(hash(k), []).append(doc_id)
    return {h: ids for h, ids in by_hash.items() if len(ids) > 1}


def test_the_groups_are_the_shared_keys_of_the_share_by_first_holder():
    rng = random.Random(7)
    keys = [f"{rng.randrange(4)}:{rng.randrange(300):x}" for _ in range(400)]
    docs = [(f"d{i:04d}-文", rng.sample(keys, 6)) for i in range(500)]
    crowded = frozenset(keys[:3])
    for partition in (Partition(0, 1), Partition(1, 3)):
        table = ShareTable(partition, crowded)
        for doc_id, held in docs:
            table.add(doc_id, held)
        got = list(table.groups())
        assert dict(got) == naive_groups(docs, partition, crowded)
        firsts = [ids[0] for _, ids in got]
        assert firsts == sorted(firsts)  # one document's groups come together


def test_a_table_without_shared_keys_has_no_groups():
    table = ShareTable(Partition(0, 1), frozenset())
    assert list(table.groups()) == []
    table.add("a", ["0:1", "1:2"])
    table.add("b", ["0:2"])
    assert list(table.groups()) == []
