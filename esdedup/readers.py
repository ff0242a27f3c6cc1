"""Streaming input readers for ``esdedup ingest``.

Three input formats are understood:

* ``txt``: one document per file (novels of tens of MB are normal and read in one go);
* ``jsonl``: one JSON object per line, read line by line in binary with a bounded buffer;
* ``csv`` / ``tsv``: a header row, then one record per row (quoted fields may span lines).

Every input yields either a :class:`Record` or a :class:`Rejected` describing exactly what was
wrong and where, so a caller can make its counts add up. The only things skipped without an
item are blank JSONL lines, blank CSV rows and a CSV file holding only its header row.

Text encodings are never guessed into mojibake: a byte-order mark wins, then strict UTF-8,
then UTF-16 without BOM, then GB18030 or Big5 (scored on common characters when both decode).
Bytes that decode under none of them are reported, never replaced. JSONL and CSV files are
decoded line by line with the encoding detected on their first 64 KiB, so one bad line costs
one record; in a GB18030/Big5 file a line that is valid UTF-8 is read as UTF-8 (concatenated
files), and a file whose first 64 KiB are pure ASCII may still turn out to be GB18030/Big5.

This module never prints and never configures logging.
"""
from __future__ import annotations

import codecs
import csv
import errno
import json
import logging
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from esdedup.errors import ConfigError, DecodeError

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "EXCERPT_CHARS",
    "MAX_ID_BYTES",
    "SAMPLE_BYTES",
    "Record",
    "Rejected",
    "decode_bytes",
    "detect_encoding",
    "detect_format",
    "iter_files",
    "read_records",
]

logger = logging.getLogger(__name__)

#: Bytes read from the start of a file to detect its encoding.
SAMPLE_BYTES = 64 * 1024
#: Default limit of one record (a JSONL line, a CSV row, a whole txt file).
DEFAULT_MAX_RECORD_BYTES = 64 * 2**20
#: Elasticsearch refuses document ids longer than 512 bytes.
MAX_ID_BYTES = 512
#: Characters of the raw record kept in ``Rejected.excerpt``.
EXCERPT_CHARS = 200

_CHUNK_BYTES = 1 << 20
_HEAD_BYTES = 4 * EXCERPT_CHARS
# Heuristics look at this many decoded characters at most (strict decoding always covers everything).
_SCORE_CHARS = 32 * 1024

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson", ".json-lines"})
_CSV_SUFFIXES = frozenset({".csv", ".tsv"})
_FORMATS = frozenset({"auto", "txt", "jsonl", "csv", "tsv"})
_CJK_CODECS = frozenset({"gb18030", "big5", "cp950"})
_UNDECODABLE = "cannot decode: not UTF-8/UTF-16/GB18030/Big5"
_MIXED = "cannot decode: partly UTF-8, partly another encoding"
_BINARY = "binary file (NUL bytes)"


@dataclass(frozen=True)
class Record:
    """One input document."""

    id: str | None
    """The given id, or for txt files the path relative to its root; None means "derive one"."""
    text: str
    title: str | None
    fields: dict[str, Any]
    """Every other field of the JSON object or CSV row (url, source, timestamp, ...)."""
    source: str
    """The file path as given or discovered."""
    location: str
    """``"line 12"`` (jsonl), ``"row 5"`` (csv, 1-based data row) or ``""`` (txt)."""
    offset: int
    """Byte offset of the record's start in the file (0 for txt), for resume checkpoints."""
    encoding: str
    """The codec the record was decoded with."""


@dataclass(frozen=True)
class Rejected:
    """An input (file, line or row) that could not be turned into a Record, and why."""

    source: str
    location: str
    reason: str
    excerpt: str | None = None
    """The first ~200 characters of the raw record, for the dead-letter file."""
    offset: int | None = field(default=None, compare=False)
    """Byte offset of the rejected line or row (0 for a whole file), for resume checkpoints: a resumed
    run passes over it like over a Record; None when unknown (then it may be reported again). Not part of
    equality: two rejections of the same thing compare equal however they were found."""


# ---------------------------------------------------------------------------------------------
# Encoding detection
# ---------------------------------------------------------------------------------------------

