"""One rule for the types of every config object the API takes, read from the dataclass's own annotations.

A value the annotation does not describe is refused with a `ConfigError` naming the field, the type of the
value given and what to give instead, when the object is made: a config that was accepted is one that can be
written, read back (JSON in an index's metadata) and opened again. The rule:

* ``bool`` is ``True`` or ``False`` only (1 and "yes" are refused: they do not read back as a bool; a numpy
  bool is taken as the bool it is);
* ``int`` is a whole number that is not a bool (128.0 is refused: it reads back as a float), normalised to
  ``int`` (a numpy integer becomes a Python one, which JSON can write);
* ``float`` is any real number that is not a bool, normalised to ``float``;
* ``str`` is a string (a subclass, such as a str enum, normalised to the plain string); a field whose
  metadata names ``choices`` takes one of them;
* ``tuple[X, ...]`` and ``list[X]`` take a list or a tuple of X (normalised to the annotated container), never
  a string; ``Sequence[X]`` any sequence of X but a string; ``Iterable[X]`` any iterable but a string or a
  mapping (its items are left to the code that reads them: a generator is read once); ``dict[K, V]`` a
  dict of K to V; ``Mapping[K, V]`` any mapping (its items left to the code, as an iterable's);
* a union takes what any of its arms takes; ``Any`` takes anything, a callable type any callable, a
  protocol (a store) anything with its methods, any other class its instances.

`check_fields` applies the rule to a dataclass's fields when it is made, `checked_args` to a public
function's arguments when it is called.

The words of the messages follow the caller: ``json=True`` (a config read from a file or an index's metadata)
says ``true``, ``null`` and ``an object``; otherwise ``True``, ``None`` and ``a dict``.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import functools
import inspect
import numbers
import os
import types
import typing
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import numpy as np

from esdedup.errors import ConfigError

__all__ = ["check_fields", "check_value", "checked_args", "choices", "field_types"]


def choices(default: str, options: tuple[str, ...]) -> Any:
    """A dataclass field holding one of ``options`` (a string), checked by `check_fields`."""
    return dataclasses.field(default=default, metadata={"choices": options})


#: Argument names whose values are never shown in an error (credentials).
SECRET_NAMES = frozenset({"api_key", "password", "token", "secret"})


class _Refused(Exception):
    """A value an annotation does not describe (turned into the ConfigError by `check_value`)."""


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def field_types(cls: type) -> dict[str, Any]:
    """The annotations of ``cls``'s fields, resolved (kept: they never change)."""
    hints = _FIELD_TYPES.get(cls)
    if hints is None:
        hints = _FIELD_TYPES[cls] = typing.get_type_hints(cls)
    return hints


_FIELD_CHECKS: dict[type, list[tuple[str, Any, Callable[[Any], bool], Any, bool]]] = {}


def check_fields(obj: Any, *, owner: str = "config field", json: bool = False) -> None:
    """Check every field of the dataclass instance ``obj`` against its annotation, storing the normalised
    value (frozen dataclasses too); ConfigError on the first field that does not fit."""
    checks = _FIELD_CHECKS.get(type(obj))
    if checks is None:
        hints = field_types(type(obj))
        checks = _FIELD_CHECKS[type(obj)] = [
            (f.name, hints[f.name], _fast(hints[f.name]), f.metadata.get("choices"), not f.repr)
            for f in dataclasses.fields(obj)]
    for name, annotation, fast, options, secret in checks:
        value = getattr(obj, name)
        if fast(value) and (options is None or value in options):
            continue
        checked = check_value(name, annotation, value, owner=owner, json=json, options=options, secret=secret)
        if checked is not value:
            object.__setattr__(obj, name, checked)


