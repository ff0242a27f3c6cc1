"""How often rjieba (jieba-rs) segments the golden texts as jieba does: what making rjieba the default
tokenizer would mean for the plugin, which reproduces jieba.

Reads the golden file (make_golden.py), segments each default-config text's normalised form with
``rjieba.Jieba().cut(text, True)`` (esdedup's rjieba backend, HMM on) and compares with jieba's tokens; then
compares the whole fingerprint (esdedup.Fingerprinter with tokenizer rjieba vs the golden fields).

Usage: python parity_rjieba.py GOLDEN.jsonl.gz
"""
from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from esdedup.fingerprint.config import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from esdedup.schema import content_sha1, dedup_source  # noqa: E402


def main(path: str) -> None:
    fper = Fingerprinter(FingerprintConfig(tokenizer="rjieba"))
    by_kind: Counter[str] = Counter()
    same_by_kind: Counter[str] = Counter()
    same_fp = compared = 0
    examples: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            rec = json.loads(line)
            if rec["config"] != "default" or "tokens" not in rec:
                continue
            toks: list[str] = []
            for piece in fper._token_lists(rec["norm"]):
                toks.extend(piece)
            kind = rec["kind"]
            by_kind[kind] += 1
            if toks == rec["tokens"]:
                same_by_kind[kind] += 1
            elif len(examples) < 8:
                diff = next(i for i, (a, b) in enumerate(zip(toks + [""], rec["tokens"] + [""], strict=False)) if a != b)
                examples.append(f"{rec['id']}: jieba {rec['tokens'][max(0, diff - 2):diff + 3]} "
                                f"rjieba {toks[max(0, diff - 2):diff + 3]}")
            fp = fper.fingerprint_normalized([rec["norm"]])[0]
            got = dedup_source(fp, fper.config, content_sha1(rec["norm"]))
            compared += 1
            same_fp += got == rec["dedup"]
    total = sum(by_kind.values())
    print(f"rjieba == jieba tokens: {sum(same_by_kind.values())}/{total} "
          f"({100 * sum(same_by_kind.values()) / total:.2f}%); whole dedup object equal: {same_fp}/{compared} "
          f"({100 * same_fp / compared:.2f}%)")
    for kind in sorted(by_kind):
        print(f"  {kind:18s} {same_by_kind[kind]:5d}/{by_kind[kind]:5d} ({100 * same_by_kind[kind] / by_kind[kind]:.2f}%)")
    print("first differences:")
    for e in examples:
        print("  " + e)


if __name__ == "__main__":
    main(sys.argv[1])
