"""MinHash signatures and LSH keys for short texts: accuracy, determinism, the band formula."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from esdedup.fingerprint import minhash as mh
from esdedup.fingerprint.features import char_shingles

REPO = Path(__file__).resolve().parents[2]
TEXT = "近似重复检测：同一篇新闻被多家网站转载"
# Computed once for schema 2 and frozen: the permutation minima. Schema 4 keeps their low 16 bits as the
# signature, and stored LSH keys depend on those values.
GOLDEN_MINIMA = [35474889, 488275339, 21892035, 49822977, 770192421, 247433689, 769180161, 271703759]
GOLDEN_PREFIX = [19913, 32139, 3011, 15617, 13349, 35289, 49665, 57039]
GOLDEN_KEYS = ["627052422264", "375492978676"]

_MASK64 = (1 << 64) - 1


def _mix64(z: int) -> int:
    """SplitMix64's finaliser in plain Python integers."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _brute_shingle_hash(s: str) -> int:
    h = int.from_bytes(b"esdedup2", "big")
    for ch in s:
        h = _mix64(h ^ ord(ch))
    return h >> 32


def _brute_signature(hashes: list[int], n_perm: int) -> list[int]:
    """The documented permutation family in plain Python integers (no numpy, no overflow), the low 16 bits
    of each minimum."""
    person = b"esdedup-mh-v2"

    def h(data: bytes) -> int:
        return int.from_bytes(hashlib.blake2b(data, digest_size=8, person=person).digest(), "little")

    out = []
    for i in range(n_perm):
        a = h(f"a{i}".encode()) | 1
        b = h(f"b{i}".encode())
        out.append(min((((a * x + b) & _MASK64) >> 32) for x in hashes) & 0xFFFF)
    return out


def _brute_lsh_keys(sig: list[int], bands: int, rows: int) -> list[str]:
    out = []
    for band in range(bands):
        h = _mix64(band)
        for v in sig[band * rows:(band + 1) * rows]:
            h = _mix64(h ^ v)
        out.append(str(h >> 24))
    return out


def _sig(shingles) -> np.ndarray:
    return mh.signature(mh.shingle_hashes(shingles), 128)


def test_golden_signature_and_keys():
    hashes = mh.shingle_hashes(char_shingles(TEXT, 2))
    assert mh.minima([hashes], 128)[0, :8].tolist() == GOLDEN_MINIMA
    sig = mh.signature(hashes, 128)
    assert sig.dtype == np.uint32 and sig.shape == (128,)
    assert sig[:8].tolist() == GOLDEN_PREFIX == [v & 0xFFFF for v in GOLDEN_MINIMA]
    assert mh.lsh_keys(sig, 32, 4)[:2] == GOLDEN_KEYS


def test_signature_matches_the_documented_formula():
    for shingles in (char_shingles(TEXT, 2), ["a"], [f"s{i}" for i in range(300)]):
        hashes = mh.shingle_hashes(shingles)
        assert hashes.tolist() == sorted({_brute_shingle_hash(x) for x in shingles})
        assert mh.signature(hashes, 64).tolist() == _brute_signature(hashes.tolist(), 64)
        sig = mh.signature(hashes, 128)
        for bands, rows in ((32, 4), (16, 3), (5, 7), (1, 128)):
            assert mh.lsh_keys(sig, bands, rows) == _brute_lsh_keys(sig.tolist(), bands, rows)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_ngram_hashes_equal_hashing_each_ngram(n):
    for chars in ("a", "北京", "近似重复检测同一篇新闻被多家网站转载", "ab" * 40, "\U0001F600x\ud800y"):
        grams = [chars[i:i + n] for i in range(len(chars) - n + 1)] or [chars]
        assert mh.ngram_hashes(chars, n).tolist() == [_brute_shingle_hash(x) for x in grams]


def test_signatures_batch_equals_one_by_one():
    sets = [mh.shingle_hashes([f"{j}-{i}" for i in range(j % 17 + 1)]) for j in range(60)]
    batch = mh.signatures(sets, 128, group=50)
    for row, hashes in zip(batch, sets, strict=True):
        assert row.tolist() == mh.signature(hashes, 128).tolist()


_CHILD = f"""
from esdedup.fingerprint import minhash as mh
from esdedup.fingerprint.features import char_shingles
sig = mh.signature(mh.shingle_hashes(char_shingles({TEXT!r}, 2)), 128)
print(",".join(map(str, sig[:8].tolist())), mh.lsh_keys(sig, 32, 4)[0], hash("x"))
"""


