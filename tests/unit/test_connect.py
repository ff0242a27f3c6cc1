"""Connection settings: several node URLs, credentials moved out of URLs, clear errors."""
from __future__ import annotations

import pytest

from esdedup.errors import ConfigError
from esdedup.es.connect import make_client, resolve_settings


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch, tmp_path):
    for name in ("ESDEDUP_ES_URL", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD", "ESDEDUP_ES_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ESDEDUP_CONFIG", str(tmp_path / "none.json"))


def test_several_urls_become_several_hosts_without_credentials():
    s = resolve_settings("https://u:p%40ss@a:9200, https://b:9201/")
    assert s is not None
    assert s.hosts == ["https://a:9200", "https://b:9201"]
    assert s.display_url == "https://a:9200,https://b:9201" and "p@ss" not in repr(s)
    assert (s.username, s.password) == ("u", "p@ss")
    client = make_client(s)
    assert len(client.transport.node_pool.all()) == 2


@pytest.mark.parametrize("url, message", [
    ("http://a:1,https://b:2", "mix http and https"),
    ("https://u:x@a:1,https://v:y@b:2", "different credentials"),
    ("http://a:1,ftp://b", "several: comma-separated"),
])
def test_inconsistent_urls_are_refused(url, message):
    with pytest.raises(ConfigError, match=message):
        resolve_settings(url)


def test_a_password_in_a_bad_url_is_not_echoed():
    with pytest.raises(ConfigError) as err:
        resolve_settings("http://a:1,ftp://u:s3cret@b")
    assert "s3cret" not in str(err.value)


@pytest.mark.parametrize("url, why", [
    ("http://127.0.0.1:99999", "port out of range 0-65535"),
    ("http://127.0.0.1:abc", "port could not be cast to integer value as 'abc'"),
    ("http://127.0.0.1:0", "port 0"),
    ("http://[::1", "invalid IPv6 URL"),
    ("https://u:s3cret@[::1", "invalid IPv6 URL"),
    ("alice:s3cret@127.0.0.1:1", "no http:// or https:// before the host"),
    ("alice:s3/cr@t@127.0.0.1:1", "no http:// or https:// before the host"),
    ("localhost:9200", "no http:// or https:// before the host"),
    ("ftp://u:s3cret@b", "the scheme is 'ftp'"),
    ("http://:9200", "no host"),
])
def test_a_malformed_url_is_a_config_error_without_its_password(url, why):
    with pytest.raises(ConfigError) as err:
        resolve_settings(url)
    message = str(err.value)
    assert message.endswith(f": {why}"), message
    assert "s3cret" not in message and "s3/cr@t" not in message and "cr@t" not in message


def test_credentials_leave_an_ipv6_url_with_its_brackets():
    s = resolve_settings("https://u:p%40ss@[::1]:9200")
    assert s is not None and s.hosts == ["https://[::1]:9200"] and s.password == "p@ss"


def test_a_node_named_twice_is_one_node():
    s = resolve_settings("http://a:1,http://a:1/")
    assert s is not None and s.hosts == ["http://a:1"]


# -- open_store takes the settings whole -------------------------------------------------------------------
def test_open_store_takes_connection_settings(tmp_path):
    from esdedup.api import open_store
    from esdedup.store.elastic.store import ElasticStore
    from esdedup.store.local import LocalStore

    settings = resolve_settings("https://u:s3cret@127.0.0.1:1", ca_certs=str(tmp_path / "ca.pem"))
    store = open_store("news", connection=settings)  # not opened: nothing is sent
    assert isinstance(store, ElasticStore) and store.display_url == "https://127.0.0.1:1"
    assert "s3cret" in store.secrets and store.client.transport.node_pool.all()[0].config.ca_certs.endswith("ca.pem")
    assert isinstance(open_store("news", data_dir=tmp_path), LocalStore)  # no server named anywhere
    with pytest.raises(ConfigError, match="one of client, connection and es_url"):
        open_store("news", connection=settings, es_url="http://127.0.0.1:2")


def test_both_stores_validate_names_and_report_mismatches_with_one_helper():
    """The Elasticsearch store takes them from the protocol module, not from the SQLite store."""
    from esdedup.store import base
    from esdedup.store.elastic import index as elastic
    from esdedup.store.local import store as local
    assert elastic.validate_name is base.validate_name is local.validate_name
    assert elastic.mismatch_error is base.mismatch_error is local.mismatch_error
