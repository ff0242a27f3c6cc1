"""The dictionaries of the installed OpenCC's ``t2s`` conversion, read as plain data for the native core
(`esdedup.fingerprint.native_steps.t2s_step`).

OpenCC runs a config's ``normalization`` chain over the whole text, then its ``conversion_chain``; each
conversion goes through the text left to right, replacing at each position the longest key its dictionary
(for a ``short_circuit`` group: the first of its dictionaries with any key there) has, and copying the rest
(OpenCC's src/Config.cpp, Conversion.cpp, PrefixMatch.cpp and UTF8Util.hpp; native/src/t2s.rs does the
converting). This module gives those conversions as stages: each a list of tables in the group's order, each
table the (key, value) entries of one ``.ocd2`` file.

It reads only what it recognises: the OpenCC versions of `KNOWN_VERSIONS` (whose semantics the tests check),
a config of a ``normalization`` and a ``conversion_chain`` of ``ocd2`` dictionaries and ``short_circuit``
groups of them, ``.ocd2`` files whose marisa trie reads back to the same bytes and whose values fill the
file. Anything else raises `Unrecognised`, and OpenCC itself converts.
"""
from __future__ import annotations

import json
import os
import struct
from typing import Any

#: The OpenCC versions whose conversion native/src/t2s.rs reproduces (tests/unit/test_native_t2s.py).
KNOWN_VERSIONS = frozenset({"1.4.2"})
#: What an ``.ocd2`` file starts with; a marisa trie follows, then the serialised values.
OCD2_HEADER = b"OPENCC_MARISA_0.2.5"
#: A config's members, those it must have and those it may have.
_CONFIG_NEEDS = frozenset({"conversion_chain"})
_CONFIG_MAY = frozenset({"name", "normalization", "conversion_chain"})

#: (key, value) of each entry of one dictionary.
Entries = list[tuple[str, str]]
#: The tables of one conversion, in the order a short-circuit group tries them.
Stage = list[Entries]


class Unrecognised(Exception):
    """The installed OpenCC, its config or a dictionary is not one this module reads."""


def t2s_stages(converter: Any) -> list[Stage]:
    """The stages of ``converter`` (an ``opencc.OpenCC("t2s")``): its config's normalization chain, then its
    conversion chain, read from the files the converter itself loaded."""
    import opencc

    version = getattr(opencc, "__version__", None)
    if version not in KNOWN_VERSIONS:
        raise Unrecognised(f"OpenCC {version} is not one of {sorted(KNOWN_VERSIONS)}")
    path = getattr(converter, "config", None)
    if not isinstance(path, str) or not os.path.isabs(path) or not os.path.isfile(path):
        raise Unrecognised(f"the converter's config {path!r} is not a file")
    return config_stages(path)


def config_stages(path: str) -> list[Stage]:
    """The stages of the OpenCC config at ``path``, its dictionaries read from the config's directory."""
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as exc:
        raise Unrecognised(f"{path}: {exc}") from exc
    if not isinstance(config, dict) or not _CONFIG_NEEDS <= config.keys() <= _CONFIG_MAY:
        raise Unrecognised(f"{path}: not a config of the shape {sorted(_CONFIG_MAY)}")
    directory = os.path.dirname(path)
    chains = [config.get("normalization", []), config["conversion_chain"]]
    return [_stage(step, directory) for chain in chains for step in _chain(chain)]


def _chain(chain: Any) -> list[dict[str, Any]]:
    """The dictionaries of a chain (a list of conversions, each ``{"dict": ...}``)."""
    if not isinstance(chain, list) or not all(isinstance(step, dict) and step.keys() == {"dict"} for step in chain):
        raise Unrecognised(f"a chain that is not a list of conversions: {chain!r}")
    return [step["dict"] for step in chain]


