"""The text index's spacing of CJK characters (`esdedup.store.local.texts.spaced`), done for a batch in the
native core (`esdedup_native.spaced_texts`, `texts.spaced_many`), gives what the Python function gives.
Skips without the extension unless ESDEDUP_REQUIRE_NATIVE=1 (the `extension` fixture, tests/unit/conftest.py)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.store.local import native_texts
from esdedup.store.local.texts import CJK_RANGES, spaced, spaced_many
from esdedup.util import native

EDGES = "".join(chr(c) for lo, hi in CJK_RANGES for c in (lo - 1, lo, hi, hi + 1))
texts_st = st.lists(st.text(alphabet=st.characters(codec=None) | st.sampled_from(EDGES + "中文 é\ud800"),
                            max_size=40), max_size=12)


def test_native_spacing_is_python_s(extension, switch_on) -> None:
    @settings(max_examples=300, deadline=None)
    @given(texts_st)
    def check(texts: list[str]) -> None:
        done = native_texts.spaced_texts(texts, CJK_RANGES)
        assert done is not None
        assert [spaced(t) if s is None else s for t, s in zip(texts, done, strict=True)] == [spaced(t) for t in texts]
        # Only a text with a lone surrogate is handed back.
        assert [s is None for s in done] == [any("\ud800" <= c <= "\udfff" for c in t) for t in texts]

    check()


def test_spacing_many_texts_is_spacing_each(monkeypatch) -> None:
    texts = ["中文abc", "", "a 한국어 b", "\U00020000x", "plain"]
    for switch in ("0", "1"):
        monkeypatch.setenv(native.ENV_SWITCH, switch)
        assert spaced_many(texts) == [spaced(t) for t in texts] == [" 中  文 abc", "", "a  한  국  어  b",
                                                                     " \U00020000 x", "plain"]
