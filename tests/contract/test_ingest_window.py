"""A batch ingest keeps at most `RUN_INDEX_MAX_DOCS` documents (plus one batch) in its run index, and
labels as if it kept them all. Run on the embedded store and on a real Elasticsearch node.

The corpus plants near-duplicates across the window boundaries, a document that joins two clusters written
windows before it (one of this run's representatives becomes a near-duplicate), and records repeating an id
written windows before (same text: skipped; another text: failed). The run with a window of 50 documents must
give the labels and summary of the run that keeps every document; while it is the index's only writer it
looks nothing up in the store (the band keys of its earlier windows stay in memory, frozen), and once another
writer writes it looks every batch up in the store again.
"""
from __future__ import annotations

import json
import random
import uuid

import pytest

from esdedup import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.ingest import Ingester, IngestOptions, ingest
from esdedup.ingest import run as ingest_module
from esdedup.ingest import window as window_module
from esdedup.ingest.runindex import RunIndex
from esdedup.match.measures import measure
from esdedup.match.thresholds import Thresholds
from esdedup.store.base import Store
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore
from tests.corpus import make_corpus, make_document, make_variant
from tests.engines import BACKENDS, server_client

CONFIG = FingerprintConfig(tokenizer="rjieba")
WINDOW, BATCH = 50, 10


class _Counting:
    """A real store that counts its band lookups (`Store.lookup`): each is a batch the store was asked about."""

    lookups = 0

    def lookup(self, probes, *, limit=1000):
        self.lookups += 1
        return super().lookup(probes, limit=limit)  # type: ignore[misc]


class _CountingLocal(_Counting, LocalStore):
    pass


class _CountingElastic(_Counting, ElasticStore):
    pass


@pytest.fixture(params=BACKENDS)
def new_store(request, tmp_path):
    """``make()``: a new index; ``make(name)``: another store object on index ``name`` (another writer)."""
    made: list[Store] = []

    def make(name: str | None = None) -> Store:
        name = name or f"window-{uuid.uuid4().hex[:10]}"
        s = _CountingLocal(name, tmp_path / "data") if request.param == "local" else \
            _CountingElastic(server_client(request), name, shards=2, replicas=0)
        made.append(s)
        return s

    yield make
    for s in made[::-1]:
        s.drop()


def _bridge(rng: random.Random) -> tuple[str, str, str]:
    """Texts a, b, c: a and c are not near-duplicates, b is one of both (a chain of variants)."""
    fper, t = Fingerprinter(CONFIG), Thresholds.from_config(CONFIG)

    def dup(x: str, y: str) -> bool:
        fx, fy = fper.fingerprint(x), fper.fingerprint(y)
        return bool(measure(fx, [fy], CONFIG).decide(t)[0])

    while True:
        chain = [make_document(rng, 6)]
        for _ in range(48):  # the n-grams of a variant of a variant drift slowly: ~40 steps below the rule
            chain.append(make_variant(rng, chain[-1]))
        far = next((k for k in range(2, len(chain)) if not dup(chain[0], chain[k])), None)
        mid = next((m for m in range(1, far or 0) if dup(chain[0], chain[m]) and dup(chain[m], chain[far])), None) \
            if far else None
        if mid is not None:
            return chain[0], chain[mid], chain[far]  # type: ignore[index]


def _corpus(tmp_path) -> tuple[str, list[dict[str, str]]]:
    docs, _ = make_corpus(150, 40, seed=23)  # the 40 variants come after all 150 originals: windows later
    a, b, c = _bridge(random.Random(4))
    docs[5:5] = [{"id": "bridge-a", "text": a}]
    docs[20:20] = [{"id": "bridge-c", "text": c}]  # its own cluster, in the first window
    docs += [{"id": "bridge-b", "text": b},  # joins a's and c's clusters, three windows later
             dict(docs[3]),  # an id and text written in the first window: skipped
             {"id": docs[4]["id"], "text": docs[9]["text"]}]  # an id of the first window, another text: failed
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    return str(path), docs


