"""All-pairs search in partitions (`esdedup.api.pairs_of_partition`), on the embedded store and a real node:
for P = 1, 2, 3 the partitions' pairs together are exactly one run's, and no pair comes out twice."""
from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from pathlib import Path
from typing import cast

import numpy as np
import pytest
from esdedup_cli.main import app

from esdedup import FingerprintConfig, api
from esdedup.api import all_pairs, open_store, pairs_of_partition
from esdedup.errors import ConfigError, StoreError
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match import partitioned
from esdedup.match.clusters import clusters
from esdedup.schema import DEDUP, LSH_KEYS, content_sha1
from esdedup.store.base import Capability, NewDoc, Store, offers
from esdedup.store.columns import CopyColumnsStore, SignatureColumns, SignatureColumnsStore, copy_rows
from esdedup.store.elastic import keys as elastic_keys
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore
from esdedup.store.local import keys as local_keys
from esdedup.store.partition import Partition
from tests.cli_runner import cli_runner
from tests.corpus import make_corpus, make_variant
from tests.reliability import open_files_in

CONFIG = FingerprintConfig(tokenizer="rjieba")
#: Few enough that the planted crowd (and the copies of the boilerplate) make crowded keys.
MAX_BUCKET = 8


@pytest.fixture(params=["local", pytest.param("es", marks=pytest.mark.es)])
def store(request, tmp_path):
    s = _filled(request, tmp_path)
    yield s
    s.drop()


@pytest.fixture(params=[pytest.param("es", marks=pytest.mark.es)])
def fetching_store(request, tmp_path):
    """A store whose partitions fetch their members' keys from the server (the embedded store reads its key
    index in-process, `Capability.PARTITIONED_PAIRS`)."""
    s = _filled(request, tmp_path)
    assert not offers(s, Capability.PARTITIONED_PAIRS)
    yield s
    s.drop()


def _filled(request, tmp_path) -> Store:
    """A store of both backends holding near-duplicates sharing several keys, a crowd of exact and near copies
    (crowded keys), short texts, and texts without words (exact copies by content SHA-1 among them)."""
    import random

    docs, _ = make_corpus(150, 40, seed=5)
    rng = random.Random(3)
    base = docs[0]["text"]
    # A crowd: more than MAX_BUCKET exact copies and near copies of one text (crowded keys).
    docs += [{"id": f"copy{i:02d}", "text": base} for i in range(12)]
    docs += [{"id": f"near{i:02d}", "text": make_variant(rng, base)} for i in range(6)]
    # Texts without words: exact copies of one another by content, and one alone.
    docs += [{"id": f"blank{i}", "text": t} for i, t in enumerate(["。。。", "。。。", "。。。", "!!", "!!", "   "])]
    # Short texts (the SimHash path), two pairs of copies.
    docs += [{"id": f"short{i}", "text": t} for i, t in enumerate(["今天下雨", "今天下雨", "明天晴天", "明天晴天"])]
    if request.param == "local":
        s: Store = LocalStore(f"p-{uuid.uuid4().hex[:8]}", tmp_path / "data")
    else:
        s = ElasticStore(request.getfixturevalue("es_client"), f"esdedup-part-{uuid.uuid4().hex[:10]}", shards=2,
                         replicas=0)
    s.open(CONFIG)
    fps = Fingerprinter(CONFIG).fingerprint_many([d["text"] for d in docs])
    results = list(s.write(NewDoc(d["id"], fp, {"id": d["id"], "text": d["text"]}, content_sha1(d["text"]))
                           for d, fp in zip(docs, fps, strict=True)))
    assert all(r.ok for r in results)
    s.refresh()
    return s


def _rows(pairs) -> list[str]:
    return [json.dumps(p.to_dict(), sort_keys=True) for p in pairs]


@pytest.mark.parametrize("lsh_join", ["auto", "store"])
def test_partitions_together_are_one_run(store, lsh_join):
    whole = _rows(all_pairs(store, max_bucket=MAX_BUCKET, lsh_join=lsh_join).pairs)
    kinds = Counter(json.loads(r)["decided_by"] for r in whole)
    assert len(whole) > 60 and kinds["content_sha1"] >= 4, kinds  # the crowd, the blanks and the planted pairs
    for count in (1, 2, 3):
        got: list[str] = []
        for i in range(count):
            with pairs_of_partition(store, f"{i}/{count}", max_bucket=MAX_BUCKET) as report:
                assert report.stats.pairs == len(report.pairs)
                got += _rows(report.pairs)
        repeated = [r for r, n in Counter(got).items() if n > 1]
        assert not repeated, (count, repeated[:3])
        assert sorted(got) == sorted(whole), count