# Longest first: the UTF-32 LE BOM starts with the UTF-16 LE BOM.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# About 1,170 of the most frequent Simplified characters, and the same list in Traditional
# (Taiwan) forms. Real text has most of its Han characters in its own list; text decoded with
# the wrong one of GB18030/Big5 has few, plus kana, Cyrillic, private-use and similar debris.
_COMMON_SIMPLIFIED = frozenset(
    "的一是不了在人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里用道行所然家种事成方"
    "多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心她本前开但因只从想实日军者意无力它与长把机十民第公此已工使情"
    "明性知全三又关点正业外将两高间由问很最重并物手应战向头文体政美相见被利什二等产或新己制身果加西斯月话合回特代内信表化老给"
    "世位次度门任常先海通教儿原东声提立及比员解水名真论处走义各入几口认条平系气题活尔更别打女变四神总何电数安少报才结反受目太"
    "量再感建务做接必场件计管期市直德资命山金指克许统区保至队形社便空决治展马科司五基眼书非则听白却界达光放强即像难且权思王象"
    "完设式色路记南品住告类求据程北边死张该交规万取拉格望觉术领共确传师观清今切院让识候带导争运笑飞风步改收根干造言联持组每济"
    "车亲极林服快办议往元英士证近失转夫令准布始怎呢存未远叫台单影具罗字爱击流备兵连调深商算质团集百需价花党华城石级整府离况亚"
    "请技际约示复病息究线似官火断精满支视消越器容照须九增研写称企八功吗包片史委乎查轻易早曾除农找装广显吧阿李标谈吃图念六引历"
    "首医局突专费号尽另周较注语仅考落青随选列武红响虽推势参希古众构房半节土投某案黑维革划敌致陈律足态护七兴派孩验责营星够章音"
    "跟志底站严巴例防族供效续施留讲型料终答紧黄绝奇察母京段依批群项故按河米围江织害斗双境客纪采举杀攻父苏密低朝友诉止细愿千值"
    "仍男钱破网热助倒育属坐帝限船脸职速刻乐否刚威毛状率甚独球般普怕弹校苦创假久错承印晚兰试股拿脑预谁益阳若哪微尼继送急血惊伤"
    "素药适波夜省初喜卫源食险待述陆习置居劳财环排福纳欢雷警获模充负云停木游龙树疑层冷洲冲射略范竟句室异激汉村哈策演简卡罪判担"
    "州静退既衣您宗积余痛检差富灵协角占配征修皮挥胜降阶审沉坚善妈刘读啊超免压银买皇养伊怀执副乱抗犯追帮宣佛岁航优怪香著田铁控"
    "税左右份穿艺背阵草脚概恶块顿敢守酒岛托央户烈洋哥索胡款靠评版宝座释景顾弟登货互付伯慢欧换闻危忙核暗姐介坏讨丽良序升监临亮"
    "露永呼味野架域沙掉括舰鱼杂误湾吉减编楚肯测败屋跑梦散温困剑渐封救贵枪缺楼县尚毫移娘朋画班智亦耳恩短掌恐遗固席松秘谢鲁遇康"
    "虑幸均销钟诗藏赶剧票损忽巨炮旧端探湖录叶春乡附吸予礼港雨呀板庭妇归睛饭额含顺输摇招婚脱补谓督毒油疗旅泽材灭逐莫笔亡鲜词圣"
    "择寻厂睡博勒烟授诺伦岸奥唐卖俄炸载洛健堂旁宫喝借君禁阴园谋宋避抓荣姑孙逃牙束跳顶玉镇雪午练迫爷篇肉嘴馆遍凡础洞卷坦牛宁纸"
    "诸训私庄祖丝翻暴森塔默握戏隐熟骨访弱蒙歌店鬼软典欲萨伙遭盘爸扩盖弄雄稳忘亿刺拥徒姆杨齐赛趣曲刀床迎冰虚玩析窗醒妻透购替塞"
    "努休虎扬途侵刑绿兄迅套贸毕唯谷轮库迹尤竞街促延震弃甲伟麻川申缓潜闪售灯针哲络抵朱埃抱鼓植纯夏忍页杰筑折郑贝尊吴秀混臣雅振"
    "染盛怒舞圆搞狂措姓残秋培迷诚宽宇猛摆梅毁伸摩盟末乃悲拍丁赵"
)
_COMMON_TRADITIONAL = frozenset(
    "的一是不了在人有我他這個們中來上大為和國地到以說時要就出會可也你對生能而子那得於著下自之年過發後作裡用道行所然家種事成方"
    "多經麼去法學如都同現當沒動面起看定天分還進好小部其些主樣理心她本前開但因只從想實日軍者意無力它與長把機十民第公此已工使情"
    "明性知全三又關點正業外將兩高間由問很最重並物手應戰向頭文體政美相見被利什二等產或新己制身果加西斯月話合回特代內信表化老給"
    "世位次度門任常先海通教兒原東聲提立及比員解水名真論處走義各入幾口認條平系氣題活爾更別打女變四神總何電數安少報才結反受目太"
    "量再感建務做接必場件計管期市直德資命山金指克許統區保至隊形社便空決治展馬科司五基眼書非則聽白卻界達光放強即像難且權思王象"
    "完設式色路記南品住告類求據程北邊死張該交規萬取拉格望覺術領共確傳師觀清今切院讓識候帶導爭運笑飛風步改收根乾造言聯持組每濟"
    "車親極林服快辦議往元英士證近失轉夫令準布始怎呢存未遠叫臺單影具羅字愛擊流備兵連調深商算質團集百需價花黨華城石級整府離況亞"
    "請技際約示覆病息究線似官火斷精滿支視消越器容照須九增研寫稱企八功嗎包片史委乎查輕易早曾除農找裝廣顯吧阿李標談吃圖念六引歷"
    "首醫局突專費號盡另周較注語僅考落青隨選列武紅響雖推勢參希古眾構房半節土投某案黑維革劃敵致陳律足態護七興派孩驗責營星夠章音"
    "跟志底站嚴巴例防族供效續施留講型料終答緊黃絕奇察母京段依批群項故按河米圍江織害鬥雙境客紀採舉殺攻父蘇密低朝友訴止細願千值"
    "仍男錢破網熱助倒育屬坐帝限船臉職速刻樂否剛威毛狀率甚獨球般普怕彈校苦創假久錯承印晚蘭試股拿腦預誰益陽若哪微尼繼送急血驚傷"
    "素藥適波夜省初喜衛源食險待述陸習置居勞財環排福納歡雷警獲模充負雲停木游龍樹疑層冷洲衝射略範竟句室異激漢村哈策演簡卡罪判擔"
    "州靜退既衣您宗積餘痛檢差富靈協角佔配徵修皮揮勝降階審沉堅善媽劉讀啊超免壓銀買皇養伊懷執副亂抗犯追幫宣佛歲航優怪香田鐵控稅"
    "左右份穿藝背陣草腳概惡塊頓敢守酒島托央戶烈洋哥索胡款靠評版寶座釋景顧弟登貨互付伯慢歐換聞危忙核暗姐介壞討麗良序升監臨亮露"
    "永呼味野架域沙掉括艦魚雜誤灣吉減編楚肯測敗屋跑夢散溫困劍漸封救貴槍缺樓縣尚毫移娘朋畫班智亦耳恩短掌恐遺固席松秘謝魯遇康慮"
    "幸均銷鍾詩藏趕劇票損忽巨炮舊端探湖錄葉春鄉附吸予禮港雨呀板庭婦歸睛飯額含順輸搖招婚脫補謂督毒油療旅澤材滅逐莫筆亡鮮詞聖擇"
    "尋廠睡博勒煙授諾倫岸奧唐賣俄炸載洛健堂旁宮喝借君禁陰園謀宋避抓榮姑孫逃牙束跳頂玉鎮雪午練迫爺篇肉嘴館遍凡礎洞卷坦牛寧紙諸"
    "訓私莊祖絲翻暴森塔默握戲隱熟骨訪弱蒙歌店鬼軟典欲薩夥遭盤爸擴蓋弄雄穩忘億刺擁徒姆楊齊賽趣曲刀床迎冰虛玩析窗醒妻透購替塞努"
    "休虎揚途侵刑綠兄迅套貿畢唯谷輪庫跡尤競街促延震棄甲偉麻川申緩潛閃售燈針哲絡抵朱埃抱鼓植純夏忍頁傑築折鄭貝尊吳秀混臣雅振染"
    "盛怒舞圓搞狂措姓殘秋培迷誠寬宇猛擺梅毀伸摩盟末乃悲拍丁趙台係復隻幹麵髮鐘"
)

