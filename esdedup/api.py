"""The operations behind the commands, for programs: open a store, look up, list pairs, describe, compare.

Each returns plain data (dataclasses, dicts); none prints.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError, IndexNotFound
from esdedup.es import opensearch
from esdedup.es.connect import ConnectionSettings, check_client, make_client, resolve_settings
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
from esdedup.fingerprint.simhash import hamming
from esdedup.match.clusters import clusters
from esdedup.match.joins import JoinedCrowds
from esdedup.match.lookup import Match, shared_bands, similar, similar_knn, similar_on_node
from esdedup.match.measures import measures_row
from esdedup.match.pairs import check_max_bucket, crowded_values, lsh_in_memory, pair_parts
from esdedup.match.pairtable import Pair, PairList
from esdedup.match.partitioned import PartitionStats, SortedPairs, partition_pairs
from esdedup.match.similarity import cosine, novel_similarity, size_ratio_ok
from esdedup.match.thresholds import (
    ThresholdOverrides,
    Thresholds,
    acting_thresholds,
    check_overrides_act,
    describe_rule,
)
from esdedup.readers import read_text_file
from esdedup.schema import content_sha1
from esdedup.store.base import Capability, ScannableStore, Store, StoreCore, require
from esdedup.store.partition import Partition
from esdedup.util.collector import fewer_collections
from esdedup.util.fieldtypes import checked_args


@checked_args
def open_store(index: str, *, es_url: str | None = None, data_dir: str | Path | None = None,
               connection: ConnectionSettings | None = None, shards: int = 1, replicas: int | None = None,
               client: Any = None, text_analyzer: str | None = None) -> Store:
    """An Elasticsearch store, or the embedded local store in ``data_dir`` when no server is named. The
    store is not opened yet.

    The server is, first wins: ``client`` (an ``elasticsearch.Elasticsearch`` or ``opensearchpy.OpenSearch``
    the caller owns), then
    ``connection`` (URL, credentials and TLS files, e.g. from `esdedup.es.connect.resolve_settings`), then
    ``es_url`` or, without it, ``ESDEDUP_ES_URL`` or the config file (credentials and CA from the
    environment or the config file, as `resolve_settings` reads them). Elasticsearch or OpenSearch: as the
    settings' ``engine`` says, else as the server answers (`esdedup.es.opensearch.detect_engine`). ``shards``, ``replicas`` (default: one
    where a second data node can hold it, `esdedup.schema.index_settings`) and ``text_analyzer`` (of the
    ``title`` and ``text`` fields, `esdedup.schema.text_fields`) apply when an Elasticsearch index is created.

    Raises:
        ConfigError: more than one of ``client``, ``connection`` and ``es_url``; an invalid URL or name.
    """
    if sum(x is not None for x in (client, connection, es_url)) > 1:
        raise ConfigError("give one of client, connection and es_url")
    if client is not None:
        check_client(client, "open_store")
    settings = None if client is not None else connection or resolve_settings(es_url)
    if client is None and settings is None:
        from esdedup.store.local import LocalStore

        return LocalStore(index, data_dir)
    # Imported only here: the Elasticsearch client takes longer to import than the embedded store to open.
    from esdedup.store.elastic.store import ElasticStore

    if client is not None:
        return ElasticStore(opensearch.wrap(client), index, shards=shards, replicas=replicas,
                            text_analyzer=text_analyzer)
    assert settings is not None
    if settings.engine == "opensearch":
        made: Any = opensearch.make_client(settings)
    elif settings.engine == "elasticsearch":
        made = make_client(settings)
    else:  # the server says which, when the store is opened
        made = opensearch.ChosenByTheServer(settings, f"opening index ({settings.display_url}, index {index!r})")
    return ElasticStore(made, index, shards=shards, replicas=replicas, text_analyzer=text_analyzer,
                        display_url=settings.display_url, secrets=settings.secrets,
                        request_timeout=settings.request_timeout)


@checked_args
def create_index(store: StoreCore, config: FingerprintConfig | None = None) -> bool:
    """Create the index (or local collection) with ``config`` (None: the default config), its mapping and
    settings, before anything is written to it: so that the plugin's pipeline can be put on it and any client
    can write to it. An index that exists already is left as it is (with ``config`` None, whatever its config).

    Returns whether the index was created.

    Raises:
        ConfigMismatchError: the index exists with another config than ``config``.
    """
    if config is None:
        try:
            store.open(None, create=False)
            return False
        except IndexNotFound:
            config = FingerprintConfig()
    return store.open(config).created


@dataclass
class SimilarResult:
    query: dict[str, Any]
    matches: list[dict[str, Any]]
    #: The store held more candidates than one lookup fetches: a near-duplicate may be among the rest.
    truncated: bool = False


class SimilarFinder:
    """Near-duplicate lookups for a long-running program (a search backend, a crawler's callback): the
    store is opened (its mapping read) and the `Fingerprinter` built once, here, not on every lookup.

    >>> import tempfile
    >>> from esdedup import FingerprintConfig, open_store
    >>> from esdedup.ingest import Ingester
    >>> store = open_store("news", data_dir=tempfile.mkdtemp())
    >>> _ = Ingester(store, FingerprintConfig()).add("台湾居民明日起持台胞证可通关，无需另行申请签注。", id="a")
    >>> finder = SimilarFinder(store)
    >>> [m["id"] for m in finder.find(text="台湾居民明日起持台胞证可通关，无需另行申请签注！").matches]
    ['a']

    Raises IndexNotFound (no such index) or StoreError here, ConfigError for bad arguments in `find`.
    """

    @checked_args
    def __init__(self, store: StoreCore, *, thresholds: Thresholds | ThresholdOverrides | None = None) -> None:
        self.store = store
        self.config = store.open(None, create=False).config
        self.thresholds = thresholds
        self._fper = Fingerprinter(self.config)

    @checked_args
    def find(self, *, text: str | None = None, doc_id: str | None = None, path: str | None = None, top: int = 10,
             knn: bool = False, explain: bool = False, on_node: bool = False) -> SimilarResult:
        """Near-duplicates of a text, a file or a stored document (by id), verified by the rule.

        Raises:
            ConfigError: not exactly one of ``text``, ``doc_id`` and ``path``; ``top`` below 1.
            IndexNotFound: the document ``doc_id`` does not exist.
        """
        if sum(x is not None for x in (text, doc_id, path)) != 1:
            raise ConfigError("give exactly one of a text, a stored document's id or a file")
        if top < 1:
            raise ConfigError(f"top must be at least 1, got {top}")
        store, thresholds = self.store, self.thresholds
        exclude = None
        if doc_id is not None:
            src = store.get_source(doc_id)
            if src is None or not isinstance(src.get("text"), str):
                raise IndexNotFound(f"no document with id {doc_id!r} (with text) in {store.name!r}")
            text, exclude = src["text"], doc_id
        elif path is not None:
            text = read_text_file(path)
        norm = self._fper.normalize(text)  # type: ignore[arg-type]  # exactly one source was given, checked above
        [fp] = self._fper.fingerprint_normalized([norm])
        truncated = False
        if fp.empty:
            # No words, so no vector and no keys: the kNN and node paths have nothing to look up; its exact
            # copies (rule 0 of esdedup.match.rule) are found by content SHA-1 whichever path was asked for.
            knn = on_node = False
        sha1 = content_sha1(norm)
        # Every path puts the text's exact copies first, found by this SHA-1 whatever the bands or vectors hold.
        if knn:
            matches = similar_knn(store, fp, k=top, thresholds=thresholds, exclude=exclude, sha1=sha1)
        elif on_node:  # the node verifies (the esdedup plugin): one request, only near-duplicates come back
            matches = similar_on_node(store, fp, thresholds=thresholds, top=top, exclude=exclude, sha1=sha1)
        else:
            found = similar(store, [fp], thresholds=thresholds, top=top, exclude=[exclude], sha1s=[sha1])[0]
            matches, truncated = found.matches, found.truncated
        rows = [_match_row(m) for m in matches]
        if explain:
            for row, m in zip(rows, matches, strict=True):
                row.update(_explain(store, self._fper, fp, m))
        return SimilarResult({"id": exclude, "simhash": fp.hex, "bands": fp.bands, "tokens": fp.length,
                              "empty": fp.empty,
                              "path": "content_sha1" if fp.empty else "knn" if knn else "node" if on_node else "bands"},
                             rows, truncated)


@checked_args
def similar_to(store: StoreCore, *, text: str | None = None, doc_id: str | None = None, path: str | None = None,
               thresholds: Thresholds | ThresholdOverrides | None = None, top: int = 10, knn: bool = False,
               explain: bool = False, on_node: bool = False) -> SimilarResult:
    """Near-duplicates of a text, a file or a stored document (by id), verified by the rule with
    ``thresholds`` (default: the index's). One call: it opens the store and builds a fingerprinter, which a
    program looking up many texts does once with `SimilarFinder`.

    Raises:
        ConfigError: not exactly one of ``text``, ``doc_id`` and ``path``; ``top`` below 1.
        IndexNotFound: the index, or the document ``doc_id``, does not exist.
    """
    return SimilarFinder(store, thresholds=thresholds).find(text=text, doc_id=doc_id, path=path, top=top, knn=knn,
                                                            explain=explain, on_node=on_node)


def _match_row(m: Match) -> dict[str, Any]:
    return {"id": m.id, **measures_row(m.hamming, m.cosine, m.jaccard, m.containment, m.decided_by)}


def _explain(store: StoreCore, fper: Fingerprinter, fp: Fingerprint, m: Match) -> dict[str, Any]:
    src = store.get_source(m.id) or {}
    other_text = src.get("text") if isinstance(src.get("text"), str) else None
    out: dict[str, Any] = {"title": src.get("title")}
    if other_text is not None:
        other = fper.fingerprint(other_text)
        out["shared_bands"] = list(shared_bands(fp, other.bands + other.lsh))
        common = Counter({t: min(w, other.tf.get(t, 0.0)) for t, w in fp.tf.items() if t in other.tf})
        out["top_shared_terms"] = [t for t, _ in common.most_common(10)]
        out["exact_cosine"] = round(cosine(fp.tf, other.tf), 6)
    return out


@dataclass
class PairsReport:
    """What `all_pairs` found. ``pairs`` are sorted by ``(a, b)`` and read as a list of `Pair`s (a `PairList`,
    which holds most of them as columns and makes a `Pair` when one is read)."""

    pairs: Sequence[Pair]
    #: Each document in a pair -> the smallest id of its connected set of pairs (which names the set; the
    #: representative that ``write_clusters`` keeps is the earliest-written member, `esdedup.store.base.Root`);
    #: None when not asked for (``with_clusters``).
    clusters: dict[str, str] | None
    crowded: list[tuple[str, int]] = field(default_factory=list)
    #: Documents whose cluster labels ``write_clusters`` changed (None when it was not asked).
    labels_written: int | None = None
    #: Documents whose own keys under ``dedup.`` were moved under ``input_fields`` (`Store.move_dotted_keys_aside`).
    mended: int = 0


#: Where `all_pairs` groups the documents sharing a MinHash LSH key (``lsh_join``).
LSH_JOINS = ("auto", "memory", "store")


@checked_args
def all_pairs(store: Store, *, thresholds: Thresholds | ThresholdOverrides | None = None, max_bucket: int = 1000,
              write_clusters: bool = False, lsh_join: str = "auto", with_clusters: bool = True) -> PairsReport:
    """Every near-duplicate pair and the clusters they form (``thresholds`` default to the index's);
    optionally (``write_clusters``) join the stored clusters of each connected set of pairs into one, so that
    searches can ``collapse`` on ``cluster_id``: its representative is the earliest-written root among them,
    only the labels that change are written (`PairsReport.labels_written`), and running ingests may write
    meanwhile (`esdedup.ingest.settle.join_stored`).

    ``lsh_join``: ``memory`` joins the LSH bands (and the SimHash band keys, where every document holding one has
    a signature: `esdedup.match.joins.joins_bands`) after one scan of the signatures (about 512 bytes
    a document), ``store`` reads the store's key groups (`Store.key_batches`: on Elasticsearch a ``terms``
    aggregation of the keys held by two documents or more, a partition of the keys at a time), ``auto`` is memory up to `esdedup.match.pairs.LSH_IN_MEMORY_MAX` documents. The pairs are the
    same either way; it is a choice of memory against time. ``with_clusters``: group the pairs into clusters
    (`PairsReport.clusters`); False leaves them None, unless ``write_clusters`` needs them (a union of every
    pair's two ids: on a million documents more time than printing their pairs).

    Raises:
        ConfigError: ``max_bucket`` below 2, or an ``lsh_join`` not in `LSH_JOINS`.
        Unsupported: the store has no `esdedup.store.base.KeyScans` (or, to write the clusters, no
            `esdedup.store.base.ClusterLabels`).
    """
    require(store, Capability.KEY_SCANS, "finding every pair")
    if write_clusters:
        require(store, Capability.LABELS, "writing the clusters")
    check_max_bucket(max_bucket)
    if lsh_join not in LSH_JOINS:
        raise ConfigError(f"lsh_join must be one of {', '.join(LSH_JOINS)}, got {lsh_join!r}")
    store.open(None, create=False)
    store.refresh()
    crowded = JoinedCrowds()
    # Asked once: the search and the crowded report must agree. Without signatures there is nothing to join.
    in_memory = lsh_in_memory(store) if lsh_join == "auto" else lsh_join == "memory" and store.config.gets_signatures
    # Every pair, and the exact copies' rows before them, are held until the clusters are made: collected
    # less often meanwhile (the full collections alone were a tenth of `dups` on 100,000 short texts).
    with fewer_collections():
        pairs = PairList(pair_parts(store, thresholds=thresholds, max_bucket=max_bucket, crowded=crowded,
                                    in_memory=in_memory))
        groups = clusters(pairs) if with_clusters or write_clusters else None
    report = PairsReport(pairs, groups, crowded_values(store, crowded, min_count=max_bucket, in_memory=in_memory))
    if write_clusters:
        assert groups is not None  # grouped whenever they are written
        report.labels_written = _join_clusters(store, groups)
        # Documents an older esdedup stored with a record's dotted dedup keys carry two cluster ids, in a pair
        # or not (the labels just written may have added the second): mended, so that every document carries
        # one (collapse needs that).
        report.mended = store.move_dotted_keys_aside()
        if report.mended:
            store.refresh()
    return report


@dataclass
class PartitionReport:
    """One partition of all-pairs search (`pairs_of_partition`): its pairs, what it did, and the store's most
    crowded band values.

    ``pairs`` (`SortedPairs`) are sorted by ``(a, b)`` and were written to a private temporary file as they were
    found (memory does not grow with them): iterate them (as often as wanted), ``len`` counts them. The report
    owns that file: use it in a ``with`` block or `close` it, which deletes the file (a process that ends frees
    it too, however it ends: it has no name)."""

    pairs: SortedPairs
    stats: PartitionStats
    crowded: list[tuple[str, int]] = field(default_factory=list)
    #: The clusters the partition's own pairs form (those of the index join the P partitions' pairs); None when
    #: not asked for (``with_clusters``).
    clusters: dict[str, str] | None = field(default_factory=dict)
    #: Labels written by ``write_clusters`` (None when not asked: the CLI then says nothing of labels).
    labels_written: int | None = None
    mended: int = 0

    def close(self) -> None:
        """Delete the pairs' temporary file; reading the pairs after this raises ValueError."""
        self.pairs.close()

    def __enter__(self) -> PartitionReport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@checked_args
def pairs_of_partition(store: Store, partition: Partition | str, *,
                       thresholds: Thresholds | ThresholdOverrides | None = None, max_bucket: int = 1000,
                       progress: Callable[[PartitionStats], None] | None = None,
                       write_clusters: bool = False, with_clusters: bool = True) -> PartitionReport:
    """The near-duplicate pairs of partition ``I/P`` of a store (`esdedup.match.partitioned.partition_pairs`): run
    the P partitions as P processes, anywhere, and their pairs together are exactly `all_pairs`'s, each in
    one partition only. ``progress`` is handed the partition's counts as it goes. ``write_clusters``: join the
    stored clusters of the partition's pairs as `all_pairs` does (`esdedup.ingest.settle.join_stored`: joins
    only, the earliest-written root represents each cluster), so that the P partitions, in any order or at once,
    leave the clusters one `all_pairs` run leaves; a partition stopped midway is mended by running it again.
    The pairs never are all in memory: the report holds them in a temporary file, which `PartitionReport.close`
    (or a ``with`` block) deletes; a run that fails or is interrupted deletes it before it raises.
    ``with_clusters``: group the pairs into clusters (`PartitionReport.clusters`), which holds an entry for every
    document in a pair, the one part of a partition's memory that grows with the documents it pairs; False
    leaves them None, unless ``write_clusters`` needs them.

    Raises:
        ConfigError: a partition that is not ``I/P`` with 0 <= I < P, ``max_bucket`` below 2, or a store or
            band layout that cannot be partitioned (`partition_pairs`).
    """
    part = Partition.parse(partition) if isinstance(partition, str) else partition
    require(store, Capability.KEY_SCANS, "finding a partition's pairs")
    if write_clusters:
        require(store, Capability.LABELS, "writing the clusters")
    if max_bucket < 2:
        raise ConfigError(f"max_bucket must be at least 2 (documents compared per band value), got {max_bucket}")
    store.open(None, create=False)
    store.refresh()
    stats = PartitionStats(str(part))
    # The pairs go to their file as they are found, and into the clusters' union-find when asked (one entry an
    # id in a pair): nothing holds them all.
    pairs = SortedPairs()
    try:
        found = pairs.keeping(partition_pairs(store, part, thresholds=thresholds, max_bucket=max_bucket,
                                              stats=stats, progress=progress))
        groups = None
        if with_clusters or write_clusters:
            groups = clusters(found)
        else:
            for _ in found:  # each pair goes to the file, and no further
                pass
        report = PartitionReport(pairs, stats,
                                 crowded_values(store, JoinedCrowds(), min_count=max_bucket, in_memory=False),
                                 groups)
        if groups is not None and write_clusters:
            report.labels_written = _join_clusters(store, groups)
    except BaseException:  # KeyboardInterrupt too: the file goes with the run
        pairs.close()
        raise
    return report


def _join_clusters(store: Store, groups: dict[str, str]) -> int:
    """Join the stored clusters of each group of pairs (``groups``: document -> its group's root) as concurrent
    writers join clusters (`join_stored`: the earliest-written root represents each, only labels that change are
    written, safe beside running ingests), not as labels computed here and written over whatever the writers
    wrote since the pairs were read. Returns the labels written."""
    # Imported here: a process that only reads pairs (`dups`) does not load the ingest pipeline.
    from esdedup.ingest.settle import join_stored

    members: dict[str, list[str]] = {}
    for doc, root in groups.items():
        members.setdefault(root, []).append(doc)
    written = join_stored(store, members.values())
    if written:
        store.refresh()
    return written


@checked_args
def refuse_inert_thresholds(store: StoreCore, overrides: ThresholdOverrides, *, creates: bool = False,
                            new_config: FingerprintConfig | None = None) -> None:
    """Refuse thresholds asked for that cannot change the answer under the index's rule
    (`esdedup.match.thresholds.check_overrides_act`), before a task runs. ``creates``: the task creates a
    missing index, with ``new_config`` (None: the default config).

    Raises:
        ConfigError: a threshold asked for does not act (the message names those that do).
        IndexNotFound: the index does not exist and the task does not create it.
    """
    if not overrides.values:
        return
    try:
        config = store.open(None, create=False).config
    except IndexNotFound:
        if not creates:
            raise
        config = new_config or FingerprintConfig()
    check_overrides_act(overrides, config)


@checked_args
def describe(store: ScannableStore) -> dict[str, Any]:
    """Count, config, the rule the index applies (and the thresholds that act in it), band layout and crowded
    band values of an index."""
    require(store, Capability.KEY_SCANS, "describing an index")
    opened = store.open(None, create=False)
    store.refresh()
    config = opened.config
    layout = config.band_layout()
    t = Thresholds.from_config(config)
    n = store.count()
    return {"index": store.name, "backend": type(store).__name__, "documents": n,
            "config": config.to_dict(), "rule": describe_rule(config, t),
            "acting_thresholds": list(acting_thresholds(config, t)), "band_layout": layout.describe(),
            "expected_random_candidates_per_lookup": round(layout.expected_random_candidates(n), 4),
            "crowded_band_values": store.crowded_keys(min_count=max(3, n // 100 or 3), limit=10)}


#: With three or more files, `compare_files` skips pairs whose texts differ more than this in length (design
#: document 004's pre-filter for many-novel runs: such pairs are rarely one text).
MANY_FILES_MAX_RATIO = 1.5


@checked_args
def compare_files(paths: list[str], *, config: FingerprintConfig | None = None,
                  max_ratio: float | None = None) -> list[dict[str, Any]]:
    """Every pair of files measured: cosine and adjusted cosine of their term counts, weighted Jaccard,
    their average and the SimHash Hamming distance (design document 004's table).

    Every row has ``size_ratio``, the longer text's characters over the shorter's. Pairs whose ratio is
    above ``max_ratio`` are listed as ``skipped`` (with the reason) instead of measured; by default that is
    1.5 with three or more files and no limit with two (the caller named that very pair). A pair in which a
    file has no words is skipped too: its measures would say nothing (two empty files are not identical).

    Files are read one at a time and only their term tables are kept, so memory grows with vocabulary,
    not with text size.

    Raises:
        ConfigError: fewer than two files; ``max_ratio`` below 1 or not a number.
    """
    if len(paths) < 2:
        raise ConfigError("compare needs at least two files")
    if max_ratio is not None and not max_ratio >= 1.0:  # also refuses nan, which every comparison lets through
        raise ConfigError(f"max_ratio must be a number of at least 1 (the longer text's length over the "
                          f"shorter's), got {max_ratio}")
    limit = max_ratio if max_ratio is not None else MANY_FILES_MAX_RATIO if len(paths) >= 3 else float("inf")
    cfg = config or FingerprintConfig(weighting="tf_length", strategy="simhash")
    # The measures read every text's terms and SimHash, which strategy simhash computes for any length (another
    # strategy leaves a short text unsegmented: `FingerprintConfig.gets_terms`); no key is read here.
    fper = Fingerprinter(cfg.replace(strategy="simhash"))
    prints = []
    for p in paths:
        fp = fper.fingerprint(read_text_file(p))
        prints.append((p, fp, Path(p).stat().st_size))
    rows = []
    for i, (pa, fa, sa) in enumerate(prints):
        for pb, fb, sb in prints[i + 1 :]:
            ratio = max(1, fa.chars, fb.chars) / max(1, min(fa.chars, fb.chars))
            row: dict[str, Any] = {"a": pa, "b": pb, "bytes_a": sa, "bytes_b": sb, "size_ratio": round(ratio, 2)}
            if fa.empty or fb.empty:
                row["skipped"] = "no words in " + (" or ".join(p for p, f in ((pa, fa), (pb, fb)) if f.empty))
            elif not size_ratio_ok(fa.chars, fb.chars, limit):
                row["skipped"] = f"size ratio {ratio:.2f} > {limit}"
            else:
                row.update({k: round(v, 6) for k, v in novel_similarity(fa.tf, fb.tf).items()})
                row["hamming"] = hamming(fa.simhash, fb.simhash)
            rows.append(row)
    return rows