def test_pairs_sorted_through_many_runs_are_one_runs_in_its_order(store, monkeypatch, tmp_path):
    """A partition writes its pairs out a few at a time (here three a sorted run) and merges the runs: the
    pairs of P = 1 come out exactly as one `all_pairs` run lists them (the same order, the same values), and
    those of P = 3 are its pairs, each partition's in that order; no file is left behind. The embedded store's
    candidates (a pair once a key it shares) are sorted through runs of three too, each measured once."""
    candidates = pairs_of_partition(store, "0/1", max_bucket=MAX_BUCKET).stats.candidates
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spill_dir))
    monkeypatch.setattr(partitioned, "PAIRS_A_RUN", 3)
    monkeypatch.setattr(local_keys, "CANDIDATES_A_RUN", 3)
    whole = [repr(p) for p in all_pairs(store, max_bucket=MAX_BUCKET).pairs]
    with pairs_of_partition(store, "0/1", max_bucket=MAX_BUCKET) as report:
        assert report.stats.candidates == candidates
        assert report.pairs.runs == len(whole) // 3 > 10
        assert [repr(p) for p in report.pairs] == whole  # repr: every field, floats to the bit
        assert [repr(p) for p in report.pairs] == whole  # read again
        assert report.clusters == clusters(all_pairs(store, max_bucket=MAX_BUCKET).pairs)
    got: list[str] = []
    for i in range(3):
        with pairs_of_partition(store, f"{i}/3", max_bucket=MAX_BUCKET) as report:
            mine = [repr(p) for p in report.pairs]
            assert report.pairs.runs > 1 and mine == sorted(mine, key=whole.index)
            got += mine
    assert sorted(got) == sorted(whole)
    assert os.listdir(spill_dir) == [] and not open_files_in(spill_dir)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc/self/fd")
@pytest.mark.parametrize("stop", [KeyboardInterrupt, StoreError])
def test_a_partition_stopped_midway_leaves_no_file(tmp_path, monkeypatch, stop):
    """The pairs' temporary file goes when the partition ends: after the report is closed, and when the
    search stops midway (an interrupt, a store's error) after some runs were written."""
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spill_dir))
    monkeypatch.setattr(partitioned, "PAIRS_A_RUN", 3)
    s = LocalStore("p", tmp_path / "data")
    s.open(CONFIG)
    docs, _ = make_corpus(60, 20, seed=9)
    fps = Fingerprinter(CONFIG).fingerprint_many([d["text"] for d in docs])
    assert all(r.ok for r in s.write(NewDoc(d["id"], fp, {"id": d["id"], "text": d["text"]}, content_sha1(d["text"]))
                                     for d, fp in zip(docs, fps, strict=True)))
    with pairs_of_partition(s, "0/1") as report:
        assert report.pairs.runs > 1 and len(open_files_in(spill_dir)) == 1
    assert not open_files_in(spill_dir)
    found = api.partition_pairs
    held: list[list[str]] = []

    def stopped(*args, **kwargs):
        """The partition's real pairs, then a stop after ten of them (three runs written)."""
        for n, p in enumerate(found(*args, **kwargs)):
            if n == 10:
                held.append(open_files_in(spill_dir))
                raise stop("stopped midway")
            yield p

    monkeypatch.setattr(api, "partition_pairs", stopped)
    with pytest.raises(stop, match="midway"):
        pairs_of_partition(s, "0/1")
    assert len(held[0]) == 1  # the runs were in the file when it stopped
    assert not open_files_in(spill_dir) and os.listdir(spill_dir) == []
    s.drop()


def test_each_partition_reads_a_share(store):
    one = pairs_of_partition(store, Partition(0, 1), max_bucket=MAX_BUCKET).stats
    parts = [pairs_of_partition(store, Partition(i, 3), max_bucket=MAX_BUCKET).stats for i in range(3)]
    if offers(store, Capability.PARTITIONED_PAIRS):
        # The embedded store: every partition reads every shared key and measures its share of the pairs.
        assert all(p.keys == one.keys for p in parts)
    else:
        # Elasticsearch: every partition reads the few crowded keys; the rest of the keys are split.
        assert all(0 < p.keys < one.keys for p in parts)
    assert all(0 < p.candidates < one.candidates for p in parts)
    assert sum(p.candidates for p in parts) == one.candidates


