"""A document as a row of the ``docs`` table, and back."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice

import numpy as np

from esdedup.fingerprint.minhash import SIGNATURE_DTYPE
from esdedup.fingerprint.simhash import from_hex, to_hex
from esdedup.schema import json_bytes
from esdedup.store.base import NewDoc, StoredDoc

#: The columns a `StoredDoc` is read from, in the order `stored_docs` takes them.
DOC_COLUMNS = ("id, simhash, vector, tokens, chars, empty, cluster_id, duplicate_of, minhash, shingles, wseq, "
               "cluster_seq, content_sha1")
#: The columns a document's band and LSH keys are computed from (`esdedup.store.local.keys.KeyTables`).
KEY_COLUMNS = "seq, id, simhash, minhash, banded"
#: Writes a document (`doc_rows`), in place of a stored one of the same id.
INSERT_DOC = ("INSERT OR REPLACE INTO docs (id, simhash, vector, tokens, chars, empty, content_sha1, cluster_id, "
              "duplicate_of, source, minhash, shingles, banded, wseq, cluster_seq) "
              "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
def source_json(source: dict) -> str:
    """A document's article fields as the ``source`` column holds them: the JSON the Elasticsearch store
    sends (`esdedup.schema.json_bytes`: orjson, the standard library for what orjson refuses), as text."""
    return json_bytes(source).decode("utf-8", "surrogatepass")


def doc_rows(docs: Sequence[NewDoc], bits: int, stores_vector: bool) -> list[tuple]:
    """The parameters of `INSERT_DOC` for each document (its vector only when the config stores it)."""
    fps = [d.fp for d in docs]
    vectors = iter(stored_vectors([fp.vector for fp in fps if not fp.empty]) if stores_vector else ())
    signatures = iter(stored_signatures([fp.minhash for fp in fps if fp.minhash is not None]))
    return [(d.id, to_hex(fp.simhash, bits), next(vectors) if stores_vector and not fp.empty else None,
             fp.length, fp.chars, int(fp.empty), d.content_sha1, d.cluster_id, d.duplicate_of, source_json(d.source),
             None if fp.minhash is None else next(signatures), fp.shingles, int(bool(fp.bands)), d.seq,
             d.cluster_seq) for d, fp in zip(docs, fps, strict=True)]


def block_params(docs: Sequence[NewDoc], bits: int, stores_vector: bool) -> tuple[list[tuple], list[int],
                                                                                 list[tuple]] | None:
    """`doc_rows` of documents whose fingerprints came in one block of arrays (`NewDoc.block`), as the
    extension's writer takes them (`RowWriter.start_block`): a short tuple a document (id, content SHA-1,
    cluster, duplicate of, source, write orders), each document's row in the block, and where each parameter
    of `INSERT_DOC` is (the block's arrays: SimHash, vector, counts, signature). The same values as
    `doc_rows`, but the source: its dict, which the writer binds as `source_json` gives it (the extension
    encodes one of plain values on its own thread, and has `source_json` encode the others); None when the
    documents did not come in one block."""
    block = docs[0].block if docs else None
    if block is None or any(d.block is not block for d in docs):
        return None
    own = [(d.id, d.content_sha1, d.cluster_id, d.duplicate_of, d.source, d.seq, d.cluster_seq) for d in docs]
    n = len(block)
    if stores_vector and block.vectors is not None:
        # The rows without a vector of their own read the zero vector, put after the others; an empty text's
        # vector is not stored.
        vectors = _rounded(np.vstack([block.vectors, block.zero[np.newaxis]]))
        at = np.where(block.empties, -1, np.where(block.vector_row >= 0, block.vector_row, len(block.vectors)))
        vector = ("blob", vectors.tobytes(), vectors.shape[1] * vectors.itemsize, _le(at))
    else:
        vector = ("blob", b"", 0, _le(np.full(n, -1)))
    sigs = np.zeros((0, 0), dtype=SIGNATURE_DTYPE) if block.sigs is None else block.sigs.astype(SIGNATURE_DTYPE)
    params = [("doc", 0), ("hex", block.simhash.astype("<u8").tobytes(), bits // 4), vector,
              ("int", _le(block.lengths)), ("int", _le(block.chars)), ("int", _le(block.empties)), ("doc", 1),
              ("doc", 2), ("doc", 3), ("doc", 4), ("blob", sigs.tobytes(), sigs.shape[1] * sigs.itemsize,
                                                   _le(block.sig_row)),
              ("int", _le(block.shingles)), ("int", _le(block.banded)), ("doc", 5), ("doc", 6)]
    return own, [d.row for d in docs], params


def _le(values: np.ndarray) -> bytes:
    """Integers (or booleans) as little-endian int64 bytes, as the extension's writer reads them."""
    return np.ascontiguousarray(values, dtype="<i8").tobytes()


def stored_docs(rows: Iterable[tuple], dims: int) -> Iterator[StoredDoc]:
    """The documents of rows of `DOC_COLUMNS` (a document stored without a vector reads a zero one). The
    vectors are read-only, as the stored ones read from their bytes are: the documents without one share
    one zero vector (a whole scan of a store that keeps no vectors would otherwise make one a document)."""
    zero = np.zeros(dims, dtype=np.float32)
    zero.flags.writeable = False
    rows = iter(rows)
    while chunk := list(islice(rows, _DOCS_AT_ONCE)):
        for (doc_id, sh, vec, tokens, chars, empty, cluster_id, dup_of, _, shingles, seq, cluster_seq,
             sha1), minhash in zip(chunk, _signatures([row[8] for row in chunk]), strict=True):
            vector = np.frombuffer(vec, dtype="<f4") if vec is not None else zero
            # By position, in StoredDoc's order (version: None): a call by keyword costs twice as much.
            yield StoredDoc(doc_id, from_hex(sh), vector, bool(empty), tokens or 0, chars or 0, cluster_id, dup_of,
                            minhash, shingles or 0, seq or 0, cluster_seq or 0, None, sha1)


#: Rows `stored_docs` converts the signatures of at once.
_DOCS_AT_ONCE = 256


def _signatures(blobs: list[bytes | None]) -> list[np.ndarray | None]:
    """Each stored signature's values as uint32 (None where there is none): when they are all of one length, as
    the rows of one array converted at once (one numpy conversion a signature would cost as much as making the
    rest of its document; the array lives as long as any of its rows); else one at a time, which also refuses
    a blob that is no whole number of values."""
    present = [b for b in blobs if b is not None]
    width = len(present[0]) if present else 0
    if not present or width % np.dtype(SIGNATURE_DTYPE).itemsize or any(len(b) != width for b in present):
        return [None if b is None else np.frombuffer(b, dtype=SIGNATURE_DTYPE).astype(np.uint32) for b in blobs]
    values = iter(np.frombuffer(b"".join(present), dtype=SIGNATURE_DTYPE).astype(np.uint32).reshape(len(present), -1))
    return [None if b is None else next(values) for b in blobs]


def stored_vector(vector: np.ndarray) -> bytes:
    """The vector as float32 bytes, each value first rounded to 6 decimals exactly as the Elasticsearch
    store writes it into ``_source`` (`esdedup.schema.dedup_source`), so cosines agree to the last bit on
    both stores. ``x * 1e6`` is exact for a float32 ``x``, so this is Python's correctly rounded
    ``round(x, 6)``, vectorised."""
    return _rounded(vector).tobytes()


def _rounded(values: np.ndarray) -> np.ndarray:
    """Vector values (any shape) rounded as `stored_vector` stores them, as little-endian float32."""
    return (np.rint(np.asarray(values, dtype=np.float64) * 1e6) / 1e6).astype("<f4")


def stored_vectors(vectors: Sequence[np.ndarray]) -> list[bytes]:
    """`stored_vector` of each vector, rounded in one array when they have one length."""
    if len(vectors) < 2 or len({v.shape for v in vectors}) != 1:
        return [stored_vector(v) for v in vectors]
    return _split_rows(_rounded(np.stack(vectors)))


def stored_signature(sig: np.ndarray) -> bytes:
    """A MinHash signature's 16-bit values as bytes (`esdedup.fingerprint.minhash.SIGNATURE_DTYPE`, as in
    Elasticsearch)."""
    return np.asarray(sig, dtype=SIGNATURE_DTYPE).tobytes()


def stored_signatures(sigs: Sequence[np.ndarray]) -> list[bytes]:
    """`stored_signature` of each signature, converted in one array when they have one length."""
    if len(sigs) < 2 or len({s.shape for s in sigs}) != 1:
        return [stored_signature(s) for s in sigs]
    return _split_rows(np.stack(sigs).astype(SIGNATURE_DTYPE))


def _split_rows(matrix: np.ndarray) -> list[bytes]:
    """The bytes of each row of a C-contiguous 2-D array."""
    data, width = matrix.tobytes(), matrix[0].nbytes
    if not width:
        return [b""] * len(matrix)
    return [data[i:i + width] for i in range(0, len(data), width)]
