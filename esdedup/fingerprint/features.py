"""From tokens to weighted terms: stopwords, synonyms, shingles, tf / tf-idf / length weights.

Pure functions over plain data. Loading the shipped or user files lives in `esdedup.fingerprint.resources`.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from esdedup.errors import ConfigError
from esdedup.fingerprint.normalize import is_token


def terms(tokens: Iterable[str], stopwords: frozenset[str] = frozenset(),
          synonyms: Mapping[str, str] | None = None) -> list[str]:
    """Keep the tokens that are words, map synonyms to their canonical term, drop stopwords.

    >>> terms(["我", "明起", " ", "来", "北京", "。"], frozenset({"我"}), {"明起": "明日"})
    ['明日', '来', '北京']
    """
    out = []
    for tok in tokens:
        term = term_of(tok, stopwords, synonyms)
        if term is not None:
            out.append(term)
    return out


def term_of(token: str, stopwords: frozenset[str] = frozenset(),
            synonyms: Mapping[str, str] | None = None) -> str | None:
    """The term a token counts as, or None when it is not a word or is a stopword."""
    token = token.strip()
    if not token or not is_token(token):
        return None
    if synonyms:
        token = synonyms.get(token, token)
    return None if token in stopwords else token


def count_filtered(token_counts: Mapping[str, int], stopwords: frozenset[str] = frozenset(),
                   synonyms: Mapping[str, str] | None = None,
                   cache: dict[str, str | None] | None = None) -> Counter[str]:
    """`terms` over a Counter of raw tokens: each distinct token is filtered once (``cache`` remembers
    the answer across documents), which is what makes long documents cheap."""
    out: Counter[str] = Counter()
    for tok, n in token_counts.items():
        if cache is not None:
            term = cache.get(tok, "")
            if term == "":
                term = cache[tok] = term_of(tok, stopwords, synonyms)
        else:
            term = term_of(tok, stopwords, synonyms)
        if term is not None:
            out[term] += n
    return out


def char_shingles(text: str, n: int) -> list[str]:
    """Overlapping character n-grams of the word characters of ``text`` (spaces and punctuation removed).

    A text shorter than n yields itself as one shingle, so short texts are never empty by accident.

    >>> char_shingles("北京, 欢迎你", 2)
    ['北京', '京欢', '欢迎', '迎你']
    """
    chars = "".join(filter(str.isalnum, text))  # the characters for which is_word_char() is true
    if not chars:
        return []
    if len(chars) <= n:
        return [chars]
    return [chars[i : i + n] for i in range(len(chars) - n + 1)]


def term_weights(counts: Mapping[str, int], weighting: str = "tf",
                 idf: DocumentFrequency | None = None) -> dict[str, float]:
    """Weight each term: ``tf`` its count, ``tf_length`` count x characters (design document 004),
    ``tfidf`` count x idf from a `DocumentFrequency` table.

    >>> term_weights({"斗罗": 3, "我": 5}, "tf_length")
    {'斗罗': 6.0, '我': 5.0}
    """
    if weighting == "tf":
        return {t: float(c) for t, c in counts.items()}
    if weighting == "tf_length":
        return {t: float(c * len(t)) for t, c in counts.items()}
    if weighting == "tfidf":
        if idf is None:
            raise ConfigError("tfidf weighting needs a DocumentFrequency table")
        return {t: c * idf.idf(t) for t, c in counts.items()}
    raise ConfigError(f"unknown weighting {weighting!r}")


#: The most documents an idf table may count: the counts must stay exact as floats (2^53).
MAX_DOCUMENTS = 2**53


def _line_of(text: str | None, key: str) -> str:
    """", line N" of the first place ``key`` is written as a JSON key in ``text``, or "" when not found."""
    if text is None:
        return ""
    for written in (json.dumps(key, ensure_ascii=False), json.dumps(key)):
        at = text.find(written + ":")
        if at < 0:
            at = text.find(written + " :")
        if at >= 0:
            return f", line {text.count(chr(10), 0, at) + 1}"
    return ""


@dataclass
class DocumentFrequency:
    """How many documents of a corpus contain each term; gives a smoothed idf.

    ``idf(t) = ln((1 + n_docs) / (1 + df(t))) + 1``: always positive, and a term never seen gets the
    largest value, as a rare term should.

    >>> df = DocumentFrequency.build([["a", "b"], ["a"]])
    >>> round(df.idf("a"), 3), round(df.idf("b"), 3), round(df.idf("zzz"), 3)
    (1.0, 1.405, 2.099)
    """

    n_docs: int = 0
    df: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, documents: Iterable[Iterable[str]]) -> DocumentFrequency:
        table = cls()
        for doc in documents:
            table.add(doc)
        return table

    def add(self, document_terms: Iterable[str]) -> None:
        self.n_docs += 1
        for t in set(document_terms):
            self.df[t] = self.df.get(t, 0) + 1

    def idf(self, term: str) -> float:
        return math.log((1 + self.n_docs) / (1 + self.df.get(term, 0))) + 1.0

    def to_json(self) -> str:
        return json.dumps({"n_docs": self.n_docs, "df": self.df}, ensure_ascii=False, sort_keys=True)

    def __post_init__(self) -> None:
        self.check()

    def check(self, source: str = "idf table", text: str | None = None) -> None:
        """Raise ConfigError unless every count is a whole number that can be one (0 <= df <= n_docs <=
        `MAX_DOCUMENTS`): a negative, fractional or huge count makes `idf` divide by zero, take the log of a
        negative number or overflow a float. The error names ``source`` and, given the table's JSON ``text``,
        the line of the bad count."""
        n = self.n_docs
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_DOCUMENTS:
            raise ConfigError(f"{source}{_line_of(text, 'n_docs')}: n_docs must be a whole number from 0 to "
                              f"{MAX_DOCUMENTS}, got {n!r}")
        for term, count in self.df.items():
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= n:
                raise ConfigError(f"{source}{_line_of(text, term)}: the document count of {term!r} must be a "
                                  f"whole number from 0 to n_docs ({n}), got {count!r}")

    @classmethod
    def from_json(cls, text: str, source: str = "idf table") -> DocumentFrequency:
        """The table of `to_json`'s text; ``source`` (its file) is named by the errors."""
        try:
            data = json.loads(text)
            n_docs, df = data["n_docs"], data["df"]
            if not isinstance(df, dict):
                raise TypeError(f"df is {type(df).__name__}, not an object")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{source}: not a document-frequency table: {exc}") from exc
        table = cls.__new__(cls)
        table.n_docs, table.df = n_docs, df
        table.check(source, text)
        return table

    def digest(self) -> str:
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()


