"""The public API (docs/api.md) called with arguments of the wrong type answers with esdedup's typed errors,
naming the function, the argument, the type given and what to give; never a TypeError or an AttributeError
from deep inside, and never a silent answer (a string fingerprinted character by character, a dict config
taken for the default one)."""
from __future__ import annotations

import importlib
import re
import typing

import pytest

from esdedup import FingerprintConfig, Fingerprinter, diversify, hamming, open_store, search_diversified
from esdedup.api import SimilarFinder, all_pairs, compare_files, create_index, describe, similar_to
from esdedup.errors import ConfigError, EsdedupError
from esdedup.es.connect import ConnectionSettings, resolve_settings
from esdedup.es.kibana import saved_objects, to_ndjson
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.simhash import hamming_many
from esdedup.ingest import Ingester, IngestOptions, ingest
from esdedup.ingest.label import label_new
from esdedup.match.clusters import clusters
from esdedup.match.lookup import similar
from esdedup.match.pairs import empty_copy_pairs, find_pairs, scored_pairs
from esdedup.match.similarity import (
    adjusted_cosine,
    containment,
    cosine,
    jaccard,
    novel_similarity,
    size_ratio_ok,
    vector_cosine,
    weighted_jaccard,
)
from esdedup.match.thresholds import Thresholds
from esdedup.readers import read_records, read_text_file
from esdedup.schema import mapping_for, template_for
from esdedup.search.paging import async_search_diversified, index_config
from esdedup.util import fieldtypes

TEXT = "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    data = tmp_path_factory.mktemp("misuse")
    ingester = Ingester(open_store("m", data_dir=data), FingerprintConfig())
    ingester.add(TEXT, id="a")
    ingester.close()
    opened = open_store("m", data_dir=data)
    opened.open(None, create=False)
    yield opened
    opened.close()


FPER = Fingerprinter()

