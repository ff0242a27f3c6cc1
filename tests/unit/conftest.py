"""Fixtures of several unit test modules: the segmenters the tokenizer tests compare."""
from __future__ import annotations

import jieba
import pytest

from esdedup.fingerprint.jieba_fast import JiebaFast


@pytest.fixture(scope="module")
def fast() -> JiebaFast:
    """esdedup's engine for the ``jieba`` tokenizer (Python)."""
    return JiebaFast()


@pytest.fixture(scope="module")
def reference() -> jieba.Tokenizer:
    """jieba itself, its dictionary loaded."""
    tok = jieba.Tokenizer()
    tok.initialize()
    return tok
