"""Review page times: every page of `esdedup review` over one existing index, as HTTP requests.

    python bench/review.py --data-dir DIR --index NAME            # the embedded store
    python bench/review.py --es URL --index NAME                  # Elasticsearch
    python bench/review.py --data-dir DIR --index NAME --repeat 9 --query 明月

The app is the one `esdedup review` serves (`esdedup.review.create_app` over a prepared `Review`), driven
through Starlette's TestClient (the ASGI app in this process: the time is the page's, not a socket's).
It times `Review.prepare` (the start), then each page ``--repeat`` times: the overview, the cluster list
(page 1 and a page halfway down), the largest cluster and one from that deep page, a pair, the review
queue, tuning (after ``--labels`` labels posted from the queue to a labels file in a temporary folder,
never next to the index), a search, and a cluster search. Each row gives the first request, the median
and the largest, in milliseconds, and the page's size. Nothing is written to the index.

Build an index to measure with bench/scale.py's document generator and `esdedup ingest` (see BENCHMARKS.md).
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from esdedup.api import open_store  # noqa: E402
from esdedup.review import Review, create_app  # noqa: E402
from esdedup.review.pages import CLUSTERS_PER_PAGE  # noqa: E402


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--data-dir", help="the embedded store's folder")
    ap.add_argument("--es", help="an Elasticsearch URL (instead of --data-dir)")
    ap.add_argument("--repeat", type=int, default=7, help="requests per page")
    ap.add_argument("--labels", type=int, default=20, help="labels posted from the queue before /tuning")
    ap.add_argument("--query", default="明月", help="the search (a common word of the poems)")
    ap.add_argument("--rare", default="", help="a second search, rarer (default: the start of a deep cluster's text)")
    return ap.parse_args()


def timed(client: TestClient, url: str, repeat: int) -> tuple[list[float], int]:
    times = []
    size = 0
    for _ in range(repeat):
        t = time.perf_counter()
        resp = client.get(url)
        times.append((time.perf_counter() - t) * 1000)
        if resp.status_code != 200:
            raise SystemExit(f"{url}: {resp.status_code}\n{resp.text[:500]}")
        size = len(resp.content)
    return times, size


def main() -> None:
    args = parse_args()
    if bool(args.es) == bool(args.data_dir):
        raise SystemExit("give --data-dir or --es")
    store = open_store(args.index, es_url=args.es, data_dir=args.data_dir)
    work = corpora.scratch_folder("review-bench-")
    t = time.perf_counter()
    review = Review(store, work / "labels.jsonl").prepare()
    start = time.perf_counter() - t
    client = TestClient(create_app(review))

    def on_store(fn, *a, **kw):  # the store belongs to the review's thread (its SQLite connection does)
        return review._worker.submit(lambda: fn(*a, **kw)).result()

    summary = on_store(store.cluster_summary)
    count = on_store(store.count)
    pages = max(1, -(-summary.clusters // CLUSTERS_PER_PAGE))
    deep = pages // 2
    largest = on_store(store.cluster_page, offset=0, size=1)[0].cluster_id
    deep_row = on_store(store.cluster_page, offset=deep * CLUSTERS_PER_PAGE, size=1)[0].cluster_id
    queue = review.survey.queue(set())
    rare = args.rare or (on_store(store.get_source, deep_row) or {}).get("text", "")[:6]
    for item in queue[:args.labels]:
        client.post("/label", data={"a": item.a, "b": item.b, "label": "1" if len(item.a) % 2 else "0"},
                    headers={"origin": "http://testserver"}, follow_redirects=False)
    q = lambda path, **kw: path + ("?" + urlencode(kw) if kw else "")  # noqa: E731
    rows = [("overview", q("/")), ("clusters, page 1", q("/clusters")),
            (f"clusters, page {deep + 1:,} of {pages:,}", q("/clusters", page=deep)),
            ("the largest cluster", q("/cluster", id=largest)), ("a cluster of that deep page", q("/cluster", id=deep_row)),
            ("a pair", q("/pair", a=queue[0].a, b=queue[0].b) if queue else q("/pair", a=largest, b=deep_row)),
            ("review queue", q("/review")), (f"tuning ({len(review.labels)} labels)", q("/tuning")),
            (f"search “{args.query}”", q("/search", q=args.query)), (f"search “{rare}”", q("/search", q=rare)),
            (f"clusters holding “{args.query}”", q("/clusters", q=args.query))]
    load = os.getloadavg()
    out = [f"`python bench/review.py {' '.join(sys.argv[1:])}`, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
           f"load {load[0]:.1f}; {count:,} documents, {summary.clusters:,} clusters of two or more, "
           f"{type(store).__name__}; start (`Review.prepare`): {start:.2f} s "
           f"({review.survey.pairs:,} candidate pairs of {review.survey.sampled or 'all'} documents)", "",
           "| page | first ms | median ms | max ms | KB |", "|---|---|---|---|---|"]
    for name, url in rows:
        times, size = timed(client, url, args.repeat)
        out.append(f"| {name} | {times[0]:.0f} | {statistics.median(times):.0f} | {max(times):.0f} | {size / 1000:.0f} |")
        print(out[-1], file=sys.stderr, flush=True)
    review.close()
    print("\n".join(out))


if __name__ == "__main__":
    main()