_HIGH_BYTES = bytes(range(0x80, 0x100))
# A UTF-8 encoded character U+4000..U+9FFF (most Han characters).
_UTF8_HAN = re.compile(rb"[\xe4-\xe9][\x80-\xbf]{2}")

# Punctuation that both codecs produce for real text (full-width and CJK forms).
_CJK_PUNCTUATION = frozenset("，。、；：？！「」『』（）《》〈〉“”‘’…—·～　【】％＋－／＜＞＝")


def _is_debris(cp: int) -> bool:
    """Characters that real Chinese text rarely has but the wrong CJK codec produces a lot of."""
    return (
        0xE000 <= cp <= 0xF8FF  # private use (GB18030 user-defined areas)
        or 0x3040 <= cp <= 0x30FF  # kana
        or 0x0370 <= cp <= 0x04FF  # Greek, Cyrillic
        or 0x2500 <= cp <= 0x259F  # box drawing, blocks
        or 0x3100 <= cp <= 0x312F  # bopomofo
        or 0x02C0 <= cp <= 0x02FF  # spacing modifiers (tone marks)
        or 0x3200 <= cp <= 0x33FF  # enclosed CJK, CJK compatibility
        or 0x3400 <= cp <= 0x4DBF  # CJK extension A
        or 0x2E80 <= cp <= 0x2FDF  # radicals
        or 0xF900 <= cp <= 0xFAFF  # CJK compatibility ideographs
        or 0xFE30 <= cp <= 0xFE4F  # CJK compatibility forms
        or cp > 0xFFFF  # GB18030 four-byte sequences into the supplementary planes
    )


def _cjk_score(text: str, common: frozenset[str]) -> float:
    """Mean per non-ASCII character: +1 common character, +0.5 CJK punctuation, -1 debris."""
    total = 0
    score = 0.0
    for ch in text[:_SCORE_CHARS]:
        cp = ord(ch)
        if cp < 0x80:
            continue
        total += 1
        if ch in common:
            score += 1.0
        elif ch in _CJK_PUNCTUATION:
            score += 0.5
        elif _is_debris(cp):
            score -= 1.0
    return score / total if total else 0.0


def _is_plausible_utf16_char(ch: str) -> bool:
    """Characters UTF-16 text of a Chinese-first corpus is made of (no Hangul, no private use)."""
    cp = ord(ch)
    if cp < 0x80:
        return ch.isprintable() or ch in "\t\n\r\f"
    return (
        0x00A0 <= cp <= 0x024F  # Latin-1 supplement, Latin extended
        or 0x2000 <= cp <= 0x206F  # general punctuation
        or 0x2190 <= cp <= 0x21FF  # arrows
        or 0x3000 <= cp <= 0x303F  # CJK symbols and punctuation
        or 0x3040 <= cp <= 0x30FF  # kana
        or 0x3400 <= cp <= 0x4DBF  # CJK extension A
        or 0x4E00 <= cp <= 0x9FFF  # CJK unified ideographs
        or 0xFF00 <= cp <= 0xFFEF  # half- and full-width forms
        or cp == 0xFEFF
    )


def _strict(data: bytes, codec: str, final: bool) -> str | None:
    """``data`` decoded strictly (a cut multi-byte tail is allowed unless final), or None."""
    try:
        return codecs.getincrementaldecoder(codec)("strict").decode(data, final)
    except UnicodeDecodeError:
        return None


def _guess_utf16(sample: bytes, final: bool, *, threshold: float) -> str | None:
    """'utf-16-le'/'utf-16-be' when the sample is plausible UTF-16 without a BOM."""
    if final and len(sample) % 2:
        return None
    even_nuls = sample[0::2].count(0)
    odd_nuls = sample[1::2].count(0)
    # ASCII in UTF-16-LE has its zero byte at odd positions; try the likelier order first.
    order = ("utf-16-le", "utf-16-be") if odd_nuls >= even_nuls else ("utf-16-be", "utf-16-le")
    for codec in order:
        text = _strict(sample, codec, final)
        if not text or "\x00" in text:
            continue
        head = text[:_SCORE_CHARS]
        plausible = sum(1 for ch in head if _is_plausible_utf16_char(ch))
        if plausible >= threshold * len(head):
            return codec
    return None


def _guess_cjk(sample: bytes, final: bool) -> str:
    """Choose between GB18030 and Big5 (or cp950, Microsoft's Big5) for non-UTF text."""
    # GB18030 decodes most UTF-8 Han text as well (into mojibake). Real GBK/Big5 text has few
    # byte runs that happen to be UTF-8 Han characters; a file that is largely made of them
    # has been assembled from differently encoded parts.
    head = sample[:4 * _SCORE_CHARS]
    non_ascii = len(head) - len(head.translate(None, _HIGH_BYTES))
    utf8_han = len(_UTF8_HAN.findall(head))
    if utf8_han >= 4 and 3 * utf8_han >= 0.4 * non_ascii:
        raise DecodeError(_MIXED)
    decoded: dict[str, str] = {}
    gb = _strict(sample, "gb18030", final)
    if gb is not None:
        decoded["gb18030"] = gb
    for codec in ("big5", "cp950"):
        big5 = _strict(sample, codec, final)
        if big5 is not None:
            decoded[codec] = big5
            break
    if not decoded:
        raise DecodeError(_UNDECODABLE)
    if len(decoded) == 1:
        return next(iter(decoded))
    (big5_codec, big5_text) = [(c, t) for c, t in decoded.items() if c != "gb18030"][0]
    gb_score = _cjk_score(decoded["gb18030"], _COMMON_SIMPLIFIED)
    big5_score = _cjk_score(big5_text, _COMMON_TRADITIONAL)
    logger.debug("GB18030 score %.3f, %s score %.3f", gb_score, big5_codec, big5_score)
    return big5_codec if big5_score > gb_score else "gb18030"


