"""Bad input through the real ingest: broken encodings, malformed records, huge lines, hostile file trees.

One corpus directory (made under tmp_path) holds every case next to good records. The CLI ingests it as a
subprocess, into the embedded store and once into a real Elasticsearch node, and then: every bad record is
in the dead-letter file with its file, line/row and reason; every good record is stored with its exact
text; and the summary adds up (read == indexed + skipped + failed).

Files that must be unreadable (mode 000) are unreadable to root too only without CAP_DAC_OVERRIDE /
CAP_DAC_READ_SEARCH, so when the tests run as root the CLI runs under ``setpriv`` with those two
capabilities dropped from its bounding set (everything else unchanged).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.corpus import SENTENCES
from tests.reliability import (
    balanced,
    cli_cmd,
    cli_env,
    dead_letters,
    last_json,
    make_docs,
    make_text,
    report,
    write_corpus,
)

TRADITIONAL = [
    "臺灣的氣象單位今天發佈颱風警報，提醒民眾注意強風豪雨，並且做好防災準備。",
    "這家公司宣佈將在明年擴大投資，預計增加兩千個工作機會，帶動地方經濟發展。",
    "圖書館推出夜間閱讀服務，每週五和週六開放到晚上十點，歡迎市民多加利用。",
    "研究人員發現一種新的深海魚類，牠能夠在極端的高壓和低溫環境中生存下來。",
    "國際電影節共收到來自八十多個國家和地區的三千多部參賽影片，盛況空前。",
]


@dataclass
class Expect:
    good: dict[str, str] = field(default_factory=dict)  # id -> exact text
    bad: list[tuple[str, str, str]] = field(default_factory=list)  # (source, location, reason part)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (source, location)


def _jsonl(*objs: object) -> str:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs)


def build_corpus(root: Path, *, unreadable: bool = True) -> Expect:
    """Write the bad-input corpus under ``root``; returns what ingesting it must give."""
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest import ids_for_texts

    rng = random.Random(99)
    ex = Expect()
    root.mkdir(parents=True)
    (root / "jsonl").mkdir()

    # -- JSONL: malformed lines, wrong field types, huge ids, duplicates, undecodable bytes -------------
    path = root / "jsonl" / "records.jsonl"
    src = str(path)
    t = [make_text(rng) for _ in range(8)]
    lines: list[bytes] = [
        json.dumps({"id": "g-json-1", "text": t[0]}, ensure_ascii=False).encode(),
        b'{"id": "truncated", "text": "abc',
        b"[1, 2, 3]",
        b'{"id": "no-text"}',
        b'{"id": "num-text", "text": 123}',
        b'{"id": "null-text", "text": null}',
        b'{"id": "list-text", "text": ["a"]}',
        b'{"id": "blank-text", "text": "   "}',
        json.dumps({"id": "x" * 10240, "text": t[1]}).encode(),
        json.dumps({"id": "g-json-2", "text": t[2]}, ensure_ascii=False).encode(),
        json.dumps({"id": "g-json-1", "text": t[3]}, ensure_ascii=False).encode(),
        json.dumps({"id": "g-json-2", "text": t[2]}, ensure_ascii=False).encode(),
        b'{"id": "bad-bytes", "text": "abc \xff\xfe\xfd def"}',
        b"",
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps({"id": "g-json-3", "title": "标题", "url": "https://example.test/3", "text": t[4]},
                   ensure_ascii=False).encode(),
        json.dumps({"id": 12345, "text": t[5]}, ensure_ascii=False).encode(),
        json.dumps({"text": t[6]}, ensure_ascii=False).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    ex.good.update({"g-json-1": t[0], "g-json-2": t[2], "g-json-3": t[4], "12345": t[5]})
    ex.good[ids_for_texts([t[6]], FingerprintConfig(tokenizer="rjieba"))[0]] = t[6]
    ex.bad += [
        (src, "line 2", "invalid JSON"),
        (src, "line 3", "not a JSON object"),
        (src, "line 4", "text field 'text' is missing"),
        (src, "line 5", "text field 'text' is not a string"),
        (src, "line 6", "text field 'text' is not a string"),
        (src, "line 7", "text field 'text' is not a string"),
        (src, "line 8", "text field 'text' is empty"),
        (src, "line 9", "id of 10240 bytes exceeds 512"),
        (src, "line 11", "duplicate id with different text"),
        (src, "line 13", "cannot decode"),
        (src, "line 15", "nested too deeply"),
    ]
    ex.skipped.append((src, "line 12"))

    # A raw NUL byte in one line of an otherwise fine file: that line only.
    path = root / "jsonl" / "nul.jsonl"
    docs = [{"id": f"g-nul-{i}", "text": make_text(rng)} for i in range(20)]
    raw = [json.dumps(d, ensure_ascii=False).encode() for d in docs]
    raw.insert(10, b'{"id": "raw-nul", "text": "before\x00after"}')
    path.write_bytes(b"\n".join(raw) + b"\n")
    ex.good.update((d["id"], d["text"]) for d in docs)
    ex.bad.append((str(path), "line 11", "NUL"))

    # JSONL in UTF-16 with a BOM, and in GBK without any declaration.
    docs = [{"id": f"g-u16-{i}", "text": SENTENCES[i] + SENTENCES[i + 5]} for i in range(3)]
    (root / "jsonl" / "utf16-bom.jsonl").write_bytes(_jsonl(*docs).encode("utf-16"))
    ex.good.update((d["id"], d["text"]) for d in docs)
    docs = [{"id": f"g-gbk-{i}", "text": SENTENCES[i + 1] + SENTENCES[i + 12]} for i in range(3)]
    (root / "jsonl" / "gbk.jsonl").write_bytes(_jsonl(*docs).encode("gbk"))
    ex.good.update((d["id"], d["text"]) for d in docs)

    # -- whole text files: legacy encodings without declaration, UTF-16, empty, binary, undecodable ------
    txt = root / "txt"
    txt.mkdir()
    simplified = "".join(SENTENCES[:8])
    traditional = "".join(TRADITIONAL)
    cases = {
        "gbk.txt": (simplified, simplified.encode("gbk")),
        "big5.txt": (traditional, traditional.encode("big5")),
        "utf16le-bom.txt": (simplified, simplified.encode("utf-16")),  # BOM + little-endian
        "utf16le.txt": (traditional, traditional.encode("utf-16-le")),
        "utf16be.txt": (simplified, simplified.encode("utf-16-be")),
    }
    for name, (text, data) in cases.items():
        (txt / name).write_bytes(data)
        ex.good[f"txt/{name}"] = text
    (txt / "empty.txt").write_bytes(b"")
    (txt / "binary.txt").write_bytes(b"PK\x03\x04\x00\x00\x08\x00" + bytes(range(256)) * 8)
    (txt / "invalid.txt").write_bytes(b"plain ascii then \xff\xff\xfe and more \x80\x80 bytes, odd length!")
    ex.bad += [(str(txt / "empty.txt"), "", "empty file"),
               (str(txt / "binary.txt"), "", "binary"),
               (str(txt / "invalid.txt"), "", "cannot decode")]

    # -- CSV with quoted fields spanning lines ---------------------------------------------------------------
    csv_dir = root / "csv"
    csv_dir.mkdir()
    multi = SENTENCES[2] + "\n第二段：" + SENTENCES[3] + "\r\n\n第三段，带“引号”和,逗号。"
    rows = [
        'id,title,text',
        f'c1,多行,"{multi.replace(chr(34), chr(34) * 2)}"',
        f'c2,普通,{SENTENCES[4]}{SENTENCES[6]}',
        f'c3,多余,{SENTENCES[5]},extra',
        'c4,空的,',
    ]
    (csv_dir / "news.csv").write_text("\n".join(rows) + "\n", "utf-8")
    ex.good.update({"c1": multi, "c2": SENTENCES[4] + SENTENCES[6]})
    ex.bad += [(str(csv_dir / "news.csv"), "row 3", "row has 4 fields but the header has 3"),
               (str(csv_dir / "news.csv"), "row 4", "text field 'text' is empty")]

    # -- a hostile tree: symlink loop, dangling symlink, FIFO, unreadable file and directory ---------------
    tree = root / "tree"
    tree.mkdir()
    (tree / "ok.txt").write_text(SENTENCES[7] + SENTENCES[8], "utf-8")
    ex.good["tree/ok.txt"] = SENTENCES[7] + SENTENCES[8]
    (tree / "loop").symlink_to("..")
    (tree / "dangling.jsonl").symlink_to("does-not-exist.jsonl")
    os.mkfifo(tree / "fifo")
    ex.bad += [(str(tree / "loop"), "", "symlink loop"),
               (str(tree / "dangling.jsonl"), "", "broken symlink"),
               (str(tree / "fifo"), "", "not a regular file")]
    if unreadable:
        locked = root / "locked"
        locked.mkdir()
        (locked / "secret.jsonl").write_text(_jsonl({"id": "secret", "text": "看不到"}), "utf-8")
        (locked / "secret.jsonl").chmod(0)
        (locked / "closed").mkdir()
        (locked / "closed" / "inside.txt").write_text("看不到", "utf-8")
        (locked / "closed").chmod(0)
        ex.bad += [(str(locked / "closed"), "", "permission denied"),
                   (str(locked / "secret.jsonl"), "", "permission denied")]
    return ex


def _unprivileged(cmd: list[str]) -> list[str]:
    """As root, drop the two capabilities that let root read mode-000 files."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root needs setpriv (util-linux) to make mode-000 files unreadable")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", *cmd]