def test_a_partition_reads_its_members_once_a_batch(fetching_store):
    """A member of near-duplicate pairs is in a key group for each key it shares (one a band): it is read from
    the store once a batch of groups (its groups come together), not once a group."""
    for count in (1, 3):
        for i in range(count):
            stats = pairs_of_partition(fetching_store, Partition(i, count), max_bucket=MAX_BUCKET).stats
            # ``members`` counts a document once a group it is in: far above the documents there are.
            assert 0 < stats.fetched < stats.members, (i, count, stats)


def test_a_partitions_key_table_is_its_share(fetching_store):
    """A partition holds in memory only its share of the index's keys (less the crowded): the shares of P
    partitions add up to the keys one partition holds, each a part of them."""
    whole = pairs_of_partition(fetching_store, Partition(0, 1), max_bucket=MAX_BUCKET).stats.held
    parts = [pairs_of_partition(fetching_store, Partition(i, 3), max_bucket=MAX_BUCKET).stats.held
             for i in range(3)]
    assert whole > 3 * fetching_store.count() // 2  # each document's keys, its LSH keys among them
    assert sum(parts) == whole and all(0 < p < whole * 2 // 3 for p in parts), (whole, parts)


def test_both_stores_read_the_copy_columns_a_scan_gives(store):
    """Every partition groups the exact copies of the whole index: both stores read the content SHA-1s without
    reading the documents whole (on Elasticsearch the node finds the SHA-1s held twice, then two doc values a
    copy), exactly the rows `copy_rows` reads of a scan whose SHA-1 another document holds too: a partition
    holds the copies, not a row a document."""
    assert offers(store, Capability.COPY_COLUMNS)
    assert_copy_columns_are_the_copies(store)


def test_both_stores_read_the_signature_columns_a_scan_gives(store):
    """All-pairs search reads every signed document's sketch as columns on both stores, without a document
    object each (on Elasticsearch four doc values, the signature and the vector a hit, not every field a scan
    asks the nodes for): exactly `SignatureColumns.of` a scan, the texts without words and the short ones left
    out."""
    assert offers(store, Capability.SIGNATURE_COLUMNS)
    config = store.config
    read = cast(SignatureColumnsStore, store).signature_columns(config.minhash_perm)
    scanned = SignatureColumns.of((d for batch in store.scan() for d in batch), config)
    assert (read.ids, read.simhash, read.chars, read.shingles, read.banded_elsewhere) == (
        scanned.ids, scanned.simhash, scanned.chars, scanned.shingles, scanned.banded_elsewhere)
    assert read.sigs.dtype == scanned.sigs.dtype == np.uint32 and np.array_equal(read.sigs, scanned.sigs)
    assert read.vectors().tobytes() == scanned.vectors().tobytes()
    assert 0 < len(read.ids) < store.count()


def test_the_copies_are_read_a_page_of_sha1s_at_a_time(fetching_store, monkeypatch):
    """Elasticsearch reads the documents of the shared SHA-1s a page of SHA-1s a search (a `terms` query takes a
    bounded number): pages of three give the same rows."""
    monkeypatch.setattr(elastic_keys, "COPY_TERMS", 3)
    assert_copy_columns_are_the_copies(fetching_store)


def assert_copy_columns_are_the_copies(store: Store) -> None:
    rows = cast(CopyColumnsStore, store).copy_columns()
    scanned = copy_rows(d for batch in store.scan() for d in batch)
    held = Counter(sha1 for _, sha1, _ in scanned)
    assert len(rows) == len(set(rows))
    assert set(rows) == {r for r in scanned if held[r[1]] > 1}
    assert len({sha1 for _, sha1, _ in rows}) > 3 and len(rows) < len(scanned)
    assert sum(1 for _, _, empty in rows if empty) >= 5  # the texts without words among them


def test_a_member_whose_stored_keys_are_not_its_fingerprints_stops_the_partition(fetching_store):
    """A partition gives each member its keys computed from its fingerprint: a document whose stored keys
    differ (here another document's LSH keys written over its own) would have its pairs owned by no partition
    or by two, so the partition stops with a typed error instead."""
    index = fetching_store.index
    field = f"{DEDUP}.{LSH_KEYS}"
    # Not the first document: its text is the crowd's, whose keys are crowded (read apart, by doc values).
    a, b = sorted(index.client.search(index=index.name, query={"ids": {"values": ["d00001", "d00002"]}},
                                      docvalue_fields=[field])["hits"]["hits"], key=lambda h: h["_id"])
    index.client.update(index=index.name, id=b["_id"], doc={DEDUP: {LSH_KEYS: a["fields"][field]}}, refresh=True)
    with pytest.raises(StoreError, match="fingerprint"):
        list(pairs_of_partition(fetching_store, Partition(0, 1), max_bucket=MAX_BUCKET).pairs)


@pytest.mark.parametrize("bad", ["3/3", "-1/2", "1/0", "x", "1/2/3", "2"])
def test_a_bad_partition_is_refused(bad):
    with pytest.raises(ConfigError, match="I/P"):
        Partition.parse(bad)


def test_cli_partitions_with_json_summary(tmp_path):
    data = _ingested_news(tmp_path)
    whole = run_cli("dups", "--index", "news", *data)
    assert whole.exit_code == 0
    lines: list[str] = []
    for i in range(2):
        r = run_cli("dups", "--index", "news", *data, "--partition", f"{i}/2", "--json")
        assert r.exit_code == 0, r.output
        lines += r.stdout.splitlines()
        summary = json.loads(r.stderr.splitlines()[-1])
        assert summary["event"] == "summary" and summary["partition"] == f"{i}/2"
        assert summary["pairs"] == len(r.stdout.splitlines())
        assert "cluster labels written" not in r.stderr  # nothing was asked to be written
    assert sorted(lines) == sorted(whole.stdout.splitlines()) and len(lines) > 10
    bad = run_cli("dups", "--index", "news", *data, "--partition", "2/2")
    assert bad.exit_code != 0 and "Error:" in bad.stderr and "2/2" in bad.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "table"])