def detect_encoding(sample: bytes, *, final: bool = True) -> str:
    """Return the Python codec that decodes ``sample`` strictly, or raise :class:`DecodeError`.

    ``final=False`` says the sample is the start of a longer file, so a multi-byte character cut
    at its end is not an error. Order: BOM (UTF-8, UTF-16, UTF-32), strict UTF-8, UTF-16 without
    BOM, then GB18030 or Big5. NUL bytes outside UTF-16/32 mean a binary file. Returns one of
    'utf-8', 'utf-8-sig', 'utf-16' (BOM), 'utf-16-le', 'utf-16-be', 'utf-32' (BOM), 'gb18030',
    'big5' or 'cp950' (Big5 with Microsoft's extensions, only when plain Big5 fails).
    """
    for bom, codec in _BOMS:
        if sample.startswith(bom):
            if _strict(sample, codec, final) is None:
                label = {"utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-32": "UTF-32"}[codec]
                raise DecodeError(f"cannot decode: invalid {label} after a {label} byte-order mark")
            return codec
    if b"\x00" in sample:
        # ASCII-heavy UTF-16 has many NUL bytes on one side; anything else with NULs is binary.
        # Text with a few stray NULs can pass as plausible UTF-16 (pairs of ASCII bytes read as
        # Han characters), so sparse NULs in what is otherwise UTF-8 mean binary as well.
        sparse = max(sample[0::2].count(0), sample[1::2].count(0)) < 0.25 * (len(sample) // 2)
        guess = None
        if not (sparse and _strict(sample.replace(b"\x00", b""), "utf-8", final) is not None):
            guess = _guess_utf16(sample, final, threshold=0.9)
        if guess is None:
            raise DecodeError(_BINARY)
        return guess
    if _strict(sample, "utf-8", final) is not None:
        return "utf-8"
    # UTF-16 of almost pure Han text has no NUL bytes at all; GBK and Big5 byte pairs read as
    # UTF-16 give Hangul, Yi, surrogates and private use, so a high threshold separates them.
    guess = _guess_utf16(sample, final, threshold=0.95)
    if guess is not None:
        return guess
    return _guess_cjk(sample, final)


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Decode a whole document strictly: ``(text, encoding)``; raise :class:`DecodeError`."""
    encoding = detect_encoding(data, final=True)
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:  # detect_encoding already checked; kept as a safety net
        raise DecodeError(f"cannot decode as {encoding}: {exc.reason} at byte {exc.start}") from exc


def _stray_nuls(sample: bytes, final: bool) -> bool:
    """UTF-8 lines of which at most one in ten carries NUL bytes: a damaged text file, not a binary one."""
    lines = sample.split(b"\n")
    if not final and len(lines) > 1:
        lines = lines[:-1]  # possibly cut by the end of the sample
    with_nul = sum(1 for line in lines if b"\x00" in line)
    clean = [line for line in lines if b"\x00" not in line and line.strip()]
    if not clean or with_nul * 10 > len(lines):
        return False
    utf8 = sum(1 for line in clean if _strict(line, "utf-8", True) is not None)
    return utf8 * 10 >= len(clean) * 9


def _detect_lines(sample: bytes, final: bool) -> str:
    """The encoding of a line-oriented file (JSONL, CSV) from its first bytes.

    Lines are decoded one by one, so a few undecodable lines must not condemn the whole file, and
    UTF-8 lines inside a GB18030/Big5 file are decoded as UTF-8 (see ``_decode_line``): the
    GB18030-or-Big5 choice is therefore made on the lines that are not UTF-8.
    """
    try:
        name = detect_encoding(sample, final=final)
    except DecodeError as exc:
        if exc.reason == _BINARY and _stray_nuls(sample, final):
            # Text lines of which a few carry NUL bytes: JSON and CSV text has no raw NUL, so those
            # lines are rejected one by one and the others are read.
            return "utf-8"
        if exc.reason not in (_UNDECODABLE, _MIXED):
            raise
        name = None
    if name in ("utf-16-le", "utf-16-be") and b"\x00" not in sample:
        # UTF-16 lines end in a newline that carries a NUL byte: a sample without any is not UTF-16
        # (long runs of ASCII pairs such as "[[" merely read as Han characters).
        name = None
    if name is not None and name not in _CJK_CODECS:
        return name
    lines = sample.split(b"\n")
    candidates: list[tuple[bytes, bool]] = []  # (line, complete): the sample may cut its last line
    for n, line in enumerate(lines):
        complete = final or n < len(lines) - 1
        if line.isascii() or _strict(line, "utf-8", complete) is not None:
            continue
        if any(_strict(line, codec, complete) is not None for codec in ("gb18030", "big5", "cp950")):
            candidates.append((line, complete))
    if not candidates:
        return "utf-8"  # the non-UTF-8 lines decode in nothing: each is rejected on its own
    try:
        name = detect_encoding(b"\n".join(line for line, _ in candidates), final=candidates[-1][1])
    except DecodeError:
        name = None
    if name in _CJK_CODECS:
        return name
    # Some lines decode only as GB18030 and others only as Big5: the majority wins.
    gb = sum(_strict(line, "gb18030", complete) is not None for line, complete in candidates)
    big5 = sum(_strict(line, "big5", complete) is not None for line, complete in candidates)
    return "gb18030" if gb >= big5 else "big5"


@dataclass
class _Codec:
    """How to split and decode one file's lines (mutable: a pure-ASCII start may be re-decided)."""

    name: str  # what detect_encoding said; reported in Record.encoding
    codec: str  # per-line codec, without BOM handling
    bom: int  # BOM length: line splitting starts there
    newline: bytes  # the newline code unit; its length is the code unit size
    provisional: bool = False  # chosen from pure ASCII: a later non-UTF-8 line may switch it

    @property
    def unit(self) -> int:
        return len(self.newline)


def _codec_for(name: str, sample: bytes) -> _Codec:
    if name == "utf-8-sig":
        return _Codec(name, "utf-8", 3, b"\n")
    if name == "utf-16":
        le = sample.startswith(codecs.BOM_UTF16_LE)
        return _Codec(name, "utf-16-le" if le else "utf-16-be", 2, b"\n\x00" if le else b"\x00\n")
    if name == "utf-32":
        le = sample.startswith(codecs.BOM_UTF32_LE)
        return _Codec(name, "utf-32-le" if le else "utf-32-be", 4,
                      b"\n\x00\x00\x00" if le else b"\x00\x00\x00\n")
    if name == "utf-16-le":
        return _Codec(name, name, 0, b"\n\x00")
    if name == "utf-16-be":
        return _Codec(name, name, 0, b"\x00\n")
    # UTF-8, GB18030 and Big5 never use 0x0A inside a multi-byte character.
    return _Codec(name, name, 0, b"\n", provisional=name == "utf-8" and sample.isascii())


# ---------------------------------------------------------------------------------------------
# Finding files
# ---------------------------------------------------------------------------------------------

def detect_format(path: Path) -> str:
    """'jsonl' for .jsonl/.ndjson/.json-lines, 'csv' for .csv/.tsv, else 'txt' (case-insensitive)."""
    name = Path(path).name.lower()
    if any(name.endswith(suffix) for suffix in _JSONL_SUFFIXES):
        return "jsonl"
    if any(name.endswith(suffix) for suffix in _CSV_SUFFIXES):
        return "csv"
    return "txt"


def _os_reason(exc: OSError, path: Path) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileNotFoundError):
        return "broken symlink" if os.path.islink(path) else "no such file or directory"
    return f"cannot read: {exc.strerror or exc}"


