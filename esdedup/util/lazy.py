"""Names a package shows at its top without importing their modules until first use.

A package face that imported everything it shows would make ``import esdedup`` load the store layer and the
Elasticsearch client; with `lazy_names` the name is resolved, and cached in the package, on first access.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` that load ``names`` (name -> absolute module) on demand.

    >>> getattr_, _ = lazy_names("esdedup", {"hamming": "esdedup.fingerprint.simhash"})
    >>> getattr_("hamming")(0b1011, 0b0001)
    2
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
