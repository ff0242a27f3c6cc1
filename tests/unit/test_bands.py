"""Band layouts: the completeness rule, checked by brute force, and the band-key arithmetic."""
from __future__ import annotations

import random
from collections import defaultdict
from itertools import combinations, product

import numpy as np
import pytest

from esdedup.errors import ConfigError
from esdedup.fingerprint.bands import BandLayout, required_radius
from esdedup.fingerprint.simhash import hamming, hamming_many

# -- required_radius against a brute-force adversary ---------------------------------------------------


def _brute_required_radius(blocks: int, key_blocks: int, k: int) -> int:
    """The adversary spreads at most k differing bits over the blocks (every integer spread); a table
    of key_blocks blocks sees the sum of its blocks' parts; the pair is found by the best table when
    the probe radius covers that table's part. The radius needed is the worst case over spreads of the
    best table."""
    worst = 0
    for spread in product(range(k + 1), repeat=blocks):
        if sum(spread) > k:
            continue
        best_table = min(sum(spread[b] for b in table) for table in combinations(range(blocks), key_blocks))
        worst = max(worst, best_table)
    return worst


@pytest.mark.parametrize("blocks", range(1, 7))
def test_required_radius_matches_brute_force(blocks):
    for key_blocks in range(1, blocks + 1):
        for k in range(0, 9):
            if (k + 1) ** blocks > 2_000_000:  # keep the enumeration small; blocks 7-8 below
                continue
            assert required_radius(blocks, key_blocks, k) == _brute_required_radius(blocks, key_blocks, k), \
                (blocks, key_blocks, k)


@pytest.mark.parametrize("blocks", [7, 8])
def test_required_radius_matches_brute_force_many_blocks(blocks):
    for key_blocks in (1, 2, blocks - 1, blocks):
        for k in range(0, 5):
            assert required_radius(blocks, key_blocks, k) == _brute_required_radius(blocks, key_blocks, k), \
                (blocks, key_blocks, k)


def test_required_radius_known_values():
    assert required_radius(4, 1, 3) == 0  # pigeonhole
    assert required_radius(6, 3, 3) == 0  # Manku: 6 blocks, tables of 3
    assert required_radius(3, 1, 8) == 2
    assert required_radius(4, 1, 6) == 1
    assert required_radius(2, 1, 3) == 1
    assert required_radius(1, 1, 5) == 5


# -- the completeness theorem ------------------------------------------------------------------------


def _flip(value: int, bits: int, n: int, rng: random.Random) -> int:
    for b in rng.sample(range(bits), n):
        value ^= 1 << b
    return value


def _shares_probe_key(layout: BandLayout, a: int, b: int) -> bool:
    """Does a lookup of ``a`` (its probe keys) hit one of ``b``'s stored band keys, in the same table?"""
    stored = layout.keys(b)
    return any(stored[t] in probes for t, probes in enumerate(layout.probe_keys(a)))


LAYOUTS = ([BandLayout.pigeonhole(64, k) for k in range(0, 9)]
           + [BandLayout.multi_table(64, 3, 6), BandLayout.multi_table(64, 4, 6),
              BandLayout.probing(64, 8, 3), BandLayout.probing(64, 6, 4), BandLayout.probing(64, 5, 2, 1),
              BandLayout.pigeonhole(128, 3), BandLayout.pigeonhole(128, 7), BandLayout.probing(128, 9, 5)])


def _ident(layout: BandLayout) -> str:
    return f"{layout.bits}b-k{layout.k}-{layout.blocks}x{layout.key_blocks}-r{layout.radius}"


@pytest.mark.parametrize("layout", LAYOUTS, ids=_ident)
def test_every_pair_within_k_shares_a_probe_key(layout):
    rng = random.Random(1000 + layout.k * 7 + layout.blocks)
    # thousands of pairs for cheap layouts, a few hundred where each lookup probes hundreds of keys
    bases = 1000 if layout.probes_per_lookup <= 32 else 40
    missed_beyond_k = 0
    for _ in range(bases):
        a = rng.getrandbits(layout.bits)
        for d in range(0, layout.k + 4):
            if d > layout.bits:
                break
            b = _flip(a, layout.bits, d, rng)
            assert hamming(a, b) == d
            found = _shares_probe_key(layout, a, b)
            if d <= layout.k:
                assert found, (hex(a), hex(b), d)
                if d == layout.k:  # and the other way round
                    assert _shares_probe_key(layout, b, a), (hex(a), hex(b), d)
            elif not found:
                missed_beyond_k += 1
    if layout.radius == 0 and layout.key_blocks == 1:
        # the rule is tight: past k, random pairs do get missed (so the assertion above can fail)
        assert missed_beyond_k > 0


