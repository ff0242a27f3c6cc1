"""Finding near-duplicates through any `Store`: probes, exact verification, all pairs, clusters.

Candidate generation is the store's job (band-key lookups, exact set semantics, so both stores return
the same candidates); deciding what is a duplicate happens here, client-side, once, for both.

The rule (`is_duplicate`): an empty text matches nothing. Two documents that both carry a MinHash
signature (every text under the default ``auto`` strategy, see `FingerprintConfig`) are judged on their
character n-grams: the MinHash estimate of their Jaccard is at least ``jaccard``, or the estimated share of
the smaller text's n-grams that the other holds (containment) is at least ``containment``. Otherwise
(``simhash`` strategy, or documents stored by an older esdedup without a signature) a pair is a
near-duplicate when its SimHash Hamming distance is at most ``hamming_k`` and its TF-vector cosine is at
least ``cosine`` (either test may be switched off by passing None); two *short* texts without signatures
are judged on the cosine alone.

Why n-grams decide when they can (measured with `esdedup synth` on real Chinese text, BENCHMARKS.md): a
64-bit SimHash moves about 64 * angle / pi bits, so variants with 3 % of their characters edited sit 6-14
bits apart on long texts, beyond any cheap band layout, and the hashed TF cosine of unrelated long texts
reaches 0.82 while edited variants drop to 0.78; character-bigram Jaccard keeps the same variants at
0.55 or more and unrelated texts at 0.11 or less, long or short.

All-pairs search (`find_pairs`, `scored_pairs`) takes its candidates from band keys shared in the store;
when the layout probes neighbouring keys (``probe_radius`` > 0) it also joins every document's probe keys
in memory, so the pigeonhole guarantee holds for any k the layout was built for. Band values held by more
than ``max_bucket`` documents are cut to that many and logged as a warning (see `Store.crowded_keys`).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from .config import FingerprintConfig
from .errors import ConfigError
from .fingerprint import Fingerprint
from .minhash import lsh_keys
from .schema import band_fields, lsh_fields
from .simhash import hamming_many, hamming_rows, simhash_words
from .store.base import Probe, Store, StoredDoc

log = logging.getLogger(__name__)

#: Ids fetched per round trip while verifying pairs.
FETCH_BATCH = 2000
#: All-pairs search groups the MinHash LSH bands in memory, from the stored signatures (one `Store.scan`,
#: a numpy sort per band), for stores of up to this many documents (512 bytes each); larger ones use the
#: store's key groups (`Store.shared_keys`). Both give the same pairs.
LSH_IN_MEMORY_MAX = 2_000_000
#: Containment is only trusted when the smaller text has at least this many distinct n-grams (a few
#: characters are "contained" in almost anything) ...
MIN_CONTAINMENT_SHINGLES = 8
#: ... and the larger has at most this many times as many (the estimate degrades with the size ratio).
MAX_CONTAINMENT_RATIO = 4.0


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
class ScoredPair:
    """A candidate pair (``a < b``) with every measure the rule may use; ``ngram`` when both documents carry
    MinHash signatures (then ``jaccard`` and ``containment`` are their estimates and decide, else None)."""

    a: str
    b: str
    hamming: int
    cosine: float
    ngram: bool = False
    jaccard: float | None = None
    containment: float | None = None
    chars: tuple[int, int] = field(default=(0, 0), compare=False)

    def is_duplicate(self, t: Thresholds) -> bool:
        return is_duplicate(self.hamming, self.cosine, t, self.ngram, jaccard=self.jaccard,
                            containment=self.containment)


@dataclass(frozen=True)
class Thresholds:
    hamming_k: int | None
    cosine: float | None
    jaccard: float | None = None
    containment: float | None = None

    @classmethod
    def resolve(cls, config: FingerprintConfig, hamming_k: int | None = -1,
                cosine: float | None = -1.0, jaccard: float | None = -1.0,
                containment: float | None = -1.0) -> Thresholds:
        """Defaults from the config; -1 means "not given", None means "switched off"."""
        k = config.hamming_k if hamming_k == -1 else hamming_k
        c = config.cosine_threshold if cosine == -1.0 else cosine
        j = config.jaccard_threshold if jaccard == -1.0 else jaccard
        ct = config.containment_threshold if containment == -1.0 else containment
        if ct is not None and ct <= 0.0:
            ct = None
        if k is None and c is None:
            raise ConfigError("give a Hamming distance, a cosine threshold, or both")
        for name, v in (("jaccard", j), ("containment", ct)):
            if v is not None and not 0.0 <= v <= 1.0:
                raise ConfigError(f"{name} threshold must be between 0 and 1, got {v}")
        if k is not None and k > config.hamming_k:
            # Band lookups only guarantee pairs up to the index's k; a larger k would silently miss pairs.
            raise ConfigError(f"--hamming {k} is larger than the index's hamming_k {config.hamming_k}; band "
                              "lookups cannot guarantee it. Re-index with a larger hamming_k.")
        if c is not None and not 0.0 <= c <= 1.0:
            raise ConfigError(f"cosine threshold must be between 0 and 1, got {c}")
        return cls(k, c, j, ct)


def is_short(chars: int, config: FingerprintConfig) -> bool:
    return config.strategy == "minhash" or (config.strategy == "auto" and chars < config.short_text_chars)


def probe_for(fp: Fingerprint, config: FingerprintConfig) -> dict[str, Sequence[str]]:
    """The band keys to look up for one fingerprint, by field (SimHash tables, plus LSH bands if any)."""
    if fp.empty:
        return {}
    probe: dict[str, Sequence[str]] = {}
    # One-key tuples rather than lists: a batch makes tens of thousands, and tuples of strings drop out of
    # the garbage collector's view.
    if fp.bands:  # a text that only the short-text path serves has no band keys and probes none
        layout = config.band_layout()
        # Without probing, the keys to look up are the fingerprint's own band keys.
        keys = [(k,) for k in fp.bands] if layout.radius == 0 else layout.probe_keys(fp.simhash)
        probe.update(zip(band_fields(config), keys, strict=True))
    if fp.lsh:
        probe.update(zip(lsh_fields(config), [(k,) for k in fp.lsh], strict=False))
    return probe


def _scores(simhash: int, vector: np.ndarray, docs: Sequence[StoredDoc], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Hamming distance and (clipped) vector cosine from one fingerprint to each document."""
    if not docs:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    hams = hamming_many(simhash, [d.simhash for d in docs], bits)
    mat = np.stack([d.vector for d in docs]).astype(np.float32)
    return hams, _cosines(mat, np.asarray(vector, dtype=np.float32)[None, :])


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of unit float32 vectors, clipped to [0, 1]. Every path computes cosines here,
    the same products summed the same way, so `similar` and `find_pairs` agree to the last bit."""
    return np.clip((a * b).sum(axis=1, dtype=np.float32), 0.0, 1.0)


def is_duplicate(ham: int, cos: float, t: Thresholds, both_short: bool = False, *,
                 jaccard: float | None = None, containment: float | None = None) -> bool:
    """The rule of the module docstring. ``both_short``: both documents are on the MinHash path; with
    ``jaccard`` / ``containment`` (their estimates, `short_scores`) the n-gram test decides, without them
    the cosine alone."""
    if both_short and jaccard is not None and (t.jaccard is not None or t.containment is not None):
        if t.jaccard is not None and jaccard >= t.jaccard:
            return True
        return t.containment is not None and containment is not None and containment >= t.containment
    if both_short and t.cosine is not None:
        return cos >= t.cosine
    if t.hamming_k is not None and ham > t.hamming_k:
        return False
    return not (t.cosine is not None and cos < t.cosine)


def short_scores(sig: np.ndarray, n: int, sigs: np.ndarray, ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MinHash estimates for one short text against several: (Jaccard, containment).

    Jaccard is the share of equal signature positions. Containment, the share of the smaller n-gram set
    found in the other, follows from it and the set sizes: ``|A & B| = J / (1 + J) * (|A| + |B|)``; it is
    0 where the smaller set is too small or the sizes too far apart for the estimate to mean anything
    (`MIN_CONTAINMENT_SHINGLES`, `MAX_CONTAINMENT_RATIO`)."""
    sigs = np.asarray(sigs).reshape(len(ns), -1)
    jac = (sigs == np.asarray(sig)[None, :]).mean(axis=1)
    return jac, _containment(jac, np.full(len(ns), n), ns)


