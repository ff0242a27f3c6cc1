"""The signatures of stored documents as columns: what all-pairs search reads of each (`SignatureColumns`,
and `copy_rows` for the exact copies), and the store that reads them without a `esdedup.store.base.StoredDoc`
each (`SignatureColumnsStore`), or its documents' content SHA-1s without reading them whole (`CopyColumnsStore`)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

import numpy as np

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.store.base import Capability, StoreCore, StoredDoc, holds_band_keys


@dataclass(frozen=True)
class SignatureColumns:
    """The stored documents with words and a MinHash signature of one length, ids sorted, as columns: what
    all-pairs search reads of each. ``vectors`` reads their vectors as an (n, dims) float32 array (zeros
    for a document stored without one), when called."""

    ids: list[str]
    simhash: list[int]
    chars: list[int]
    shingles: list[int]
    sigs: np.ndarray  # (n, perm) uint32
    #: The stored documents holding SimHash band keys (`esdedup.store.base.holds_band_keys`) that are not among
    #: these (no signature of this length): all-pairs search joins the band keys in memory only when there are
    #: none (`esdedup.match.joins.joins_bands`).
    banded_elsewhere: int
    vectors: Callable[[], np.ndarray] = field(repr=False)

    @classmethod
    def of(cls, docs: Iterable[StoredDoc], config: FingerprintConfig) -> SignatureColumns:
        """The columns of those of ``docs`` (any order) that have words and a signature of the config's length."""
        perm, elsewhere = config.minhash_perm, 0
        kept: list[StoredDoc] = []
        for d in docs:
            if in_signature_columns(d.empty, d.minhash is not None and len(d.minhash) == perm, d.shingles):
                kept.append(d)
            elif holds_band_keys(d.empty, d.chars, config):
                elsewhere += 1
        kept.sort(key=lambda d: d.id)
        sigs = (np.stack([d.minhash for d in kept]).astype(np.uint32, copy=False) if kept  # type: ignore[misc]
                else np.zeros((0, perm), dtype=np.uint32))
        vectors = [d.vector for d in kept]
        return cls([d.id for d in kept], [d.simhash for d in kept], [d.chars for d in kept],
                   [d.shingles for d in kept], sigs, elsewhere,
                   lambda: (np.stack(vectors).astype(np.float32, copy=False) if vectors
                            else np.zeros((0, config.dims), dtype=np.float32)))


def in_signature_columns(empty: Any, signed: Any, shingles: Any) -> Any:
    """Whether a document is among the `SignatureColumns`: a text with words (not ``empty``), a signature of
    the config's length (``signed``) and n-grams; of one document's values, or element by element of arrays."""
    return np.logical_not(empty) & signed & (shingles > 0)


class SignatureColumnsStore(Protocol):
    """A store that reads its documents' signatures as columns without a `StoredDoc` each (both stores): it
    declares `Capability.SIGNATURE_COLUMNS` (`reads_signature_columns` tells); all-pairs search reads
    `SignatureColumns.of` a `KeyScans.scan` of any other."""

    def signature_columns(self, perm: int) -> SignatureColumns:
        """`SignatureColumns.of` every stored document, read at once."""
        ...



class CopyColumnsStore(Protocol):
    """A store that reads every document's content SHA-1 without reading the documents whole: it declares
    `Capability.COPY_COLUMNS` (`reads_copy_columns` tells); grouping exact copies reads `copy_rows` of a
    `KeyScans.scan` of any other."""

    def copy_columns(self) -> list[tuple[str, str, bool]]:
        """`copy_rows` of the stored documents, read at once: at least those whose content SHA-1 another holds
        too (a store may leave out the others, which are no one's copy)."""
        ...


def reads_copy_columns(store: StoreCore) -> TypeGuard[CopyColumnsStore]:
    """Whether ``store`` declares `Capability.COPY_COLUMNS`."""
    return Capability.COPY_COLUMNS in store.capabilities


def copy_rows(docs: Iterable[StoredDoc]) -> list[tuple[str, str, bool]]:
    """(id, content SHA-1, without words) of those of ``docs`` stored with a content SHA-1 (not None nor "":
    a document written without one is no one's copy): what grouping the exact copies reads of each."""
    return [(d.id, d.content_sha1, d.empty) for d in docs if d.content_sha1]


def reads_signature_columns(store: StoreCore) -> TypeGuard[SignatureColumnsStore]:
    """Whether ``store`` declares `Capability.SIGNATURE_COLUMNS`."""
    return Capability.SIGNATURE_COLUMNS in store.capabilities
