"""The near-duplicate rule (`esdedup.match.rule`) and the union-find under the clusters
(`esdedup.util.unionfind`), tested directly: each branch of the rule on pairs chosen to sit on either side of a
threshold, and the joins of the union-find whatever the order of the unions."""
from __future__ import annotations

import itertools
import random
from types import SimpleNamespace

import numpy as np
import pytest

from esdedup.match.rule import (
    EXACT_COPY,
    decide,
    decided_by,
    decided_by_many,
    exact_copies,
    is_duplicate,
    reads_cosine,
)
from esdedup.match.thresholds import Thresholds
from esdedup.util.unionfind import UnionFind, union_groups

NAN = float("nan")
NGRAMS = Thresholds(3, 0.9, jaccard=0.6, containment=0.8)
SIMHASH = Thresholds(3, 0.9)


def one(t: Thresholds, *, hamming=NAN, cosine=NAN, jaccard=NAN, containment=NAN, legacy=False, cluster=False) -> bool:
    return bool(decide(t, hamming=[hamming], cosine=[cosine], jaccard=[jaccard], containment=[containment],
                       legacy_short=np.array([legacy]), same_cluster=np.array([cluster]))[0])


def test_two_signed_texts_are_decided_by_their_ngrams_alone():
    assert one(NGRAMS, jaccard=0.6, containment=0.0, hamming=40, cosine=0.1)  # the SimHash is not read
    assert not one(NGRAMS, jaccard=0.59, containment=0.79, hamming=0, cosine=1.0)
    assert one(NGRAMS, jaccard=0.1, containment=0.8)
    assert decided_by(NGRAMS, hamming=0, cosine=1.0, jaccard=0.7, containment=0.9) == "jaccard"
    assert decided_by(NGRAMS, hamming=0, cosine=1.0, jaccard=0.2, containment=0.9) == "containment"


def test_with_both_ngram_tests_off_the_cosine_alone_decides_signed_and_legacy_short_texts():
    cosine_only = Thresholds(3, 0.9, jaccard=None, containment=None)
    assert one(cosine_only, jaccard=1.0, containment=1.0, cosine=0.9, hamming=40)
    assert not one(cosine_only, jaccard=1.0, containment=1.0, cosine=0.89, hamming=0)
    assert one(NGRAMS, legacy=True, cosine=0.9 - 1e-7, hamming=40)  # within the float32 tolerance
    assert not one(NGRAMS, legacy=True, cosine=0.9 - 1e-5)
    assert not one(NGRAMS, legacy=True)  # no vector to compare: no test can answer
    assert decided_by(NGRAMS, hamming=5, cosine=0.95, jaccard=None, containment=None, legacy_short=True) == "cosine"


def test_without_signatures_hamming_and_cosine_must_both_pass_where_both_are_known():
    assert one(SIMHASH, hamming=3, cosine=0.9)
    assert not one(SIMHASH, hamming=4, cosine=1.0)
    assert not one(SIMHASH, hamming=0, cosine=0.8)
    assert one(SIMHASH, hamming=3)  # a hit without its vector: the distance alone
    assert one(SIMHASH, cosine=0.95)  # without its SimHash: the cosine alone
    assert not one(SIMHASH)
    assert one(Thresholds(None, 0.9), hamming=60, cosine=0.9)  # Hamming switched off
    assert decided_by(SIMHASH, hamming=1, cosine=0.95, jaccard=None, containment=None) == "hamming and cosine"
    assert decided_by(SIMHASH, hamming=1, cosine=None, jaccard=None, containment=None) == "hamming"


def test_a_shared_stored_cluster_is_a_duplicate_whatever_the_measures():
    assert one(NGRAMS, jaccard=0.0, containment=0.0, cluster=True)
    assert one(SIMHASH, hamming=64, cosine=0.0, cluster=True)
    assert decided_by(SIMHASH, hamming=None, cosine=None, jaccard=None, containment=None) == "cluster"


def test_arrays_of_pairs_get_the_answers_of_each_pair_alone():
    rng = random.Random(5)
    rows = [dict(hamming=rng.choice([NAN, 0, 2, 3, 4, 9]), cosine=rng.choice([NAN, 0.5, 0.9, 0.95]),
                 jaccard=rng.choice([NAN, 0.3, 0.6]), containment=rng.choice([NAN, 0.5, 0.85]),
                 legacy=rng.random() < 0.2, cluster=rng.random() < 0.1) for _ in range(300)]
    for rule in (NGRAMS, SIMHASH, Thresholds(None, 0.8, jaccard=0.5)):
        many = decide(rule, hamming=[r["hamming"] for r in rows], cosine=[r["cosine"] for r in rows],
                      jaccard=[r["jaccard"] for r in rows], containment=[r["containment"] for r in rows],
                      legacy_short=np.array([r["legacy"] for r in rows]),
                      same_cluster=np.array([r["cluster"] for r in rows]))
        assert many.tolist() == [one(rule, **r) for r in rows]
        names = decided_by_many(rule, hamming=[r["hamming"] for r in rows], cosine=[r["cosine"] for r in rows],
                                jaccard=[r["jaccard"] for r in rows], legacy_short=[r["legacy"] for r in rows])
        assert names == [decided_by(rule, hamming=r["hamming"], cosine=r["cosine"], jaccard=r["jaccard"],
                                    containment=r["containment"], legacy_short=r["legacy"]) for r in rows]