CASES = [
    # (call, the words the error must hold)
    (lambda s: Fingerprinter("x"), "Fingerprinter.__init__: argument config must be a FingerprintConfig or None, got str"),
    (lambda s: Fingerprinter({"bits": 64}), "argument config must be a FingerprintConfig or None, got dict"),
    (lambda s: FPER.fingerprint_many("abc"), "argument texts must be a list (any iterable but a string or a dict)"),
    (lambda s: FPER.fingerprint_many(None), "Fingerprinter.fingerprint_many: argument texts must be a list"),
    (lambda s: FPER.fingerprint_normalized("ab"), "argument norms must be a list"),
    (lambda s: FingerprintConfig.from_dict(None), "FingerprintConfig.from_dict: argument data must be a dict"),
    (lambda s: FingerprintConfig.from_dict([]), "argument data must be a dict with string keys, got list"),
    (lambda s: FingerprintConfig.from_json(None), "FingerprintConfig.from_json: argument text must be a string"),
    (lambda s: FingerprintConfig().replace(colour=1), "unknown config field(s): colour"),
    (lambda s: FingerprintConfig().compatible_with(None), "argument other must be a FingerprintConfig, got NoneType"),
    (lambda s: FingerprintConfig().differences("x"), "argument other must be a FingerprintConfig, got str"),
    (lambda s: diversify({"hits": {"hits": []}}), "diversify: argument hits must be a list or tuple of dicts, got dict"),
    (lambda s: diversify(None), "argument hits must be a list or tuple of dicts, got NoneType"),
    (lambda s: diversify([1]), "argument hits must be a list or tuple of dicts, got list [1]"),
    (lambda s: diversify([], mode=None), "argument mode must be a string, got NoneType"),
    (lambda s: diversify([{"_id": "a", "_source": {"text": "x"}}], config={"bits": 64}),
     "argument config must be a FingerprintConfig or None, got dict"),
    (lambda s: diversify([], thresholds=0.5), "argument thresholds must be a Thresholds or a ThresholdOverrides or None"),
    (lambda s: diversify([{"_id": "a", "_source": {"text": "x"}}], fingerprinter="x"),
     "argument fingerprinter must be a Fingerprinter or None, got str"),
    (lambda s: diversify([{"_id": "a", "_source": {"text": "x"}}], text_field=None), "argument text_field must be a string"),
    (lambda s: search_diversified(None, "m", {}), "search_diversified: client must be an elasticsearch.Elasticsearch"),
    (lambda s: search_diversified("http://127.0.0.1:9200", "m", {}), "got str 'http://127.0.0.1:9200'; to name a server"),
    (lambda s: index_config(None, "m"), "index_config: client must be an elasticsearch.Elasticsearch client"),
    (lambda s: search_diversified(None, "m", "q"), "search_diversified: argument body must be a dict or None, got str"),
    (lambda s: search_diversified(None, 5, {}), "search_diversified: argument index must be a string, got int"),
    (lambda s: open_store(None), "open_store: argument index must be a string, got NoneType"),
    (lambda s: open_store("x", data_dir=5), "argument data_dir must be a string or a Path or None, got int"),
    (lambda s: open_store("x", es_url=5), "argument es_url must be a string or None, got int"),
    (lambda s: open_store("x", connection="http://x"), "argument connection must be a ConnectionSettings or None"),
    (lambda s: open_store("x", client="http://x"), "open_store: client must be an elasticsearch.Elasticsearch client"),
    (lambda s: open_store("m", data_dir=s.data_dir).open("x"), "LocalStore.open: argument config must be a "
                                                                "FingerprintConfig or None, got str"),
    (lambda s: create_index(None), "create_index: argument store must be a StoreCore, got NoneType"),
    (lambda s: create_index(s, {"bits": 64}), "create_index: argument config must be a FingerprintConfig or None"),
    (lambda s: Ingester(None), "Ingester.__init__: argument store must be a LabelledStore, got NoneType"),
    (lambda s: Ingester("m"), "Ingester.__init__: argument store must be a LabelledStore, got str"),
    (lambda s: Ingester(s, "x"), "Ingester.__init__: argument config must be a FingerprintConfig or None"),
    (lambda s: Ingester(s, on_duplicate=None), "argument on_duplicate must be a string, got NoneType"),
    (lambda s: Ingester(s, dead_letter=5), "argument dead_letter must be a string or a Path or None, got int"),
    (lambda s: Ingester(s).add_many(None), "Ingester.add_many: argument docs must be a list"),
    (lambda s: Ingester(s).add_many({"text": TEXT}), "Ingester.add_many: argument docs must be a list"),
    (lambda s: Ingester(s).add_many([1]), "Ingester.add_many: each article must be a dict, got int 1"),
    (lambda s: SimilarFinder(None), "SimilarFinder.__init__: argument store must be a StoreCore, got NoneType"),
    (lambda s: SimilarFinder(s, thresholds={"jaccard": 0.5}), "argument thresholds must be a Thresholds"),
    (lambda s: SimilarFinder(s).find(text=["a"]), "SimilarFinder.find: argument text must be a string or None"),
    (lambda s: SimilarFinder(s).find(path=5), "SimilarFinder.find: argument path must be a string or None"),
    (lambda s: SimilarFinder(s).find(text="x", top="3"), "argument top must be a whole number, got str '3'; write 3"),
    (lambda s: SimilarFinder(s).find(text="x", top=2.5), "argument top must be a whole number, got float 2.5"),
    (lambda s: SimilarFinder(s).find(text="x", top=None), "argument top must be a whole number, got NoneType"),
    (lambda s: SimilarFinder(s).find(text="x", colour=1), "SimilarFinder.find: got an unexpected keyword argument"),
    (lambda s: similar_to(None, text="x"), "similar_to: argument store must be a StoreCore"),
    (lambda s: all_pairs(None), "all_pairs: argument store must be a Store"),
    (lambda s: all_pairs(s, max_bucket="x"), "all_pairs: argument max_bucket must be a whole number, got str"),
    (lambda s: all_pairs(s, lsh_join=5), "all_pairs: argument lsh_join must be a string, got int"),
    (lambda s: describe("m"), "describe: argument store must be a ScannableStore, got str"),
    (lambda s: compare_files("ab"), "compare_files: argument paths must be a list or tuple of strings, got str"),
    (lambda s: compare_files([5, 6]), "compare_files: argument paths must be a list or tuple of strings"),
    (lambda s: compare_files(["a", "b"], config="x"), "argument config must be a FingerprintConfig or None"),
    (lambda s: hamming("a", 1), "hamming: argument a must be a whole number, got str"),
    (lambda s: ingest(None, s), "ingest: argument paths must be a list or tuple of strings or Paths, got NoneType"),
    (lambda s: ingest("/tmp/x", s), "ingest: argument paths must be a list or tuple of strings or Paths, got str"),
    (lambda s: ingest(["/dev/null"], None), "ingest: argument store must be a LabelledStore"),
    (lambda s: ingest(["/dev/null"], s, "x"), "ingest: argument config must be a FingerprintConfig or None"),
    (lambda s: ingest(["/dev/null"], s, None, {"workers": 1}), "ingest: argument options must be an IngestOptions or None"),
    (lambda s: mapping_for(None), "mapping_for: argument config must be a FingerprintConfig, got NoneType"),
    (lambda s: template_for(FingerprintConfig(), "news-*"), "template_for: argument index_patterns must be a list"),
    (lambda s: similar(s, None), "similar: argument fps must be a list or tuple of Fingerprints, got NoneType"),
    (lambda s: similar(s, ["x"]), "similar: argument fps must be a list or tuple of Fingerprints, got list"),
    (lambda s: list(find_pairs(None)), "find_pairs: argument store must be a ScannableStore"),
    # A bucket of fewer than two documents pairs nothing: refused on every entry point, not a silent nothing.
    *((lambda s, f=f, n=n: list(f(s, max_bucket=n)), "max_bucket must be at least 2")
      for f in (find_pairs, scored_pairs, empty_copy_pairs) for n in (1, 0, -1)),
    (lambda s: clusters(None), "clusters: argument pairs must be a list"),
    (lambda s: clusters([1]), "clusters: each pair must be a Pair or a tuple of two ids, got int"),
    (lambda s: Thresholds.from_config(None), "Thresholds.from_config: argument config must be a FingerprintConfig"),
    (lambda s: IngestOptions(workers="2"), "IngestOptions field workers must be a whole number, got str"),
    (lambda s: cosine(None, {}), "cosine: argument a must be a dict, got NoneType"),
    (lambda s: cosine("ab", "cd"), "cosine: argument a must be a dict, got str"),
    (lambda s: jaccard(None, set()), "jaccard: argument a must be a set or a frozenset, got NoneType"),
    (lambda s: containment("ab", "abc"), "containment: argument short must be a list or tuple of strings, got str"),
    (lambda s: weighted_jaccard(1, 2), "weighted_jaccard: argument a must be a dict, got int"),
    (lambda s: vector_cosine(None, None), "vector_cosine: argument a must be a numpy array, got NoneType"),
    (lambda s: size_ratio_ok("a", 1), "size_ratio_ok: argument len_a must be a whole number, got str"),
    (lambda s: novel_similarity(None, {}), "novel_similarity: argument a must be a dict"),
    (lambda s: adjusted_cosine({}, {}, shift="5"), "adjusted_cosine: argument shift must be a number, got str '5'"),
    (lambda s: BandLayout.choose("64", 3, n_docs=10), "BandLayout.choose: argument bits must be a whole number"),
    (lambda s: BandLayout.choose(64, 3, n_docs="x"), "BandLayout.choose: argument n_docs must be a whole number"),
    (lambda s: BandLayout.multi_table(64, 3, "6"), "BandLayout.multi_table: argument blocks must be a whole number"),
    (lambda s: BandLayout.pigeonhole(None, 3), "BandLayout field bits must be a whole number, got NoneType"),
    (lambda s: BandLayout.pigeonhole(64, 3).keys("x"), "BandLayout.keys: simhash must be a whole number, got str"),
    (lambda s: hamming_many("a", [1]), "hamming_many: a must be a whole number"),
    (lambda s: saved_objects(None, FingerprintConfig()), "saved_objects: argument index must be a string"),
    (lambda s: saved_objects("n", None), "saved_objects: argument config must be a FingerprintConfig"),
    (lambda s: to_ndjson(None), "to_ndjson: argument objects must be a list"),
    (lambda s: list(read_records(None)), "read_records: argument paths must be"),
    (lambda s: list(read_records([5])), "each input path must be a string or a path, got int 5"),
    (lambda s: read_text_file(None), "read_text_file: argument path must be a string or a path, got NoneType"),
    (lambda s: label_new(None), "label_new: argument store must be a Store"),
]


