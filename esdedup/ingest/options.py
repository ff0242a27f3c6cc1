"""What an ingest run is asked to do (`IngestOptions`) and what it reports (`IngestSummary`), with the sizes
every part of the run shares."""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError
from esdedup.match.thresholds import ThresholdOverrides, Thresholds
from esdedup.readers.formats import FORMATS
from esdedup.util.fieldtypes import check_fields, choices

ON_DUPLICATE = ("index", "label", "skip")
#: Records fingerprinted per task sent to a worker process.
BATCH = 1000
#: ... and at most about this many characters of text per task (bounds memory with large documents).
BATCH_CHARS = 8 * 2**20
#: Ids the summary lists (``skipped_ids``, ``replaced_ids``), at most.
SUMMARY_IDS = 1000
#: Stored candidates a record is compared with, at most. Every member of a cluster carries its
#: representative, so a few members found are as good as all of them; a crowded key (thousands of copies)
#: must not make every lookup fetch and compare a thousand documents.
LOOKUP_LIMIT = 100


@dataclass
class IngestSummary:
    """Counts of one ingest run; ``read == indexed + skipped + failed``."""

    read: int = 0
    indexed: int = 0
    created: int = 0
    updated: int = 0
    #: Indexed records the store held already with the same id, text and labels: not sent again.
    unchanged: int = 0
    duplicates: int = 0
    skipped: int = 0
    failed: int = 0
    retried: int = 0
    #: Stored documents whose labels this run changed after they were written: clusters joined by a later
    #: document, or settled with documents other writers wrote at the same time.
    relabelled: int = 0
    #: Near-duplicates other writers wrote at the same time, deleted again by this run (``skip``); they are
    #: not among this run's records (their own writer counted them indexed).
    removed: int = 0
    #: Records that replaced a stored document of the same id with a new text (its old cluster is labelled
    #: again), and (the first `SUMMARY_IDS` of) their ids.
    replaced: int = 0
    replaced_ids: list[str] = field(default_factory=list)
    #: Band keys held by more of this run's documents than the in-run index compares (`MAX_PER_KEY`), with
    #: their counts, most crowded first: boilerplate or mass copies (labelled through their first ones).
    crowded_keys: list[tuple[str, int]] = field(default_factory=list)
    #: Records read from the input but not written when the run was stopped (`Terminated`); they are not
    #: counted in ``read``, and a resumed run reads them again.
    unwritten: int = 0
    bytes: int = 0
    resumed_files: int = 0
    seconds: float = 0.0
    dead_letter: str | None = None
    #: The first `SUMMARY_IDS` ids of the skipped records.
    skipped_ids: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.error is None

    @property
    def balanced(self) -> bool:
        return self.read == self.indexed + self.skipped + self.failed

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["skipped_ids"] = d["skipped_ids"][:SUMMARY_IDS]
        d["replaced_ids"] = d["replaced_ids"][:SUMMARY_IDS]
        d["docs_per_s"] = round(self.read / self.seconds, 1) if self.seconds else None
        d["mb_per_s"] = round(self.bytes / 1e6 / self.seconds, 3) if self.seconds else None
        return d


class Named(enum.Enum):
    """A file an ingest run names itself (`BY_THE_RUN`)."""

    BY_THE_RUN = "named by the run"


#: ``IngestOptions(checkpoint=BY_THE_RUN, dead_letter=BY_THE_RUN)``: the run names its checkpoint
#: (`esdedup.ingest.checkpoint.default_checkpoint`: per server, index and inputs) and its dead letters
#: (`esdedup.ingest.deadletters.default_dead_letter`) as the command line does, so that a run of the same inputs
#: with ``resume`` continues it.
BY_THE_RUN = Named.BY_THE_RUN


@dataclass
class IngestOptions:
    format: str = choices("auto", tuple(sorted(FORMATS)))
    id_field: str = "id"
    text_field: str = "text"
    title_field: str = "title"
    on_duplicate: str = choices("label", ON_DUPLICATE)
    #: Failed and skipped records go there (None: nowhere; they are counted all the same).
    dead_letter: str | Path | Named | None = None
    workers: int = 0
    #: What counts as a near-duplicate when labelling (default: the index's thresholds).
    thresholds: Thresholds | ThresholdOverrides | None = None
    #: The offsets a resumed run continues from (None: none kept).
    checkpoint: str | Path | Named | None = None
    resume: bool = False
    max_record_bytes: int = 64 * 2**20
    batch: int = BATCH

    def __post_init__(self) -> None:
        check_fields(self, owner="IngestOptions field")
        for name in ("batch", "max_record_bytes"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.workers < 0:
            raise ConfigError(f"workers must be >= 0 (0 = one per CPU), got {self.workers}")
        if self.resume and not self.checkpoint:
            raise ConfigError("resume needs a checkpoint file")