def _containment(jac: np.ndarray, n_a: np.ndarray, n_b: np.ndarray) -> np.ndarray:
    n_a, n_b = np.asarray(n_a, dtype=np.float64), np.asarray(n_b, dtype=np.float64)
    lo, hi = np.minimum(n_a, n_b), np.maximum(n_a, n_b)
    ok = (lo >= MIN_CONTAINMENT_SHINGLES) & (hi <= MAX_CONTAINMENT_RATIO * lo)
    inter = jac / (1.0 + jac) * (n_a + n_b)
    return np.where(ok, np.minimum(1.0, inter / np.maximum(lo, 1.0)), 0.0)


def _has_signature(d: StoredDoc | Fingerprint) -> bool:
    return d.minhash is not None and d.shingles > 0


def _measure(a: StoredDoc | Fingerprint, docs: Sequence[StoredDoc], config: FingerprintConfig
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Hamming, cosine, n-gram mask (both have signatures, or both are short without), Jaccard and
    containment (NaN where not both have signatures) of ``a`` against each of ``docs``."""
    hams, coss = _scores(a.simhash, a.vector, docs, config.bits)
    n = len(docs)
    jac = np.full(n, np.nan)
    cont = np.full(n, np.nan)
    if _has_signature(a):
        ngram = np.fromiter((_has_signature(d) for d in docs), dtype=bool, count=n)
        sel = np.flatnonzero(ngram)
        if len(sel):
            assert a.minhash is not None  # _has_signature
            j, c = short_scores(a.minhash, a.shingles, np.stack([_signature(docs[int(i)]) for i in sel]),
                                np.array([docs[int(i)].shingles for i in sel]))
            jac[sel], cont[sel] = j, c
    elif is_short(a.chars, config):  # legacy documents without signatures: short pairs by cosine
        ngram = np.array([not _has_signature(d) and is_short(d.chars, config) for d in docs], dtype=bool)
    else:
        ngram = np.zeros(n, dtype=bool)
    return hams, coss, ngram, jac, cont


def _opt(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def verify(fp: Fingerprint, candidates: Sequence[StoredDoc], config: FingerprintConfig, t: Thresholds,
           *, exclude: str | None = None) -> list[Match]:
    """Exact scoring of candidates against one fingerprint, nearest first (Hamming, then cosine)."""
    if fp.empty:
        return []
    docs = [d for d in candidates if not d.empty and d.id != exclude]
    if not docs:
        return []
    hams, coss, short, jac, cont = _measure(fp, docs, config)
    out = [Match(d.id, int(h), float(c)) for d, h, c, s, j, ct in zip(docs, hams, coss, short, jac, cont, strict=True)
           if is_duplicate(int(h), float(c), t, bool(s), jaccard=_opt(j), containment=_opt(ct))]
    out.sort(key=lambda m: (m.hamming, -m.cosine, m.id))
    return out


def similar(store: Store, fps: Sequence[Fingerprint], *, hamming_k: int | None = -1, cosine: float | None = -1.0,
            top: int = 10, exclude: Sequence[str | None] | None = None, limit: int = 1000,
            jaccard: float | None = -1.0, containment: float | None = -1.0) -> list[list[Match]]:
    """Near-duplicates of each fingerprint among the stored documents (one batched lookup). Thresholds:
    -1 (the default) takes the index's, None switches a test off (see `Thresholds.resolve`)."""
    config = store.config
    t = Thresholds.resolve(config, hamming_k, cosine, jaccard, containment)
    probes: list[Probe] = [probe_for(fp, config) for fp in fps]
    found = store.lookup(probes, limit=limit)
    excl = list(exclude) if exclude is not None else [None] * len(fps)
    return [verify(fp, cands, config, t, exclude=x)[:top] for fp, cands, x in zip(fps, found, excl, strict=True)]


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
               max_bucket: int = 1000, jaccard: float | None = -1.0,
               containment: float | None = -1.0, crowded: list[tuple[str, int]] | None = None,
               in_memory: bool | None = None) -> Iterator[Pair]:
    """Every near-duplicate pair of a store, found from band collisions and verified exactly.

    Each candidate pair is verified once even when it shares several bands. Buckets larger than
    ``max_bucket`` are cut and logged (see `Store.crowded_keys`). ``crowded`` and ``in_memory``: see
    `scored_pairs`.
    """
    t = Thresholds.resolve(store.config, hamming_k, cosine, jaccard, containment)
    for p in scored_pairs(store, max_bucket=max_bucket, hamming_k=t.hamming_k, crowded=crowded,
                          in_memory=in_memory):
        if p.is_duplicate(t):
            yield Pair(p.a, p.b, p.hamming, p.cosine)


