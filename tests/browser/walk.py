"""The walk a person takes through the review page, in a real browser: overview -> cluster -> label (button
and keyboard) -> tuning -> search, asserting what the page shows. Shared by the embedded-store and the
Elasticsearch tests."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.browser.browser import screenshot


def walk(page: Any, url: str, labels: Path, *, documents: int) -> None:
    from playwright.sync_api import expect

    page.goto(url)
    expect(page.locator("#stat-documents")).to_have_text(str(documents))
    expect(page.locator("h1")).to_have_text("Overview")
    expect(page.locator("figure.chart").first).to_contain_text("Clusters by size")
    expect(page.locator(".rule")).to_contain_text("Jaccard ≥ 0.5 or containment ≥ 0.8")
    screenshot(page, "overview")

    # Clusters: the list, a search, then one cluster.
    page.click("#nav-clusters")
    expect(page.locator("#cluster-total")).to_contain_text("largest first")
    page.fill("#cluster-query", "高铁")
    page.keyboard.press("Enter")
    expect(page.locator("#cluster-total")).to_have_text("1 cluster holding “高铁”, largest first")
    screenshot(page, "clusters")
    page.click("a.cluster-link")
    expect(page.locator("h1")).to_contain_text("新高铁线路今日开通")
    member = page.locator("#member-1")
    expect(member.locator(".verdict")).to_have_text("near-duplicate")
    expect(member.locator("mark").first).to_be_visible()  # the differences, marked
    expect(member.locator(".decider")).to_have_text("jaccard")

    # A label by button: saved at once, shown on the page it returns to.
    member.locator("#label-same").click()
    expect(page.locator("#member-1 #current-label")).to_have_text("labelled: same story")
    expect(page.locator("#labelled-count")).to_have_text("1 labelled")
    screenshot(page, "cluster")
    assert [json.loads(x) for x in labels.read_text("utf-8").splitlines()] == [
        {"a": "rail-1", "b": "rail-2", "label": 1}]

    # The review queue, labelled by keyboard.
    page.click("#nav-review")
    expect(page.locator("#queue-reason")).to_contain_text("threshold")
    screenshot(page, "review")
    a = page.locator("input[name=a]").first.get_attribute("value")
    b = page.locator("input[name=b]").first.get_attribute("value")
    page.keyboard.press("d")
    expect(page.locator("#labelled-count")).to_have_text("2 labelled")
    rows = {(r["a"], r["b"]): r["label"] for r in map(json.loads, labels.read_text("utf-8").splitlines())}
    assert rows[(min(a, b), max(a, b))] == 0 and len(rows) == 2

    # Tuning, with the two labels.
    page.click("#nav-tuning")
    expect(page.locator("#tuning-summary")).to_contain_text("2 labelled pairs (1 same story)")
    expect(page.locator("#row-best")).to_be_visible()
    expect(page.locator("pre.command").first).to_contain_text("esdedup dups --index")
    expect(page.locator("figure.chart")).to_have_count(4)
    screenshot(page, "tuning")

    # Search: the raw hits beside diversify(hits), the dropped one linked to the hit it duplicates.
    page.click("#nav-search")
    page.fill("#search-query", "高铁")
    page.keyboard.press("Enter")
    expect(page.locator("#raw-hits li")).to_have_count(2)
    expect(page.locator("#kept-hits li")).to_have_count(1)
    # Which of the two ranks first is the store's ranking; the other duplicates it.
    expect(page.locator("#dropped-hits li")).to_contain_text(re.compile(r"rail-(1 duplicates\s+rail-2|2 duplicates\s+rail-1)"))
    expect(page.locator("#dropped-hits .decider")).to_have_text("jaccard")
    screenshot(page, "search")
    page.click("#dropped-hits a.dup-link")
    expect(page.locator("h1")).to_have_text("Pair")
    expect(page.locator("#current-label")).to_have_text("labelled: same story")