def test_deterministic_across_processes():
    lines = []
    for seed in ("3", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                             timeout=120, check=True).stdout.split()
        lines.append(out)
    assert lines[0][2] != lines[1][2]  # different str hashes in the two processes
    assert lines[0][:2] == lines[1][:2] == [",".join(map(str, GOLDEN_PREFIX)), GOLDEN_KEYS[0]]


@pytest.mark.parametrize("overlap, size", [(0, 400), (100, 400), (200, 400), (300, 400), (350, 400),
                                           (400, 400), (50, 100), (90, 100)])
def test_estimate_close_to_true_jaccard(overlap, size):
    a = {f"x{i}" for i in range(size)}
    b = {f"x{i}" for i in range(size - overlap, 2 * size - overlap)}
    true = len(a & b) / len(a | b)
    est = mh.estimate_jaccard(_sig(a), _sig(b))
    # 128 permutations: standard error sqrt(J(1-J)/128) <= 0.045; allow about 3.5 of them
    assert abs(est - true) <= 0.16, (true, est)
    if true in (0.0, 1.0):
        assert est == true


def test_estimate_is_unbiased_over_many_pairs():
    errors = []
    for k in range(60):
        a = {f"p{k}-{i}" for i in range(200)}
        b = {f"p{k}-{i}" for i in range(100, 300)}  # Jaccard 100/300
        errors.append(mh.estimate_jaccard(_sig(a), _sig(b)) - 1 / 3)
    assert abs(float(np.mean(errors))) < 0.02
    assert float(np.std(errors)) < 0.07


def test_16_bit_values_estimate_jaccard_like_the_full_minima():
    """b-bit MinHash: two unequal 32-bit minima rarely agree on their low 16 bits (2^-16), so the estimate
    of 16-bit signatures stays within one position of the full minima's."""
    diffs = []
    for k in range(60):
        a = mh.shingle_hashes({f"q{k}-{i}" for i in range(120)})
        b = mh.shingle_hashes({f"q{k}-{i}" for i in range(40, 160)})  # Jaccard 80 / 160
        full = mh.minima([a, b], 128)
        bbit = mh.signatures([a, b], 128)
        assert bbit.tolist() == (full & 0xFFFF).tolist()
        diffs.append(mh.estimate_jaccard(bbit[0], bbit[1]) - mh.estimate_jaccard(full[0], full[1]))
    assert min(diffs) >= 0 and max(diffs) <= 1 / 128  # it can only gain chance agreements
    assert float(np.mean(diffs)) < 0.002


def test_empty_set_signature():
    sig = mh.signature(mh.shingle_hashes([]), 128)
    assert sig.tolist() == [0xFFFF] * 128
    with pytest.raises(ValueError):
        mh.signatures([np.zeros(0, dtype=np.uint64)])


def test_shingle_hashes_sorted_unique():
    h = mh.shingle_hashes(["ab", "bc", "ab", "cd"])
    assert h.dtype == np.uint64 and len(h) == 3
    assert h.tolist() == sorted(h.tolist())
    assert all(v < 1 << 32 for v in h.tolist())


def test_lsh_keys_shape_and_sensitivity():
    sig = _sig(char_shingles(TEXT, 2))
    keys = mh.lsh_keys(sig, 32, 4)
    assert len(keys) == 32 and len(set(keys)) == 32
    assert all(k == str(int(k)) and 0 <= int(k) < 2**40 for k in keys)  # exact as JSON / JavaScript numbers
    other = sig.copy()
    other[5] ^= 1  # row 5 is in band 1 (4 rows per band)
    changed = [i for i, (x, y) in enumerate(zip(keys, mh.lsh_keys(other, 32, 4), strict=True)) if x != y]
    assert changed == [1]
    # 16 bands of 3 rows read values 0..47: value 5 is in band 1, value 48 and later in none.
    keys = mh.lsh_keys(sig, 16, 3)
    assert len(keys) == 16 and [i for i, (x, y) in enumerate(zip(keys, mh.lsh_keys(other, 16, 3), strict=True))
                                if x != y] == [1]
    past = sig.copy()
    past[48:] ^= 1
    assert mh.lsh_keys(past, 16, 3) == keys


@pytest.mark.parametrize(("bands", "rows"), [(0, 4), (4, 0), (33, 4), (16, 9)])
def test_lsh_keys_refuse_bands_the_signature_cannot_fill(bands, rows):
    with pytest.raises(ValueError, match="signature values, the signatures have 128"):
        mh.lsh_keys(_sig(["ab", "bc"]), bands, rows)