def check_value(name: str, annotation: Any, value: Any, *, owner: str = "config field", json: bool = False,
                options: tuple[str, ...] | None = None, secret: bool = False) -> Any:
    """``value`` as a field ``name`` annotated ``annotation`` holds it (see the module's rule), or ConfigError.
    The error of a ``secret`` (a field hidden from its object's repr, an argument named like a credential)
    names the value's type only."""
    try:
        value = _conform(annotation, value, json)
    except _Refused:
        words = _describe(annotation, json)
        if secret or name in SECRET_NAMES:
            raise ConfigError(f"{owner} {name} must be {words}, got {type(value).__name__} (value not shown); "
                              f"give {words}") from None
        raise ConfigError(f"{owner} {name} must be {words}, got {type(value).__name__} {_shown(value)}; "
                          f"{_fix(annotation, value, json, words)}") from None
    if options is not None and value is not None and value not in options:
        raise ConfigError(f"{owner} {name} must be one of {', '.join(options)}, got {_shown(value)}")
    return value


def _conform(annotation: Any, value: Any, json: bool) -> Any:
    if annotation is Any or annotation is typing.Any:
        return value
    if annotation is None or annotation is type(None):
        if value is None:
            return None
        raise _Refused
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        for arm in args:
            try:
                return _conform(arm, value, json)
            except _Refused:
                pass
        raise _Refused
    if origin is typing.Literal:
        if any(type(value) is type(a) and value == a for a in args):
            return value
        raise _Refused
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, np.bool_):  # a comparison of numpy values
            return bool(value)
        raise _Refused
    if annotation is int:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return value if type(value) is int else int(value)
        raise _Refused
    if annotation is float:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return value if type(value) is float else float(value)
        raise _Refused
    if annotation is str:
        if isinstance(value, str):  # a subclass (numpy's str_, a str enum) as the plain string it holds
            return value if type(value) is str else str.__str__(value)
        raise _Refused
    if origin in (tuple, list, collections.abc.Sequence):
        kind = collections.abc.Sequence if origin is collections.abc.Sequence else (list, tuple)
        if isinstance(value, (str, bytes)) or not isinstance(value, kind):
            raise _Refused
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(value):
                raise _Refused
            items = [_conform(a, v, json) for a, v in zip(args, value, strict=True)]
        else:
            item = args[0] if args else Any
            items = [_conform(item, v, json) for v in value]
        same = all(a is b for a, b in zip(items, value, strict=True))
        if origin is tuple:
            return value if same and isinstance(value, tuple) else tuple(items)
        if origin is list:
            return value if same and isinstance(value, list) else items
        return value if same else items
    if origin in (collections.abc.Iterable, collections.abc.Collection):
        # Only the container: its items are the caller's to check as it reads them (a generator is read once).
        if isinstance(value, (str, bytes, collections.abc.Mapping)) or not isinstance(value, origin):
            raise _Refused
        return value
    if origin is collections.abc.Mapping:
        # Any mapping; its items are the code's to read (a term-weight mapping holds thousands).
        if not isinstance(value, collections.abc.Mapping):
            raise _Refused
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise _Refused
        key, item = args if args else (Any, Any)
        for k, v in value.items():
            _conform(key, k, json)
            _conform(item, v, json)
        return value
    if origin is collections.abc.Callable or annotation is collections.abc.Callable:
        if callable(value):
            return value
        raise _Refused
    if origin is not None and isinstance(origin, type) and origin is not type:
        if isinstance(value, origin):  # a generic class (os.PathLike[str], np.ndarray[...]): the class itself
            return value
        raise _Refused
    if isinstance(annotation, type) and getattr(annotation, "_is_protocol", False):
        # A protocol (a store): its methods must be there. `isinstance` would read its properties too, and a
        # store's properties raise until it is opened.
        if all(hasattr(value, name) for name in _protocol_methods(annotation)):
            return value
        raise _Refused
    if isinstance(annotation, type):
        if isinstance(value, annotation):
            return value
        raise _Refused
    return value  # a form this rule does not describe (a TypeVar, a Protocol): left to the code using it