def _stage(spec: Any, directory: str) -> Stage:
    """The tables of one conversion's dictionary: an ``ocd2`` file, or a short-circuit group of them."""
    if isinstance(spec, dict) and spec.get("type") == "group":
        if not spec.keys() <= {"type", "match_policy", "dicts"} or not isinstance(spec.get("dicts"), list):
            raise Unrecognised(f"a dictionary group of another shape: {spec!r}")
        if spec.get("match_policy", "short_circuit") != "short_circuit":
            raise Unrecognised(f"a group's match policy {spec['match_policy']!r}")
        return [_table(member, directory) for member in spec["dicts"]]
    return [_table(spec, directory)]


def _table(spec: Any, directory: str) -> Entries:
    """The entries of an ``ocd2`` dictionary. ``may_output_tofu`` changes nothing: ``opencc.OpenCC`` loads
    such dictionaries unless told otherwise (``include_tofu_risk_dictionaries``)."""
    if (not isinstance(spec, dict) or spec.get("type") != "ocd2" or not isinstance(spec.get("file"), str)
            or not spec.keys() <= {"type", "file", "may_output_tofu"}
            or not isinstance(spec.get("may_output_tofu", False), bool)):
        raise Unrecognised(f"a dictionary that is not an ocd2 file: {spec!r}")
    path = os.path.join(directory, spec["file"])
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise Unrecognised(f"{path}: {exc}") from exc
    return read_ocd2(data, path)


def read_ocd2(data: bytes, name: str = "ocd2") -> Entries:
    """The (key, value) entries of an ``.ocd2`` file's bytes: each key of its marisa trie with the first of
    the values OpenCC stored for the key's id, as OpenCC's ``MarisaDict`` reads them."""
    if not data.startswith(OCD2_HEADER):
        raise Unrecognised(f"{name}: no {OCD2_HEADER.decode()} header")
    try:
        import marisa_trie
    except ImportError as exc:
        raise Unrecognised(f"the marisa-trie package reads {name} ({exc})") from exc
    body = data[len(OCD2_HEADER):]
    try:
        trie = marisa_trie.Trie().frombytes(body)
        size = len(trie.tobytes())
        keys = trie.items()
    except Exception as exc:  # marisa-trie raises what the C++ library throws, of several kinds
        raise Unrecognised(f"{name}: the trie does not read ({exc})") from exc
    if body[:size] != trie.tobytes():
        raise Unrecognised(f"{name}: the trie does not write back to the bytes it was read from")
    values = _values(body[size:], len(keys), name)
    if sorted(key_id for _, key_id in keys) != list(range(len(values))):
        raise Unrecognised(f"{name}: the trie's key ids are not those of its values")
    for key, _ in keys:
        if not key or "\0" in key:
            raise Unrecognised(f"{name}: a key {key!r} OpenCC's matcher cuts short")
    return [(key, values[key_id]) for key, key_id in keys]


def _values(data: bytes, keys: int, name: str) -> list[str]:
    """OpenCC's serialised values (``SerializedValues``): the first value of each key id. Every byte must be
    read, every key have a value, and every value be UTF-8 ending in its NUL."""
    try:
        items, total = struct.unpack_from("<II", data)
        pool, offset = data[8:8 + total], 8 + total
        if items != keys or len(pool) != total:
            raise ValueError(f"{items} items for {keys} keys, {len(pool)} of {total} value bytes")
        firsts: list[str] = []
        start = 0
        for _ in range(items):
            (count,) = struct.unpack_from("<H", data, offset)
            if count == 0:  # OpenCC gives such a key itself or nothing, depending on the dictionary's place
                raise ValueError("a key without a value")
            sizes = struct.unpack_from(f"<{count}H", data, offset + 2)
            offset += 2 + 2 * count
            slots = []
            for size in sizes:
                slot = pool[start:start + size]
                if size == 0 or len(slot) != size or slot[-1] != 0:
                    raise ValueError("a value out of bounds or without its NUL")
                slots.append(slot[:slot.index(0)].decode("utf-8"))  # OpenCC keeps a value up to its first NUL
                start += size
            firsts.append(slots[0])
        if offset != len(data) or start != total:
            raise ValueError("bytes left over")
    except (struct.error, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise Unrecognised(f"{name}: the values do not read ({exc})") from exc
    return firsts
