"""`Ingester`: ingest for a long-running program, one article (or a few) per call."""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.ingest.deadletters import DeadLetters
from esdedup.ingest.documents import unstorable_reason
from esdedup.ingest.driver import open_run
from esdedup.ingest.options import IngestOptions, IngestSummary
from esdedup.ingest.workers import fingerprint_with
from esdedup.match.thresholds import ThresholdOverrides, Thresholds
from esdedup.readers import Record, Rejected
from esdedup.store.base import LabelledStore
from esdedup.util.fieldtypes import checked_args


@dataclass(frozen=True)
class Added:
    """What became of one article given to `Ingester.add`: ``status`` is ``"indexed"``, ``"skipped"``
    (a near-duplicate with ``on_duplicate="skip"``) or ``"failed"`` (with the ``reason``); an indexed
    article carries its cluster's representative (``cluster_id``, and ``duplicate_of`` when that is another
    document) as they stood when the call returned."""

    id: str | None
    status: str
    cluster_id: str | None = None
    duplicate_of: str | None = None
    reason: str | None = None


class Ingester:
    """Ingest articles one at a time (or a few at a time) from a long-running program, such as a crawler's
    callback: the store is opened (its mapping read once) and the `Fingerprinter` built once, here.

    Each call fingerprints in the calling thread, labels, writes and, on Elasticsearch, settles the labels
    with whatever other writers (other Ingesters, threads, processes or ``esdedup ingest`` runs) wrote at
    the same time, so the article is searchable and labelled when the call returns. One Ingester may be
    shared by threads (calls take turns); ``summary`` counts every call so far.

    >>> import tempfile
    >>> from esdedup import FingerprintConfig, open_store
    >>> ingester = Ingester(open_store("crawl", data_dir=tempfile.mkdtemp()), FingerprintConfig())
    >>> ingester.add("台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。", id="a").status
    'indexed'
    >>> ingester.add("台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利！", id="b").duplicate_of
    'a'

    An article no store can carry as it is (a lone surrogate in its text, id, title or any field, an id
    longer than 512 bytes, fields that cannot be encoded as JSON) is ``failed`` with the reason, on every
    store alike, as a reader refuses such a record in a file.

    Raises ConfigError (bad options), ConfigMismatchError (``config`` differs from the index's) or
    StoreError here; `add` raises StoreError when the store fails (the article was then not written).
    A call that fails leaves nothing of it behind in the Ingester: the next call finds only what the store holds.
    """

    @checked_args
    def __init__(self, store: LabelledStore, config: FingerprintConfig | None = None, *, on_duplicate: str = "label",
                 thresholds: Thresholds | ThresholdOverrides | None = None,
                 dead_letter: str | Path | None = None) -> None:
        opts = IngestOptions(on_duplicate=on_duplicate, thresholds=thresholds, dead_letter=dead_letter, workers=1)
        self.store = store
        self.summary = IngestSummary(dead_letter=str(dead_letter) if dead_letter else None)
        self._run = open_run(store, config, opts, summary=self.summary, dead=DeadLetters(dead_letter),
                             remember=False)
        self.config = self._run.config
        self._fper = Fingerprinter(self.config)
        self._lock = threading.Lock()
        self._calls = 0

    def add(self, text: str, *, id: str | int | None = None, title: str | None = None, **fields: Any) -> Added:
        """Ingest one article (``fields``: url, source, timestamp, ... stored with it)."""
        return self.add_many([{**fields, "id": id, "title": title, "text": text}])[0]

    @checked_args
    def add_many(self, docs: Iterable[Mapping[str, Any]]) -> list[Added]:
        """Ingest a few articles at once (one lookup and one write for all): mappings with ``text`` and
        optionally ``id``, ``title`` and other fields. Returns one `Added` per article, in order."""
        docs = list(docs)
        for doc in docs:  # before any is written: a caller's mistake, not an article that failed
            if not isinstance(doc, Mapping):
                raise ConfigError(f"Ingester.add_many: each article must be a dict, got {type(doc).__name__} "
                                  f"{doc!r:.40}")
        with self._lock:
            records = [self._record(d) for d in docs]
            results = fingerprint_with(self._fper, [r.text for r in records if isinstance(r, Record)])
            try:
                self._run.process(records, results)
            except BaseException:
                # Nothing of a call that failed stays in memory: the next article must not be labelled a
                # near-duplicate of one the store never took.
                self._run.window.forget_batch()
                raise
            return [self._added(r) for r in records]

    def _record(self, doc: Mapping[str, Any]) -> Record | Rejected:
        self._calls += 1
        where = ("ingester", f"article {self._calls}")
        text, doc_id, title = doc.get("text"), doc.get("id"), doc.get("title")
        if not isinstance(text, str) or not text.strip():
            return Rejected(*where, f"text is {'empty' if isinstance(text, str) else type(text).__name__}")
        if doc_id is not None and (isinstance(doc_id, bool) or not isinstance(doc_id, (str, int))):
            return Rejected(*where, f"id is not a string or integer (got {type(doc_id).__name__})")
        if title is not None and not isinstance(title, str):
            return Rejected(*where, f"title is not a string (got {type(title).__name__})")
        fields = {k: v for k, v in doc.items() if k not in ("text", "id", "title")}
        # An empty id is no id, as in a file: one is derived from the text.
        rec = Record(id=None if doc_id is None or doc_id == "" else str(doc_id), text=text, title=title,
                     fields=fields, source=where[0], location=where[1], offset=0, encoding="utf-8")
        reason = unstorable_reason(rec)
        return rec if reason is None else Rejected(*where, reason)

    def _added(self, rec: Record | Rejected) -> Added:
        batch = self._run.ledger.cur
        status, reason = batch.fates.get(id(rec), ("failed", "not written"))
        labelled = batch.clusters.get(id(rec))
        if status != "indexed" or labelled is None:
            return Added(rec.id if isinstance(rec, Record) else None, status, reason=reason)
        doc_id, root = labelled[0], self._run.labeller.find(labelled[1])
        return Added(doc_id, status, root[1], root[1] if root[1] != doc_id else None)

    def close(self) -> None:
        """Write the dead letters held and release the store (the caller's client stays open)."""
        self._run.ledger.dead.close()
        self.store.close()
