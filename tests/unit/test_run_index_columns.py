"""`esdedup.ingest.runindex.RunIndex` keeps its documents as columns: a lookup gives back each document as it was
added (arrays of another shape, or none, included), and a poem's document costs about half the memory a
`StoredDoc` with its own two arrays holds (the window is where a 1M-document run peaks)."""
from __future__ import annotations

import gc
import pickle
import tracemalloc
from dataclasses import fields
from operator import attrgetter

import numpy as np

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.fingerprint.values import zero_vector
from esdedup.ingest.documents import FingerprintedRecord, stored_row
from esdedup.ingest.runindex import RunIndex, key_hashes
from esdedup.ingest.workers import fingerprint_with
from esdedup.readers import Record
from esdedup.store.base import StoredDoc


def _doc(i: int, rng: np.random.Generator, *, dim: int = 256, perm: int | None = 128) -> StoredDoc:
    vector = rng.random(dim, dtype=np.float32)
    minhash = None if perm is None else rng.integers(0, 2**32, perm, dtype=np.uint32)
    return StoredDoc(f"poem-{i:07d}", int(rng.integers(0, 2**63)), vector, False, 20 + i % 7, 48, f"poem-{i:07d}",
                     None, minhash=minhash, shingles=40, seq=i + 1, cluster_seq=i + 1,
                     content_sha1=f"{i:040x}")


def _same(a: StoredDoc, b: StoredDoc) -> bool:
    scalars = ("id", "simhash", "empty", "tokens", "chars", "cluster_id", "duplicate_of", "shingles", "seq",
               "cluster_seq", "version", "content_sha1")
    return (all(getattr(a, f) == getattr(b, f) for f in scalars)
            and a.vector.dtype == b.vector.dtype and np.array_equal(a.vector, b.vector)
            and (a.minhash is None) == (b.minhash is None)
            and (a.minhash is None or (a.minhash.dtype == b.minhash.dtype and np.array_equal(a.minhash, b.minhash))))


def test_lookups_give_back_each_document_as_added() -> None:
    rng = np.random.default_rng(7)
    docs = [_doc(i, rng) for i in range(9000)]  # more than two blocks of rows
    docs[5] = _doc(5, rng, perm=None)  # no signature
    docs[6] = _doc(6, rng, dim=64, perm=256)  # another shape than the first document's
    docs[7].vector = docs[7].vector.astype(np.float64)  # another dtype
    docs[8].version = (3, 1)
    index = RunIndex(complete=True)
    for i, d in enumerate(docs):
        index.add_keys(d, [f"0:{i:x}", "shared"] if i < 20 else [f"0:{i:x}"])
    for i in (0, 4095, 4096, 8999):
        (found,) = index.lookup([f"0:{i:x}"])
        assert _same(found, docs[i])
    found = index.lookup(["shared"])
    assert len(found) == 20 and all(_same(f, d) for f, d in zip(found, docs, strict=False))
    ids, _, _ = index.release()
    assert ids == [d.id for d in docs]


def test_a_poem_costs_about_two_kb_in_the_run_index() -> None:
    rng = np.random.default_rng(1)
    n = 2 * 4096  # whole blocks of rows
    keys = [[f"0:{i:x}"] for i in range(n)]  # one key each: the documents, not the key table, are measured
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        docs = [_doc(i, rng) for i in range(n)]  # traced: the copies the index does not keep are freed
        index = RunIndex(complete=True)
        for d, k in zip(docs, keys, strict=True):
            index.add_keys(d, k)
        del docs, d  # the index alone holds them now
        gc.collect()
        per_doc = (tracemalloc.get_traced_memory()[0] - before) / n
    finally:
        tracemalloc.stop()
    # A StoredDoc with its own vector and signature (and its strings and ints) held 2.3 KB (2.4 without the
    # native core, whose key table is not traced).
    assert per_doc < 2200, per_doc


