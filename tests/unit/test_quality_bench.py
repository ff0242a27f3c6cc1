"""bench/quality.py's speed comparison runs on this checkout: its CLI step (`esdedup ingest` then `esdedup dups`
with every default, each a process of its own) and its rensa step find the same obvious pair of a few texts,
and the line it reports reads the ratio round by round."""
from __future__ import annotations

import json
from pathlib import Path

from bench import quality

POEMS = ["床前明月光，疑是地上霜。举头望明月，低头思故乡。", "床前明月光，疑是地上霜。举头望山月，低头思故乡。",
         "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。", "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",
         "千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。"]


def test_the_cli_and_rensa_steps_find_the_pair_and_the_ratio_is_reported(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"p{n}", "text": t}, ensure_ascii=False) + "\n"
                            for n, t in enumerate(POEMS)), "utf-8")
    cli = quality.run_cli_defaults(docs, tmp_path)
    rensa = quality.run_rensa(docs)
    assert cli[0] == rensa[0] == {("p0", "p1")}
    assert cli[1]["wall_s"] > 0 and rensa[1]["wall_s"] > 0
    ratios = quality.speed_ratios([cli, cli], [rensa, ({("p0", "p1")}, {"wall_s": rensa[1]["wall_s"] * 2})])
    assert ratios[0] == cli[1]["wall_s"] / rensa[1]["wall_s"] == 2 * ratios[1]
    line = quality.speed_line([2.0, 1.5, 1.75])
    assert "2.00x, 1.50x, 1.75x (median 1.75x)" in line
    assert "median" not in quality.speed_line([1.9])
