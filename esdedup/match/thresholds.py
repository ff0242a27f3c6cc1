"""`Thresholds`: the values of the near-duplicate rule, one object for every path that applies it.

An index's `FingerprintConfig` carries its thresholds (``hamming_k``, ``cosine_threshold``,
``jaccard_threshold``, ``containment_threshold``); a caller may override some of them. Both are folded into
one `Thresholds` here, validated once, and handed to the rule (`esdedup.match.rule`) by ingest, `similar`,
`dups`, `diversify` and `search_diversified` alike.

A threshold of None switches its test off. "Use the index's value" is never a value: it is what
`Thresholds.from_config` does for every threshold it is not given, and what a function taking
``thresholds=None`` does for all of them.

>>> from esdedup.fingerprint.config import FingerprintConfig
>>> t = Thresholds.from_config(FingerprintConfig(), jaccard=0.6)
>>> (t.hamming_k, t.cosine, t.jaccard, t.containment)
(3, 0.8, 0.6, 0.8)
>>> Thresholds.from_config(FingerprintConfig(), cosine=None).cosine is None
True
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from esdedup.errors import ConfigError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.util.fieldtypes import checked_args

__all__ = ["InertThresholds", "ThresholdOverrides", "Thresholds", "acting_thresholds", "describe_rule",
           "lookup_thresholds", "resolve_thresholds"]


class _Unset:
    """The private marker of a threshold `Thresholds.from_config` was not given."""

    def __repr__(self) -> str:
        return "<from the config>"


_UNSET: Any = _Unset()
#: The names a caller may override, in the order of `Thresholds`' fields.
NAMES = ("hamming_k", "cosine", "jaccard", "containment")


@dataclass(frozen=True)
class Thresholds:
    """What counts as a near-duplicate (see `esdedup.match.rule` for how the four values combine).

    Args:
        hamming_k: the largest SimHash Hamming distance of a pair judged on its SimHash, or None (off).
        cosine: the smallest TF-vector cosine of such a pair (and of two legacy short texts), or None.
        jaccard: the smallest estimated character n-gram Jaccard of two texts with MinHash signatures, or None.
        containment: the smallest estimated share of the smaller text's n-grams found in the other, or None.

    Raises:
        ConfigError: a value of the wrong type or out of range, or neither ``hamming_k`` nor ``cosine``.
    """

    hamming_k: int | None = None
    cosine: float | None = None
    jaccard: float | None = None
    containment: float | None = None

    def __post_init__(self) -> None:
        for name in NAMES:
            object.__setattr__(self, name, _checked(name, getattr(self, name)))
        if self.hamming_k is None and self.cosine is None:
            raise ConfigError("give a Hamming distance, a cosine threshold, or both: with neither, pairs "
                              "without MinHash signatures could never be near-duplicates")

    @classmethod
    @checked_args
    def from_config(cls, config: FingerprintConfig, *, hamming_k: int | None = _UNSET,
                    cosine: float | None = _UNSET, jaccard: float | None = _UNSET,
                    containment: float | None = _UNSET) -> Thresholds:
        """The config's thresholds, with the ones given here in their place (None switches a test off).

        A containment threshold of 0 means off, as in the config.
        """
        values: dict[str, Any] = {
            "hamming_k": config.hamming_k if hamming_k is _UNSET else hamming_k,
            "cosine": config.cosine_threshold if cosine is _UNSET else cosine,
            "jaccard": config.jaccard_threshold if jaccard is _UNSET else jaccard,
            "containment": config.containment_threshold if containment is _UNSET else containment,
        }
        if values["containment"] == 0:
            values["containment"] = None
        return cls(**values)

    def check_band_guarantee(self, config: FingerprintConfig) -> None:
        """Band lookups only guarantee pairs up to the index's ``hamming_k``: a larger one would silently
        miss pairs, so the paths that look candidates up refuse it (`diversify` compares every pair and
        takes any). The same paths need the stored vectors a cosine-only rule reads (`check_stored_vector`)."""
        if self.hamming_k is not None and self.hamming_k > config.hamming_k:
            raise HammingBeyondIndex(self.hamming_k, config.hamming_k)
        self.check_stored_vector(config)

    def check_stored_vector(self, config: FingerprintConfig) -> None:
        """With the n-gram tests off, the cosine alone decides pairs of texts with signatures; refuse that on
        an index whose documents carry no TF vector (`FingerprintConfig.stores_vector`): no stored pair could
        ever match."""
        if (config.gets_signatures and not config.stores_vector and self.cosine is not None
                and self.jaccard is None and self.containment is None):
            raise ConfigError("with the jaccard and containment tests off, the cosine alone decides, and this "
                              "index's documents carry no TF vector (vector_index 'auto' stores none under "
                              f"strategy {config.strategy!r}); keep an n-gram test, or build the index with a "
                              "vector_index such as 'int8_flat'")

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in NAMES}


def _checked(name: str, value: Any) -> Any:
    """``value`` as threshold ``name`` holds it (None: off), or ConfigError."""
    if value is None:
        return None
    if name == "hamming_k":
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= int(value) <= 128:
            raise ConfigError(f"hamming_k must be a whole number from 0 to 128, or None, got {value!r}")
        return int(value)
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(float(value))
            or not 0.0 < float(value) <= 1.0):
        raise ConfigError(f"{name} threshold must be a number in (0, 1], or None, got {value!r}")
    return float(value)


class HammingBeyondIndex(ConfigError):
    """A Hamming threshold larger than the index's band layout can guarantee."""

    def __init__(self, requested: int, index_k: int) -> None:
        super().__init__(f"a Hamming distance of {requested} is larger than the index's hamming_k {index_k}; "
                         "band lookups cannot guarantee it (build the index again with a larger hamming_k)")
        self.requested = requested
        self.index_k = index_k