def test_documents_added_together_are_the_documents_added_one_by_one() -> None:
    """`add_all_later` (a batch's documents, whose arrays are copied a block at a time) keeps what `add_keys`
    keeps: across blocks, with arrays of another shape or dtype, or none, among them, the first document's
    included; whether it is given one document a call or a batch's at once with their keys flat (one or two
    each)."""
    rng = np.random.default_rng(3)
    docs = [_doc(i, rng) for i in range(5000)]
    docs[0] = _doc(0, rng, perm=None)  # the first has no signature: the signatures' shape is the next one's
    docs[1] = _doc(1, rng, dim=64, perm=256)  # the first vector of its shape, kept by position
    docs[4096].vector = docs[4096].vector.astype(np.float64)
    row = attrgetter(*(f.name for f in fields(StoredDoc)))
    one_by_one, together = RunIndex(complete=True), RunIndex(complete=True)
    def keys(i: int) -> list[str]:
        return [f"0:{i:x}", f"1:{i:x}"] if i % 3 == 0 else [f"0:{i:x}"]

    for start in range(0, len(docs), 1500):  # batches across the first block's end
        part = list(enumerate(docs[start:start + 1500], start))
        for i, d in part:
            one_by_one.add_keys(d, keys(i))
        if start // 1500 % 2:
            together.add_all_later([row(d) for _, d in part], key_hashes([k for i, _ in part for k in keys(i)]),
                                   [len(keys(i)) for i, _ in part])
        else:
            for i, d in part:
                together.add_all_later([row(d)], key_hashes(keys(i)), [len(keys(i))])
        assert together.lookup(["none"]) == []  # read: the batch goes in
    for i in range(len(docs)):
        for key in keys(i):
            (a,) = one_by_one.lookup([key])
            (b,) = together.lookup([key])
            assert _same(a, b) and _same(b, docs[i])


def test_the_shared_zero_vector_is_kept_by_reference_one_by_one_or_together() -> None:
    """A text without terms comes from the workers with the shared zero vector (`zero_vector`): the run index
    gives that object back instead of copying a kilobyte of zeros into its blocks, whether the documents go in
    one by one or together; a document whose vector fits the blocks after more than a block of such documents
    (no block of rows made yet) is kept in a block all the same."""
    rng = np.random.default_rng(5)
    zero = zero_vector(256)
    docs = [_doc(i, rng) for i in range(4100)]
    for d in docs[:4098]:
        d.vector = zero
    row = attrgetter(*(f.name for f in fields(StoredDoc)))
    one_by_one, together = RunIndex(complete=True), RunIndex(complete=True)
    for i, d in enumerate(docs):
        one_by_one.add_keys(d, [f"0:{i:x}"])
        together.add_all_later([row(d)], key_hashes([f"0:{i:x}"]), [1])
    for index in (one_by_one, together):
        for i in (0, 4097, 4098, 4099):
            (found,) = index.lookup([f"0:{i:x}"])
            assert _same(found, docs[i]) and (found.vector is zero) == (i < 4098)


def test_documents_added_one_by_one_between_lookups_are_found_as_added() -> None:
    """Documents added one by one are copied into the columns when the index is next read: lookups between
    the adds, the ids read before any lookup, and the shared zero vector among them give each document back
    at its own position."""
    rng = np.random.default_rng(11)
    zero = zero_vector(256)
    docs = [_doc(i, rng) for i in range(300)]
    for d in docs[::3]:
        d.vector = zero
    index = RunIndex(complete=True)
    for i, d in enumerate(docs[:7]):
        index.add_keys(d, [f"0:{i:x}"])
    assert len(index.docs) == 7 and index.docs.ids() == [d.id for d in docs[:7]]  # read before any copy
    for i, d in enumerate(docs[7:], 7):
        index.add_keys(d, [f"0:{i:x}"])
        if i % 5 == 0:
            (found,) = index.lookup([f"0:{i - 3:x}"])
            assert _same(found, docs[i - 3]) and (found.vector is zero) == ((i - 3) % 3 == 0)
    for i in range(len(docs)):
        (found,) = index.lookup([f"0:{i:x}"])
        assert _same(found, docs[i]) and (found.vector is zero) == (i % 3 == 0)


