"""The public path of the input readers: ``from esdedup.readers import read_records, Record, ...``.

The readers live in one module per idea and are re-exported here:

* :mod:`esdedup.readers.encodings`: encoding detection and strict decoding (UTF-8/16/32, GB18030, Big5,
  Shift-JIS, EUC-JP, EUC-KR; never guessed into mojibake);
* :mod:`esdedup.readers.files`: finding files, their canonical source names and file-derived ids, up-front input
  checks, safe opening, reading one text file whole within a size limit;
* :mod:`esdedup.readers.lines`: splitting line-oriented files in bounded memory and decoding each line;
* :mod:`esdedup.readers.records`: what a reader yields (:class:`Record`, :class:`Rejected`) and the field rules;
* :mod:`esdedup.readers.formats`: the txt, JSONL, JSON and CSV/TSV readers behind :func:`read_records`.
"""
from __future__ import annotations

from esdedup.readers.encodings import SAMPLE_BYTES, decode_bytes, detect_encoding
from esdedup.readers.files import (
    MAX_TEXT_FILE_BYTES,
    check_inputs,
    detect_format,
    iter_files,
    read_text_file,
    source_name,
)
from esdedup.readers.formats import FORMATS, read_records
from esdedup.readers.records import DEFAULT_MAX_RECORD_BYTES, EXCERPT_CHARS, MAX_ID_BYTES, Record, Rejected

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "EXCERPT_CHARS",
    "FORMATS",
    "MAX_ID_BYTES",
    "MAX_TEXT_FILE_BYTES",
    "SAMPLE_BYTES",
    "Record",
    "Rejected",
    "check_inputs",
    "decode_bytes",
    "detect_encoding",
    "detect_format",
    "iter_files",
    "read_records",
    "read_text_file",
    "source_name",
]