class _Measured(RunIndex):
    """The run index, noting the most documents any one held."""

    most = 0

    def add_row(self, row, hashes, names):
        out = super().add_row(row, hashes, names)
        _Measured.most = max(_Measured.most, len(self.docs))
        return out

    def _hold_queued(self):  # a batch added at once (`add_all_later`)
        super()._hold_queued()
        _Measured.most = max(_Measured.most, len(self.docs))


def _labels(store: Store) -> dict[str, tuple[str | None, str | None]]:
    store.refresh()
    return {d.id: (d.cluster_id, d.duplicate_of) for docs in store.scan() for d in docs}


def _counts(summary) -> dict:
    return {k: v for k, v in summary.to_dict().items() if k not in ("seconds", "docs_per_s", "mb_per_s")}


@pytest.mark.parametrize("on_duplicate", ["label", "skip"])
def test_a_run_longer_than_its_window_labels_as_one_that_keeps_every_document(new_store, tmp_path, monkeypatch,
                                                                               on_duplicate):
    path, docs = _corpus(tmp_path)
    opts = IngestOptions(workers=1, batch=BATCH, on_duplicate=on_duplicate)
    whole = new_store()
    s_whole = ingest([path], whole, CONFIG, opts)
    monkeypatch.setattr(ingest_module, "RUN_INDEX_MAX_DOCS", WINDOW)
    monkeypatch.setattr(window_module, "RunIndex", _Measured)
    _Measured.most = 0
    windowed = new_store()
    s_windowed = ingest([path], windowed, CONFIG, opts)

    assert 0 < _Measured.most <= WINDOW + BATCH  # without the window: every document of the run
    assert windowed.lookups == 0  # the run created the index and wrote alone: the store was never asked
    assert s_windowed.error is None and s_windowed.balanced and s_windowed.read == len(docs)
    assert (s_windowed.skipped, s_windowed.failed) == ((1, 1) if on_duplicate == "label" else
                                                       (s_whole.skipped, 1))
    assert _counts(s_windowed) == _counts(s_whole)
    labels = _labels(windowed)
    assert labels == _labels(whole)
    if on_duplicate == "label":  # the bridge joined a cluster written three windows before
        assert labels["bridge-c"] == labels["bridge-b"] == ("bridge-a", "bridge-a")
        assert s_windowed.relabelled >= 1


def test_a_second_writer_during_a_windowed_run_sends_its_lookups_to_the_store(new_store, tmp_path, monkeypatch):
    """Another writer adds a near-duplicate of a document of the run's first window, and an original that a
    later record of the run duplicates, while the run is in its third window: the run looks its batches up in
    the store from then on, finds that original, and labels as the run that keeps every document."""
    path, docs = _corpus(tmp_path)
    rng = random.Random(9)
    other = [{"id": "other-1", "text": make_variant(rng, docs[2]["text"])},
             {"id": "other-2", "text": "".join(f"另一写入者的第{i}条独家消息，编号{i * 7919}，与语料无关。"
                                               for i in range(8))}]
    docs.append({"id": "late-2", "text": make_variant(rng, other[1]["text"])})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(docs[-1], ensure_ascii=False) + "\n")
    opts = IngestOptions(workers=1, batch=BATCH)

    def run(window: int) -> tuple[Store, int]:
        monkeypatch.setattr(ingest_module, "RUN_INDEX_MAX_DOCS", window)
        store, asked = new_store(), []

        def second_writer(summary) -> None:
            if summary.read == 12 * BATCH:  # 2 windows of 50 written
                asked.append(store.lookups)
                Ingester(new_store(store.name), CONFIG).add_many(other)

        summary = ingest([path], store, CONFIG, opts, progress=second_writer)
        assert summary.error is None and summary.balanced and summary.read == len(docs)
        return store, asked[0]

    whole, _ = run(10**6)
    windowed, asked_before = run(WINDOW)
    assert asked_before == 0 < windowed.lookups
    labels = _labels(windowed)
    assert labels == _labels(whole)
    assert (labels["d00002"], labels["other-1"]) == (("d00002", None), ("d00002", "d00002"))
    assert labels["late-2"] == ("other-2", "other-2")