def scored_pairs(store: Store, *, max_bucket: int = 1000, hamming_k: int | None = None,
                 crowded: list[tuple[str, int]] | None = None, in_memory: bool | None = None) -> Iterator[ScoredPair]:
    """Every candidate pair of a store (documents sharing a band or LSH key, or, with a probing layout,
    whose band keys are within the probe radius), once each, with all its measures.

    ``hamming_k`` drops long (non-short) pairs farther apart than that early (they cannot pass the rule).
    ``crowded``, when given, receives the LSH band values held by ``max_bucket`` or more documents when the
    LSH bands are joined in memory (`lsh_in_memory`); the store's `Store.crowded_keys` cannot see those
    without indexing every LSH key first. ``in_memory`` is `lsh_in_memory` of the store, when the caller
    has asked already (so that `crowded_values` is told the same answer).
    """
    config = store.config
    seen: set[tuple[str, str]] = set()
    cache: dict[str, StoredDoc] = {}
    pending: list[list[str]] = []
    pending_ids = 0

    def fetch(ids: Iterable[str]) -> None:
        need = sorted({i for i in ids if i not in cache})
        for start in range(0, len(need), FETCH_BATCH):
            cache.update(store.get(need[start : start + FETCH_BATCH]))

    def flush() -> Iterator[ScoredPair]:
        fetch(i for g in pending for i in g)
        for group in pending:
            yield from _score_group([cache[i] for i in group if i in cache], config, seen, hamming_k)
        pending.clear()
        if len(cache) > 200_000:
            cache.clear()

    if in_memory is None:
        in_memory = lsh_in_memory(store)
    if in_memory:
        # The LSH bands joined in numpy, every candidate scored in bulk: what the key groups below would
        # give for the lsh_<i> keys, without a Python step per group.
        yield from _lsh_pairs(store, config, seen, max_bucket, crowded)
    for key, ids in store.shared_keys(max_bucket=max_bucket, lsh=not in_memory):
        if len(ids) >= max_bucket:
            log.warning("band value %s is shared by %d or more documents; only %d were compared "
                        "(boilerplate? see 'esdedup info')", key, max_bucket, max_bucket)
        pending.append(ids)
        pending_ids += len(ids)
        if pending_ids >= FETCH_BATCH:
            yield from flush()
            pending_ids = 0
    yield from flush()

    layout = config.band_layout()
    if layout.radius > 0:
        # Probing layouts: pairs whose keys differ in a few bits share no stored key; join in memory.
        cache.clear()
        yield from _probed_pairs(store, layout, config, seen, max_bucket, hamming_k, fetch, cache)


