"""The fast jieba engine gives jieba's own tokens: HMM runs bit for bit, whole texts token for token."""
from __future__ import annotations

import subprocess
import sys

import jieba
import jieba.finalseg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.fingerprint.jieba_fast import JiebaFast
from esdedup.fingerprint.jieba_hmm import cut_runs
from esdedup.fingerprint.normalize import normalize
from esdedup.fingerprint.tokenize import PIECE_CHARS, Tokenizer
from tests.corpus import SENTENCES, make_corpus

# Common characters, characters jieba's HMM has no emission for in some states (埜: no B, no E) or in none
# (丄丅丏両緈: every path through them scores jieba's MIN_FLOAT, so tie-breaking decides), the
# near-tie 常在前 (jieba-rs's own HMM cuts it 常在/前), CJK extension A/B characters (Chinese to jieba-rs, not
# to jieba), the ASCII jieba keeps inside Chinese blocks, punctuation, whitespace of several kinds, and other
# scripts.
CHINESE = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产" \
          "常造次前江湖扁舟心情老去埜囗乂丶乵瀴丄丅丏両緈"
PALETTE = [*CHINESE, *"㶉𫛶𩙫𣀃鿖", *"abcXYZ0123456789+#&._%-", " ", "  ", "\r\n", "\t", "\n", "，", "。", "！",
           "?", "、", "“", "”", "😀", "こ", "П", "é", "\u00a0", "\u3000", "\u2028", "\x1c", "T恤", "AT&T", "QQ", "A股", "3D", "1.5%", "v%"]


def test_the_near_tie_jieba_rs_cuts_otherwise(fast: JiebaFast, reference: jieba.Tokenizer) -> None:
    import rjieba

    assert rjieba.Jieba().cut("造次常在前", True) != reference.lcut("造次常在前")  # why the HMM is jieba's
    assert fast.cut("造次常在前") == reference.lcut("造次常在前") == ["造次", "常", "在", "前"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=CHINESE, min_size=2, max_size=12), min_size=1, max_size=8))
def test_hmm_runs_are_jieba_finalseg(runs: list[str]) -> None:
    words, counts = cut_runs(runs)
    expected = [list(jieba.finalseg.cut(run)) for run in runs]
    assert counts.tolist() == [len(e) for e in expected]
    assert words == [w for e in expected for w in e]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PALETTE), max_size=40).map("".join), min_size=1, max_size=6))
def test_mixed_texts_are_cut_as_jieba_cuts_them(fast: JiebaFast, reference: jieba.Tokenizer, texts: list[str]) -> None:
    assert fast.cut_many(texts) == [reference.lcut(t, HMM=True) for t in texts]


def test_news_and_its_normal_form_are_cut_as_jieba_cuts_them(fast: JiebaFast, reference: jieba.Tokenizer) -> None:
    texts = [*SENTENCES, *(d["text"] for d in make_corpus(60, 30, seed=3)[0])]
    texts += [normalize(t, t2s=True) for t in texts]
    assert fast.cut_many(texts) == [reference.lcut(t, HMM=True) for t in texts]


