"""The bridge to the native core (the optional ``esdedup_native`` extension, built from native/): it loads the
extension, checks that it is of the `API_VERSION` this esdedup was written for, and says whether it is in use
(`enabled`: loaded, and the environment variable ``ESDEDUP_NATIVE`` is not ``0``). Nothing else: each native
step lives beside the Python step it replaces, in the layer that calls it, and asks this module for the
extension (`loaded`, `function`). The Python steps stay the definition; a native step computes what its
Python step computes, bit for bit, and where the core is not in use (`unavailable_reason` says why)
everything runs in Python with the same results.
"""
from __future__ import annotations

import os
from types import ModuleType
from typing import Any

#: The environment variable that turns the native core off (``0``) without uninstalling it.
ENV_SWITCH = "ESDEDUP_NATIVE"
#: The version of the extension's interface and results this module was written for.
API_VERSION = 18
#: How to build the extension (named in `unavailable_reason`).
BUILD_HINT = "native/README.md of the esdedup source gives the maturin command"


def _import_extension() -> tuple[ModuleType | None, str]:
    try:
        import esdedup_native
    except ImportError as exc:
        return None, f"the esdedup_native extension is not installed ({exc}); to build it, {BUILD_HINT}"
    found = getattr(esdedup_native, "API_VERSION", None)
    if found != API_VERSION:
        return None, (f"the installed esdedup_native has API version {found}, this esdedup needs {API_VERSION}; "
                      f"to rebuild it, {BUILD_HINT}")
    return esdedup_native, ""


_EXTENSION, _MISSING = _import_extension()


def extension_missing() -> str:
    """Why the extension can not be used at all ("" when it is installed and of the expected version)."""
    return _MISSING


def unavailable_reason() -> str:
    """Why the native core is not used ("" when it is): `extension_missing`, or the switch is off."""
    if _MISSING:
        return _MISSING
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return f"{ENV_SWITCH}=0 turns the native core off"
    return ""


def enabled() -> bool:
    """Whether the native core is built, of the expected version, and not turned off."""
    return not unavailable_reason()


def kernels() -> list[str]:
    """The compiled forms of the extension's loops this CPU runs (none without the extension)."""
    return list(_EXTENSION.kernels()) if _EXTENSION is not None else []


def loaded() -> Any:
    """The extension module, whether the switch is on or off (a step made only where the core is in use reads
    it through this); None when it is not installed or of another version (`extension_missing`)."""
    return _EXTENSION


def function(name: str) -> Any:
    """The extension's function ``name``, or None when the native core is not in use."""
    return getattr(_EXTENSION, name) if enabled() else None
