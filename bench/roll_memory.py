"""Peak memory at an ingest's window roll: a full run index frozen into `FrozenKeys` (`esdedup.ingest.window.MemoryWindow.roll`).

    python bench/roll_memory.py                # 5 windows of 200,000 documents x 16 keys, about 30 s of one core
    python bench/roll_memory.py --docs 50000   # lighter, for a busy machine
    python OTHER/bench/roll_memory.py          # the same on the code of another checkout (copy the script there)

Fills a `RunIndex` as a batch run does (``--docs`` documents a window, each a `StoredDoc` whose vector and
signature are rows of its batch's arrays, as the workers send them, and ``--keys`` band keys: decimal LSH keys,
a tenth of the documents repeating an earlier document's keys, one key held by 2%), and at the end of each
window but the last freezes it into the run's `FrozenKeys` and starts an empty run index, as
`esdedup.ingest.window.MemoryWindow.roll` does. Linux only: before each roll the process's high-water mark is reset
(``/proc/self/clear_refs``), so the peak printed is the roll's own. Prints, for each roll, the RSS before it,
its peak during it and the RSS after; the peak RSS of the whole process, which includes the last window filled
on top of the frozen keys; and a digest of what lookups in the frozen keys find (equal on any code that answers
alike). Everything comes from a fixed seed.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from esdedup.ingest.runindex import FrozenKeys, KeyLists, RunIndex  # noqa: E402
from esdedup.store.base import StoredDoc  # noqa: E402

#: Documents a batch (a worker's task): the vectors and signatures of a batch travel as one array each.
BATCH = 1000
DIMS, PERM = 256, 128
#: Records looked up in the frozen keys at the end (their digest shows that two checkouts answer alike).
LOOKUPS = 5000


def _status() -> dict[str, float]:
    """VmRSS and VmHWM of this process, in MB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                out[name] = int(value.split()[0]) / 1024
    return out


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _fill(index: RunIndex, values: np.ndarray, first: int) -> None:
    """Add the documents ``first``.. (one a row of ``values``, its key values) to ``index``, a batch at a time."""
    for start in range(0, len(values), BATCH):
        rows = values[start:start + BATCH]
        vectors = np.full((len(rows), DIMS), 0.0625, dtype=np.float32)
        sigs = np.full((len(rows), PERM), 7, dtype=np.uint32)
        for i, keys in enumerate(rows.tolist()):
            n = first + start + i
            doc_id = f"{n:08x}-0000-4000-8000-{n * 7919:012x}"
            doc = StoredDoc(doc_id, n, vectors[i], False, 40, 60, doc_id, None, minhash=sigs[i], shingles=50,
                            seq=n + 1, cluster_seq=n + 1)
            index.add_keys(doc, list(map(str, keys)))


def _roll(frozen: FrozenKeys, ended: RunIndex) -> RunIndex:
    """Freeze ``ended`` as `MemoryWindow.roll` does on the checkout this runs on, and start the next run index."""
    add_index = getattr(frozen, "add_index", None)
    if add_index is not None:
        add_index(ended)
    else:  # a checkout whose FrozenKeys has no add_index: freeze from the run index's entries
        frozen.add([doc.id for doc in ended.docs], *ended.entries())
    return RunIndex(complete=True, crowded=ended.crowded)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--docs", type=int, default=200_000, help="documents a window")
    ap.add_argument("--keys", type=int, default=16, help="band keys a document")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    total = args.windows * args.docs
    values = rng.integers(2, 2**40, size=(total, args.keys))
    copies = np.flatnonzero(rng.random(total) < 0.10)
    copies = copies[copies > 0]
    values[copies] = values[(rng.random(len(copies)) * copies).astype(np.int64)]  # an earlier document's keys
    values[rng.random(total) < 0.02, 0] = 1
    queries = [list(map(str, values[i].tolist())) for i in rng.integers(0, (args.windows - 1) * args.docs,
                                                                        size=LOOKUPS)]

    frozen, index = FrozenKeys(), RunIndex(complete=True)
    rolls, peak = [], 0.0
    cpu = time.process_time()
    for w in range(args.windows):
        _fill(index, values[w * args.docs:(w + 1) * args.docs], w * args.docs)
        if w == args.windows - 1:
            break
        status = _status()
        before, peak = status["VmRSS"], max(peak, status["VmHWM"])
        _reset_peak()
        wall = time.perf_counter()
        index = _roll(frozen, index)
        rolls.append((before, _status()["VmHWM"], _status()["VmRSS"], time.perf_counter() - wall))
    cpu = time.process_time() - cpu
    status = _status()
    peak = max(peak, status["VmHWM"])
    digest = hashlib.sha1("\n".join(",".join(ids) for ids in frozen.lookup(KeyLists(queries))).encode()).hexdigest()[:12]

    print(f"`python bench/roll_memory.py {' '.join(sys.argv[1:])}`: {args.windows} windows of {args.docs:,} "
          f"documents x {args.keys} keys")
    print("rolls, RSS before / peak / after MB (wall s): "
          + ", ".join(f"{b:.0f} / {p:.0f} / {a:.0f} ({s:.1f})" for b, p, a, s in rolls))
    print(f"peak over the rolls, above the RSS before: {max(p - b for b, p, _, _ in rolls):.0f} MB; process peak "
          f"RSS {peak:.0f} MB, at the end {status['VmRSS']:.0f} MB; frozen table {frozen.nbytes / 2**20:.0f} MB; lookups digest {digest}; "
          f"CPU {cpu:.0f} s")


if __name__ == "__main__":
    main()
