"""Records in, labelled documents in a store out: `ingest` (files, with a checkpoint) and `Ingester` (texts
added one call at a time), and `settle_stored`, the settling step that `esdedup.ingest.label` shares."""
from __future__ import annotations

from esdedup.ingest.checkpoint import default_checkpoint
from esdedup.ingest.deadletters import default_dead_letter
from esdedup.ingest.documents import ids_for_texts
from esdedup.ingest.options import (
    BATCH,
    BATCH_CHARS,
    BY_THE_RUN,
    LOOKUP_LIMIT,
    ON_DUPLICATE,
    SUMMARY_IDS,
    IngestOptions,
    IngestSummary,
)
from esdedup.ingest.run import ingest
from esdedup.ingest.runindex import MAX_PER_KEY
from esdedup.ingest.service import Added, Ingester
from esdedup.ingest.settle import settle_stored
from esdedup.ingest.workers import Stop

__all__ = ["BATCH", "BATCH_CHARS", "BY_THE_RUN", "LOOKUP_LIMIT", "MAX_PER_KEY", "ON_DUPLICATE", "SUMMARY_IDS", "Added",
           "IngestOptions", "IngestSummary", "Ingester", "Stop", "default_checkpoint", "default_dead_letter", "ids_for_texts",
           "ingest", "settle_stored"]
