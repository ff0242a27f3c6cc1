"""The CLI's logging: jieba's announcements of its dictionary ("Building prefix dict ...", "Loading model
...") never reach a command-line user, though the CLI no longer imports jieba to quiet it (jieba sets its own
logger's level when it is imported, in whichever process tokenizes)."""
from __future__ import annotations

import json

from tests.reliability import run_cli


def test_jieba_announces_nothing_on_the_command_line(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": f"床前明月光，疑是地上霜。第{i}首。"}, ensure_ascii=False) + "\n"
                            for i in range(3)), "utf-8")
    user_dict = tmp_path / "user.dict"
    user_dict.write_text("明月光 5\n", "utf-8")  # a user dictionary: jieba itself cuts the texts
    for workers in ("1", "2"):
        # Run in the test's folder: the default dead-letter file goes beside the working directory.
        r = run_cli("ingest", path, "--index", f"quiet{workers}", "--data-dir", tmp_path / "data", "--workers",
                    workers, "--tokenizer", "jieba", "--user-dict", user_dict, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "read 3 = indexed 3" in r.stdout
        assert "prefix dict" not in r.stderr and "Loading model" not in r.stderr and "jieba" not in r.stderr, r.stderr
