"""Store names and ids: the rule both stores apply to a collection's name, the error of a stored config that
differs from the one asked for, and the ids a search for a text matches exactly."""
from __future__ import annotations

import re

from esdedup.errors import ConfigError, ConfigMismatchError
from esdedup.fingerprint.config import FingerprintConfig


def id_variants(query: str) -> list[str]:
    """The ids a search for ``query`` matches exactly: it as given, in lower and in upper case (an index
    of exact ids cannot ignore case without reading every id).

    >>> id_variants(" Panda-2 ")
    ['Panda-2', 'panda-2', 'PANDA-2']
    """
    q = query.strip()
    return list(dict.fromkeys([q, q.lower(), q.upper()]))


#: Used with fullmatch: ``$`` would also match before a trailing newline ("abc\\n" passed).
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,199}")


def validate_name(name: str) -> str:
    """Collection/index names: lowercase letters, digits, ``._-``; the same rule for both stores. A list
    (``a,b``) or a pattern (``a*``) is refused in its own words: a store is one index (its ids, counts and
    clusters are one index's), while Elasticsearch would read such a name as several."""
    several = "a comma-separated list" if "," in name else "a wildcard pattern" if "*" in name else None
    if several and _NAME.fullmatch(re.sub(r"[,*]", "", name) or "x"):
        raise ConfigError(f"invalid index name {name!r}: {several} names several indices, and a store is one "
                          "index: give the name of one index (search_diversified searches several)")
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigError(f"invalid index name {name!r}: use lowercase letters, digits, '.', '_' or '-', "
                          "starting with a letter or digit, at most 200 characters")
    return name


def mismatch_error(name: str, stored: FingerprintConfig, requested: FingerprintConfig) -> ConfigMismatchError:
    """The error of a store asked to open index ``name`` with a config incompatible with its stored one."""
    diffs = stored.differences(requested)
    shown = ", ".join(f"{k}: index has {a!r}, you asked for {b!r}" for k, (a, b) in list(diffs.items())[:4])
    return ConfigMismatchError(
        f"index {name!r} was built with a different fingerprint config ({shown}); open it with its own "
        "config or use a new index", stored=stored.identity(), requested=requested.identity())