def test_collision_probability_formula():
    # 32 bands of 4 rows, s = 0.5: 1 - (1 - 0.5^4)^32 = 1 - 0.9375^32
    assert mh.collision_probability(0.5, 32, 4) == pytest.approx(1 - 0.9375**32)
    assert mh.collision_probability(0.5, 32, 4) == pytest.approx(0.87321, abs=1e-5)
    assert mh.collision_probability(0.5, 16, 3) == pytest.approx(0.88193, abs=1e-5)
    assert mh.collision_probability(0.0, 32, 4) == 0.0
    assert mh.collision_probability(1.0, 32, 4) == 1.0
    assert mh.collision_probability(0.8, 1, 1) == pytest.approx(0.8)
    ps = [mh.collision_probability(s / 10, 32, 4) for s in range(11)]
    assert ps == sorted(ps)


def test_the_default_lsh_layout_finds_pairs_at_the_jaccard_threshold():
    """Guards the default bands x rows: a pair at the default jaccard_threshold (0.5) shares a band with
    probability >= 0.85 (16 x 3: 1 - 0.875^16 = 0.882; 32 x 4 gave 0.873)."""
    from esdedup import FingerprintConfig

    cfg = FingerprintConfig()
    assert (cfg.minhash_bands, cfg.minhash_rows) == (16, 3)
    p = mh.collision_probability(cfg.jaccard_threshold, cfg.minhash_bands, cfg.minhash_rows)
    assert p == pytest.approx(1 - 0.875**16) and p >= 0.85


def test_texts_with_jaccard_near_0_9_share_a_band_under_16_by_3():
    base = "近似重复检测：同一篇新闻被多家网站转载，标题略有改动，正文几乎相同，需要在入库时识别出来并归为一类。"
    edited = base.replace("几乎", "几近", 1)  # one character: 2 of 44 bigrams change
    a, b = set(char_shingles(base, 2)), set(char_shingles(edited, 2))
    assert 0.85 <= len(a & b) / len(a | b) <= 0.95
    ka, kb = mh.lsh_keys(_sig(a), 16, 3), mh.lsh_keys(_sig(b), 16, 3)
    assert sum(x == y for x, y in zip(ka, kb, strict=True)) >= 1
    assert ka != kb  # the edit moved some band: the test sees the signatures, not one text twice


def test_collision_probability_matches_band_sharing():
    """The share of pairs (Jaccard 0.5) that share a band is near the formula's probability."""
    shared = 0
    pairs = 150
    for k in range(pairs):
        a = {f"c{k}-{i}" for i in range(60)}
        b = {f"c{k}-{i}" for i in range(20, 80)}  # 40 / 80 = 0.5
        ka, kb = mh.lsh_keys(_sig(a), 32, 4), mh.lsh_keys(_sig(b), 32, 4)
        shared += any(x == y for x, y in zip(ka, kb, strict=True))
    assert abs(shared / pairs - mh.collision_probability(0.5, 32, 4)) < 0.12


@pytest.mark.parametrize("chunk", [1 << 16, 7])
def test_fingerprinter_batch_equals_one_text_at_a_time(monkeypatch, chunk):
    """The fingerprinter hashes a batch's n-grams in one pass (and long texts chunk by chunk): the
    signatures must be those of each text's own n-gram set."""
    from esdedup import FingerprintConfig
    from esdedup.fingerprint import fingerprinter as fingerprint
    from esdedup.fingerprint.normalize import normalize

    monkeypatch.setattr(fingerprint, "_SHINGLE_CHUNK", chunk)
    fper = fingerprint.Fingerprinter(FingerprintConfig(tokenizer="char", shingle=2))
    texts = ["北", "北京", TEXT, TEXT * 3, "abc abc abc", "", "。。", "x" + TEXT[::-1]]
    for text, fp in zip(texts, fper.fingerprint_many(texts), strict=True):
        grams = char_shingles(normalize(text), 2)
        if not grams:
            assert fp.minhash is None and fp.lsh == [] and fp.shingles == 0
            continue
        hashes = mh.shingle_hashes(grams)
        assert fp.shingles == len(hashes)
        assert fp.minhash.tolist() == mh.signature(hashes, 128).tolist()
        assert fp.lsh == mh.lsh_keys(fp.minhash, 16, 3)
