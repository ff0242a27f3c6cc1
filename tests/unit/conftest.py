"""Fixtures of several unit test modules: the native core's (`extension`, `switch_on`) and the segmenters
the tokenizer tests compare."""
from __future__ import annotations

import os

import jieba
import pytest

from esdedup.fingerprint.jieba_fast import JiebaFast
from esdedup.util import native

#: Set to 1 (as CI does), a test that needs the built extension fails instead of skipping without it.
REQUIRE_ENV = "ESDEDUP_REQUIRE_NATIVE"


@pytest.fixture
def extension() -> None:
    """Skip (or, with ESDEDUP_REQUIRE_NATIVE=1, fail) a test that needs the built extension."""
    missing = native.extension_missing()
    if not missing:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1, but {missing}", pytrace=False)
    pytest.skip(f"{missing} ({REQUIRE_ENV}=1 makes this a failure)")


@pytest.fixture
def switch_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native core switched on, whatever ESDEDUP_NATIVE says."""
    monkeypatch.delenv(native.ENV_SWITCH, raising=False)


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