def test_tokenizer_uses_it_and_keeps_long_texts_in_pieces(reference: jieba.Tokenizer) -> None:
    tok = Tokenizer("jieba")
    long = "".join(SENTENCES) * (PIECE_CHARS // len("".join(SENTENCES)) + 2)
    got = tok.cut_many(["造次常在前", long])
    assert got[0] == ["造次", "常", "在", "前"]
    assert got[1] == tok.cut(long) and len(got[1]) > 1000


def test_user_words_and_the_reference_switch_use_jieba_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    with_word = Tokenizer("jieba", [("造次常在前", None)])
    assert with_word.cut_many(["他说造次常在前。"])[0][:2] == ["他", "说"]
    assert "造次常在前" in with_word.cut("他说造次常在前。")
    monkeypatch.setenv("ESDEDUP_JIEBA", "reference")
    assert Tokenizer("jieba").cut("造次常在前") == ["造次", "常", "在", "前"]



def test_jieba_rs_knows_the_words_jieba_knows(reference: jieba.Tokenizer) -> None:
    """The engine asks jieba-rs whether a run is a word (so that jieba's own dictionary need not be loaded):
    the answer must be jieba's for every entry of jieba's FREQ, words (count > 0) and prefixes (count 0)."""
    import rjieba

    route = rjieba.Jieba()
    words = [w for w, n in reference.FREQ.items() if n]
    prefixes = [w for w, n in reference.FREQ.items() if not n]
    assert len(words) > 300_000 and len(prefixes) > 100_000
    assert [w for w in words if not route.has_word(w)] == []
    assert [w for w in prefixes if route.has_word(w)] == []


def test_jieba_itself_is_loaded_only_for_a_block_only_it_can_cut() -> None:
    fast = JiebaFast()
    fast.cut_many(["造次常在前，我们去公园散步。", "买了T恤和A股", "AT&T的3D打印机", "1.5%的v%"])
    assert fast._reference is None
    # jieba's dictionary has no word of ASCII letters or digits; were one there, jieba-rs would run its letter
    # steps together and only jieba could tell them apart: that block is then cut by jieba itself.
    route_has_word = fast._is_word
    fast._is_word = lambda w: w == "iphone" or route_has_word(w)  # type: ignore[method-assign]
    assert fast.cut("用iphone拍照") == jieba.Tokenizer().lcut("用iphone拍照", HMM=True)
    assert fast._reference is not None


def test_the_hmm_tables_are_jieba_s_whether_or_not_jieba_is_imported() -> None:
    """A fingerprint worker reads jieba's HMM tables from its files without importing jieba (whose import
    loads pkg_resources); they are the tables of jieba's own modules."""
    code = ("import sys\nfrom esdedup.fingerprint.jieba_hmm import tables\n"
            "read = tables()\nassert not [m for m in sys.modules if m.startswith('jieba')], sys.modules\n"
            "import jieba.finalseg\ntables.cache_clear()\n"
            "assert all((a == b).all() for a, b in zip(read, tables(), strict=True))\n"
            "assert read[2][ord('\u4e00') - 0x4E00, 0] == jieba.finalseg.emit_P['B']['\u4e00']\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_runs_up_to_the_bound_are_jieba_finalseg() -> None:
    """The longest runs decoded in one piece (and runs around that length) are cut as jieba cuts them."""
    import random

    from esdedup.fingerprint.jieba_hmm import MAX_RUN

    rng = random.Random(7)
    runs = ["".join(rng.choice(CHINESE) for _ in range(n)) for n in (MAX_RUN - 1, MAX_RUN, 2, 37)]
    words, counts = cut_runs(runs)
    expected = [list(jieba.finalseg.cut(run)) for run in runs]
    assert words == [w for e in expected for w in e] and counts.tolist() == [len(e) for e in expected]


def test_one_character_repeated_costs_what_normal_text_of_its_size_costs(fast: JiebaFast,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One HMM pass steps once per character of its longest run: a text that is one long run (one Han
    character repeated) is decoded in bounded runs, so its cost is about a normal text's."""
    import random
    import time

    from esdedup.fingerprint import jieba_hmm
    from tests.reliability import make_text

    rng = random.Random(8)
    normal = "".join(make_text(rng) for _ in range(600))[:PIECE_CHARS]
    hostile = "中" * PIECE_CHARS
    longest: list[int] = []
    decode = jieba_hmm._viterbi_states
    monkeypatch.setattr(jieba_hmm, "_viterbi_states",
                        lambda codes, lengths: longest.append(int(lengths.max())) or decode(codes, lengths))

    def seconds(text: str) -> float:
        fast.cut(text[:100])
        started = time.perf_counter()
        tokens = fast.cut(text)
        assert "".join(tokens) == text
        return time.perf_counter() - started

    normal_s, hostile_s = min(seconds(normal) for _ in range(2)), min(seconds(hostile) for _ in range(2))
    assert max(longest) <= jieba_hmm.MAX_RUN
    assert hostile_s < 3 * normal_s + 0.2, (hostile_s, normal_s)


def test_rjieba_tokenizers_share_a_segmenter_only_with_the_same_user_words() -> None:
    """rjieba's dictionary is loaded once a process for each set of user words (0.15 s a load), and a user
    word of one config never reaches a tokenizer without it, made before or after."""
    plain = Tokenizer("rjieba")
    with_word, again = Tokenizer("rjieba", [("造次常在前", None)]), Tokenizer("rjieba", (("造次常在前", None),))
    assert "造次常在前" in with_word.cut("他说造次常在前。")
    assert "造次常在前" not in plain.cut("他说造次常在前。")
    assert "造次常在前" not in Tokenizer("rjieba").cut("他说造次常在前。")
    assert with_word._rjieba is again._rjieba and plain._rjieba is not with_word._rjieba
    assert plain._rjieba is Tokenizer("rjieba")._rjieba is JiebaFast()._route