def test_is_duplicate_reads_the_estimates_only_on_the_ngram_path():
    assert is_duplicate(None, None, NGRAMS, True, jaccard=0.7, containment=0.0)
    assert not is_duplicate(0, 1.0, NGRAMS, True, jaccard=0.1, containment=0.1)
    assert is_duplicate(0, 1.0, NGRAMS, False, jaccard=0.1, containment=0.1)  # estimates ignored off the path
    assert is_duplicate(None, 0.95, NGRAMS, True)  # legacy short: the cosine


def test_the_cosine_is_read_only_where_the_ngrams_do_not_decide_every_pair():
    assert not reads_cosine(NGRAMS, all_signed=True)
    assert reads_cosine(NGRAMS, all_signed=False)
    assert reads_cosine(Thresholds(3, 0.9, jaccard=None, containment=None), all_signed=True)
    assert not reads_cosine(Thresholds(3, None), all_signed=False)


def test_exact_copies_are_the_empty_texts_of_one_content_sha1():
    docs = [SimpleNamespace(id=i, empty=e, content_sha1=s)
            for i, e, s in (("a", True, "x"), ("b", False, "x"), ("c", True, "y"), ("d", True, "x"))]
    assert exact_copies(True, "x", docs) == [0, 3]
    assert exact_copies(True, "x", docs, exclude="d") == [0]
    assert exact_copies(False, "x", docs) == []  # a text with words: its measures decide
    assert exact_copies(True, None, docs) == []
    assert EXACT_COPY == "content_sha1"


# -- the union-find ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_the_sets_and_their_roots_do_not_depend_on_the_order_of_the_unions(seed):
    pairs = [("e", "b"), ("b", "d"), ("x", "y"), ("d", "a"), ("y", "z"), ("q", "q")]
    random.Random(seed).shuffle(pairs)
    uf = UnionFind[str]()
    for a, b in pairs:
        uf.union(a, b)
    assert {frozenset(g) for g in uf.groups()} == {frozenset("abde"), frozenset("xyz"), frozenset("q")}
    assert [uf.find(x) for x in "abdexyzq"] == list("aaaaxxxq")  # every root is its set's smallest item
    assert "q" in uf and "w" not in uf and sorted(uf) == sorted(set("abdexyzq"))


def test_union_returns_the_joined_root_and_find_adds_an_item():
    uf = UnionFind[int]([5])
    assert uf.find(7) == 7 and 7 in uf
    assert uf.union(7, 5) == 5 and uf.union(5, 7) == 5
    assert uf.union(3, 7) == 3 and uf.find(5) == 3


@pytest.mark.parametrize("seed", range(20))
def test_flattened_maps_every_item_to_its_sets_smallest_in_first_seen_order(seed):
    """Against a plain search of the graph, over random pairs and long chains (path halving at work)."""
    rng = random.Random(seed)
    n = rng.randrange(2, 400)
    pairs = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randrange(1, 2 * n))]
    pairs += [(i, i + 1) for i in range(n, n + rng.randrange(50, 300))][::rng.choice((1, -1))]  # a chain
    uf = UnionFind[int]()
    for a, b in pairs:
        uf.union(a, b)
    links: dict[int, set[int]] = {}
    for a, b in pairs:
        links.setdefault(a, set()).add(b)
        links.setdefault(b, set()).add(a)
    smallest: dict[int, int] = {}
    for start in links:
        if start not in smallest:
            todo, group = [start], {start}
            while todo:
                for nxt in links[todo.pop()] - group:
                    group.add(nxt)
                    todo.append(nxt)
            smallest.update(dict.fromkeys(group, min(group)))
    first_seen = list(dict.fromkeys(x for p in pairs for x in p))
    assert list(uf.flattened().items()) == [(x, smallest[x]) for x in first_seen]


def test_union_groups_joins_cluster_roots_that_share_an_id():
    groups = [[(3, "c"), (1, "a")], [(2, "b")], [(1, "a"), (9, "z")], [(2, "b"), (4, "d")], [(7, "g")]]
    for order in itertools.permutations(groups):
        joined = union_groups(order)
        assert sorted(sorted(g) for g in joined) == [[(1, "a"), (3, "c"), (9, "z")], [(2, "b"), (4, "d")],
                                                     [(7, "g")]]
    assert union_groups([]) == []
