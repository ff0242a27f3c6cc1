"""The fingerprint worker pool (esdedup/ingest/workers.py): what crosses from a worker process to the run."""
from __future__ import annotations

import multiprocessing
import pickle
import sys
from typing import Any

import numpy as np
import pytest

from esdedup.fingerprint import fingerprinter
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.ingest import workers
from esdedup.ingest.runindex import held_keys, key_hashes
from esdedup.ingest.workers import fingerprint_with
from esdedup.schema import content_sha1, dedup_members
from tests.corpus import make_corpus

CONFIGS = {"auto": FingerprintConfig(tokenizer="rjieba"),
           "simhash-128": FingerprintConfig(tokenizer="rjieba", strategy="simhash", bits=128),
           "char-minhash": FingerprintConfig(tokenizer="char", shingle=2, strategy="minhash"),
           "jieba": FingerprintConfig(t2s=True)}


@pytest.mark.parametrize("encode", [False, True], ids=["plain", "encoded"])
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_fingerprints_cross_from_the_workers_as_columns_and_come_back_equal(
        config: FingerprintConfig, encode: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's batch is pickled as a few columns, not one object per document (fewer objects to pickle):
    nothing of the fingerprint module travels. What the writing process unpickles is every fingerprint field
    it reads, bit for bit (across the Fingerprinter's internal chunks, empty texts among them), each
    document's encoded dedup fields are the bytes the store would have encoded, and the hashes of the keys the
    run's memory holds it under are those the run would make of them (asked for with the encoded ones here)."""
    texts = [d["text"] for d in make_corpus(40, 10)[0]] * 2 + ["", "。。", "短", "臺灣居民明日起" * 60]
    monkeypatch.setattr(workers, "_WORKER", Fingerprinter(config))
    monkeypatch.setattr(fingerprinter, "_DOCS_PER_PASS", 16)
    pickled = pickle.dumps(workers._fingerprint_batch(texts, encode, encode, True), pickle.HIGHEST_PROTOCOL)
    assert b"esdedup.fingerprint.fingerprinter" not in pickled
    got, reference = pickle.loads(pickled), Fingerprinter(config)
    assert len(got) == len(texts) and got.sha1s == [content_sha1(reference.normalize(t)) for t in texts]
    assert got.simhashes == [fp.simhash for fp in got.fingerprints()]
    assert (got.dedup_json is not None) == encode
    held = got.held
    assert len(held) == len(texts) if encode else held is None
    for i, ((a, sha), b) in enumerate(zip(got, reference.fingerprint_many(texts), strict=True)):
        if encode:
            want = key_hashes(held_keys(b.bands, b.lsh, b.empty, sha))
            own, counts = held.of_rows([i])
            assert own.dtype == np.uint64 and own.tolist() == want.tolist() and counts == [len(want)] and len(want)
        assert (a.simhash, a.bands, a.lsh, a.length, a.chars, a.empty, a.shingles, a.bits) == \
            (b.simhash, b.bands, b.lsh, b.length, b.chars, b.empty, b.shingles, b.bits)
        assert a.vector.dtype == b.vector.dtype and np.array_equal(a.vector, b.vector)
        assert (a.minhash is None) == (b.minhash is None)
        assert a.minhash is None or np.array_equal(a.minhash, b.minhash)
        if encode:
            assert got.dedup_json[i] == dedup_members(b, config, sha)
    # The batch's block makes each row's fingerprint on its own, as it is first read: the same values, of the
    # same types, as those made all at once.
    block = got.block()
    assert (block is None) == (config.bits > 64)
    for i, a in enumerate(got.fingerprints() if block is not None else ()):
        c = block.fingerprint_of(i)
        fields = ("simhash", "bands", "lsh", "length", "chars", "empty", "shingles", "bits", "tf")
        assert [(getattr(c, f), type(getattr(c, f))) for f in fields] == [(getattr(a, f), type(getattr(a, f)))
                                                                          for f in fields]
        assert c.vector.dtype == a.vector.dtype and np.array_equal(c.vector, a.vector)
        assert (c.minhash is None) == (a.minhash is None) and (a.minhash is None or np.array_equal(c.minhash, a.minhash))
    empty = pickle.loads(pickle.dumps(workers._fingerprint_batch([], encode, encode, True)))
    assert len(empty) == 0 and empty.fingerprints() == [] and empty.dedup_json == ([] if encode else None)
    assert (len(empty.held) == 0) if encode else empty.held is None


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_a_batch_for_a_run_that_reads_no_fingerprints_carries_only_their_simhashes_and_encoded_fields(
        config: FingerprintConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that writes the encoded dedup fields and reads nothing else of a fingerprint but its SimHash
    (``index`` mode on Elasticsearch) gets batches without the fingerprint columns, pickled or not: their
    SHA-1s, SimHashes and encoded fields are those of a whole batch, and the vectors alone are more bytes
    than the whole batch has over it."""
    texts = [d["text"] for d in make_corpus(40, 10)[0]] + ["", "。。", "臺灣居民明日起" * 60]
    monkeypatch.setattr(workers, "_WORKER", Fingerprinter(config))
    whole_bytes = pickle.dumps(workers._fingerprint_batch(texts, True, False, True), pickle.HIGHEST_PROTOCOL)
    bare_bytes = pickle.dumps(workers._fingerprint_batch(texts, True, False, False), pickle.HIGHEST_PROTOCOL)
    whole, bare = pickle.loads(whole_bytes), pickle.loads(bare_bytes)
    assert (bare.sha1s, bare.dedup_json) == (whole.sha1s, whole.dedup_json) and not bare.has_fingerprints
    assert bare.simhashes == [fp.simhash for fp in whole.fingerprints()]
    with_vector = sum(1 for fp in whole.fingerprints() if fp.vector.any())  # zero vectors do not travel
    assert len(bare_bytes) + with_vector * config.dims * 4 <= len(whole_bytes)
    in_process = fingerprint_with(Fingerprinter(config), texts, encode=True, fingerprints=False)
    for batch in (bare, in_process):
        with pytest.raises(ValueError, match="reads no fingerprints"):
            batch.fingerprints()


def test_in_process_fingerprints_keep_their_term_weights() -> None:
    """In the calling thread nothing is pickled: the fingerprints are the Fingerprinter's own, exact term
    weights included."""
    fper = Fingerprinter(CONFIGS["simhash-128"])  # a text this short has term weights under simhash (none under auto)
    texts = ["今天天气很好，我们去公园散步。", ""]
    got = fingerprint_with(fper, texts, encode=True)
    assert [dict(fp.tf) for fp, _ in got] == [dict(fp.tf) for fp in fper.fingerprint_many(texts)]
    assert dict(got[0][0].tf)


def _caches() -> dict[str, Any]:
    """Every per-process cache of esdedup's modules (`functools.lru_cache`), by name."""
    return {f"{name}.{attr}": fn for name, module in list(sys.modules.items()) if name.startswith("esdedup")
            for attr, fn in vars(module).items() if hasattr(fn, "cache_info")}


def _cache_misses() -> dict[str, int]:
    return {name: fn.cache_info().misses for name, fn in _caches().items()}


def _misses_in_worker() -> dict[str, int]:
    return _cache_misses()


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="workers are forked on Linux only")
def test_forked_workers_build_no_table_their_parent_built() -> None:
    """The pool is made after a Fingerprinter of the run's config: a forked worker's own Fingerprinter
    finds every dictionary and character table it needs in the caches it inherited, and builds none."""
    config = FingerprintConfig(tokenizer="jieba", strategy="auto", t2s=True)
    for cache in _caches().values():  # as in a new process, whatever the tests before built
        cache.cache_clear()
    pool = workers.Workers(config, 2)
    try:
        parent = _cache_misses()
        assert pool._pool is not None
        in_worker = pool._pool.submit(_misses_in_worker).result(timeout=60)
    finally:
        pool.close()
    built = {name: n for name, n in parent.items() if n}
    assert "esdedup.fingerprint.normalize._t2s" in built  # the config's tables were built in this process
    assert {name: in_worker.get(name) for name in built} == built


def test_a_batch_of_texts_without_terms_sends_no_vectors_and_they_come_back_as_one_shared_zero_vector(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the default strategy a short text gets no terms (`FingerprintConfig.gets_terms`): its vector is all
    zero, which would be half of what its fingerprint sends. Only the vectors that are not zero cross (a batch of
    short texts pickles to less than their vectors' bytes), and every fingerprint comes back with the vector it
    was made with: the short ones with one read-only zero vector, shared, the long one with its own."""
    config = FingerprintConfig(tokenizer="rjieba")
    short = [d["text"][:60] for d in make_corpus(40, 10)[0]]
    texts = [*short, "", "臺灣居民明日起" * 60]
    assert not config.gets_terms(60) and config.gets_terms(420)
    monkeypatch.setattr(workers, "_WORKER", Fingerprinter(config))
    pickled = pickle.dumps(workers._fingerprint_batch(texts, False, True, True), pickle.HIGHEST_PROTOCOL)
    assert len(pickle.dumps(workers._fingerprint_batch(short, False, True, True), pickle.HIGHEST_PROTOCOL)) < \
        len(short) * config.dims * 4
    got = pickle.loads(pickled).fingerprints()
    want = Fingerprinter(config).fingerprint_many(texts)
    assert all(a.vector.dtype == b.vector.dtype and np.array_equal(a.vector, b.vector)
               for a, b in zip(got, want, strict=True))
    zero = got[0].vector
    assert all(fp.vector is zero for fp in got[:-1]) and not zero.flags.writeable and not zero.any()
    assert got[-1].vector.any() and got[-1].vector is not zero


def _records(texts: list[str]) -> list[Any]:
    from esdedup.readers import Record

    return [Record(f"d{i}", text, None, {}, "in.jsonl", f"line {i + 1}", i, "utf-8") for i, text in enumerate(texts)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL of a worker process")
def test_a_worker_killed_ends_the_batches_with_worker_killed_naming_it_and_every_worker_ends() -> None:
    """A worker SIGKILLed while the run takes batches back: `Workers.in_order` raises `WorkerKilled` with its pid
    and the signal, counts the batches read and not given back, and `close` returns with no worker left. The
    pool's private names the run reads with defaults (`Workers._submit`, `Workers._killed`) exist: without them
    the run would not see a worker killed halfway through sending a result, and would hang."""
    import os
    import signal

    from esdedup.errors import WorkerKilled

    pool = workers.Workers(FingerprintConfig(tokenizer="char", shingle=2), 2)
    try:
        text = "".join(d["text"] for d in make_corpus(40, 10)[0])
        batches = iter([_records([text] * 20) for _ in range(200)])
        taken = pool.in_order(batches, workers.Stop())
        next(taken)
        assert pool._pool is not None and isinstance(pool._pool._processes, dict)
        assert pool._pool._result_queue._writer is not None
        procs = list(pool._procs.values())
        assert len(procs) == 2 and all(p.is_alive() for p in procs)
        os.kill(procs[0].pid, signal.SIGKILL)
        with pytest.raises(WorkerKilled) as caught:
            for _ in taken:
                pass
        assert (caught.value.pid, caught.value.signum) == (procs[0].pid, signal.SIGKILL)
        assert str(caught.value).startswith(f"fingerprint worker process {procs[0].pid} was killed by signal 9 "
                                            "(SIGKILL), most likely by the kernel's out-of-memory killer")
        assert pool.unwritten() > 0
    finally:
        pool.close()
    assert not any(p.is_alive() for p in procs)
