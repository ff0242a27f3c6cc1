"""Text in, fingerprint out: the pure algorithm layer (no files, no clients, no console).

normalize -> tokenize (jieba's route, in `jieba_fast` and `jieba_hmm`) -> features (weights, n-grams) ->
simhash / minhash -> bands; `config` holds the settings that decide every bit, `fingerprinter` runs the steps.
Nothing here imports matching, storage or the ingest layer (tests/unit/test_layers.py).
"""
from __future__ import annotations

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import MAX_CACHED_TERMS, Fingerprint, Fingerprinter

__all__ = ["MAX_CACHED_TERMS", "Fingerprint", "FingerprintConfig", "Fingerprinter"]
