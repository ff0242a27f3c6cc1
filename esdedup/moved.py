"""Import paths from before the subpackages: ``import esdedup.rule`` still gives `esdedup.match.rule`.

Each old path is an alias of the module's new home (the same module object, so a monkeypatch or an
``isinstance`` through either path sees the same thing). The packages that took an old module's name
(`esdedup.ingest`, `esdedup.search`, `esdedup.fingerprint`, `esdedup.store.elastic`, `esdedup.readers`)
re-export its public names instead.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

#: old import path -> the module it names now
MOVED = {
    "esdedup.bands": "esdedup.fingerprint.bands",
    "esdedup.checkpoint": "esdedup.ingest.checkpoint",
    "esdedup.clock": "esdedup.ingest.clock",
    "esdedup.clusters": "esdedup.match.clusters",
    "esdedup.config": "esdedup.fingerprint.config",
    "esdedup.connect": "esdedup.es.connect",
    "esdedup.deadletters": "esdedup.ingest.deadletters",
    "esdedup.encodings": "esdedup.readers.encodings",
    "esdedup.evaluate": "esdedup.quality.evaluate",
    "esdedup.features": "esdedup.fingerprint.features",
    "esdedup.filelock": "esdedup.util.filelock",
    "esdedup.files": "esdedup.readers.files",
    "esdedup.formats": "esdedup.readers.formats",
    "esdedup.hashing": "esdedup.fingerprint.hashing",
    "esdedup.jieba_fast": "esdedup.fingerprint.jieba_fast",
    "esdedup.jieba_hmm": "esdedup.fingerprint.jieba_hmm",
    "esdedup.kibana": "esdedup.es.kibana",
    "esdedup.label": "esdedup.ingest.label",
    "esdedup.lines": "esdedup.readers.lines",
    "esdedup.lookup": "esdedup.match.lookup",
    "esdedup.minhash": "esdedup.fingerprint.minhash",
    "esdedup.normalize": "esdedup.fingerprint.normalize",
    "esdedup.pairs": "esdedup.match.pairs",
    "esdedup.pipeline": "esdedup.ingest.pipeline",
    "esdedup.prefetch": "esdedup.util.prefetch",
    "esdedup.query": "esdedup.es.query",
    "esdedup.records": "esdedup.readers.records",
    "esdedup.redact": "esdedup.util.redact",
    "esdedup.resources": "esdedup.fingerprint.resources",
    "esdedup.rule": "esdedup.match.rule",
    "esdedup.runindex": "esdedup.ingest.runindex",
    "esdedup.similarity": "esdedup.match.similarity",
    "esdedup.simhash": "esdedup.fingerprint.simhash",
    "esdedup.store.serializer": "esdedup.es.serializer",
    "esdedup.store.versions": "esdedup.es.versions",
    "esdedup.synth": "esdedup.quality.synth",
    "esdedup.thresholds": "esdedup.match.thresholds",
    "esdedup.tokenize": "esdedup.fingerprint.tokenize",
    "esdedup.workers": "esdedup.ingest.workers",
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as its new module (the import system keeps what `exec_module` puts in
    ``sys.modules``)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[module.__name__] = importlib.import_module(MOVED[module.__name__])


def install() -> None:
    """Put the finder at the end of ``sys.meta_path`` once (real modules are always found first)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