def test_cli_partition_prints_one_runs_bytes_through_many_runs(tmp_path, monkeypatch, fmt):
    """`dups --partition 0/1`, its pairs sorted through runs of three merged, prints byte for byte what one
    `dups` prints, in every format; the temporary file is gone when it returns."""
    data = _ingested_news(tmp_path)
    whole = run_cli("dups", "--index", "news", *data, "--format", fmt)
    assert whole.exit_code == 0 and len(whole.stdout.splitlines()) > 10
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spill_dir))
    monkeypatch.setattr(partitioned, "PAIRS_A_RUN", 3)
    part = run_cli("dups", "--index", "news", *data, "--format", fmt, "--partition", "0/1")
    assert part.exit_code == 0, part.output
    assert part.stdout_bytes == whole.stdout_bytes
    assert os.listdir(spill_dir) == [] and not open_files_in(spill_dir)


def test_a_partition_groups_its_pairs_only_when_their_clusters_are_used(tmp_path, monkeypatch):
    """The clusters of a partition's pairs hold an entry for every document in a pair (the part of its memory
    that grows with the documents it pairs): `dups --partition` in jsonl or csv, which print no cluster,
    never groups them; the table, which prints their count, and `--write-clusters` do. The library leaves
    `PartitionReport.clusters` None when told not to group, with the same pairs."""
    data = _ingested_news(tmp_path)
    whole = run_cli("dups", "--index", "news", *data)
    grouped = _counted_groupings(monkeypatch)
    _print_without_clusters(data, "--partition", "0/1")
    assert grouped == []
    part = run_cli("dups", "--index", "news", *data, "--partition", "0/1")
    assert part.stdout_bytes == whole.stdout_bytes and len(whole.stdout.splitlines()) > 10
    table = run_cli("dups", "--index", "news", *data, "--format", "table", "--partition", "0/1")
    assert table.exit_code == 0 and grouped == [1] and " pairs in " in table.stdout
    store = open_store("news", data_dir=tmp_path / "data")
    with pairs_of_partition(store, "0/1", with_clusters=False) as bare, pairs_of_partition(store, "0/1") as full:
        assert bare.clusters is None and full.clusters
        assert [repr(p) for p in bare.pairs] == [repr(p) for p in full.pairs]