def _ingest(root: Path, tmp: Path, *extra: object, index: str = "bad-input"
            ) -> tuple[subprocess.CompletedProcess[str], Path]:
    dl = tmp / "dead.jsonl"
    cmd = _unprivileged(cli_cmd("ingest", root, "--index", index, "--tokenizer", "rjieba", "--json",
                                "--workers", "1", "--dead-letter", dl, "--checkpoint", tmp / "ck.json", *extra))
    r = subprocess.run(cmd, env=cli_env(), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    return r, dl


def _check_run(r: subprocess.CompletedProcess[str], dl: Path, ex: Expect) -> dict:
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 1, (r.returncode, r.stderr[-3000:])  # 1: failures in the data
    s = last_json(r.stdout)
    assert balanced(s), s
    letters = dead_letters(dl)
    rejected = [d for d in letters if d["kind"] == "rejected"]
    for source, location, reason in ex.bad:
        hits = [d for d in rejected if d["source"] == source and d["location"] == location]
        assert len(hits) == 1, (source, location, reason, [d for d in rejected if d["source"] == source])
        assert reason in hits[0]["reason"], (source, location, hits[0]["reason"])
    assert len(rejected) == len(ex.bad), [(d["source"], d["location"], d["reason"]) for d in rejected]
    skipped = [(d["source"], d["location"]) for d in letters if d["kind"] == "skipped"]
    assert sorted(skipped) == sorted(ex.skipped)
    assert s["failed"] == len(ex.bad) and s["skipped"] == len(ex.skipped) and s["indexed"] == len(ex.good), s
    assert s["read"] == len(ex.bad) + len(ex.skipped) + len(ex.good)
    return s


def test_bad_input_local_store(tmp_path):
    root = tmp_path / "corpus"
    ex = build_corpus(root)
    r, dl = _ingest(root, tmp_path, "--data-dir", tmp_path / "data")
    s = _check_run(r, dl, ex)
    from esdedup.store.local import LocalStore

    store = LocalStore("bad-input", tmp_path / "data")
    store.open(None, create=False)
    try:
        assert store.count() == len(ex.good)
        for doc_id, text in ex.good.items():
            src = store.get_source(doc_id)
            assert src is not None and src["text"] == text, doc_id
    finally:
        store.close()
    report("bad_input_local", {"summary": s, "bad_cases": len(ex.bad)})


def test_bad_input_elasticsearch(tmp_path, es_url, es_client, fresh_index):
    root = tmp_path / "corpus"
    ex = build_corpus(root)
    r, dl = _ingest(root, tmp_path, "--es", es_url, index=fresh_index)
    s = _check_run(r, dl, ex)
    es_client.indices.refresh(index=fresh_index)
    assert es_client.count(index=fresh_index)["count"] == len(ex.good)
    got = es_client.mget(index=fresh_index, ids=list(ex.good), source_includes=["text"])["docs"]
    assert all(d["found"] and d["_source"]["text"] == ex.good[d["_id"]] for d in got)
    report("bad_input_es", {"summary": s})


def test_100mb_line_is_rejected_without_holding_it(tmp_path):
    """A 100 MB JSONL line between good ones: rejected with the size reason; the reader never holds much
    more than the 64 MiB record limit (peak RSS of the CLI process measured by a wrapper process)."""
    path = tmp_path / "huge.jsonl"
    good = [{"id": f"h{i}", "text": make_text(random.Random(i))} for i in range(4)]
    head, tail = b'{"id": "huge", "text": "', b'"}'
    block = ("长" * 1000).encode() * 100  # 300 KB
    blocks = 100 * 2**20 // len(block) + 1
    line_bytes = len(head) + blocks * len(block) + len(tail)
    with open(path, "wb") as fh:
        fh.write(_jsonl(*good[:2]).encode())
        fh.write(head)
        for _ in range(blocks):
            fh.write(block)
        fh.write(tail + b"\n")
        fh.write(_jsonl(*good[2:]).encode())
    size = path.stat().st_size
    assert size > 100 * 2**20

    def peak_rss_mb(target: Path, tmp: Path) -> tuple[subprocess.CompletedProcess[str], float]:
        dl = tmp / "dl.jsonl"
        inner = cli_cmd("ingest", target, "--index", "huge", "--data-dir", tmp / "data", "--tokenizer", "rjieba",
                        "--json", "--workers", "1", "--dead-letter", dl, "--checkpoint", tmp / "ck.json")
        wrapper = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
                   "print('PEAK_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
                   "sys.exit(r.returncode)")
        r = subprocess.run([sys.executable, "-c", wrapper, *inner], env=cli_env(), capture_output=True, text=True,
                           timeout=600, stdin=subprocess.DEVNULL)
        peak = next(int(line.split()[1]) for line in r.stderr.splitlines() if line.startswith("PEAK_KB"))
        return r, peak / 1024

    small = tmp_path / "small.jsonl"
    small.write_text(_jsonl(*good), "utf-8")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, baseline = peak_rss_mb(small, tmp_path / "a")
    r, peak = peak_rss_mb(path, tmp_path / "b")
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 1, r.stderr[-3000:]
    s = last_json(r.stdout)
    assert s["read"] == 5 and s["indexed"] == 4 and s["failed"] == 1 and balanced(s), s
    (letter,) = dead_letters(tmp_path / "b" / "dl.jsonl")
    assert letter["location"] == "line 3" and letter["source"] == str(path)
    assert letter["reason"] == f"record of {line_bytes} bytes exceeds the limit of {64 * 2**20} bytes", letter
    limit_mb = 64
    assert peak - baseline < limit_mb + 48, (baseline, peak)
    report("huge_line", {"file_mb": round(size / 2**20, 1), "baseline_rss_mb": round(baseline, 1),
                         "peak_rss_mb": round(peak, 1), "extra_mb": round(peak - baseline, 1)})


