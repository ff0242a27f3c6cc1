"""From tokens to weighted terms: filtering, synonyms, stopwords, shingles, weights, document frequency."""
from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esdedup.errors import ConfigError
from esdedup.fingerprint.features import (
    DocumentFrequency,
    char_shingles,
    count_filtered,
    term_of,
    term_weights,
    terms,
)

STOP = frozenset({"的", "我", "the"})
SYN = {"明起": "明日", "台湾居民": "台胞", "的的": "的"}


def test_terms_docstring_example():
    assert terms(["我", "明起", " ", "来", "北京", "。"], frozenset({"我"}), {"明起": "明日"}) == ["明日", "来", "北京"]


def test_term_of_rules():
    assert term_of("北京") == "北京"
    assert term_of(" 北京 ") == "北京"  # surrounding spaces do not make a different term
    assert term_of(" ") is None
    assert term_of("") is None
    assert term_of("，。！") is None  # punctuation only
    assert term_of("😀") is None  # symbols are not words
    assert term_of("c++") == "c++"  # one letter is enough
    assert term_of("2024") == "2024"
    assert term_of("的", STOP) is None
    assert term_of("台湾居民", STOP, SYN) == "台胞"
    # stopwords apply after the synonym mapping
    assert term_of("的的", STOP, SYN) is None


_TOKENS = st.lists(st.sampled_from(["我", "的", "北京", " ", "。", "明起", "明日", "台湾居民", "台胞", "c++",
                                    "the", "The", " 北京", "😀", "2024", "的的"]), max_size=60)


@given(_TOKENS)
def test_count_filtered_equals_counting_terms(tokens):
    expected = Counter(terms(tokens, STOP, SYN))
    got = count_filtered(Counter(tokens), STOP, SYN)
    assert got == expected
    # first-occurrence order of the terms is kept
    assert list(got) == list(dict.fromkeys(terms(tokens, STOP, SYN)))


@given(st.lists(_TOKENS, min_size=1, max_size=5))
def test_count_filtered_cache_is_reused_across_documents(docs):
    cache: dict[str, str | None] = {}
    for tokens in docs:
        assert count_filtered(Counter(tokens), STOP, SYN, cache) == Counter(terms(tokens, STOP, SYN))
    assert all(v is None or isinstance(v, str) for v in cache.values())


def test_char_shingles():
    assert char_shingles("北京, 欢迎你", 2) == ["北京", "京欢", "欢迎", "迎你"]
    assert char_shingles("北京, 欢迎你", 3) == ["北京欢", "京欢迎", "欢迎你"]
    assert char_shingles("北京", 5) == ["北京"]  # shorter than n: the text itself
    assert char_shingles("，。！ ", 2) == []
    assert char_shingles("", 2) == []
    assert char_shingles("ab", 1) == ["a", "b"]


def test_term_weights():
    counts = {"斗罗": 3, "我": 5}
    assert term_weights(counts) == {"斗罗": 3.0, "我": 5.0}
    assert term_weights(counts, "tf_length") == {"斗罗": 6.0, "我": 5.0}
    df = DocumentFrequency.build([["斗罗"], ["斗罗", "我"], ["其他"]])
    w = term_weights(counts, "tfidf", df)
    assert w["斗罗"] == pytest.approx(3 * (math.log(4 / 3) + 1))
    assert w["我"] == pytest.approx(5 * (math.log(4 / 2) + 1))
    with pytest.raises(ConfigError, match="needs a DocumentFrequency"):
        term_weights(counts, "tfidf")
    with pytest.raises(ConfigError, match="unknown weighting"):
        term_weights(counts, "bm25")
    assert term_weights({}, "tf") == {}


def test_document_frequency_by_hand():
    df = DocumentFrequency.build([["a", "b", "a"], ["a"], ["c"]])
    assert df.n_docs == 3
    assert df.df == {"a": 2, "b": 1, "c": 1}  # a document counts a term once
    assert df.idf("a") == pytest.approx(math.log(4 / 3) + 1)
    assert df.idf("b") == pytest.approx(math.log(4 / 2) + 1)
    assert df.idf("unseen") == pytest.approx(math.log(4) + 1)  # the largest value
    assert df.idf("unseen") > df.idf("b") > df.idf("a") > 0


def test_document_frequency_json_round_trip():
    df = DocumentFrequency.build([["台胞", "明日"], ["台胞"]])
    back = DocumentFrequency.from_json(df.to_json())
    assert back == df
    assert back.digest() == df.digest()
    assert "台胞" in df.to_json()  # readable, not escaped
    df.add(["新词"])
    assert df.digest() != back.digest()


@pytest.mark.parametrize("text", ["not json", "[]", '{"n_docs": 1}', '{"n_docs": "x", "df": {}}',
                                  '{"n_docs": 1, "df": {"a": "many"}}'])
def test_document_frequency_rejects_bad_tables(text):
    with pytest.raises(ConfigError, match="not a document-frequency table|must be a whole number"):
        DocumentFrequency.from_json(text)


def test_is_word_char_is_category_letter_or_number_for_every_code_point():
    import sys
    import unicodedata

    from esdedup.fingerprint.normalize import is_token, is_word_char

    wrong = [c for c in range(sys.maxunicode + 1)
             if is_word_char(chr(c)) != (unicodedata.category(chr(c))[0] in "LN")]
    assert wrong == []
    assert is_token("，a") and not is_token("，。") and not is_token("")