@pytest.mark.parametrize("k", [0, 1, 3, 5, 8])
def test_pigeonhole_is_tight_at_k_plus_one(k):
    layout = BandLayout.pigeonhole(64, k)
    a = 0x0123_4567_89AB_CDEF
    b = a
    for start, _width in layout.spans:  # one differing bit in every block: distance k + 1
        b ^= 1 << start
    assert hamming(a, b) == k + 1
    assert not _shares_probe_key(layout, a, b)


def _index(layout: BandLayout, fps: list[int]) -> dict[str, list[int]]:
    idx: dict[str, list[int]] = defaultdict(list)
    for i, fp in enumerate(fps):
        for key in layout.keys(fp):
            idx[key].append(i)
    return idx


@pytest.mark.parametrize("layout", [BandLayout.pigeonhole(64, 3), BandLayout.pigeonhole(64, 8),
                                    BandLayout.multi_table(64, 3, 6), BandLayout.probing(64, 8, 3),
                                    BandLayout.probing(64, 6, 4)], ids=_ident)
def test_band_lookup_finds_every_brute_force_pair(layout):
    rng = random.Random(7)
    fps = [rng.getrandbits(64) for _ in range(300)]
    fps += [_flip(rng.choice(fps), 64, rng.randint(0, layout.k + 2), rng) for _ in range(300)]
    arr = np.array(fps, dtype=np.uint64)
    truth = {(i, j) for i in range(len(fps))
             for j in np.flatnonzero(hamming_many(fps[i], arr) <= layout.k).tolist() if i < j}
    assert len(truth) >= 200  # the planted pairs are there
    idx = _index(layout, fps)
    found = set()
    for i, fp in enumerate(fps):
        for probes in layout.probe_keys(fp):
            for key in probes:
                found.update((min(i, j), max(i, j)) for j in idx.get(key, ()) if j != i)
    assert truth <= found, sorted(truth - found)[:5]


def test_probe_keys_are_exactly_the_keys_within_the_radius():
    layout = BandLayout.probing(64, 6, 4)  # radius 1, four 16-bit keys
    fp = 0xDEAD_BEEF_0123_4567
    values = layout.key_values(fp)
    for t, probes in enumerate(layout.probe_keys(fp)):
        assert len(probes) == len(set(probes)) == 1 + layout.key_widths[t]
        expected = {layout.format_key(t, values[t] ^ (1 << b)) for b in range(layout.key_widths[t])}
        expected.add(layout.format_key(t, values[t]))
        assert set(probes) == expected
        assert probes[0] == layout.keys(fp)[t]


# -- key arithmetic ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", [BandLayout.pigeonhole(64, 3), BandLayout.pigeonhole(64, 6),
                                    BandLayout.multi_table(64, 3, 6), BandLayout.probing(64, 8, 3),
                                    BandLayout.pigeonhole(128, 4)], ids=_ident)
def test_key_values_many_equals_key_values(layout):
    rng = random.Random(3)
    hs = [0, 1, (1 << layout.bits) - 1, 1 << (layout.bits - 1)] + [rng.getrandbits(layout.bits) for _ in range(500)]
    arr = np.array(hs, dtype=np.uint64 if layout.bits == 64 else object)
    many = layout.key_values_many(arr)
    assert many.shape == (len(hs), layout.n_tables)
    for i, h in enumerate(hs):
        assert [int(v) for v in many[i]] == layout.key_values(h)