@dataclass
class _Columns:
    """The stored documents with a MinHash signature (of the config's length), as arrays, ids sorted."""

    ids: list[str]
    simhash: list[int]
    vectors: np.ndarray  # (n, dims) float32
    sigs: np.ndarray  # (n, perm) uint32
    shingles: np.ndarray  # (n,) int64
    chars: list[int]


def _signature_columns(store: Store, config: FingerprintConfig) -> _Columns:
    docs = [d for batch in store.scan() for d in batch
            if not d.empty and _has_signature(d) and len(_signature(d)) == config.minhash_perm]
    docs.sort(key=lambda d: d.id)
    n = len(docs)
    return _Columns([d.id for d in docs], [d.simhash for d in docs],
                    np.stack([d.vector for d in docs]).astype(np.float32) if n else np.zeros((0, config.dims), np.float32),
                    np.stack([_signature(d) for d in docs]).astype(np.uint32) if n
                    else np.zeros((0, config.minhash_perm), np.uint32),
                    np.array([d.shingles for d in docs], dtype=np.int64), [d.chars for d in docs])


def lsh_in_memory(store: Store) -> bool:
    """Whether all-pairs search joins the LSH bands in memory (`LSH_IN_MEMORY_MAX`) rather than reading
    the store's LSH key groups."""
    return store.config.strategy != "simhash" and store.count() <= LSH_IN_MEMORY_MAX


