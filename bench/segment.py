"""The default tokenizer's engine against jieba itself: equal tokens, and segmentation CPU.

    python bench/segment.py --poems 100000

Texts: chinese-poetry poems (Traditional -> Simplified, normalised), People's Daily paragraphs (January
1998), and random strings over Chinese, CJK extension, Latin, digits, jieba's in-block symbols, punctuation,
whitespace kinds and emoji. Each set is cut by ``jieba.Tokenizer().lcut(text, HMM=True)`` and by
`esdedup.fingerprint.jieba_fast.JiebaFast.cut_many` in batches of 256 (as the fingerprinter sends them); the table gives
how many texts got equal tokens and the process CPU seconds of each.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
import jieba  # noqa: E402

from esdedup.fingerprint.jieba_fast import JiebaFast  # noqa: E402
from esdedup.fingerprint.normalize import normalize  # noqa: E402

PALETTE = [*"的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产常造次前江湖",
           *"㶉𫛶𩙫𣀃埜丄丅", *"abcXYZ0123456789+#&._%-", " ", "\r\n", "\t", "，", "。", "！", "?", "“", "😀", "こ",
           "\u00a0", "\u3000", "T恤", "A股", "3D", "1.5%"]


def compare(name: str, texts: list[str], fast: JiebaFast, reference: jieba.Tokenizer) -> str:
    t = time.process_time()
    expected = [reference.lcut(text, HMM=True) for text in texts]
    reference_s = time.process_time() - t
    t = time.process_time()
    got = [tokens for i in range(0, len(texts), 256) for tokens in fast.cut_many(texts[i:i + 256])]
    fast_s = time.process_time() - t
    equal = sum(a == b for a, b in zip(expected, got, strict=True))
    return (f"| {name} | {equal:,} / {len(texts):,} | {reference_s:.1f} | {fast_s:.1f} | "
            f"{reference_s / max(fast_s, 1e-9):.1f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--poems", type=int, default=100_000)
    ap.add_argument("--random", type=int, default=20_000)
    ap.add_argument("--paragraphs", type=int, help="People's Daily paragraphs, the first N (default: all, 19,484)")
    args = ap.parse_args()
    fast, reference = JiebaFast(), jieba.Tokenizer()
    reference.initialize()
    rng = random.Random(1)
    paragraphs = corpora.peoples_daily_paragraphs()[:args.paragraphs]
    sets = {
        f"{args.poems:,} poems": [normalize(d["text"], t2s=True) for d in corpora.poems(args.poems)],
        f"{len(paragraphs):,} People's Daily paragraphs": [normalize(p) for p in paragraphs],
        f"{args.random:,} random mixed-script strings": ["".join(rng.choice(PALETTE) for _ in range(rng.randint(0, 60)))
                                                       for _ in range(args.random)],
    }
    print(f"`python bench/segment.py {' '.join(sys.argv[1:])}`".strip() + "\n")
    print("| texts | equal to jieba | jieba CPU s | fast CPU s | speed-up |\n| --- | ---: | ---: | ---: | ---: |")
    for name, texts in sets.items():
        print(compare(name, texts, fast, reference), flush=True)


if __name__ == "__main__":
    main()