@functools.cache
def _protocol_methods(protocol: type) -> tuple[str, ...]:
    return tuple(sorted({name for klass in protocol.__mro__ if getattr(klass, "_is_protocol", False)
                         for name, member in vars(klass).items()
                         if callable(member) and not name.startswith("_")}))


def _describe(annotation: Any, json: bool) -> str:
    """What ``annotation`` takes, in words ("a whole number or None")."""
    if annotation is None or annotation is type(None):
        return "null" if json else "None"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        arms = [_describe(a, json) for a in args if a is not type(None)]
        words = " or ".join(dict.fromkeys(arms))
        return words + (" or " + ("null" if json else "None") if type(None) in args else "")
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if annotation is bool:
        return "true or false" if json else "True or False"
    if annotation is int:
        return "a whole number"
    if annotation is float:
        return "a number"
    if annotation is str:
        return "a string"
    if origin in (tuple, list, collections.abc.Sequence, collections.abc.Iterable, collections.abc.Collection):
        item = args[0] if args and not (origin is tuple and len(args) != 2) else Any
        of = "" if item is Any else f" of {_plural(_describe(item, json))}"
        if origin in (collections.abc.Iterable, collections.abc.Collection):
            return "a list (any iterable but a string or a dict)" + of
        return ("a list" if json else "a list or tuple") + of
    if origin in (dict, collections.abc.Mapping):
        if json:
            return "an object"
        return "a dict" + (" with string keys" if origin is dict and args and args[0] is str else "")
    if annotation in (collections.abc.Mapping, dict):
        return "an object" if json else "a dict"
    if origin is os.PathLike or annotation is os.PathLike:
        return "a path"
    if origin is not None and isinstance(origin, type):
        return _describe(origin, json)
    if isinstance(annotation, type) and annotation.__name__ == "ndarray":
        return "a numpy array"
    if isinstance(annotation, type):
        return f"{'an' if annotation.__name__[0] in 'AEIOUaeiou' else 'a'} {annotation.__name__}"
    return str(annotation)


def _plural(words: str) -> str:
    """"a whole number or a Path" -> "whole numbers or Paths"."""
    parts = []
    for part in words.split(" or "):
        article, _, rest = part.partition(" ")
        if article in ("a", "an") and rest:
            head, with_, tail = rest.partition(" with ")
            part = head + "s" + (with_ + tail if with_ else "")
        parts.append(part)
    return " or ".join(parts)


def _fix(annotation: Any, value: Any, json: bool, words: str) -> str:
    """How to write ``value`` so that ``annotation`` takes it, when the intent is plain; else the type wanted."""
    wanted = {typing.get_origin(annotation) or annotation, *typing.get_args(annotation)}
    if int in wanted and isinstance(value, float) and value.is_integer():
        return f"write {int(value)} (a whole number, without the decimal point)"
    if bool in wanted and not isinstance(value, bool) and value in (0, 1):
        return f"write {str(bool(value)).lower() if json else bool(value)} instead"
    if isinstance(value, str) and (int in wanted or float in wanted):
        try:
            number = float(value)
        except ValueError:
            pass
        else:
            shown = int(number) if int in wanted and number.is_integer() else number
            return f"write {shown} as a number, without quotes"
    if isinstance(value, os.PathLike) and str in wanted:
        return "pass the path as a string, str(path)"
    if isinstance(value, str) and bool in wanted and value.strip().lower() in ("true", "false", "yes", "no"):
        return ("write true or false without quotes" if json else "pass True or False, not a string")
    return f"give {words}"


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


P = ParamSpec("P")
R = TypeVar("R")
#: Every function `checked_args` wraps (tests resolve each one's annotations, which happens on first call).
CHECKED: list[Callable[..., Any]] = []


