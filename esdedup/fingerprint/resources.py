"""Loading the dictionaries a config names: shipped stopwords, user stopwords, synonyms, user words, idf.

This is the only module of the fingerprinting core that reads files; everything it returns is plain data
that the pure modules take as arguments.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from importlib import resources as importlib_resources

from esdedup.errors import ConfigError, ConfigMismatchError
from esdedup.fingerprint.config import FingerprintConfig, read_resource
from esdedup.fingerprint.features import DocumentFrequency
from esdedup.fingerprint.normalize import normalize

_SPLIT = re.compile(r"[\s,，]+")


@dataclass(frozen=True)
class Resources:
    """Everything besides the text that a fingerprint depends on."""

    stopwords: frozenset[str] = frozenset()
    synonyms: dict[str, str] = field(default_factory=dict)
    user_words: tuple[tuple[str, int | None], ...] = ()
    idf: DocumentFrequency | None = None


def _lines(text: str) -> list[tuple[int, str]]:
    """The lines that are not blank or ``#`` comments, each with its line number in the file."""
    return [(n, ln.strip()) for n, ln in enumerate(text.splitlines(), 1)
            if ln.strip() and not ln.lstrip().startswith("#")]


def parse_stopwords(text: str, *, t2s: bool = False) -> frozenset[str]:
    """One word per line, ``#`` comments; words are normalised like text."""
    return frozenset(normalize(w, t2s=t2s) for _, w in _lines(text))


def parse_synonyms(text: str, *, t2s: bool = False, source: str = "synonyms") -> dict[str, str]:
    """Each line: the canonical term, then its variants (separated by spaces, tabs or commas). A term that
    normalises to nothing (only invisible or space characters) is refused with its line, canonical or not:
    the line's meaning is its author's to say, not a guess's.

    >>> parse_synonyms("台胞 台湾居民, 台湾同胞")
    {'台湾居民': '台胞', '台湾同胞': '台胞'}
    """
    mapping: dict[str, str] = {}
    for n, line in _lines(text):
        written = [w for w in _SPLIT.split(line) if w]
        words = [normalize(w, t2s=t2s) for w in written]
        if len(words) < 2:
            raise ConfigError(f"{source}: line {n} has a canonical term but no variant: {line!r}")
        for word, norm in zip(written, words, strict=True):
            if not norm:
                # Refused rather than skipped: an empty canonical term would map every variant to nothing,
                # and which term the line meant is the author's to say.
                raise ConfigError(f"{source}: line {n}: the term {word!r} is empty once normalised (only "
                                  "invisible or space characters); remove it, or put a term with words in its place")
        canonical = words[0]
        for variant in words[1:]:
            if variant in mapping and mapping[variant] != canonical:
                raise ConfigError(f"{source}: {variant!r} maps to both {mapping[variant]!r} and {canonical!r}")
            if variant != canonical:
                mapping[variant] = canonical
    return mapping


def parse_user_dict(text: str, *, t2s: bool = False, source: str = "user dictionary") -> list[tuple[str, int | None]]:
    """jieba's format: ``word [frequency] [part-of-speech]`` per line."""
    out: list[tuple[str, int | None]] = []
    for n, line in _lines(text):
        parts = line.split()
        freq: int | None = None
        if len(parts) > 1:
            try:
                freq = int(parts[1])
            except ValueError as exc:
                raise ConfigError(f"{source}: line {n}: frequency {parts[1]!r} is not an integer") from exc
        out.append((normalize(parts[0], t2s=t2s), freq))
    return out


def shipped_stopwords() -> str:
    pkg = importlib_resources.files("esdedup.data")
    return (pkg.joinpath("stopwords_zh.txt").read_text("utf-8") + "\n"
            + pkg.joinpath("stopwords_en.txt").read_text("utf-8"))


def _read(path: str, what: str, expected_sha: str | None) -> str:
    data = read_resource(path, what)
    if expected_sha is not None and hashlib.sha256(data).hexdigest() != expected_sha:
        raise ConfigMismatchError(
            f"{what} file {path} changed since the config was made (SHA-256 differs); fingerprints would "
            "not match the index", stored={"sha256": expected_sha}, requested={"path": path})
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} file {path} is not UTF-8: {exc}") from exc


def load_resources(config: FingerprintConfig) -> Resources:
    """Read every file the config names and check each against the digest stored in the config."""
    t2s = config.t2s
    stop: frozenset[str] = frozenset()
    if config.stopwords == "default" and config.tokenizer != "char":
        stop = parse_stopwords(shipped_stopwords(), t2s=t2s)
    elif config.stopwords == "file":
        if config.stopwords_path is None:
            raise ConfigError("config names a stopword file by digest only; give stopwords_path")
        stop = parse_stopwords(_read(config.stopwords_path, "stopwords", config.stopwords_sha256), t2s=t2s)
    synonyms: dict[str, str] = {}
    user_words: list[tuple[str, int | None]] = []
    if config.synonyms_sha256 is not None:
        if config.synonyms_path is None:
            raise ConfigError("config names a synonym file by digest only; give synonyms_path")
        synonyms = parse_synonyms(_read(config.synonyms_path, "synonyms", config.synonyms_sha256),
                                  t2s=t2s, source=config.synonyms_path)
        # Multi-character variants must survive segmentation as one word to be mapped.
        user_words.extend((w, None) for w in sorted(set(synonyms) | set(synonyms.values())))
    if config.user_dict_sha256 is not None:
        if config.user_dict_path is None:
            raise ConfigError("config names a user dictionary by digest only; give user_dict_path")
        user_words.extend(parse_user_dict(_read(config.user_dict_path, "user dictionary",
                                                config.user_dict_sha256), t2s=t2s,
                                          source=config.user_dict_path))
    idf = None
    if config.idf_sha256 is not None:
        if config.idf_path is None:
            raise ConfigError("config names an idf table by digest only; give idf_path")
        idf = DocumentFrequency.from_json(_read(config.idf_path, "idf table", config.idf_sha256),
                                          f"idf table {config.idf_path}")
    return Resources(stop, synonyms, tuple(user_words), idf)
