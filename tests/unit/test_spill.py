"""`esdedup.util.spill.SortedSpill`: records sorted through a temporary file read back in exactly the order
and with exactly the values ``sorted`` gives, with one run or many."""
from __future__ import annotations

import math
import os
import random
from operator import itemgetter

import pytest

from esdedup.util import spill as spill_module
from esdedup.util.spill import SortedSpill
from tests.reliability import open_files_in

BY_IDS = itemgetter(0, 1)


def records(n: int, seed: int = 1) -> list[tuple[str, str, int | None, float | None, str]]:
    """Records with many equal keys (the order among them must be kept) and floats that only an exact format
    reads back to the bit."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b = f"d{rng.randrange(30):03d}", f"d{rng.randrange(30):03d}"
        out.append((a, b, None if i % 7 == 0 else rng.randrange(64), rng.random() / 3 if i % 5 else None, f"n{i}"))
    return out


@pytest.mark.parametrize("run", [1, 3, 64, 10_000])
def test_the_runs_merge_to_sorteds_order_and_values(run, monkeypatch):
    monkeypatch.setattr(spill_module, "BLOCK_RECORDS", 4)  # several blocks a run
    given = records(500)
    with SortedSpill(BY_IDS, run=run) as s:
        for r in given:
            s.add(r)
        assert len(s) == 500
        assert s.runs == (500 // run if run < 500 else 0)
        expected = sorted(given, key=BY_IDS)  # stable: equal (a, b) in the order they came
        got = list(s)
        assert got == expected
        assert [repr(x) for r in got for x in r] == [repr(x) for r in expected for x in r]  # floats to the bit
        assert list(s) == expected  # read again, the same


def test_floats_read_back_exactly():
    values = [0.1 + 0.2, 1 / 3, math.pi, 5e-324, 1e308, -0.0, math.inf]
    with SortedSpill(itemgetter(0), run=2) as s:
        for i, v in enumerate(values):
            s.add((f"{i:02d}", v))
        assert s.runs > 1
        got = [v for _, v in s]
    assert [v.hex() for v in got] == [v.hex() for v in values]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc/self/fd")
def test_the_file_is_made_past_one_run_and_freed_by_close(tmp_path, monkeypatch):
    spill_dir = tmp_path / "tmp"
    spill_dir.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spill_dir))
    s = SortedSpill[tuple[str, int]](itemgetter(0), run=4)
    for i in range(3):
        s.add((f"k{i}", i))
    assert not open_files_in(spill_dir)  # one run's records stay in memory
    s.add(("k3", 3))
    assert len(open_files_in(spill_dir)) == 1 and s.runs == 1
    assert os.listdir(spill_dir) == []  # it has no name, even while open
    s.close()
    assert not open_files_in(spill_dir)
    with pytest.raises(ValueError, match="closed"):
        list(s)
    s.close()  # twice is harmless