def checked_args(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` with its arguments checked against its annotations by the rule above when it is called: a
    caller passing None for a list, a string for a number or a dict for a config gets a `ConfigError` naming
    the function, the argument, the type given and what to give, not a TypeError or an AttributeError from
    deep inside. Arguments are normalised as fields are (a numpy integer becomes an ``int``); an argument
    the signature does not have, or a missing one, is a ConfigError too. Arguments annotated ``Any`` are the
    function's to check.

    A call whose arguments are already of their exact types costs a few type tests (`_fast`); only the
    others go through `check_value`."""
    CHECKED.append(fn)
    signature = inspect.signature(fn)
    where = fn.__qualname__
    params = list(signature.parameters.values())
    plain = all(p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY) for p in params)
    positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    required = [(p.name, positional.index(p.name) if p.name in positional else len(params))
                for p in params if p.default is inspect.Parameter.empty]
    checks: dict[str, tuple[Any, Callable[[Any], bool]]] = {}  # name -> (annotation, fast test), on first call

    def prepare() -> None:
        hints = typing.get_type_hints(fn)
        ready: dict[str, tuple[Any, Callable[[Any], bool]]] = {"": (None, bool)}  # "": prepared
        for p in params:
            if p.name in hints and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                ready[p.name] = (hints[p.name], _fast(hints[p.name]))
        checks.update(ready)  # at once: a thread calling meanwhile sees all of them or prepares them itself

    names = frozenset(signature.parameters)
    least = max((at + 1 for _, at in required if at < len(params)), default=0)
    keyword_required = [name for name, at in required if at >= len(params)]

    def check(name: str, value: Any) -> Any:
        entry = checks.get(name)
        if entry is None or entry[1](value):
            return value
        return check_value(name, entry[0], value, owner=f"{where}: argument")

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if not checks:
            prepare()
        n = len(args)
        # The common call: positional arguments, then keywords the signature has, each given once.
        if (plain and least <= n <= len(positional) and names.issuperset(kwargs)
                and (not kwargs or not any(name in kwargs for name in positional[:n]))
                and (not keyword_required or all(name in kwargs for name in keyword_required))):
            checked = list(args)
            for i in range(n):
                checked[i] = check(positional[i], checked[i])
            for name in kwargs:
                kwargs[name] = check(name, kwargs[name])
            return tuple(checked), kwargs
        try:  # the slow path names what does not fit the signature
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        for name, value in bound.arguments.items():
            bound.arguments[name] = check(name, value)
        return bound.args, bound.kwargs

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = arguments(args, kwargs)
            return await fn(*args, **kwargs)  # type: ignore[misc]

        return checked_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        a, k = arguments(args, kwargs)
        return fn(*a, **k)

    return checked


def _fast(annotation: Any) -> Callable[[Any], bool]:
    """A test that is True only for values ``annotation`` takes exactly as they are (no normalisation), made
    of plain type tests; a False sends the value through `check_value`, which decides."""
    if annotation is Any:
        return lambda v: True
    if annotation is None or annotation is type(None):
        return lambda v: v is None
    if annotation in (bool, int, float, str):
        return lambda v: type(v) is annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        arms = [_fast(a) for a in args]
        return lambda v: any(arm(v) for arm in arms)
    if origin in (list, tuple, collections.abc.Sequence) and not (origin is tuple and args
                                                                  and not (len(args) == 2 and args[1] is Ellipsis)):
        kinds = {list: (list,), tuple: (tuple,)}.get(origin, (list, tuple))
        item = _fast(args[0]) if args else (lambda v: True)
        return lambda v: type(v) in kinds and all(item(x) for x in v)
    if origin is collections.abc.Mapping:
        return lambda v: type(v) is dict
    if origin is dict:
        key, value = (_fast(args[0]), _fast(args[1])) if args else (lambda v: True, lambda v: True)
        return lambda v: type(v) is dict and all(key(k) and value(x) for k, x in v.items())
    if annotation in (dict, collections.abc.Mapping):
        return lambda v: type(v) is dict
    if isinstance(annotation, type) and not getattr(annotation, "_is_protocol", False):
        return lambda v: isinstance(v, annotation)
    return lambda v: False  # everything else (protocols, iterables, literals) through `check_value`
