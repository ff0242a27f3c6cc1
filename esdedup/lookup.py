"""Finding near-duplicates through any `Store`: probes, exact verification, all pairs, clusters.

Candidate generation is the store's job (band-key lookups, exact set semantics, so both stores return
the same candidates); deciding what is a duplicate happens here, client-side, once, for both.

The rule (`is_duplicate`): an empty text matches nothing. Otherwise a pair is a near-duplicate when its
SimHash Hamming distance is at most ``hamming_k`` and its TF-vector cosine is at least ``cosine``; either
test may be switched off by passing None. For two *short* texts (the MinHash path of the config, where
SimHash has too few features to be stable) the cosine test alone decides.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .config import FingerprintConfig
from .errors import ConfigError
from .fingerprint import Fingerprint
from .schema import band_fields, lsh_fields
from .simhash import hamming_many
from .store.base import Probe, StoredDoc, Store

#: Ids fetched per round trip while verifying pairs.
FETCH_BATCH = 2000


@dataclass(frozen=True)
class Match:
    """A verified near-duplicate: the other document, and how near it is."""

    id: str
    hamming: int
    cosine: float
    shared_bands: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pair:
    """Two near-duplicate documents, ``a < b``."""

    a: str
    b: str
    hamming: int
    cosine: float

    def to_dict(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "hamming": self.hamming, "cosine": round(self.cosine, 6)}


@dataclass(frozen=True)
class Thresholds:
    hamming_k: int | None
    cosine: float | None

    @classmethod
    def resolve(cls, config: FingerprintConfig, hamming_k: int | None = -1,
                cosine: float | None = -1.0) -> Thresholds:
        """Defaults from the config; -1 means "not given", None means "switched off"."""
        k = config.hamming_k if hamming_k == -1 else hamming_k
        c = config.cosine_threshold if cosine == -1.0 else cosine
        if k is None and c is None:
            raise ConfigError("give a Hamming distance, a cosine threshold, or both")
        if k is not None and k > config.hamming_k:
            # Band lookups only guarantee pairs up to the index's k; a larger k would silently miss pairs.
            raise ConfigError(f"--hamming {k} is larger than the index's hamming_k {config.hamming_k}; band "
                              "lookups cannot guarantee it. Re-index with a larger hamming_k.")
        if c is not None and not 0.0 <= c <= 1.0:
            raise ConfigError(f"cosine threshold must be between 0 and 1, got {c}")
        return cls(k, c)


def is_short(chars: int, config: FingerprintConfig) -> bool:
    return config.strategy == "minhash" or (config.strategy == "auto" and chars < config.short_text_chars)


def probe_for(fp: Fingerprint, config: FingerprintConfig) -> dict[str, list[str]]:
    """The band keys to look up for one fingerprint, by field (SimHash tables, plus LSH bands if any)."""
    if fp.empty:
        return {}
    layout = config.band_layout()
    probe = dict(zip(band_fields(config), layout.probe_keys(fp.simhash)))
    for name, key in zip(lsh_fields(config), fp.lsh):
        probe[name] = [key]
    return probe


def _score(simhash: int, vector: np.ndarray, docs: Sequence[StoredDoc]) -> tuple[np.ndarray, np.ndarray]:
    hams = hamming_many(simhash, [d.simhash for d in docs]) if docs else np.zeros(0, dtype=np.int64)
    if not docs:
        return hams, np.zeros(0)
    mat = np.stack([d.vector for d in docs]).astype(np.float32)
    cos = mat @ np.asarray(vector, dtype=np.float32)
    return hams, np.clip(cos, 0.0, 1.0)


def _scores(simhash: int, vector: np.ndarray, docs: Sequence[StoredDoc], bits: int) -> tuple[np.ndarray, np.ndarray]:
    if bits == 64:
        return _score(simhash, vector, docs)
    hams = np.array([(simhash ^ d.simhash).bit_count() for d in docs], dtype=np.int64)
    mat = np.stack([d.vector for d in docs]).astype(np.float32) if docs else np.zeros((0, len(vector)))
    return hams, np.clip(mat @ np.asarray(vector, dtype=np.float32), 0.0, 1.0)


def is_duplicate(ham: int, cos: float, t: Thresholds, both_short: bool = False) -> bool:
    if both_short and t.cosine is not None:
        return cos >= t.cosine
    if t.hamming_k is not None and ham > t.hamming_k:
        return False
    return not (t.cosine is not None and cos < t.cosine)


def verify(fp: Fingerprint, candidates: Sequence[StoredDoc], config: FingerprintConfig, t: Thresholds,
           *, exclude: str | None = None) -> list[Match]:
    """Exact scoring of candidates against one fingerprint, nearest first (Hamming, then cosine)."""
    if fp.empty:
        return []
    docs = [d for d in candidates if not d.empty and d.id != exclude]
    if not docs:
        return []
    hams, coss = _scores(fp.simhash, fp.vector, docs, config.bits)
    short = is_short(fp.chars, config)
    out = [Match(d.id, int(h), float(c)) for d, h, c in zip(docs, hams, coss)
           if is_duplicate(int(h), float(c), t, short and is_short(d.chars, config))]
    out.sort(key=lambda m: (m.hamming, -m.cosine, m.id))
    return out


def similar(store: Store, fps: Sequence[Fingerprint], *, hamming_k: int | None = -1, cosine: float | None = -1.0,
            top: int = 10, exclude: Sequence[str | None] | None = None, limit: int = 1000) -> list[list[Match]]:
    """Near-duplicates of each fingerprint among the stored documents (one batched lookup)."""
    config = store.config
    t = Thresholds.resolve(config, hamming_k, cosine)
    probes: list[Probe] = [probe_for(fp, config) for fp in fps]
    found = store.lookup(probes, limit=limit)
    excl = list(exclude) if exclude is not None else [None] * len(fps)
    return [verify(fp, cands, config, t, exclude=x)[:top] for fp, cands, x in zip(fps, found, excl)]


def similar_knn(store: Store, fp: Fingerprint, *, k: int = 10, cosine: float | None = -1.0,
                exclude: str | None = None) -> list[Match]:
    """The kNN path (short texts): nearest vectors first, then the same exact scoring, cosine only."""
    config = store.config
    c = config.cosine_threshold if cosine == -1.0 else cosine
    t = Thresholds(None, c if c is not None else 0.0)
    if fp.empty:
        return []
    return verify(fp, store.knn(fp.vector, k + (1 if exclude else 0)), config, t, exclude=exclude)[:k]


def shared_bands(a: Fingerprint | Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    keys = a.bands + a.lsh if isinstance(a, Fingerprint) else list(a)
    other = set(b)
    return tuple(k for k in keys if k in other)


def find_pairs(store: Store, *, hamming_k: int | None = -1, cosine: float | None = -1.0,
               max_bucket: int = 1000) -> Iterator[Pair]:
    """Every near-duplicate pair of a store, found from band collisions and verified exactly.

    Each candidate pair is verified once even when it shares several bands. Buckets larger than
    ``max_bucket`` are cut (see `Store.crowded_keys`).
    """
    config = store.config
    t = Thresholds.resolve(config, hamming_k, cosine)
    seen: set[tuple[str, str]] = set()
    cache: dict[str, StoredDoc] = {}
    pending: list[list[str]] = []
    pending_ids = 0

    def flush() -> Iterator[Pair]:
        need = sorted({i for g in pending for i in g if i not in cache})
        for start in range(0, len(need), FETCH_BATCH):
            cache.update(store.get(need[start : start + FETCH_BATCH]))
        for group in pending:
            yield from _verify_group([cache[i] for i in group if i in cache], config, t, seen)
        pending.clear()
        if len(cache) > 200_000:
            cache.clear()

    for _key, ids in store.shared_keys(max_bucket=max_bucket):
        pending.append(ids)
        pending_ids += len(ids)
        if pending_ids >= FETCH_BATCH:
            yield from flush()
            pending_ids = 0
    yield from flush()


def _verify_group(docs: list[StoredDoc], config: FingerprintConfig, t: Thresholds,
                  seen: set[tuple[str, str]]) -> Iterator[Pair]:
    docs = sorted((d for d in docs if not d.empty), key=lambda d: d.id)
    for i, a in enumerate(docs[:-1]):
        rest = [d for d in docs[i + 1 :] if (a.id, d.id) not in seen]
        if not rest:
            continue
        hams, coss = _scores(a.simhash, a.vector, rest, config.bits)
        a_short = is_short(a.chars, config)
        for d, h, c in zip(rest, hams, coss):
            seen.add((a.id, d.id))
            if is_duplicate(int(h), float(c), t, a_short and is_short(d.chars, config)):
                yield Pair(a.id, d.id, int(h), float(c))


def clusters(pairs: Iterable[Pair | tuple[str, str]]) -> dict[str, str]:
    """Union-find over pairs: document id -> cluster id (the smallest id of its cluster, so the answer
    is the same whatever order the pairs came in). Documents in no pair are absent."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for p in pairs:
        a, b = (p.a, p.b) if isinstance(p, Pair) else p
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            parent[hi] = lo
    return {x: find(x) for x in parent}
