"""What each page of the review app shows, as plain dicts for the templates; `Review` holds what the
pages share: the store, its config and thresholds, the survey of pairs, the top key values and the labels
file. Every list is a paged store query or aggregation (`Store.cluster_page` and the methods after it), so a
page costs the same at a thousand documents and at a million.

Every store call goes through `Review.call`, on one worker thread: the embedded store's SQLite connection
belongs to the thread that opened it. What a page reads of the store is said on its method.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from esdedup.errors import IndexNotFound
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.match.thresholds import Thresholds
from esdedup.review.catalog import clusters_matching
from esdedup.review.charts import bar_chart, line_chart
from esdedup.review.explain import char_diff, explain
from esdedup.review.labels import LabelsFile
from esdedup.review.survey import FULL_SURVEY_MAX, MAX_PAIRS, SAMPLE_DOCS, PairSurvey, sample_survey, survey
from esdedup.review.tuning import tune
from esdedup.search.diversify import diversify
from esdedup.store.base import Capability, Store, StoredDoc, TopKeys, require

__all__ = ["ApplyCommand", "Review", "rule_text"]

T = TypeVar("T")
#: Given the best thresholds, the commands that apply them to the index (the front end that started the
#: app knows its own command line; the library does not).
ApplyCommand = Callable[[Thresholds], list[str]]
#: Clusters per page of the cluster list, members per page of a cluster, hits per search.
CLUSTERS_PER_PAGE = 25
MEMBERS_PER_PAGE = 20
SEARCH_HITS = 20
#: Characters of a text shown in a list.
SNIPPET = 160


def rule_text(t: Thresholds) -> list[str]:
    """The rule the thresholds make, one line per path (`esdedup.match.rule`)."""
    lines = []
    ngram = [f"{name} ≥ {v}" for name, v in (("Jaccard", t.jaccard), ("containment", t.containment)) if v is not None]
    if ngram:
        lines.append("Texts with MinHash signatures: " + " or ".join(ngram) + " (estimated over character n-grams)")
    if t.cosine is not None:
        lines.append(f"Short texts without signatures: TF cosine ≥ {t.cosine}")
    simhash = [x for x in (None if t.hamming_k is None else f"SimHash Hamming distance ≤ {t.hamming_k}",
                           None if t.cosine is None else f"TF cosine ≥ {t.cosine}") if x]
    lines.append("Other texts: " + " and ".join(simhash))
    lines.append("A pair no test can answer is not a near-duplicate.")
    return lines


def _title(src: dict[str, Any] | None, doc_id: str) -> str:
    title = (src or {}).get("title")
    return str(title) if title not in (None, "") else doc_id


def _text(src: dict[str, Any] | None) -> str:
    text = (src or {}).get("text")
    return text if isinstance(text, str) else ""


def _within(page: int, total: int, per_page: int) -> int:
    """``page`` moved into the pages that exist (0 .. the last): a page number past the end, however large,
    shows the last page and never reaches the store as an offset."""
    return max(0, min(page, -(-total // per_page) - 1))


class Review:
    """The review of one index: built once (`prepare` reads the store's labels and candidate pairs), then
    each page reads only what it shows."""

    def __init__(self, store: Store, labels_path: str | Path, *, apply_command: ApplyCommand | None = None,
                 max_bucket: int = 1000, max_pairs: int | None = MAX_PAIRS, full_survey_max: int = FULL_SURVEY_MAX,
                 sample_docs: int = SAMPLE_DOCS) -> None:
        require(store, Capability.BROWSING, "reviewing an index")
        require(store, Capability.KEY_SCANS, "reviewing an index")
        self.store = store
        self.full_survey_max = full_survey_max
        self.sample_docs = sample_docs
        self.labels = LabelsFile(labels_path, who=f"a review page of index {store.name}")
        self.apply_command = apply_command
        self.max_bucket = max_bucket
        self.max_pairs = max_pairs
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="esdedup-review-store")
        self.config: FingerprintConfig
        self.thresholds: Thresholds
        self.survey: PairSurvey
        self.keys: tuple[TopKeys, TopKeys] = (TopKeys([]), TopKeys([]))
        self.prepared_at = ""
        self.seconds = 0.0

    # -- the store's thread ----------------------------------------------------------------------------
    def prepare(self) -> Review:
        """Open the store and read what every page shares: the candidate pairs (every one, an all-pairs
        pass, up to ``full_survey_max`` documents; above, those of ``sample_docs`` documents chosen at random,
        `sample_survey`) and the top key values (`Store.top_keys`). Nothing here reads every document of a
        large index. Raises IndexNotFound when the index does not exist."""
        self._worker.submit(self._prepare).result()
        return self

    def _prepare(self) -> None:
        t0 = time.monotonic()
        self.config = self.store.open(None, create=False).config
        self.store.refresh()
        self.store.prepare_text_search()  # while the survey below runs: a first search then finds it ready
        self.thresholds = Thresholds.from_config(self.config)
        if self.store.count() <= self.full_survey_max:
            self.survey = survey(self.store, self.thresholds, max_bucket=self.max_bucket, max_pairs=self.max_pairs)
        else:
            self.survey = sample_survey(self.store, self.thresholds, docs=self.sample_docs)
        self.keys = (self.store.top_keys(lsh=False), self.store.top_keys(lsh=True))
        # The embedded store counts its clusters once per snapshot (one GROUP BY over the cluster index): at
        # the start, so that the first page does not wait for it.
        self.store.cluster_summary()
        # The first `diversify` loads the tokenizer (a second or more): at the start, not in the first search.
        diversify([{"_id": "a", "_source": {"text": "预热的文本"}}, {"_id": "b", "_source": {"text": "预热文本"}}],
                  mode="demote", config=self.config, thresholds=self.thresholds)
        self.prepared_at = time.strftime("%Y-%m-%d %H:%M:%S")
        self.seconds = round(time.monotonic() - t0, 2)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    def close(self) -> None:
        try:
            self._worker.submit(self.store.close).result()
            self._worker.shutdown()
        finally:
            self.labels.close()

    # -- pages (each runs on the store's thread) -------------------------------------------------------
    def overview(self) -> dict[str, Any]:
        """`Store.count` and `Store.cluster_summary`; the rest was read by `prepare`."""
        summary = self.store.cluster_summary()
        sizes = summary.sizes
        title = "Clusters by size (documents per cluster)"
        if not summary.exact:
            title += f", the {summary.counted:,} largest"
        charts = [bar_chart(title, [str(s) for s, _ in sizes], [n for _, n in sizes])]
        for name in ("jaccard", "containment", "hamming"):
            h = self.survey.histograms[name]
            if not h.total:
                continue
            if name == "hamming":
                labels = [str(int(e + 0.5)) for e in h.edges[:-1]]
                at = None if h.threshold is None else h.threshold + 1.0
                chart = bar_chart(f"Hamming distance of {self._pairs_read} without signatures ({h.total})", labels,
                                  h.counts, marker_at=at, marker_label=f"k = {h.threshold:g}" if at else "",
                                  tick_every=4)
            else:
                labels = [f"{e:.2f}" for e in h.edges[:-1]]
                at = None if h.threshold is None else h.threshold * (len(h.edges) - 1)
                chart = bar_chart(f"{name.capitalize()} of {self._pairs_read} with signatures ({h.total})", labels,
                                  h.counts, marker_at=at, marker_label=f"threshold {h.threshold}" if at else "",
                                  tick_every=4)
            charts.append(chart)
        bands, lsh = self.keys[0].values, self.keys[1].values
        top = max([1, *(n for _, n in bands + lsh)])
        return {"documents": self.store.count(), "clusters": summary.clusters, "clusters_exact": summary.exact,
                "clustered": summary.clustered, "config": self.config.to_dict(), "sampled": self.survey.sampled,
                "rule": rule_text(self.thresholds), "charts": charts, "band_keys": bands, "lsh_keys": lsh,
                "keys_sampled": self.keys[1].sampled or self.keys[0].sampled,
                "key_max": top, "pairs": self.survey.pairs, "duplicates": self.survey.duplicates,
                "pairs_truncated": self.survey.truncated,
                "backend": type(self.store).__name__, "prepared_at": self.prepared_at, "seconds": self.seconds}

    @property
    def _pairs_read(self) -> str:
        if self.survey.sampled is None:
            return "candidate pairs"
        return f"the candidate pairs of {self.survey.sampled:,} sampled documents"

    def clusters(self, query: str, page: int) -> dict[str, Any]:
        """A page of clusters (`Store.cluster_page`, the total from `Store.cluster_summary`), their
        representatives' sources (`Store.get_source`, one per row); with a query, the clusters of the
        documents matching it (`clusters_matching`)."""
        query = query.strip()
        partial = False
        if query:
            found, _, partial = clusters_matching(self.store, query)
            total = len(found)
            page = _within(page, total, CLUSTERS_PER_PAGE)
            rows = found[page * CLUSTERS_PER_PAGE:(page + 1) * CLUSTERS_PER_PAGE]
        else:
            summary = self.store.cluster_summary()
            total = summary.clusters
            page = _within(page, total, CLUSTERS_PER_PAGE)
            rows = self.store.cluster_page(offset=page * CLUSTERS_PER_PAGE, size=CLUSTERS_PER_PAGE)
        shown = []
        for r in rows:
            src = self.store.get_source(r.cluster_id)
            shown.append({"id": r.cluster_id, "size": r.size, "title": _title(src, r.cluster_id),
                          "snippet": _text(src)[:SNIPPET]})
        return {"query": query, "page": page, "rows": shown, "total": total, "partial": partial,
                "pages": max(1, -(-total // CLUSTERS_PER_PAGE))}

    def cluster(self, cluster_id: str, page: int) -> dict[str, Any]:
        """`Store.members` of the cluster and `Store.get_source` of the representative and of one page of
        members."""
        members = sorted(self.store.members([cluster_id]), key=lambda d: (d.seq, d.id))
        if not members:
            raise IndexNotFound(f"no cluster {cluster_id!r} in index {self.store.name!r}")
        rep = next((d for d in members if d.id == cluster_id), None) or self.store.get([cluster_id]).get(cluster_id)
        if rep is None:
            raise IndexNotFound(f"the representative {cluster_id!r} of the cluster is not in index {self.store.name!r}")
        others = [d for d in members if d.id != rep.id]
        page = _within(page, len(others), MEMBERS_PER_PAGE)
        rep_src = self.store.get_source(rep.id)
        rows = []
        for d in others[page * MEMBERS_PER_PAGE:(page + 1) * MEMBERS_PER_PAGE]:
            rows.append(self._pair(rep, d, rep_src, self.store.get_source(d.id)))
        return {"id": rep.id, "title": _title(rep_src, rep.id), "size": len(members), "rows": rows, "page": page,
                "pages": max(1, -(-len(others) // MEMBERS_PER_PAGE)), "per_page": MEMBERS_PER_PAGE}

    def pair(self, a: str, b: str) -> dict[str, Any]:
        """`Store.get` and `Store.get_source` of the two documents."""
        docs = self.store.get([a, b])
        for x in (a, b):
            if x not in docs:
                raise IndexNotFound(f"no document {x!r} in index {self.store.name!r}")
        return self._pair(docs[a], docs[b], self.store.get_source(a), self.store.get_source(b))

    def _pair(self, a: StoredDoc, b: StoredDoc, src_a: dict[str, Any] | None,
              src_b: dict[str, Any] | None) -> dict[str, Any]:
        e = explain(a, b, self.config, self.thresholds)
        left, right = char_diff(_text(src_a), _text(src_b))
        return {"a": a.id, "b": b.id, "title_a": _title(src_a, a.id), "title_b": _title(src_b, b.id),
                "diff_a": left, "diff_b": right, "e": e, "label": self.labels.get(a.id, b.id)}

    def queue(self) -> dict[str, Any]:
        """The first pair of the review queue (`PairSurvey.queue`, in memory) read as `pair` reads it."""
        items = self.survey.queue(self.labels.keys())
        if not items:
            return {"item": None, "left": 0, "next": []}
        first = items[0]
        return {"item": first, "pair": self.pair(first.a, first.b), "left": len(items), "next": items[1:11]}

    def tuning(self) -> dict[str, Any]:
        """`Store.get` of the labelled ids (in batches); the sweep runs in memory."""
        report = tune(self.store, self.labels.all())
        charts = []
        for c in report.curves:
            own = getattr(self.thresholds, c.name)
            at = next((i for i, v in enumerate(c.values) if v == own), None)
            charts.append(line_chart(f"Precision, recall and F1 over {c.name} (the other thresholds at the index's)",
                                     [float(v) if v is not None else 0.0 for v in c.values],
                                     {"Precision": [s.precision for s in c.scores],
                                      "Recall": [s.recall for s in c.scores], "F1": [s.f1 for s in c.scores]},
                                     x_labels=[str(v) for v in c.values], marker_at=at,
                                     marker_label=f"index: {own}"))
        commands = []
        if report.best is not None and self.apply_command is not None:
            commands = self.apply_command(report.best.setting)
        return {"report": report, "charts": charts if report.labelled else [], "commands": commands,
                "labels_path": str(self.labels.path)}

    def search(self, query: str) -> dict[str, Any]:
        """One text search (`Store.search_text`), `diversify` of its hits, and `Store.get` of the dropped
        hits and the hits they duplicate."""
        result = self.store.search_text(query, size=SEARCH_HITS) if query.strip() else None
        found = result.hits if result is not None else []
        hits = [{"_id": f.id, "_score": f.score, "_source": f.source} for f in found]
        demoted = diversify(hits, mode="demote", config=self.config, thresholds=self.thresholds)
        dup_of = {h["_id"]: h["_duplicate_of"] for h in demoted if "_duplicate_of" in h}
        docs = self.store.get(sorted(set(dup_of) | set(dup_of.values()))) if dup_of else {}
        raw = [{"rank": i + 1, "id": f.id, "title": _title(f.source, f.id), "snippet": _text(f.source)[:SNIPPET],
                "dup_of": dup_of.get(f.id)} for i, f in enumerate(found)]
        kept = [r for r in raw if r["dup_of"] is None]
        dropped = []
        for r in raw:
            if r["dup_of"] is not None and r["id"] in docs and r["dup_of"] in docs:
                dropped.append({**r, "e": explain(docs[r["id"]], docs[r["dup_of"]], self.config, self.thresholds)})
            elif r["dup_of"] is not None:
                dropped.append({**r, "e": None})
        return {"query": query, "raw": raw, "kept": kept, "dropped": dropped,
                "matches": result.total if result else 0, "capped": bool(result and result.capped),
                "searched": result.searched if result else None}
