"""The esdedup ingest pipeline: documents written by any client get their dedup fields on the node.

Needs the esdedup Elasticsearch plugin (plugin/README.md) on every node: its ``esdedup_fingerprint``
processor computes, from a text field and the index's `FingerprintConfig`, the same ``dedup`` fields that
`esdedup.ingest.run` writes, bit for bit. `put_pipeline` creates the pipeline from the config the index carries in
its ``_meta`` and makes it the index's default pipeline, so a plain ``_bulk`` from Logstash, Beats or an
application's own writer is fingerprinted. Labels (``cluster_id``, ``duplicate_of``) are not computed on the
node: they need lookups. The processor stamps each document's write order (``seq``, when it reached the node)
and `esdedup.ingest.label.label_new` labels what is new, as ingest labels its own documents.
"""
from __future__ import annotations

from typing import Any

from esdedup.errors import ConfigError, NeedsElasticsearch, StoreError
from esdedup.es.answers import api_reason
from esdedup.es.errors import es_errors
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.schema import DEDUP
from esdedup.store.base import Store, elasticsearch_backed

#: The plugin's processor type.
PROCESSOR = "esdedup_fingerprint"


def pipeline_name(index: str) -> str:
    """The pipeline an index gets by default: one per index, since it carries the index's config."""
    return f"esdedup-{index}"


def pipeline_body(config: FingerprintConfig, *, field: str = "text") -> dict[str, Any]:
    """The ``PUT _ingest/pipeline/<name>`` body for a config: one processor reading ``field``.

    >>> pipeline_body(FingerprintConfig())["processors"][0]["esdedup_fingerprint"]["field"]
    'text'
    """
    return {
        "description": f"esdedup: dedup fields of {field!r} (config schema {config.schema})",
        "processors": [{PROCESSOR: {"field": field, "target_field": DEDUP, "config": config.to_dict()}}],
    }


def put_pipeline(store: Store, *, name: str | None = None, field: str = "text", default: bool = True) -> str:
    """Create (or replace) the pipeline of an Elasticsearch index from its stored config and, with
    ``default``, make it the index's ``index.default_pipeline``. Returns the pipeline's name.

    Raises:
        ConfigError: the store is not Elasticsearch, or the processor refuses the config (a config the plugin
            cannot reproduce bit for bit: ``t2s``, the ``rjieba`` tokenizer, dictionary files ...).
        StoreError: the node has no esdedup plugin, or the request failed.
        IndexNotFound: the index does not exist.
    """
    if not elasticsearch_backed(store):
        raise NeedsElasticsearch("an ingest pipeline runs on Elasticsearch; the embedded store fingerprints in "
                          "esdedup itself")
    config = store.open(None, create=False).config
    name = name or pipeline_name(store.name)
    _put(store.client, name, pipeline_body(config, field=field))
    if default:
        with es_errors(f"setting the default pipeline of {store.name!r}"):
            store.client.indices.put_settings(index=store.name, settings={"index.default_pipeline": name})
    return name


def _put(client: Any, name: str, body: dict[str, Any]) -> None:
    import elasticsearch as es

    with es_errors(f"creating pipeline {name!r}"):
        try:
            client.ingest.put_pipeline(id=name, **body)
        except es.BadRequestError as exc:
            reason = api_reason(exc)
            if "No processor type exists" in reason:
                raise StoreError(f"the node has no {PROCESSOR!r} processor: install the esdedup plugin on every "
                                 f"node (plugin/README.md) ({reason})") from None
            raise ConfigError(f"the {PROCESSOR!r} processor refused the index's config: {reason}") from None
