"""Band layouts: which pieces of a SimHash become lookup keys, so that near pairs always share one.

The pigeonhole rule (design document 000): cut a fingerprint into k+1 blocks; two fingerprints within
Hamming distance k differ in at most k blocks, so at least one block is identical and a lookup on that
block finds the pair.

The general form used here (Manku, Jain & Das Sarma, WWW 2007, plus neighbour probing):

* the ``bits`` are cut into ``blocks`` contiguous blocks whose widths differ by at most one;
* every combination of ``key_blocks`` blocks is one *table*; a table's key is those blocks' bits;
* each lookup probes its key and every key within ``radius`` bits of it.

A pair within distance k spreads its differing bits over the blocks. The adversary's best spread is the
even one, and the cheapest table for the pair is the one made of its ``key_blocks`` least-damaged blocks,
so a layout is *complete* (finds every pair within k) exactly when ``radius`` is at least
``required_radius(blocks, key_blocks, k)`` = the sum of the ``key_blocks`` smallest parts of k split as
evenly as possible over ``blocks``. Pigeonhole (k+1, 1, 0) and Manku's tables (t, t-k, 0) are the
radius-0 cases; probing (b, 1, floor(k/b)) trades longer keys for more probes per lookup.

Longer keys mean fewer random collisions ("big buckets"): ``expected_random_candidates`` estimates them.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from math import comb

import numpy as np

from esdedup.errors import ConfigError
from esdedup.util.fieldtypes import check_fields, checked_args

#: SimHash widths esdedup supports.
WIDTHS = (64, 128)
#: Largest number of tables a layout may have (each table is one keyword field).
MAX_TABLES = 64
#: Largest number of keys one lookup may probe (each is one term in the query).
MAX_PROBES = 4096


def check_bits(bits: int) -> None:
    """Raise ConfigError unless ``bits`` is a supported SimHash width."""
    if bits not in WIDTHS:
        raise ConfigError(f"bits must be 64 or 128, got {bits}")


def required_radius(blocks: int, key_blocks: int, k: int) -> int:
    """The probe radius that makes a layout complete for distance k (see the module docstring).

    >>> required_radius(4, 1, 3)   # pigeonhole for k=3
    0
    >>> required_radius(3, 1, 8)   # three blocks, k=8: some block has at most 2 differing bits
    2
    """
    q, rem = divmod(k, blocks)
    # Even spread: (blocks - rem) blocks get q bits, rem blocks get q + 1; take the key_blocks smallest.
    return key_blocks * q + max(0, key_blocks - (blocks - rem))


def _block_spans(bits: int, blocks: int) -> tuple[tuple[int, int], ...]:
    base, extra = divmod(bits, blocks)
    spans, start = [], 0
    for i in range(blocks):
        width = base + (1 if i < extra else 0)
        spans.append((start, width))
        start += width
    return tuple(spans)


def _neighbour_count(width: int, radius: int) -> int:
    return sum(comb(width, r) for r in range(radius + 1))


@dataclass(frozen=True)
class BandLayout:
    """Which bits of a fingerprint form each band key. Build with a factory, not by hand.

    >>> layout = BandLayout.pigeonhole(64, 3)
    >>> layout.n_tables, layout.key_widths
    (4, (16, 16, 16, 16))
    >>> layout.keys(0xFFFF)[:2]
    ['0:ffff', '1:0000']
    """

    bits: int
    k: int
    blocks: int
    key_blocks: int
    radius: int = 0

    def __post_init__(self) -> None:
        check_fields(self, owner="BandLayout field")
        check_bits(self.bits)
        if self.k < 0:
            raise ConfigError(f"k must be >= 0, got {self.k}")
        if not 1 <= self.blocks <= self.bits:
            raise ConfigError(f"blocks must be between 1 and {self.bits}, got {self.blocks}")
        if not 1 <= self.key_blocks <= self.blocks:
            raise ConfigError(f"key_blocks must be between 1 and blocks ({self.blocks}), got {self.key_blocks}")
        need = required_radius(self.blocks, self.key_blocks, self.k)
        if self.radius < need:
            raise ConfigError(
                f"band layout blocks={self.blocks} key_blocks={self.key_blocks} radius={self.radius} can miss "
                f"pairs at Hamming distance {self.k}: it needs radius >= {need}, or blocks >= "
                f"{self.k + self.key_blocks} (pigeonhole: k+1 blocks of one)")
        if self.n_tables > MAX_TABLES:
            raise ConfigError(f"band layout has {self.n_tables} tables (> {MAX_TABLES}); use fewer blocks")
        if self.probes_per_lookup > MAX_PROBES:
            raise ConfigError(f"band layout probes {self.probes_per_lookup} keys per lookup (> {MAX_PROBES}); "
                              "use more blocks or a smaller radius")
        if max(self.key_widths) > 64:
            raise ConfigError("a band key may not be wider than 64 bits; use more blocks")

    # -- factories -----------------------------------------------------------------------------
    @classmethod
    def pigeonhole(cls, bits: int, k: int) -> BandLayout:
        """k+1 blocks, one table per block: the classic layout of design document 000."""
        return cls(bits, k, k + 1, 1, 0)

    @classmethod
    @checked_args
    def multi_table(cls, bits: int, k: int, blocks: int) -> BandLayout:
        """Manku et al.: ``blocks`` blocks, a table for each choice of ``blocks - k`` of them."""
        if blocks <= k:
            raise ConfigError(f"multi_table needs blocks > k ({k}), got {blocks}")
        return cls(bits, k, blocks, blocks - k, 0)

    @classmethod
    def probing(cls, bits: int, k: int, blocks: int, key_blocks: int = 1) -> BandLayout:
        """Few long keys, each probed with its neighbours up to the radius completeness needs."""
        return cls(bits, k, blocks, key_blocks, required_radius(blocks, key_blocks, k))

    @classmethod
    def for_settings(cls, bits: int, k: int, blocks: int = 0, key_blocks: int = 0, radius: int = 0) -> BandLayout:
        """The layout of a fingerprint config's band settings, where 0 means the default: ``k + 1`` blocks
        (pigeonhole) and ``blocks - k`` blocks per key (one table per way to leave k blocks out)."""
        blocks = blocks or k + 1
        return cls(bits, k, blocks, key_blocks or max(1, blocks - k), radius)

    @classmethod
    @checked_args
    def choose(cls, bits: int, k: int, n_docs: int, *, max_tables: int = 16, max_probes: int = 512,
               probe_cost: float = 1.0) -> BandLayout:
        """The complete layout with the lowest estimated cost for an index of ``n_docs`` documents.

        Cost = keys probed per lookup x ``probe_cost`` + expected random candidates (each of which is
        fetched and verified). Only layouts within ``max_tables`` and ``max_probes`` are considered.
        """
        best: tuple[float, BandLayout] | None = None
        for blocks in range(1, min(bits, k + 12) + 1):
            for key_blocks in range(1, blocks + 1):
                radius = required_radius(blocks, key_blocks, k)
                try:
                    layout = cls(bits, k, blocks, key_blocks, radius)
                except ConfigError:
                    continue
                if layout.n_tables > max_tables or layout.probes_per_lookup > max_probes:
                    continue
                cost = layout.probes_per_lookup * probe_cost + layout.expected_random_candidates(n_docs)
                if best is None or cost < best[0]:
                    best = (cost, layout)
        if best is None:
            raise ConfigError(f"no band layout for k={k} fits max_tables={max_tables}, max_probes={max_probes}")
        return best[1]

    # -- derived shape -------------------------------------------------------------------------
    @cached_property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """(start bit, width) of each block; bit 0 is the fingerprint's least significant bit."""
        return _block_spans(self.bits, self.blocks)

    @cached_property
    def tables(self) -> tuple[tuple[int, ...], ...]:
        """The blocks that make up each table's key, in table order."""
        return tuple(combinations(range(self.blocks), self.key_blocks))

    @property
    def n_tables(self) -> int:
        return comb(self.blocks, self.key_blocks)

    @cached_property
    def key_widths(self) -> tuple[int, ...]:
        return tuple(sum(self.spans[b][1] for b in table) for table in self.tables)

    @property
    def probes_per_lookup(self) -> int:
        return sum(_neighbour_count(w, self.radius) for w in self.key_widths)

    def field_names(self, prefix: str = "band_") -> list[str]:
        return [f"{prefix}{i}" for i in range(self.n_tables)]

    def expected_random_candidates(self, n_docs: int) -> float:
        """Expected documents returned by one lookup among ``n_docs`` unrelated, uniformly random
        fingerprints: sum over tables of probes x n / 2^width. Real text is not uniform, so treat this as
        a lower bound and watch the crowded band values that ``dups`` reports."""
        return float(sum(_neighbour_count(w, self.radius) * n_docs / 2.0 ** w for w in self.key_widths))

    def describe(self) -> dict[str, object]:
        return {"bits": self.bits, "k": self.k, "blocks": self.blocks, "key_blocks": self.key_blocks,
                "radius": self.radius, "tables": self.n_tables, "key_widths": list(self.key_widths),
                "probes_per_lookup": self.probes_per_lookup}

    # -- keys ----------------------------------------------------------------------------------
    def key_values(self, simhash: int) -> list[int]:
        """The integer key of each table for one fingerprint."""
        out = []
        for table in self.tables:
            value, shift = 0, 0
            for b in table:
                start, width = self.spans[b]
                value |= ((simhash >> start) & ((1 << width) - 1)) << shift
                shift += width
            out.append(value)
        return out

    def key_values_many(self, simhashes: np.ndarray | Sequence[int]) -> np.ndarray:
        """Vectorised ``key_values`` for an array of 64-bit fingerprints: shape (n, n_tables), uint64
        (other widths: a sequence of ints in, an object array out)."""
        if self.bits != 64:
            return np.array([self.key_values(int(h)) for h in simhashes], dtype=object).reshape(
                len(simhashes), self.n_tables)
        h = np.asarray(simhashes, dtype=np.uint64)
        out = np.zeros((len(h), self.n_tables), dtype=np.uint64)
        for t, table in enumerate(self.tables):
            shift = 0
            for b in table:
                start, width = self.spans[b]
                mask = np.uint64((1 << width) - 1)
                out[:, t] |= ((h >> np.uint64(start)) & mask) << np.uint64(shift)
                shift += width
        return out

    def format_key(self, table: int, value: int) -> str:
        """A band key as stored: ``"<table>:<hex>"``, tagged so keys of different tables never collide."""
        return f"{table}:{value:0{(self.key_widths[table] + 3) // 4}x}"

    def keys(self, simhash: int) -> list[str]:
        """One key per table (what is indexed)."""
        try:
            return [self.format_key(t, v) for t, v in enumerate(self.key_values(simhash))]
        except TypeError:  # named after the fact: this runs for every fingerprint
            raise ConfigError(f"BandLayout.keys: simhash must be a whole number, got {type(simhash).__name__} "
                              f"{simhash!r:.40}") from None

    def probe_keys(self, simhash: int) -> list[list[str]]:
        """Per table, the keys to look up: the key itself and, with a radius, its neighbours."""
        out = []
        for t, value in enumerate(self.key_values(simhash)):
            width = self.key_widths[t]
            keys = [self.format_key(t, value)]
            for r in range(1, self.radius + 1):
                for flips in combinations(range(width), r):
                    v = value
                    for bit in flips:
                        v ^= 1 << bit
                    keys.append(self.format_key(t, v))
            out.append(keys)
        return out