def test_key_values_reassemble_the_fingerprint():
    layout = BandLayout.pigeonhole(64, 3)
    fp = 0x0123_4567_89AB_CDEF
    assert layout.key_values(fp) == [0xCDEF, 0x89AB, 0x4567, 0x0123]
    assert layout.keys(fp) == ["0:cdef", "1:89ab", "2:4567", "3:0123"]
    back = sum(v << start for v, (start, _) in zip(layout.key_values(fp), layout.spans, strict=True))
    assert back == fp


def test_spans_cover_all_bits_with_near_equal_widths():
    for bits in (64, 128):
        for blocks in range(bits // 64, 12):
            layout = BandLayout(bits, 0, blocks, 1, 0)
            starts = [s for s, _ in layout.spans]
            widths = [w for _, w in layout.spans]
            assert sum(widths) == bits
            assert max(widths) - min(widths) <= 1
            assert starts == [sum(widths[:i]) for i in range(blocks)]


def test_keys_of_different_tables_never_collide():
    layout = BandLayout.pigeonhole(64, 3)
    keys = layout.keys(0)  # every block is zero
    assert len(set(keys)) == layout.n_tables
    assert all(key.startswith(f"{t}:") for t, key in enumerate(keys))


def test_multi_table_key_widths():
    layout = BandLayout.multi_table(64, 3, 6)
    assert layout.n_tables == 20
    assert all(31 <= w <= 33 for w in layout.key_widths)


# -- expected random candidates and choose() ---------------------------------------------------------


def test_expected_random_candidates_hand_example():
    # pigeonhole k=3: four 16-bit keys, one probe each; 65536 uniform documents -> 4 x 65536 / 2^16
    assert BandLayout.pigeonhole(64, 3).expected_random_candidates(65536) == pytest.approx(4.0)
    # probing k=8 over 3 blocks (22, 21, 21 bits), radius 2: a 22-bit key probes 1 + 22 + 231 = 254 keys,
    # a 21-bit key 1 + 21 + 210 = 232. With n = 2^21: 254 * 2^21 / 2^22 + 2 * 232 * 2^21 / 2^21 = 591.
    layout = BandLayout.probing(64, 8, 3)
    assert layout.key_widths == (22, 21, 21)
    assert layout.probes_per_lookup == 254 + 2 * 232
    assert layout.expected_random_candidates(2**21) == pytest.approx(591.0)
    assert BandLayout.pigeonhole(64, 3).expected_random_candidates(0) == 0.0


@pytest.mark.parametrize("k", [0, 2, 3, 5, 8])
def test_choose_returns_a_complete_layout(k):
    for n in (100, 10**6, 10**9):
        layout = BandLayout.choose(64, k, n)
        assert layout.k == k
        assert layout.radius >= required_radius(layout.blocks, layout.key_blocks, k)
        assert layout.n_tables <= 16 and layout.probes_per_lookup <= 512
        rng = random.Random(n + k)
        for _ in range(200):
            a = rng.getrandbits(64)
            assert _shares_probe_key(layout, a, _flip(a, 64, k, rng))


def test_choose_prefers_longer_keys_for_large_indexes():
    small = BandLayout.choose(64, 3, 100)
    large = BandLayout.choose(64, 3, 10**10)
    assert min(large.key_widths) > min(small.key_widths)
    widths = [min(BandLayout.choose(64, 3, n).key_widths) for n in (10**2, 10**4, 10**6, 10**8, 10**10)]
    assert widths == sorted(widths)


def test_choose_respects_limits():
    with pytest.raises(ConfigError, match="no band layout"):
        BandLayout.choose(64, 20, 10**6, max_tables=2, max_probes=4)


# -- validation ----------------------------------------------------------------------------------------


def test_incomplete_layout_is_rejected_with_the_needed_radius():
    with pytest.raises(ConfigError, match=r"needs radius >= 2"):
        BandLayout(64, 8, 3, 1, 1)
    with pytest.raises(ConfigError, match="multi_table needs blocks > k"):
        BandLayout.multi_table(64, 4, 4)
    with pytest.raises(ConfigError, match="wider than 64 bits"):
        BandLayout(128, 0, 1, 1, 0)
    with pytest.raises(ConfigError, match="bits must be 64 or 128"):
        BandLayout(32, 1, 2, 1, 0)
