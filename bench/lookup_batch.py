"""Ingest into an index that already holds documents: every batch asks the store for candidates.

    python bench/lookup_batch.py --docs 50000             # starts a local node with scripts/es-local
    python bench/lookup_batch.py --docs 50000 --es URL    # or uses a running cluster (its index is deleted after)

Documents: Tang and Song poems from the npm package chinese-poetry (see bench/corpora.py). First, untimed,
``--docs`` poems are ingested into a fresh index (ids ``a-...``; a run that creates its index needs no
lookups). Then a second ``esdedup.ingest.run`` writes ``--docs`` more records with other ids (``b-...``) into
the same index: every other one a poem the first run did not see, the others copies of first-run poems
(so half the records find a candidate). Its index exists and holds other documents, so every batch runs
`Store.lookup`: the row gives docs/s, and node and client CPU per document. Last, `Store.lookup` alone on
``--probes`` of the second run's fingerprints, in batches as ingest sends them (node CPU per probe).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402
from es import Timed, node  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from esdedup.ingest import BATCH, LOOKUP_LIMIT, IngestOptions, ingest  # noqa: E402
from esdedup.match.lookup import probe_for  # noqa: E402
from esdedup.store.elastic.store import ElasticStore  # noqa: E402


def write_jsonl(path: Path, docs: list[dict[str, str]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")


def parts(n: int) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The first run's poems and the second run's records (new poems and copies, alternating)."""
    poems = list(corpora.poems(n + n // 2 + 1))
    first = [{**p, "id": f"a-{i}"} for i, p in enumerate(poems[:n])]
    new, copies = poems[n:], poems[:n]
    second = [{**(new[i // 2] if i % 2 else copies[i * 7 % n]), "id": f"b-{i}"} for i in range(n)]
    return first, second


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--probes", type=int, default=10_000, help="probes of the lookup-only measure")
    ap.add_argument("--es", help="a running cluster (default: start a local node)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--label", default="", help="a name for this run in the output (e.g. the commit)")
    args = ap.parse_args()

    cluster, url = node(args.es)
    es = Elasticsearch(url, request_timeout=300)
    tmp = corpora.scratch_folder("esdedup-bench-")
    store = ElasticStore(es, "bench-lookup-batch", replicas=0)
    try:
        first, second = parts(args.docs)
        write_jsonl(tmp / "a.jsonl", first)
        write_jsonl(tmp / "b.jsonl", second)
        config = FingerprintConfig()
        opts = IngestOptions(workers=args.workers, dead_letter=tmp / "dl.jsonl")
        store.drop()
        ingest([tmp / "a.jsonl"], store, config, opts)
        store.refresh()
        with Timed(es) as timed:
            summary = ingest([tmp / "b.jsonl"], store, config, opts)
            store.refresh()
        assert summary.ok and summary.indexed == len(second), summary.to_dict()
        n = len(second)
        print(f"ingest into a held index{args.label and f' ({args.label})'}: {n / timed.wall:,.0f} docs/s, "
              f"wall {timed.wall:.1f} s, node CPU {timed.node / n * 1000:.2f} ms/doc, client CPU "
              f"{timed.client / n * 1000:.2f} ms/doc, {summary.duplicates} near-duplicates labelled")

        fps = Fingerprinter(config).fingerprint_many([d["text"] for d in second[: args.probes]])
        probes = [probe_for(fp, config) for fp in fps]
        found = 0
        with Timed(es) as timed:
            for start in range(0, len(probes), BATCH):
                found += sum(map(len, store.lookup(probes[start : start + BATCH], limit=LOOKUP_LIMIT)))
            time.sleep(1.5)  # the node's CPU figure is refreshed about once a second
        print(f"Store.lookup alone: {len(probes)} probes in batches of {BATCH}, {found} candidates: "
              f"wall {(timed.wall - 1.5) / len(probes) * 1000:.2f} ms/probe, node CPU "
              f"{timed.node / len(probes) * 1000:.2f} ms/probe, client CPU {timed.client / len(probes) * 1000:.2f} "
              f"ms/probe ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC)")
    finally:
        store.drop()
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