@pytest.mark.parametrize("call, words", CASES, ids=[w[:60] for _, w in CASES])
def test_misuse_is_a_typed_error_naming_the_argument(store, call, words):
    with pytest.raises(EsdedupError, match=re.escape(words)) as caught:
        call(store)
    assert isinstance(caught.value, ConfigError) and caught.value.exit_code == 2


def test_misuse_of_the_async_search_is_refused_before_any_request():
    import asyncio

    with pytest.raises(ConfigError, match="async_search_diversified: argument size must be a whole number"):
        asyncio.run(async_search_diversified(object(), "m", {}, size="10"))
    with pytest.raises(ConfigError, match="search_diversified: client must be an elasticsearch"):
        asyncio.run(async_search_diversified(None, "m", {}))


def test_right_types_in_other_forms_are_taken(store):
    """What the annotations allow is taken as it is, or normalised (a numpy integer, a Path, a tuple)."""
    import numpy as np

    assert SimilarFinder(store).find(text=TEXT, top=np.int64(3)).matches[0]["id"] == "a"
    assert len(FPER.fingerprint_many(iter([TEXT, TEXT]))) == 2
    assert diversify(({"_id": "a", "_source": {"text": TEXT}},))[0]["_id"] == "a"
    assert clusters([("a", "b")]) == {"a": "a", "b": "a"}


