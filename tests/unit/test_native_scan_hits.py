"""All-pairs search reads an Elasticsearch index's signatures a page of hits at a time
(`esdedup.store.elastic.scans.signature_columns`). The native core reads the hits of the plain form
(`esdedup.es.hits.plain_signature_hits`) and leaves the others to the Python reader: on random and odd pages,
the columns must be those the Python reader makes of every hit alone, and so must the errors."""
from __future__ import annotations

import base64
import importlib
import random

import numpy as np
import pytest

from esdedup.errors import InputError
from esdedup.es import hits as es_hits
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.simhash import to_hex
from esdedup.schema import encode_minhash

scans = importlib.import_module("esdedup.store.elastic.scans")

CONFIGS = [FingerprintConfig(), FingerprintConfig(minhash_perm=64, minhash_bands=16, minhash_rows=4),
           FingerprintConfig(bits=128)]


def _plain(i: int, rng: random.Random, config: FingerprintConfig) -> dict:
    """A hit as a scan gets it: the signature and any vector in ``_source``, the rest as doc values."""
    perm = config.minhash_perm
    sig = np.array([rng.randrange(1 << 16) for _ in range(perm)], dtype=np.uint32)
    source: dict = {"minhash": encode_minhash(sig)}
    if rng.random() < 0.3:
        source["vector"] = [rng.gauss(0, 1) for _ in range(config.dims)]
    fields = {"dedup.simhash": [to_hex(rng.getrandbits(config.bits), config.bits)],
              "dedup.empty": [False], "dedup.chars": [rng.randrange(1, 400)], "dedup.shingles": [rng.randrange(1, 80)]}
    return {"_index": "news", "_id": f"d{i:05d}-{rng.randrange(10**6)}", "_source": {"dedup": source},
            "fields": fields, "sort": [i]}


def _odd(hit: dict, rng: random.Random, config: FingerprintConfig) -> None:
    """One part of a plain hit changed to a form the Python reader reads (or refuses) its own way."""
    source, fields = hit["_source"]["dedup"], hit["fields"]
    change = rng.randrange(17)
    if change == 0:
        fields["dedup.simhash"] = [fields["dedup.simhash"][0].upper()]
    elif change == 1:
        fields["dedup.simhash"] = ["0x" + fields["dedup.simhash"][0]]
    elif change == 2:
        del fields["dedup.simhash"]
    elif change == 3:
        fields["dedup.shingles"] = [rng.choice(["30", 30.0, True, 0, -1])]
    elif change == 4:
        fields["dedup.chars"] = [rng.choice(["42", 42.0, None])]
    elif change == 5:
        fields["dedup.empty"] = [rng.choice([True, None, "false", 0])]
    elif change == 6:
        del source["minhash"]
    elif change == 7:
        source["minhash"] = rng.choice(["", source["minhash"][:-4], source["minhash"].encode()])
    elif change == 8:
        source["vector"] = rng.choice([[1, 2.5] + [0] * (config.dims - 2), [True] * config.dims, [2**30] * config.dims,
                                       None])
    elif change == 9:
        hit["fields"]["dedup.vector"] = [[0.5] * config.dims]
        source.pop("vector", None)
    elif change == 10:  # the dotted form of a flattened _source
        hit["_source"] = {f"dedup.{k}": v for k, v in source.items()}
    elif change == 11:
        hit["_source"] = {"dedup": dict(source) | {"simhash": fields.pop("dedup.simhash")[0]}}
    elif change == 12:
        hit["fields"] = {k: v[0] for k, v in fields.items()}  # values outside their lists
    elif change == 13:
        fields["dedup.chars"] = []
    elif change == 14:
        fields["dedup.shingles"] = [0]
        fields["dedup.chars"] = [rng.choice([10, 250, 5000])]
    elif change == 15:
        fields["dedup.empty"] = [True]
    else:
        hit["_source"]["dedup"] = None


def _page(rng: random.Random, config: FingerprintConfig, n: int, odd: float) -> list[dict]:
    hits = [_plain(i, rng, config) for i in range(n)]
    for h in hits:
        if rng.random() < odd:
            _odd(h, rng, config)
    return hits


def _columns(pages: list[list[dict]], config: FingerprintConfig, *, native: bool):
    """The columns `signature_columns` makes of ``pages`` (the native reader off: every hit read in Python),
    or the error it raises."""
    with pytest.MonkeyPatch.context() as mp:
        if not native:
            mp.setattr(scans, "plain_signature_hits", lambda *a: None)
        rows = scans._SignatureRows(config, config.minhash_perm)
        try:
            for hits in pages:
                rows.read(hits)
        except InputError as exc:
            return type(exc), str(exc)
        cols = rows.columns()
    return (cols.ids, cols.simhash, cols.chars, cols.shingles, cols.sigs.tolist(), cols.sigs.dtype, cols.banded_elsewhere,
            cols.vectors().tolist())


@pytest.mark.parametrize("config", CONFIGS, ids=["default", "perm64", "bits128"])
@pytest.mark.parametrize("seed", range(6))
def test_pages_read_natively_give_the_columns_of_the_python_reader(extension, switch_on, config, seed):
    rng = random.Random(seed)
    pages = [_page(rng, config, rng.choice([0, 1, 7, 60]), odd=rng.choice([0.0, 0.05, 0.5])) for _ in range(4)]
    assert _columns(pages, config, native=True) == _columns(pages, config, native=False)


def test_the_native_reader_reads_the_plain_hits_and_leaves_the_others(extension, switch_on):
    config = CONFIGS[0]
    rng = random.Random(7)
    hits = _page(rng, config, 40, odd=0.0)
    odd = [3, 9, 20]
    hits[3]["fields"]["dedup.simhash"] = ["0x12"]  # which int(x, 16) reads
    hits[9]["_source"]["dedup"]["minhash"] = "%" + hits[9]["_source"]["dedup"]["minhash"][1:]
    hits[20]["_source"]["dedup"]["vector"] = [1.0, 2.0]
    plain = es_hits.plain_signature_hits(hits, config.minhash_perm, config.bits, config.dims)
    assert plain is not None
    assert np.flatnonzero(~plain.read).tolist() == odd
    assert plain.ids == [h["_id"] for i, h in enumerate(hits) if i not in odd]
    first = hits[0]
    want = np.frombuffer(base64.b64decode(first["_source"]["dedup"]["minhash"]), dtype="<u2")
    assert plain.sigs[0].tolist() == want.tolist()
    assert plain.simhash[0] == int(first["fields"]["dedup.simhash"][0], 16)
    with_vector = [i for i, h in enumerate(hits) if i not in odd and "vector" in h["_source"]["dedup"]]
    assert int(plain.has_vector.sum()) == len(with_vector) == len(plain.vectors) > 0
    # A page with a bad hit raises, natively or not, the Python reader's error naming that hit.
    error = _columns([hits], config, native=True)
    assert error == _columns([hits], config, native=False)
    assert error[0] is InputError and repr(hits[9]["_id"]) in error[1]


def test_the_native_reader_leaves_wide_simhashes_and_checks_its_form(extension, switch_on):
    wide = CONFIGS[2]
    assert es_hits.plain_signature_hits([], wide.minhash_perm, wide.bits, wide.dims) is None
    kernel = es_hits.native.function("signature_hits")
    with pytest.raises(ValueError, match="signature_hits"):
        kernel([], 128, 100, 256, 64, 64)