def test_dups_groups_its_pairs_only_when_their_clusters_are_used(tmp_path, monkeypatch):
    """The same for the whole index: `dups` in jsonl or csv never groups its pairs; the table, `--json` (both
    count the clusters) and `--write-clusters` do. The library leaves `PairsReport.clusters` None when told
    not to group, with the same pairs, and still writes the clusters when asked to."""
    data = _ingested_news(tmp_path)
    whole = run_cli("dups", "--index", "news", *data)
    grouped = _counted_groupings(monkeypatch)
    _print_without_clusters(data)
    assert grouped == []
    assert run_cli("dups", "--index", "news", *data).stdout_bytes == whole.stdout_bytes
    counted_json = json.loads(run_cli("dups", "--index", "news", *data, "--json").stdout)
    assert grouped == [1] and counted_json["clusters"] > 0
    table = run_cli("dups", "--index", "news", *data, "--format", "table")
    assert grouped == [1, 1] and f" pairs in {counted_json['clusters']} clusters" in table.stdout
    store = open_store("news", data_dir=tmp_path / "data")
    bare, full = api.all_pairs(store, with_clusters=False), api.all_pairs(store)
    assert bare.clusters is None and full.clusters and len(grouped) == 3
    assert [repr(p) for p in bare.pairs] == [repr(p) for p in full.pairs]
    written = api.all_pairs(store, with_clusters=False, write_clusters=True)
    assert written.labels_written is not None and written.clusters == full.clusters


def _counted_groupings(monkeypatch) -> list[int]:
    """One entry for each grouping of pairs into clusters `esdedup.api` makes from now on."""
    grouped: list[int] = []
    real = api.clusters

    def counted(pairs):
        grouped.append(1)
        return real(pairs)

    monkeypatch.setattr(api, "clusters", counted)
    return grouped


def _print_without_clusters(data: list[str], *args: str) -> None:
    """`dups` in the two formats that print no cluster, each printing pairs."""
    for fmt in ("jsonl", "csv"):
        r = run_cli("dups", "--index", "news", *data, "--format", fmt, *args)
        assert r.exit_code == 0 and r.stdout.count("\n") > 10, r.output


def run_cli(*args: str):
    return cli_runner().invoke(app, list(args))


def _ingested_news(tmp_path: Path) -> list[str]:
    """A small corpus with near-duplicates ingested through the CLI as index ``news``: the ``--data-dir`` arguments."""
    docs, _ = make_corpus(60, 20, seed=9)
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "data")]
    assert run_cli("ingest", str(src), "--index", "news", *data).exit_code == 0
    return data


def test_a_failed_partition_names_itself_and_how_to_rerun(tmp_path):
    r = run_cli("dups", "--index", "nosuch", "--data-dir", str(tmp_path / "data"), "--partition", "1/3", "--json")
    assert r.exit_code == 2
    error = json.loads(next(ln for ln in r.stderr.splitlines() if ln.startswith("{")))
    assert error["event"] == "error" and error["partition"] == "1/3" and "--partition 1/3" in error["rerun"]
    assert "Error:" in r.stderr and "partition 1/3" in r.stderr.splitlines()[-1]


@pytest.fixture(params=["local", pytest.param("es", marks=pytest.mark.es)])
def two_stores(request, tmp_path):
    made = [_filled(request, tmp_path), _filled(request, tmp_path)]
    yield made
    for s in made:
        s.drop()


def _labels(store: Store) -> dict[str, str | None]:
    return {d.id: d.cluster_id for batch in store.scan() for d in batch}


def test_partitions_writing_clusters_leave_one_runs_clusters(two_stores):
    one, parts = two_stores
    assert all_pairs(one, max_bucket=MAX_BUCKET, write_clusters=True).labels_written > 0
    for i in (2, 0, 1):  # any order
        pairs_of_partition(parts, f"{i}/3", max_bucket=MAX_BUCKET, write_clusters=True)
    expected = _labels(one)
    assert len(set(expected.values())) < len(expected)  # clusters were written
    assert _labels(parts) == expected
    # Run again (a partition stopped midway is mended so): nothing changes.
    assert pairs_of_partition(parts, "1/3", max_bucket=MAX_BUCKET, write_clusters=True).labels_written == 0