def crowded_values(store: Store, found_in_memory: Sequence[tuple[str, int]], *, min_count: int,
                   limit: int = 10, in_memory: bool | None = None) -> list[tuple[str, int]]:
    """The most crowded band values of a store after an all-pairs search: the store's own count, plus the
    LSH values the search collected itself when it joined the LSH bands in memory (``crowded`` of
    `scored_pairs`; ``in_memory``: what the search was told, else `lsh_in_memory` asked again)."""
    if in_memory is None:
        in_memory = lsh_in_memory(store)
    found = store.crowded_keys(min_count=min_count, limit=limit, lsh=not in_memory)
    if in_memory:
        found += [(k, n) for k, n in found_in_memory if n >= min_count]
    return sorted(found, key=lambda x: (-x[1], x[0]))[:limit]


def lsh_pair_indices(sigs: np.ndarray, bands: int, *, max_bucket: int = 1000,
                     crowded: list[tuple[int, int, int]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs ``(left[x], right[x])``, left < right, sorted, each once, whose signatures agree on every
    row of at least one LSH band: the all-pairs form of looking up each LSH key. Per band value only its
    first ``max_bucket`` rows are paired (logged), as `Store.shared_keys` cuts a group. ``crowded``
    receives (band, first row, rows) of each band value held by ``max_bucket`` rows or more."""
    n, perm = sigs.shape
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty
    rows = perm // bands
    codes: list[np.ndarray] = []
    capped = 0
    for band in range(bands):
        block = np.ascontiguousarray(sigs[:, band * rows:(band + 1) * rows], dtype="<u4")
        _, inverse, counts = np.unique(block.view(np.dtype((np.void, 4 * rows))).ravel(),
                                       return_inverse=True, return_counts=True)
        inverse = inverse.ravel()
        members = np.flatnonzero(counts[inverse] > 1)
        if not len(members):
            continue
        members = members[np.argsort(inverse[members], kind="stable")]  # by group, rows ascending within
        group = inverse[members]
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        sizes = np.diff(np.r_[starts, len(members)])
        capped += int((sizes > max_bucket).sum())
        if crowded is not None:
            crowded.extend((band, int(members[starts[g]]), int(sizes[g])) for g in np.flatnonzero(sizes >= max_bucket))
        pos = np.arange(len(members)) - np.repeat(starts, sizes)  # rank of each member in its group
        size_of = np.repeat(np.minimum(sizes, max_bucket), sizes)
        live = pos < size_of
        # Pair each member with the one `step` places later in its group, for every step the group has.
        for step in range(1, int(size_of.max())):
            left = np.flatnonzero(live & (pos + step < size_of))
            if not len(left):
                break
            codes.append(members[left].astype(np.int64) * n + members[left + step].astype(np.int64))
        if len(codes) > 64:
            codes = [np.unique(np.concatenate(codes))]
    if capped:
        log.warning("%d LSH band values are shared by more than %d documents; only %d of each were compared "
                    "(boilerplate? see 'esdedup info')", capped, max_bucket, max_bucket)
    if not codes:
        return empty, empty
    return np.divmod(np.unique(np.concatenate(codes)), n)


def _lsh_pairs(store: Store, config: FingerprintConfig, seen: set[tuple[str, str]], max_bucket: int,
               crowded: list[tuple[str, int]] | None = None, chunk: int = 16384) -> Iterator[ScoredPair]:
    """`scored_pairs` for the LSH bands, from one scan: candidate pairs joined and measured in numpy."""
    cols = _signature_columns(store, config)
    groups: list[tuple[int, int, int]] = []
    left, right = lsh_pair_indices(cols.sigs, config.minhash_bands, max_bucket=max_bucket, crowded=groups)
    if crowded is not None:
        crowded.extend((lsh_keys(cols.sigs[row], config.minhash_bands)[band], n) for band, row, n in groups)
    ids = cols.ids
    words = simhash_words(cols.simhash, config.bits)
    for lo in range(0, len(left), chunk):
        a, b = left[lo:lo + chunk], right[lo:lo + chunk]
        hams = hamming_rows(words[a], words[b])
        coss = _cosines(cols.vectors[a], cols.vectors[b])
        jac = (cols.sigs[a] == cols.sigs[b]).mean(axis=1)
        cont = _containment(jac, cols.shingles[a], cols.shingles[b])
        # Both sides carry signatures: the n-gram rule decides (`_measure`), no Hamming cut applies.
        for i, j, h, c, jj, ct in zip(a.tolist(), b.tolist(), hams.tolist(), coss.tolist(), jac.tolist(),
                                      cont.tolist(), strict=True):
            pair = (ids[i], ids[j])
            seen.add(pair)
            yield ScoredPair(pair[0], pair[1], h, c, True, jj, ct, (cols.chars[i], cols.chars[j]))


def _probed_pairs(store: Store, layout, config: FingerprintConfig, seen: set[tuple[str, str]],
                  max_bucket: int, hamming_k: int | None, fetch, cache: dict[str, StoredDoc]
                  ) -> Iterator[ScoredPair]:
    ids: list[str] = []
    hashes: list[int] = []
    short: list[bool] = []
    for docs in store.scan():
        for d in docs:
            if not d.empty:
                ids.append(d.id)
                hashes.append(d.simhash)
                short.append(_has_signature(d) or is_short(d.chars, config))
    order = sorted(range(len(ids)), key=ids.__getitem__)
    ids = [ids[i] for i in order]
    hashes = [hashes[i] for i in order]
    short_arr = np.array([short[i] for i in order], dtype=bool)
    left, right = probe_pairs(layout, hashes, max_bucket=max_bucket)
    if hamming_k is not None and len(left):
        h = simhash_words(hashes, config.bits)
        keep = (hamming_rows(h[left], h[right]) <= hamming_k) | (short_arr[left] & short_arr[right])
        left, right = left[keep], right[keep]
    # Score each document against its partners in one pass (pairs come sorted by left index).
    cuts = np.flatnonzero(np.diff(left)) + 1
    for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(left)])), strict=True):
        if lo == hi:
            continue
        a_id = ids[int(left[lo])]
        partners = [ids[int(j)] for j in right[lo:hi] if (a_id, ids[int(j)]) not in seen]
        if not partners:
            continue
        if a_id not in cache or any(p not in cache for p in partners):
            if len(cache) > 200_000:
                cache.clear()
            fetch([a_id, *partners])
        a = cache.get(a_id)
        rest = [cache[p] for p in partners if p in cache]
        if a is None or not rest:
            continue
        yield from _score_against(a, rest, config, hamming_k, seen)


def probe_pairs(layout, simhashes: Sequence[int], *, max_bucket: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``(left[x], right[x])``, left < right, sorted, each once, whose band keys in some table
    are within the layout's probe radius: the all-pairs form of `BandLayout.probe_keys`. Per probed key at
    most ``max_bucket`` partners are taken (logged)."""
    n = len(simhashes)
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty
    # Wider fingerprints stay Python ints (numpy has no 128-bit integers); every band key fits 64 bits.
    keys = layout.key_values_many(np.array(simhashes, dtype=np.uint64) if layout.bits == 64 else simhashes)
    codes: list[np.ndarray] = []
    capped = 0
    for t in range(layout.n_tables):
        col = keys[:, t].astype(np.uint64)
        order = np.argsort(col, kind="stable")
        sorted_keys = col[order]
        for r in range(layout.radius + 1):
            for flips in combinations(range(layout.key_widths[t]), r):
                probe = col ^ np.uint64(sum(1 << b for b in flips))
                lo = np.searchsorted(sorted_keys, probe, "left")
                cnt = np.searchsorted(sorted_keys, probe, "right") - lo
                over = cnt > max_bucket
                if over.any():
                    capped += int(over.sum())
                    cnt = np.minimum(cnt, max_bucket)
                has = np.flatnonzero(cnt > (1 if r == 0 else 0))
                if len(has) == 0:
                    continue
                c = cnt[has]
                left = np.repeat(has, c)
                starts = np.repeat(lo[has] - np.concatenate(([0], np.cumsum(c)[:-1])), c)
                right = order[starts + np.arange(int(c.sum()))]
                keep = left < right
                codes.append(left[keep].astype(np.int64) * n + right[keep].astype(np.int64))
        if codes:
            codes = [np.unique(np.concatenate(codes))]
    if capped:
        log.warning("%d probed band values matched more than %d documents; only %d were compared",
                    capped, max_bucket, max_bucket)
    if not codes:
        return empty, empty
    return np.divmod(codes[0], n)


def _score_group(docs: list[StoredDoc], config: FingerprintConfig, seen: set[tuple[str, str]],
                 hamming_k: int | None) -> Iterator[ScoredPair]:
    docs = sorted((d for d in docs if not d.empty), key=lambda d: d.id)
    for i, a in enumerate(docs[:-1]):
        rest = [d for d in docs[i + 1 :] if (a.id, d.id) not in seen]
        if not rest:
            continue
        yield from _score_against(a, rest, config, hamming_k, seen)


def _signature(doc: StoredDoc) -> np.ndarray:
    assert doc.minhash is not None  # callers select documents with _has_signature
    return doc.minhash


def _score_against(a: StoredDoc, rest: list[StoredDoc], config: FingerprintConfig, hamming_k: int | None,
                   seen: set[tuple[str, str]]) -> Iterator[ScoredPair]:
    """Every measure between ``a`` and each of ``rest`` (marking the pairs seen); pairs on the SimHash path
    beyond ``hamming_k`` are not candidates at all and are left out."""
    hams, coss, short, jac, cont = _measure(a, rest, config)
    for d, h, c, s, j, ct in zip(rest, hams, coss, short, jac, cont, strict=True):
        seen.add((a.id, d.id))
        if hamming_k is not None and not s and h > hamming_k:
            continue
        yield ScoredPair(a.id, d.id, int(h), float(c), bool(s), _opt(j), _opt(ct), (a.chars, d.chars))


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