# -- reader side: ids of files, file names, NUL bytes, numbers and surrogates, encodings, resources -------------

def _cli_ingest(tmp: Path, *paths: object, extra: tuple[object, ...] = (), cwd: Path | None = None,
                index: str = "probe") -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    from tests.reliability import run_cli

    dl = tmp / "dead.jsonl"
    r = run_cli("ingest", *paths, "--index", index, "--data-dir", tmp / "data", "--tokenizer", "rjieba", "--json",
                "--workers", "1", "--dead-letter", dl, "--checkpoint", tmp / "ck.json", *extra, cwd=cwd, timeout=300)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return r, dead_letters(dl)


def test_same_file_name_in_two_folders_gives_two_documents(tmp_path):
    """`ingest y/2023 y/2024`, each holding 001.txt: both are documents, under ids that are unique across the
    folders given and the same when the same arguments run again (the second run creates nothing)."""
    rng = random.Random(3)
    texts = [make_text(rng), make_text(rng)]
    for year, text in zip(("2023", "2024"), texts):
        (tmp_path / "y" / year).mkdir(parents=True)
        (tmp_path / "y" / year / "001.txt").write_text(text, "utf-8")
    r, letters = _cli_ingest(tmp_path, "y/2023", "y/2024", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    s = last_json(r.stdout)
    assert (s["read"], s["indexed"], s["created"], s["failed"]) == (2, 2, 2, 0) and balanced(s), s
    assert letters == []
    from esdedup.store.local import LocalStore

    store = LocalStore("probe", tmp_path / "data")
    store.open(None)
    assert set(store.get(["2023/001.txt", "2024/001.txt", "001.txt"])) == {"2023/001.txt", "2024/001.txt"}
    store.close()
    r, _ = _cli_ingest(tmp_path, "y/2023/", "./y/2024", cwd=tmp_path)
    assert r.returncode == 0 and last_json(r.stdout)["created"] == 0, r.stderr[-2000:]


def test_resume_finds_the_checkpoint_whatever_the_spelling_of_the_path(tmp_path):
    corpus = tmp_path / "corpus"
    write_corpus(corpus / "a.jsonl", 30, prefix="a")
    write_corpus(corpus / "b.jsonl", 30, prefix="b", seed=2)
    r, _ = _cli_ingest(tmp_path, "corpus", cwd=tmp_path)
    assert r.returncode == 0 and last_json(r.stdout)["read"] == 60, r.stderr[-2000:]
    for spelling in (str(corpus), "./corpus/../corpus/"):
        r, _ = _cli_ingest(tmp_path, spelling, extra=("--resume",), cwd=tmp_path)
        s = last_json(r.stdout)
        assert r.returncode == 0 and (s["read"], s["resumed_files"]) == (0, 2), (spelling, s)


def test_mistyped_input_path_is_a_usage_error_that_creates_nothing(tmp_path):
    r, _ = _cli_ingest(tmp_path, "nosuchdir", cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.strip() == "Error: input path does not exist: nosuchdir (no such file or directory)"
    assert not (tmp_path / "data" / "probe.sqlite").exists()


def test_file_names_that_are_not_utf8_are_carried_and_checkpointed(tmp_path):
    folder = tmp_path / "gbk-names"
    folder.mkdir()
    good, empty = "中文.txt".encode("gbk"), "空的.txt".encode("gbk")
    with open(os.path.join(os.fsencode(folder), good), "w", encoding="utf-8") as fh:
        fh.write(make_text(random.Random(5)))
    open(os.path.join(os.fsencode(folder), empty), "wb").close()
    r, letters = _cli_ingest(tmp_path, folder)
    assert r.returncode == 1, r.stderr[-2000:]  # the empty file failed; nothing crashed
    s = last_json(r.stdout)
    assert (s["read"], s["indexed"], s["failed"]) == (2, 1, 1), s
    [letter] = letters
    assert letter["source"] == f"{folder}/" + empty.decode("utf-8", "backslashreplace")
    assert letter["reason"] == "empty file"
    checkpoint = json.loads((tmp_path / "ck.json").read_text("utf-8"))
    assert f"{folder}/\\xd6\\xd0\\xce\\xc4.txt" in checkpoint["files"]
    assert not list(tmp_path.glob("*.tmp"))
    from esdedup.store.local import LocalStore

    store = LocalStore("probe", tmp_path / "data")
    store.open(None, create=False)
    try:
        assert store.get_source("\\xd6\\xd0\\xce\\xc4.txt") is not None
    finally:
        store.close()


def test_one_bad_value_costs_one_line_not_the_batch(tmp_path):
    docs = make_docs(40, prefix="v")
    lines = [json.dumps(d, ensure_ascii=False) for d in docs]
    lines[5] = '{"id": "big", "text": "正文", "n": ' + "7" * 4301 + "}"
    lines[9] = '{"id": "sur", "text": "正文", "url": "http://e/\\ud800"}'
    lines[13] = '{"id": "nan", "text": "正文", "score": NaN}'
    lines[17] = '{"id": "key", "text": "正文", "\\udfffk": 1}'
    (tmp_path / "v.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    r, letters = _cli_ingest(tmp_path, tmp_path / "v.jsonl")
    assert r.returncode == 1, r.stderr[-2000:]
    s = last_json(r.stdout)
    assert (s["read"], s["indexed"], s["failed"]) == (40, 36, 4) and balanced(s), s
    assert [(d["location"], d["reason"].split(" (")[0]) for d in letters] == [
        ("line 6", "invalid JSON: a number cannot be read"),
        ("line 10", "field 'url' has an unpaired surrogate escape"),
        ("line 14", "invalid JSON: NaN is not a JSON number"),
        ("line 18", "field name '\\udfffk' has an unpaired surrogate escape"),
    ]


def test_compare_and_similar_refuse_devices_and_fifos(tmp_path):
    from tests.reliability import run_cli

    text = tmp_path / "a.txt"
    text.write_text(make_text(random.Random(1)), "utf-8")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for other in ("/dev/zero", str(fifo)):
        r = run_cli("compare", text, other, timeout=120)
        assert r.returncode == 1, (other, r.returncode, r.stderr[-2000:])
        assert r.stderr.strip() == f"Error: {other}: not a regular file (FIFOs and devices cannot be read whole)"
    r, _ = _cli_ingest(tmp_path, text)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run_cli("similar", "--index", "probe", "--data-dir", tmp_path / "data", "--file", fifo, timeout=120)
    assert r.returncode == 1 and "not a regular file" in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("option, device", [("--synonyms", "/dev/zero"), ("--user-dict", "/dev/zero"),
                                            ("--stopwords-file", "/dev/urandom"), ("--idf", "fifo")])
def test_resource_options_on_devices_and_fifos_are_refused_before_any_work(tmp_path, option, device):
    """A resource file that is a device or a FIFO would never end (or never answer): refused with exit 2
    before the store is created or a record read."""
    from tests.reliability import run_cli

    if device == "fifo":
        device = str(tmp_path / "pipe")
        os.mkfifo(device)
    text = tmp_path / "a.jsonl"
    text.write_text(json.dumps({"id": "a", "text": make_text(random.Random(2))}, ensure_ascii=False) + "\n", "utf-8")
    r = run_cli("ingest", text, "--index", "probe", "--data-dir", tmp_path / "data", option, device, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "not a regular file" in r.stderr and device in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "data").exists()
    r = run_cli("compare", text, text, option, device, timeout=60)
    assert r.returncode == 2 and "not a regular file" in r.stderr, (r.returncode, r.stderr[-2000:])


def test_warnings_escape_what_a_terminal_would_act_on_in_file_names(tmp_path):
    """A file name with an escape sequence (one that retitles the terminal) is shown escaped in warnings,
    as on Error lines and in dead letters."""
    from tests.reliability import run_cli

    folder = tmp_path / "in"
    folder.mkdir()
    name = "x\x1b]0;PWNED\x07.csv"
    (folder / name).write_text("id,body\n1,今天天气很好\n", "utf-8")
    (folder / f".{name}").write_text("id,text\n1,今天天气很好\n", "utf-8")
    r = run_cli("ingest", folder, "--index", "probe", "--data-dir", tmp_path / "data", "--tokenizer", "rjieba",
                "--workers", "1", "--dead-letter", tmp_path / "dl.jsonl", timeout=300)
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr, r.stderr
    assert "x\\x1b]0;PWNED\\x07.csv" in r.stderr and "has no column 'text'" in r.stderr, r.stderr
    assert "hidden file(s)" in r.stderr, r.stderr