@dataclass(frozen=True)
class ThresholdOverrides:
    """Some thresholds given explicitly (a command line's options), the rest to come from the index's config
    once it is known: ``ThresholdOverrides(jaccard=0.6).for_config(config)``.

    Only the names given are stored; None given for a name switches that test off."""

    values: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(NAMES))
        if unknown:
            raise ConfigError(f"unknown threshold(s): {', '.join(unknown)} (known: {', '.join(NAMES)})")
        for name, value in values.items():  # refused here, before a caller starts any work with them
            _checked(name, None if name == "containment" and value == 0 else value)  # 0: off, as in from_config
        object.__setattr__(self, "values", dict(values))

    def for_config(self, config: FingerprintConfig) -> Thresholds:
        return Thresholds.from_config(config, **self.values)


def acting_thresholds(config: FingerprintConfig, t: Thresholds) -> tuple[str, ...]:
    """The thresholds that can change which pairs of an index built with ``config`` are near-duplicates under
    ``t`` (`esdedup.match.rule`): where texts get MinHash signatures (every text with words, strategies
    ``auto`` and ``minhash``) the n-gram estimates decide, or the cosine alone with both of them off; under
    ``simhash`` the Hamming distance and the cosine decide."""
    if config.gets_signatures:
        return ("jaccard", "containment") if t.jaccard is not None or t.containment is not None else ("cosine",)
    return ("hamming_k", "cosine")


class InertThresholds(ConfigError):
    """Thresholds given that cannot change the answer under the index's rule (`acting_thresholds`)."""

    def __init__(self, inert: Sequence[str], acting: Sequence[str], rule: str) -> None:
        super().__init__(f"the threshold{'s' if len(inert) > 1 else ''} {', '.join(inert)} cannot change the "
                         f"answer on this index ({rule}); the thresholds that act: {', '.join(acting)}")
        self.inert, self.acting = tuple(inert), tuple(acting)


def check_overrides_act(overrides: ThresholdOverrides, config: FingerprintConfig) -> None:
    """Raise `InertThresholds` when some of ``overrides`` cannot act on an index built with ``config`` (after
    the checks of `Thresholds.check_band_guarantee`, whose errors say more)."""
    t = lookup_thresholds(overrides, config)
    acting = acting_thresholds(config, t)
    inert = [name for name in NAMES if name in overrides.values and name not in acting]
    if inert:
        raise InertThresholds(inert, acting, describe_rule(config, t))


def describe_rule(config: FingerprintConfig, t: Thresholds) -> str:
    """The rule an index built with ``config`` applies under ``t``, in one sentence."""
    def off(x: float | None, fmt: str) -> str:
        return "off" if x is None else fmt.format(x)

    if config.gets_signatures and (t.jaccard is not None or t.containment is not None):
        tests = [f"Jaccard >= {t.jaccard}" if t.jaccard is not None else "",
                 f"containment >= {t.containment}" if t.containment is not None else ""]
        return (f"strategy {config.strategy!r}: every text with words carries a MinHash signature, and a pair is a "
                f"near-duplicate when its estimated character n-gram {' or '.join(x for x in tests if x)}")
    if config.gets_signatures:
        return (f"strategy {config.strategy!r} with the n-gram tests off: the TF cosine alone decides, cosine >= "
                f"{off(t.cosine, '{}')}")
    return (f"strategy 'simhash': a pair is a near-duplicate when its SimHash Hamming distance is at most "
            f"{off(t.hamming_k, '{}')} and its TF cosine at least {off(t.cosine, '{}')}")


def resolve_thresholds(given: Thresholds | ThresholdOverrides | None, config: FingerprintConfig) -> Thresholds:
    """The thresholds in force: ``given`` itself, the overrides applied to the config, or the config's own."""
    if isinstance(given, Thresholds):
        return given
    if isinstance(given, ThresholdOverrides):
        return given.for_config(config)
    if given is None:
        # Made once per config (both are immutable): a search backend asks for every page of hits.
        return config.derived("thresholds", lambda: Thresholds.from_config(config))  # type: ignore[no-any-return]
    raise ConfigError(f"thresholds must be a Thresholds or ThresholdOverrides, got {type(given).__name__}")


def lookup_thresholds(given: Thresholds | ThresholdOverrides | None, config: FingerprintConfig) -> Thresholds:
    """The thresholds in force (`resolve_thresholds`) for a path that looks candidates up by band key,
    refused when the index cannot serve them (`Thresholds.check_band_guarantee`).

    >>> lookup_thresholds(ThresholdOverrides(hamming_k=2), FingerprintConfig()).hamming_k
    2
    >>> lookup_thresholds(ThresholdOverrides(hamming_k=5), FingerprintConfig())
    Traceback (most recent call last):
    ...
    esdedup.match.thresholds.HammingBeyondIndex: a Hamming distance of 5 is larger than the index's hamming_k 3; ...
    """
    t = resolve_thresholds(given, config)
    t.check_band_guarantee(config)
    return t