def test_documents_copied_from_their_batch_arrays_are_those_added_by_their_fields() -> None:
    """A batch that came from a worker process carries its fingerprints as arrays (`Fingerprinted.block`):
    the run index copies its documents from them (`BlockRow`) and gives back, at every position, what it
    gives for the same documents added by their fields (`stored_row` of each `Fingerprint`): texts without
    words (no signature, the shared zero vector), short texts without terms and long ones with a vector,
    across blocks of rows, with batches of rows between batches of arrays."""
    rng = np.random.default_rng(13)
    alphabet = "天地玄黃宇宙洪荒日月盈昃辰宿列張寒來暑往秋收冬藏閏餘成歲律呂調陽雲騰致雨露結為霜"
    texts = []
    for i in range(4500):
        kind = i % 9
        if kind == 0:
            texts.append("！？。" * (i % 3))  # no words
        elif kind == 1:
            texts.append("".join(rng.choice(list(alphabet), 400)))  # long: terms and a vector
        else:
            texts.append("".join(rng.choice(list(alphabet), 30 + i % 40)))
    fper = Fingerprinter(FingerprintConfig())
    by_fields, by_block = RunIndex(complete=True), RunIndex(complete=True)
    seq = 0
    for start in range(0, len(texts), 1000):
        part = texts[start:start + 1000]
        sent = pickle.loads(pickle.dumps(fingerprint_with(fper, part)))  # as a worker sends it
        block = sent.block()
        assert block is not None
        fps = sent.fingerprints()
        for r, text in enumerate(part):
            seq += 1
            doc_id = f"t{start + r:05d}"
            root = (seq, doc_id) if r % 4 else (seq - 1, f"t{start + r - 1:05d}")  # some join the one before
            d = FingerprintedRecord(Record(doc_id, None, text, {}, "t", str(r), 0, "utf-8"), fps[r], sent.simhashes[r], sent.sha1s[r], doc_id,
                                    block=block, row=r)
            key = key_hashes([f"0:{start + r:x}"])  # one key each: the copies of one text would crowd theirs
            by_fields.add_all_later([stored_row(d, seq, root)], key, [1])
            if start == 2000:  # a batch of rows between batches of arrays
                by_block.add_all_later([stored_row(d, seq, root)], key, [1])
            else:
                by_block.add_all_later([(block, r, doc_id, d.sha1, seq, root)], key, [1])
        assert by_fields.lookup(["none"]) == by_block.lookup(["none"]) == []  # read: the batch goes in
    a, b = by_fields.docs, by_block.docs
    everything = np.arange(len(texts))
    assert len(a) == len(b) == len(texts) and a.ids() == b.ids()
    for p in range(len(texts)):
        assert _same(a[p], b[p]) and (a[p].vector is b[p].vector) == (a[p].vector is zero_vector(256)), p
    assert np.array_equal(a.seqs(everything), b.seqs(everything))
    assert np.array_equal(a.id_hashes(everything), b.id_hashes(everything))
    assert np.array_equal(a.empties(everything), b.empties(everything)) and a.empties(everything).any()
    assert a.roots(list(range(len(texts)))) == b.roots(list(range(len(texts))))
    sa, sb = a.sketches(everything, 128), b.sketches(everything, 128)
    for name in ("simhash", "chars"):
        assert getattr(sa, name) == getattr(sb, name)
    for name in ("shingles", "empty", "sigs", "signed", "full", "has_vector"):
        assert np.array_equal(getattr(sa, name), getattr(sb, name)), name
    assert all(x is y or np.array_equal(x, y) for x, y in zip(sa.vectors(), sb.vectors(), strict=True))
    assert sum(v is not zero_vector(256) for v in sa.vectors()) >= len(texts) // 9  # the long ones' vectors


def test_a_block_of_arrays_stays_under_numpys_huge_pages_whatever_the_vectors_width() -> None:
    """numpy asks for huge pages for an array of 4 MiB or more, whose pages are resident whole however few rows
    are written: the blocks stay under that, a power of two of rows each, and give back every document."""
    from esdedup.ingest.doccolumns import DocColumns

    rng = np.random.default_rng(3)
    for dim in (8, 256, 1024, 4096):
        docs = [_doc(i, rng, dim=dim) for i in range(1200)]
        index = RunIndex(complete=True)
        for d in docs:
            index.add_keys(d, [d.id])
        for p in (0, 127, 128, 255, 256, 1023, 1024, 1199):
            (found,) = index.lookup([docs[p].id])
            assert _same(found, docs[p]), (dim, p)
        blocks = [b for column in index.docs._blocks for b in column]
        assert blocks and all(b.nbytes < DocColumns.BLOCK_BYTES for b in blocks), dim
        assert all(len(b) & (len(b) - 1) == 0 for b in blocks), dim