def _as_list(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


class _Walker:
    """Depth-first walk in sorted order; each real file and directory is visited once."""

    def __init__(self) -> None:
        self._files: dict[tuple[int, int], Path] = {}
        self._dirs: dict[tuple[int, int], Path] = {}

    def walk(self, paths: list[Path]) -> Iterator[tuple[Path, Path | None] | Rejected]:
        """Yield ``(file, root)`` (root None for a file given directly) or Rejected."""
        for path in paths:
            try:
                st = os.stat(path)
            except OSError as exc:
                yield Rejected(str(path), "", _os_reason(exc, path), offset=0)
                continue
            if stat.S_ISDIR(st.st_mode):
                yield from self._walk_dir(path, path, st, frozenset())
            else:
                yield from self._file(path, None, st)

    def _file(self, path: Path, root: Path | None, st: os.stat_result
              ) -> Iterator[tuple[Path, Path | None] | Rejected]:
        if not stat.S_ISREG(st.st_mode):
            yield Rejected(str(path), "", "not a regular file", offset=0)
            return
        key = (st.st_dev, st.st_ino)
        first = self._files.get(key)
        if first is not None:
            logger.warning("skipping %s: same file as %s, already read", path, first)
            return
        self._files[key] = path
        if not os.access(path, os.R_OK):
            yield Rejected(str(path), "", "permission denied", offset=0)
            return
        yield path, root

    def _walk_dir(self, path: Path, root: Path, st: os.stat_result, ancestors: frozenset[tuple[int, int]]
                  ) -> Iterator[tuple[Path, Path | None] | Rejected]:
        key = (st.st_dev, st.st_ino)
        if key in ancestors:
            yield Rejected(str(path), "", "symlink loop", offset=0)
            return
        first = self._dirs.get(key)
        if first is not None:
            logger.warning("skipping %s: same directory as %s, already read", path, first)
            return
        self._dirs[key] = path
        try:
            with os.scandir(path) as it:
                names = sorted(entry.name for entry in it if not entry.name.startswith("."))
        except OSError as exc:
            yield Rejected(str(path), "", _os_reason(exc, path), offset=0)
            return
        inner = ancestors | {key}
        for name in names:
            child = path / name
            try:
                child_st = os.stat(child)  # follows symlinks
            except OSError as exc:
                yield Rejected(str(child), "", _os_reason(exc, child), offset=0)
                continue
            if stat.S_ISDIR(child_st.st_mode):
                yield from self._walk_dir(child, root, child_st, inner)
            else:
                yield from self._file(child, root, child_st)


def iter_files(paths: Iterable[str | Path]) -> Iterator[Path | Rejected]:
    """Files named by ``paths``, directories walked recursively in sorted order.

    Symlinks are followed; a directory symlink leading back into its own ancestry yields one
    ``Rejected("symlink loop")``. A file or directory reached a second time (e.g. through a
    symlink elsewhere in the tree) is read once only, with a logged warning. Dot-files and
    dot-directories inside walked directories are skipped (a path given explicitly is used).
    Unreadable files and directories yield ``Rejected("permission denied")``.
    """
    for item in _Walker().walk(_as_list(paths)):
        yield item if isinstance(item, Rejected) else item[0]


# ---------------------------------------------------------------------------------------------
# Reading records
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Options:
    id_field: str
    text_field: str
    title_field: str
    max_record_bytes: int
    skip: Callable[[str, int], bool] | None
    skip_file: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class _Line:
    offset: int  # file offset of the line's first byte
    length: int  # bytes, without the newline
    data: bytes | None  # None when length exceeds the limit (the bytes were not kept)
    head: bytes  # the first bytes, for excerpts
    terminated: bool  # ended by a newline (not by end of file)
    quotes: int  # number of '"' bytes (counted only for single-byte code units)


def _find_aligned(buf: bytearray, newline: bytes, start: int, line_start: int) -> int:
    unit = len(newline)
    i = buf.find(newline, start)
    while i >= 0 and (i - line_start) % unit:
        i = buf.find(newline, i + 1)
    return i


def _split_lines(f: BinaryIO, start: int, newline: bytes, limit: int, *, quotes: bool = False
                 ) -> Iterator[_Line]:
    """Split a binary stream into lines at code-unit-aligned newlines, holding at most about
    ``limit`` plus one read chunk in memory: longer lines are counted and dropped, not kept.
    With ``quotes`` (CSV), the '"' bytes of each line are counted (single-byte units only)."""
    unit = len(newline)
    count_quotes = quotes and unit == 1
    buf = bytearray()
    base = start  # file offset of buf[0]
    pos = 0  # start of the current line in buf
    scan = 0  # where to look for the next newline (everything before it was searched)
    over = False  # the current line exceeded the limit; its bytes before buf[0] are dropped
    over_start = over_length = over_quotes = 0
    over_head = b""
    while True:
        i = _find_aligned(buf, newline, scan, pos)
        if i >= 0:
            n_quotes = buf.count(b'"', pos, i) if count_quotes else 0
            if over:
                yield _Line(over_start, over_length + i - pos, None, over_head, True, over_quotes + n_quotes)
                over = False
            elif i - pos > limit:
                yield _Line(base + pos, i - pos, None, bytes(buf[pos:pos + _HEAD_BYTES]), True, n_quotes)
            else:
                data = bytes(buf[pos:i])
                yield _Line(base + pos, i - pos, data, data[:_HEAD_BYTES], True, n_quotes)
            pos = scan = i + unit
            continue
        rest = len(buf) - pos
        if over or rest > limit:
            # Drop the whole code units searched so far; keep a partial unit for alignment.
            if not over:
                over = True
                over_start, over_length, over_quotes = base + pos, 0, 0
                over_head = bytes(buf[pos:pos + _HEAD_BYTES])
            drop = rest - rest % unit
            over_length += drop
            if count_quotes:
                over_quotes += buf.count(b'"', pos, pos + drop)
            pos += drop
        chunk = f.read(_CHUNK_BYTES)
        if not chunk:
            rest = len(buf) - pos
            if over:
                yield _Line(over_start, over_length + rest, None, over_head, False,
                            over_quotes + (buf.count(b'"', pos) if count_quotes else 0))
            elif rest:
                n_quotes = buf.count(b'"', pos) if count_quotes else 0
                if rest > limit:
                    yield _Line(base + pos, rest, None, bytes(buf[pos:pos + _HEAD_BYTES]), False, n_quotes)
                else:
                    data = bytes(buf[pos:])
                    yield _Line(base + pos, rest, data, data[:_HEAD_BYTES], False, n_quotes)
            return
        scan = len(buf) - (len(buf) - pos) % unit  # whole units searched; compacted below
        del buf[:pos]
        base += pos
        scan -= pos
        pos = 0
        buf += chunk


def _excerpt(raw: bytes, codec: str) -> str:
    return raw.decode(codec, "backslashreplace")[:EXCERPT_CHARS]


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _lone_surrogate(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _build(mapping: dict[str, Any], opts: _Options, *, source: str, location: str, offset: int,
           encoding: str, excerpt: str, escapes: bool = False) -> Record | Rejected:
    """Apply the field rules shared by JSONL objects and CSV rows.

    ``escapes`` says the JSON text had a \\uD800-\\uDFFF escape, which may have produced an
    unpaired surrogate: such a string cannot be encoded (hashed, sent to Elasticsearch) later.
    """
    text_field, id_field, title_field = opts.text_field, opts.id_field, opts.title_field
    reason: str | None = None
    text = mapping.get(text_field)
    raw_id = mapping.get(id_field)
    raw_title = mapping.get(title_field)
    record_id: str | None = None
    title: str | None = None
    if text_field not in mapping:
        reason = f"text field {text_field!r} is missing"
    elif not isinstance(text, str):
        reason = f"text field {text_field!r} is not a string (got {_type_name(text)})"
    elif not text or text.isspace():
        reason = f"text field {text_field!r} is empty"
    elif escapes and _lone_surrogate(text):
        reason = f"text field {text_field!r} has an unpaired surrogate escape"
    elif raw_id is None or raw_id == "":
        pass
    elif isinstance(raw_id, str):
        record_id = raw_id
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        record_id = str(raw_id)
    else:
        reason = f"id field {id_field!r} is not a string or integer (got {_type_name(raw_id)})"
    if reason is None and record_id is not None and len(record_id) > MAX_ID_BYTES // 4:
        size = len(record_id.encode("utf-8", "surrogatepass"))
        if size > MAX_ID_BYTES:
            reason = f"id of {size} bytes exceeds {MAX_ID_BYTES}"
    if reason is None and escapes and _lone_surrogate(record_id):
        reason = f"id field {id_field!r} has an unpaired surrogate escape"
    if reason is None:
        if raw_title is None or raw_title == "":
            pass
        elif isinstance(raw_title, str):
            title = raw_title
            if escapes and _lone_surrogate(title):
                reason = f"title field {title_field!r} has an unpaired surrogate escape"
        elif isinstance(raw_title, (int, float)) and not isinstance(raw_title, bool):
            title = str(raw_title)
        else:
            reason = f"title field {title_field!r} is not a string (got {_type_name(raw_title)})"
    if reason is not None or not isinstance(text, str):
        return Rejected(source, location, reason or "", excerpt, offset)
    fields = {key: value for key, value in mapping.items()
              if key != text_field and key != id_field and key != title_field}
    return Record(id=record_id, text=text, title=title, fields=fields, source=source,
                  location=location, offset=offset, encoding=encoding)


def _too_long(length: int, limit: int) -> str:
    return f"record of {length} bytes exceeds the limit of {limit} bytes"


def _open_binary(path: Path) -> BinaryIO:
    return open(path, "rb")


def _sniff(f: BinaryIO, source: str) -> _Codec | Rejected:
    """Detect the encoding from the first SAMPLE_BYTES and position ``f`` after the BOM."""
    sample = f.read(SAMPLE_BYTES)
    if not sample:
        return Rejected(source, "", "empty file", offset=0)
    try:
        name = _detect_lines(sample, final=len(sample) < SAMPLE_BYTES)
    except DecodeError as exc:
        return Rejected(source, "", exc.reason, sample[:EXCERPT_CHARS].decode("ascii", "backslashreplace"), 0)
    codec = _codec_for(name, sample)
    logger.debug("reading %s as %s", source, name)
    f.seek(codec.bom)
    return codec


def _decode_line(data: bytes, enc: _Codec, path: Path, offset: int) -> tuple[str, str]:
    """Decode one line strictly: ``(text, encoding)``.

    In a GB18030/Big5 file a line that is valid UTF-8 is UTF-8 (files get concatenated; GBK text
    is practically never valid UTF-8). A file that started as pure ASCII is re-examined at its
    first line that is not UTF-8, and may continue as GB18030/Big5.
    """
    if enc.codec in _CJK_CODECS and not data.isascii():
        try:
            return _strip_bom(data.decode("utf-8")), "utf-8"
        except UnicodeDecodeError:
            pass
    try:
        text = data.decode(enc.codec)
    except UnicodeDecodeError:
        if not enc.provisional:
            raise
        enc.provisional = False
        name = _redetect(path, offset)
        if name is None:
            raise
        logger.debug("%s: pure ASCII up to byte %d, continuing as %s", path, offset, name)
        enc.name = enc.codec = name
        return _decode_line(data, enc, path, offset)
    if enc.provisional and not data.isascii():
        enc.provisional = False
    return _strip_bom(text), enc.name


def _redetect(path: Path, offset: int) -> str | None:
    """GB18030/Big5 if that is what the file holds from ``offset`` on, else None."""
    with _open_binary(path) as g:
        g.seek(offset)
        sample = g.read(SAMPLE_BYTES)
    try:
        name = _detect_lines(sample, final=len(sample) < SAMPLE_BYTES)
    except DecodeError:
        return None
    return name if name in _CJK_CODECS else None


def _strip_bom(text: str) -> str:
    """Concatenated files carry BOMs in the middle; a line never starts with U+FEFF on purpose."""
    return text[1:] if text.startswith("\ufeff") else text


def _decode_reason(exc: UnicodeDecodeError, enc: _Codec) -> str:
    return f"cannot decode as {enc.codec}: {exc.reason} at byte {exc.start} of the record"


def _read_jsonl(path: Path, opts: _Options) -> Iterator[Record | Rejected]:
    source = str(path)
    limit = opts.max_record_bytes
    with _open_binary(path) as f:
        enc = _sniff(f, source)
        if isinstance(enc, Rejected):
            if opts.skip is None or not opts.skip(source, 0):
                yield enc
            return
        lineno = 0
        for line in _split_lines(f, enc.bom, enc.newline, limit):
            lineno += 1
            location = f"line {lineno}"
            if line.data is None:
                if opts.skip is None or not opts.skip(source, line.offset):
                    yield Rejected(source, location, _too_long(line.length, limit),
                                   _excerpt(line.head, enc.codec), line.offset)
                continue
            try:
                text, encoding = _decode_line(line.data, enc, path, line.offset)
            except UnicodeDecodeError as exc:
                if opts.skip is None or not opts.skip(source, line.offset):
                    yield Rejected(source, location, _decode_reason(exc, enc), _excerpt(line.head, enc.codec),
                                   line.offset)
                continue
            if not text or text.isspace():
                continue  # a blank line is not a record
            if opts.skip is not None and opts.skip(source, line.offset):
                continue
            excerpt = text[:EXCERPT_CHARS]
            if "\x00" in text:
                yield Rejected(source, location, "raw NUL byte in the line (not valid JSON text)",
                               excerpt.replace("\x00", "\\x00"), line.offset)
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                yield Rejected(source, location, f"invalid JSON: {exc.msg} at column {exc.colno}", excerpt,
                               line.offset)
                continue
            except RecursionError:
                yield Rejected(source, location, "invalid JSON: nested too deeply", excerpt, line.offset)
                continue
            if not isinstance(obj, dict):
                yield Rejected(source, location, f"not a JSON object (got {_json_type(obj)})", excerpt, line.offset)
                continue
            yield _build(obj, opts, source=source, location=location, offset=line.offset,
                         encoding=encoding, excerpt=excerpt,
                         escapes="\\u" in text and _SURROGATE_ESCAPE.search(text) is not None)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null"


class _RowFeeder:
    """Feeds decoded lines to ``csv.reader`` and tracks where each row starts and how big it is.

    Once a row is over the size limit, or one of its lines cannot be decoded, the rest of the
    row is fed as a skeleton (its quote characters and newline only) so the csv module still
    finds where the row ends, without holding the row in memory.
    """

    def __init__(self, lines: Iterator[_Line], enc: _Codec, path: Path, limit: int) -> None:
        self._lines = lines
        self._enc = enc
        self._path = path
        self._limit = limit
        self.next_offset = enc.bom
        self.start = enc.bom
        self.problem: str | None = None
        self.head: bytes = b""
        self.encoding = enc.name

    def begin_row(self) -> None:
        self.start = self.next_offset
        self.problem = None
        self.head = b""
        self.encoding = self._enc.name

    @property
    def row_bytes(self) -> int:
        return self.next_offset - self.start

    def __iter__(self) -> _RowFeeder:
        return self

    def __next__(self) -> str:
        line = next(self._lines)  # StopIteration ends the reader
        self.next_offset = line.offset + line.length + (self._enc.unit if line.terminated else 0)
        if len(self.head) < _HEAD_BYTES:
            self.head += line.head + (self._enc.newline if line.terminated else b"")
        end = "\n" if line.terminated else ""
        if self.problem is None and (line.data is None or self.row_bytes > self._limit):
            self.problem = "too long"
        if self.problem is None:
            assert line.data is not None
            try:
                text, self.encoding = _decode_line(line.data, self._enc, self._path, line.offset)
                return text + end
            except UnicodeDecodeError as exc:
                self.problem = _decode_reason(exc, self._enc)
        if line.data is not None and self._enc.unit > 1:
            quotes = line.data.decode(self._enc.codec, "replace").count('"')
        else:
            quotes = line.quotes
        return '"' * quotes + end


def _read_csv(path: Path, opts: _Options, delimiter: str) -> Iterator[Record | Rejected]:
    source = str(path)
    limit = opts.max_record_bytes
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)  # process-wide; only ever raised (the default is 128 KiB)
    with _open_binary(path) as f:
        enc = _sniff(f, source)
        if isinstance(enc, Rejected):
            if opts.skip is None or not opts.skip(source, 0):
                yield enc
            return
        feeder = _RowFeeder(_split_lines(f, enc.bom, enc.newline, limit, quotes=True), enc, path, limit)
        reader = csv.reader(feeder, delimiter=delimiter, strict=True)

        header: list[str] | None = None
        while header is None:
            feeder.begin_row()
            try:
                row = next(reader)
            except StopIteration:
                yield Rejected(source, "", "empty file", offset=0)
                return
            except csv.Error as exc:
                yield Rejected(source, "header", f"invalid CSV header: {exc}",
                               _excerpt(feeder.head, enc.codec), 0)
                return
            if feeder.problem is not None:
                reason = _too_long(feeder.row_bytes, limit) if feeder.problem == "too long" else feeder.problem
                yield Rejected(source, "header", reason, _excerpt(feeder.head, enc.codec), 0)
                return
            if row:
                header = [name.strip() for name in row]
        for key in (opts.id_field, opts.text_field, opts.title_field):
            if header.count(key) > 1:
                yield Rejected(source, "header", f"CSV header has column {key!r} more than once",
                               delimiter.join(header)[:EXCERPT_CHARS], 0)
                return
        if opts.text_field not in header:
            logger.warning("%s: the CSV header has no column %r; every row will be rejected",
                           source, opts.text_field)

        rowno = 0
        while True:
            feeder.begin_row()
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                rowno += 1
                if opts.skip is None or not opts.skip(source, feeder.start):
                    yield Rejected(source, f"row {rowno}", f"invalid CSV: {exc}",
                                   _excerpt(feeder.head, enc.codec), feeder.start)
                continue
            rowno += 1
            if not row and feeder.problem is None:
                continue  # a blank line is not a record
            if opts.skip is not None and opts.skip(source, feeder.start):
                continue
            location = f"row {rowno}"
            excerpt = _excerpt(feeder.head, enc.codec)
            if feeder.problem == "too long":
                yield Rejected(source, location, _too_long(feeder.row_bytes, limit), excerpt, feeder.start)
            elif feeder.problem is not None:
                yield Rejected(source, location, feeder.problem, excerpt, feeder.start)
            elif len(row) > len(header):
                yield Rejected(source, location,
                               f"row has {len(row)} fields but the header has {len(header)}", excerpt,
                               feeder.start)
            else:
                yield _build(dict(zip(header, row, strict=False)), opts, source=source, location=location,
                             offset=feeder.start, encoding=feeder.encoding, excerpt=excerpt)


def _read_txt(path: Path, root: Path | None, opts: _Options) -> Iterator[Record | Rejected]:
    source = str(path)
    if opts.skip is not None and opts.skip(source, 0):
        return
    limit = opts.max_record_bytes
    with _open_binary(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            yield Rejected(source, "", _too_long(size, limit), offset=0)
            return
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while we looked
        yield Rejected(source, "", _too_long(len(data), limit), offset=0)
        return
    if not data:
        yield Rejected(source, "", "empty file", offset=0)
        return
    try:
        text, encoding = decode_bytes(data)
    except DecodeError as exc:
        yield Rejected(source, "", exc.reason, data[:EXCERPT_CHARS].decode("ascii", "backslashreplace"), 0)
        return
    if not text or text.isspace():
        yield Rejected(source, "", "empty file", offset=0)
        return
    record_id = str(path) if root is None else path.relative_to(root).as_posix()
    size = len(record_id.encode("utf-8", "surrogateescape"))
    if size > MAX_ID_BYTES:
        yield Rejected(source, "", f"id of {size} bytes exceeds {MAX_ID_BYTES}", text[:EXCERPT_CHARS], 0)
        return
    yield Record(id=record_id, text=text, title=None, fields={}, source=source, location="",
                 offset=0, encoding=encoding)


def read_records(
    paths: Iterable[str | Path],
    *,
    format: str = "auto",
    id_field: str = "id",
    text_field: str = "text",
    title_field: str = "title",
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    skip: Callable[[str, int], bool] | None = None,
    skip_file: Callable[[str], bool] | None = None,
) -> Iterator[Record | Rejected]:
    """Stream the records of files and directories, in a deterministic order.

    ``format`` is 'auto' (by file name, see :func:`detect_format`), 'txt', 'jsonl', 'csv' or
    'tsv' ('csv' reads .tsv files with tabs too). ``skip(source, offset)`` is asked for every
    record start (not for blank lines) and a True answer drops that record silently, so a resumed
    run can pass over what it already did; txt files are asked with offset 0 before being read.
    Rejections carry their offset and are asked the same way. ``skip_file(source)`` is asked before a
    file is opened: True means a resumed run finished it, and it is not read at all.
    Everything else yields a Record or a Rejected. Raises
    :class:`~esdedup.errors.ConfigError` at once for a bad ``format`` or ``max_record_bytes``.
    """
    if format not in _FORMATS:
        raise ConfigError(f"unknown input format {format!r}; use one of {', '.join(sorted(_FORMATS))}")
    if max_record_bytes < 1:
        raise ConfigError(f"max_record_bytes must be positive, got {max_record_bytes}")
    opts = _Options(id_field, text_field, title_field, max_record_bytes, skip, skip_file)
    return _read_all(_as_list(paths), format, opts)


def _read_all(paths: list[Path], format: str, opts: _Options) -> Iterator[Record | Rejected]:
    for item in _Walker().walk(paths):
        if isinstance(item, Rejected):
            if opts.skip is None or item.offset is None or not opts.skip(item.source, item.offset):
                yield item
            continue
        path, root = item
        if opts.skip_file is not None and opts.skip_file(str(path)):
            continue  # finished by the run being resumed: not even opened
        fmt = detect_format(path) if format == "auto" else format
        try:
            if fmt == "jsonl":
                yield from _read_jsonl(path, opts)
            elif fmt in ("csv", "tsv"):
                tab = fmt == "tsv" or path.name.lower().endswith(".tsv")
                yield from _read_csv(path, opts, "\t" if tab else ",")
            else:
                yield from _read_txt(path, root, opts)
        except OSError as exc:
            yield Rejected(str(path), "", _os_reason(exc, path))
