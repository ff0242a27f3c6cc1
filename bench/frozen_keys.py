"""`FrozenKeys` on its own: freezing windows of band keys and looking batches of records up in them.

    python bench/frozen_keys.py             # 5 windows of 200,000 documents, about 2 minutes
    python OTHER/bench/frozen_keys.py       # the same on the code of another checkout (copy the script there)

What a long ingest asks of its frozen keys (`esdedup.ingest.runindex`, `esdedup.ingest.window.MemoryWindow.roll`): each closing
window's keys are added (``--docs`` documents of ``--keys`` band keys; a tenth of them repeat an earlier
document's keys, so keys are shared across windows; one key is held by 2% of the documents, so the per-key
cap binds), then ``--batches`` batches of ``--batch`` records are looked up (half of them a stored
document's keys, half new keys, each with 20 more keys no document holds), ``per_record`` 100 as ingest asks.
Prints the CPU and wall time of each window's `add` and of a batch's lookup, the ids found (equal on any code
that answers alike) and the table's size. Documents and queries come from a fixed seed and are built before
the clock starts.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from esdedup.ingest.runindex import MAX_PER_KEY, FrozenKeys, KeyLists  # noqa: E402

#: Band keys of each query record that no document holds (a record's other band fields).
UNHELD_KEYS = 20


def _keys(values: np.ndarray, prefix: str = "") -> list[str]:
    return [f"{prefix}{band}:{int(v):012x}" for band, v in enumerate(values)]


def windows(rng: np.random.Generator, n_windows: int, docs: int, keys: int) -> tuple[list, np.ndarray]:
    """Each window as (ids, keys, positions), the arguments of `FrozenKeys.add`, and every document's key values."""
    values = rng.integers(0, 2**48, size=(n_windows * docs, keys))
    out = []
    for w in range(n_windows):
        base = w * docs
        if base:  # a tenth of the documents repeat an earlier document's keys
            copies = np.flatnonzero(rng.random(docs) < 0.10) + base
            values[copies] = values[rng.integers(0, base, size=len(copies))]
        crowded = np.flatnonzero(rng.random(docs) < 0.02) + base
        values[crowded, 0] = 1
        held_crowded = 0
        window_keys: list[str] = []
        positions: list[int] = []
        for i in range(docs):
            row = _keys(values[base + i])
            if values[base + i, 0] == 1:  # a run index keeps only the first MAX_PER_KEY holders of a key
                held_crowded += 1
                if held_crowded > MAX_PER_KEY:
                    row = row[1:]
            window_keys.extend(row)
            positions.extend([i] * len(row))
        out.append(([f"doc-{base + i}" for i in range(docs)], window_keys, np.array(positions, dtype=np.uint32)))
    return out, values


def queries(rng: np.random.Generator, values: np.ndarray, batches: int, batch: int) -> list[KeyLists]:
    """The lookup batches, each record's keys hashed as ingest hands them to `FrozenKeys.lookup`."""
    out = []
    for _ in range(batches):
        records = []
        for r in range(batch):
            held = values[int(rng.integers(0, len(values)))] if r % 2 else rng.integers(0, 2**48, size=values.shape[1])
            records.append(_keys(held) + _keys(rng.integers(0, 2**48, size=UNHELD_KEYS), "x"))
        out.append(KeyLists(records))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--docs", type=int, default=200_000, help="documents a window")
    ap.add_argument("--keys", type=int, default=16, help="band keys a document")
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--batch", type=int, default=500, help="records a lookup batch")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    frozen_windows, values = windows(rng, args.windows, args.docs, args.keys)
    batches = queries(rng, values, args.batches, args.batch)

    frozen = FrozenKeys()
    adds = []
    for ids, keys, positions in frozen_windows:
        cpu, wall = time.process_time(), time.perf_counter()
        frozen.add(ids, keys, positions)
        adds.append((time.process_time() - cpu, time.perf_counter() - wall))
    frozen.lookup(batches[0], per_record=100)  # warm
    found = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for records in batches:
        found += sum(map(len, frozen.lookup(records, per_record=100)))
    cpu_ms = (time.process_time() - cpu) / len(batches) * 1000
    wall_ms = (time.perf_counter() - wall) / len(batches) * 1000
    print(f"`python bench/frozen_keys.py {' '.join(sys.argv[1:])}`: {args.windows} windows of {args.docs:,} documents "
          f"x {args.keys} keys, {len(batches)} lookups of {args.batch} records")
    print("add a window, CPU/wall s: " + ", ".join(f"{c:.2f}/{w:.2f}" for c, w in adds))
    print(f"lookup of a batch: {cpu_ms:.1f} ms CPU, {wall_ms:.1f} ms wall; ids found {found:,}; table "
          f"{frozen.nbytes / 2**20:.0f} MB; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
