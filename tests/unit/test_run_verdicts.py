"""`esdedup.ingest.runverdicts.near_in_run` measures a batch's candidates in the run index from its columns
(`esdedup.ingest.doccolumns.DocColumns.sketches`): it must decide exactly what `near_positions` decides of the
same documents made as `StoredDoc`, whatever the documents hold (signatures of another length or none, texts
without words, the shared zero vector, vectors of another dtype, SimHashes wider than 64 bits, the record's own
id among its candidates) and across blocks of rows; and `near_in_batch`, a batch's records against their peers
in it, from the arrays the batch came in."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.fingerprint.values import zero_vector
from esdedup.ingest.doccolumns import DocColumns
from esdedup.ingest.documents import FingerprintedRecord, as_stored
from esdedup.ingest.labels import batch_peers, run_key_lists
from esdedup.ingest.runverdicts import QueryTexts, near_in_batch, near_in_run
from esdedup.ingest.workers import fingerprint_with
from esdedup.match.lookup import near_positions
from esdedup.match.measures import measure, measure_pairs
from esdedup.match.thresholds import Thresholds, resolve_thresholds
from esdedup.readers import Record
from esdedup.store.base import StoredDoc

BASES = 4


def _docs(config: FingerprintConfig, n: int, seed: int) -> list[StoredDoc]:
    """Noisy variants of a few texts: most pairs of one base near, of two bases not; every odd case mixed in."""
    perm, dims, bits = config.minhash_perm, config.dims, config.bits
    rng = np.random.default_rng(0)  # the same texts for every seed: its variants differ
    sims = [int(rng.integers(0, 2**62)) << (bits - 62) for _ in range(BASES)]
    vecs = [rng.normal(size=dims) for _ in range(BASES)]
    sigs = [rng.integers(0, 2**32, perm, dtype=np.uint32) for _ in range(BASES)]
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        b, kind = int(rng.integers(BASES)), i % 11
        sim = sims[b] ^ sum(1 << int(x) for x in rng.integers(0, bits, int(rng.integers(0, 6))))
        vec = vecs[b] + rng.normal(scale=float(rng.choice([0.05, 0.6])), size=dims)
        vector = (vec / np.linalg.norm(vec)).astype(np.float32)
        sig = sigs[b].copy()
        sig[rng.integers(0, perm, int(rng.integers(0, perm // 2)))] = rng.integers(0, 2**32, dtype=np.uint32)
        minhash: np.ndarray | None = sig
        shingles, chars, empty, sha1 = int(rng.integers(5, 60)), int(rng.choice([30, 150, 400])), False, f"s{i}"
        if kind == 1:  # no signature
            minhash, shingles = None, 0
        elif kind == 2:  # a signature of another length (an older config)
            minhash = np.resize(sig, perm // 2)
        elif kind == 3:  # a text without words: an exact copy of some others
            sim, vector, minhash, shingles, empty, sha1 = 0, zero_vector(dims), None, 0, True, f"e{b}"
        elif kind == 4:  # no terms: the shared zero vector
            vector = zero_vector(dims)
        elif kind == 5:
            vector = vector.astype(np.float64)
        elif kind == 6:  # a signature but no n-gram count: not signed
            shingles = 0
        # Some in another's cluster, some without labels (written before esdedup kept them).
        cluster = None if kind == 7 else f"d{i - 1}" if kind == 8 and i else f"d{i}"
        out.append(StoredDoc(f"d{i}", sim, vector, empty, 10, chars, cluster, None, minhash=minhash,
                             shingles=shingles, seq=i + 1, cluster_seq=i if cluster != f"d{i}" else i + 1,
                             content_sha1=sha1))
    return out


CONFIGS = {
    "auto": (FingerprintConfig(), None),
    "auto, cosine alone": (FingerprintConfig(), {"jaccard": None, "containment": None}),
    "simhash": (FingerprintConfig(strategy="simhash"), None),
    "128 bits": (FingerprintConfig(strategy="simhash", bits=128), None),
}


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("seed", [1, 2])
def test_verdicts_from_columns_are_those_of_the_documents(name: str, seed: int) -> None:
    config, overrides = CONFIGS[name]
    t = resolve_thresholds(None, config) if overrides is None else Thresholds.from_config(config, **overrides)
    stored = _docs(config, 300, seed)
    docs = DocColumns()
    docs.BLOCK = 64  # several blocks of rows
    for d in stored[:150]:
        docs.append(d)
    docs.append_rows([DocColumns._fields(d) for d in stored[150:]])
    rng = np.random.default_rng(seed + 10)
    queries = _docs(config, 120, seed + 20)
    positions = [sorted(set(rng.integers(0, len(stored), int(rng.integers(0, 40))).tolist())) for _ in queries]
    own = [q.id if r % 3 else f"d{positions[r][0]}" if positions[r] else q.id for r, q in enumerate(queries)]
    sha1s = [q.content_sha1 if r % 5 else None for r, q in enumerate(queries)]
    got = near_in_run(docs, QueryTexts.of(queries, config), positions, config, t, exclude=own, sha1s=sha1s)
    expected = near_positions(queries, [[docs[p] for p in ps] for ps in positions], config, t, exclude=own,
                              sha1s=sha1s)
    assert got == [[ps[j] for j in near] for ps, near in zip(positions, expected, strict=True)]
    assert sum(map(len, got)) > 20  # near-duplicates among them (and not all)
    assert sum(map(len, got)) < sum(map(len, positions)) / 2
    # Texts without words find their exact copies by content SHA-1.
    assert any(queries[r].empty and near for r, near in enumerate(got))


def test_write_orders_ids_and_clusters_read_back() -> None:
    config = FingerprintConfig(bits=128, strategy="simhash")
    stored = _docs(config, 40, 3)
    docs = DocColumns()
    docs.append_rows([DocColumns._fields(d) for d in stored])
    at = np.array([3, 0, 39, 17])
    assert docs.seqs(at).tolist() == [stored[p].seq for p in at.tolist()]
    assert [docs.id_at(p) for p in at.tolist()] == [stored[p].id for p in at.tolist()]
    assert docs.empties(at).tolist() == [stored[p].empty for p in at.tolist()]
    assert docs.roots(range(len(stored))) == [d.root for d in stored]
    sketches = docs.sketches(at, config.minhash_perm)
    assert sketches.simhash == [stored[p].simhash for p in at.tolist()]  # wider than 64 bits: read from the row


def test_two_signatures_of_different_lengths_get_no_ngram_estimate_and_are_decided_without_one() -> None:
    """A pair whose signatures differ in length (a document another config or client wrote) is measured as a pair
    that does not carry two signatures, on both paths (one text against others, and pairs of rows), instead of
    failing; pairs of one length beside it keep their estimates."""
    config = FingerprintConfig()
    t = resolve_thresholds(None, config)
    full, half, other_full = (d for d in _docs(config, 3, 1))
    half.minhash = np.resize(full.minhash, config.minhash_perm // 2)
    other_full.minhash = full.minhash.copy()
    m = measure(full, [half, other_full], config)
    assert np.isnan(m.jaccard[0]) and np.isnan(m.containment[0]) and m.jaccard[1] == 1.0
    pairs = measure_pairs([full, half, other_full], np.array([0, 1, 0]), np.array([1, 2, 2]), config, t)
    assert np.isnan(pairs.jaccard[:2]).all() and pairs.jaccard[2] == 1.0
    assert pairs.decide(t).tolist()[2] is True


def test_verdicts_on_a_batch_s_peers_from_its_arrays_are_those_of_the_documents() -> None:
    """`near_in_batch` measures a batch's records against their peers in it from the arrays the batch came in
    from a worker (`Fingerprinted.block`): it decides what `near_positions` decides of the same peers made as
    documents (`BatchCandidates._as_peer`), for near and far variants, texts without words (exact copies by
    their content SHA-1), short texts without terms and long ones with vectors, and a repeated id."""
    config = FingerprintConfig()
    t = resolve_thresholds(None, config)
    rng = np.random.default_rng(17)
    alphabet = list("天地玄黃宇宙洪荒日月盈昃辰宿列張寒來暑往秋收冬藏閏餘成歲律呂調陽雲騰致雨露結為霜金生麗水玉出崑岡")
    bases = ["".join(rng.choice(alphabet, int(n))) for n in rng.choice([25, 60, 120, 500], 40)]
    texts = []
    for k in range(600):
        base = bases[int(rng.integers(len(bases)))]
        chars = list(base)
        for _ in range(int(rng.integers(0, max(2, len(chars) // 4)))):  # near or far variants
            chars[int(rng.integers(len(chars)))] = str(rng.choice(alphabet))
        texts.append("！？" if k % 50 == 0 else "。。" if k % 50 == 1 else "".join(chars))
    texts[311] = texts[310]
    ids = [f"r{k}" if k != 311 else "r310" for k in range(len(texts))]  # r310 twice, one text: no pair
    sent = pickle.loads(pickle.dumps(fingerprint_with(Fingerprinter(config), texts, held=True)))
    block = sent.block()
    assert block is not None
    fps = sent.fingerprints()
    items = [FingerprintedRecord(Record(ids[k], None, x, {}, "t", str(k), 0, "utf-8"), fps[k], sent.simhashes[k],
                                 sent.sha1s[k], ids[k], held=sent.held, block=block, row=k)
             for k, x in enumerate(texts)]
    peers, _ = batch_peers(*run_key_lists(items, config))
    todo = [i for i, p in enumerate(peers) if p]
    got = near_in_batch(block, [d.row for d in items], peers, todo, config, t, ids=ids, sha1s=sent.sha1s,
                        fps=lambda i: items[i].fp)
    want = near_positions([items[i].fp for i in todo],
                          [[as_stored(items[j], 0, (0, items[j].id)) for j in peers[i]] for i in todo], config, t,
                          exclude=[ids[i] for i in todo], sha1s=[sent.sha1s[i] for i in todo])
    assert got == want
    near = sum(map(len, got))
    assert near > 200 and sum(len(p) for p in peers) > near  # near and far peers both
    assert any(got[k] for k, i in enumerate(todo) if fps[i].empty)  # exact copies of a text without words
    assert 310 in peers[311] and peers[311].index(310) not in got[todo.index(311)]  # its own id: not paired
    far = [i for k, i in enumerate(todo) if not want[k]]  # a call whose texts pair with none of their peers
    assert far and near_in_batch(block, [d.row for d in items], peers, far, config, t, ids=ids, sha1s=sent.sha1s,
                                 fps=lambda i: items[i].fp) == [[] for _ in far]
    # The same records measured against the run index's documents (the first 300 of them, written there), as
    # rows of their block: what they decide as fingerprints, and no fingerprint is made of a record for it.
    docs = DocColumns()
    docs.BLOCK = 64
    docs.append_rows([DocColumns._fields(as_stored(d, k + 1, (k + 1, d.id))) for k, d in enumerate(items[:300])])
    later = items[300:]
    positions = [sorted(set(rng.integers(0, 300, int(rng.integers(0, 30))).tolist())) for _ in later]
    fresh = [FingerprintedRecord(d.record, None, d.simhash, d.sha1, d.id, held=d.held, block=block, row=d.row)
             for d in later]
    from_block = near_in_run(docs, QueryTexts.in_block(block, [d.row for d in fresh], lambda i: fresh[i].fp, config),
                             positions, config, t, exclude=[d.id for d in later], sha1s=[d.sha1 for d in later])
    assert all(d.fingerprint is None for d in fresh)
    assert from_block == near_in_run(docs, QueryTexts.of([d.fp for d in later], config), positions, config, t,
                                     exclude=[d.id for d in later], sha1s=[d.sha1 for d in later])
    assert sum(map(len, from_block)) > 20 and any(from_block[k] for k, d in enumerate(later) if d.fp.empty)
