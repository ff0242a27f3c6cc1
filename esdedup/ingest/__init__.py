"""Records in, labelled documents in a store out: `ingest` (files, with a checkpoint) and `Ingester` (texts
added one call at a time), and `settle_stored`, the settling step that `esdedup.ingest.label` shares."""
from __future__ import annotations

from esdedup.ingest.run import (
    BATCH,
    BATCH_CHARS,
    ON_DUPLICATE,
    SUMMARY_IDS,
    Added,
    Ingester,
    IngestOptions,
    IngestSummary,
    ids_for_texts,
    ingest,
    settle_stored,
)
from esdedup.ingest.runindex import MAX_PER_KEY

__all__ = ["BATCH", "BATCH_CHARS", "MAX_PER_KEY", "ON_DUPLICATE", "SUMMARY_IDS", "Added", "IngestOptions",
           "IngestSummary", "Ingester", "ids_for_texts", "ingest", "settle_stored"]