def test_every_checked_function_has_annotations_that_resolve():
    """The annotations are read on a function's first call: each must name things its module can see."""
    for name in ("esdedup.api", "esdedup.ingest.service", "esdedup.ingest.run", "esdedup.search.paging",
                 "esdedup.store.elastic.store", "esdedup.store.local.store"):
        importlib.import_module(name)
    assert len(fieldtypes.CHECKED) >= 25
    for fn in fieldtypes.CHECKED:
        hints = typing.get_type_hints(fn)
        assert hints, fn.__qualname__


@pytest.mark.parametrize("kwargs, words", [
    ({"url": 5}, "resolve_settings: argument url must be a string or None, got int 5"),
    ({"url": ["http://a:1"]}, "resolve_settings: argument url must be a string or None, got list"),
    ({"url": "http://a:1", "ca_certs": 5}, "resolve_settings: argument ca_certs must be a string or None, got int 5"),
    ({"url": "http://a:1", "verify_certs": "no"}, "argument verify_certs must be True or False, got str 'no'"),
])
def test_connection_arguments_of_the_wrong_type_are_named(monkeypatch, kwargs, words):
    monkeypatch.delenv("ESDEDUP_ES_URL", raising=False)
    with pytest.raises(ConfigError, match=re.escape(words)):
        resolve_settings(**kwargs)


@pytest.mark.parametrize("make", [
    lambda: resolve_settings("http://a:1", api_key=123456789),
    lambda: resolve_settings("http://a:1", password=b"123456789"),
    lambda: ConnectionSettings("http://a:1", api_key=b"123456789"),
    lambda: ConnectionSettings("http://a:1", password=123456789),
])
def test_a_credential_of_the_wrong_type_is_refused_without_showing_it(monkeypatch, make):
    monkeypatch.delenv("ESDEDUP_ES_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=re.escape("(value not shown)")) as caught:
        make()
    assert "123456789" not in str(caught.value)
