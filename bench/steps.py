"""The step timers of bench/es_phases.py and bench/local_phases.py: a function or iterator of the library wrapped
so that the thread CPU of each of its calls is counted under a step's name (`spent`), and a process's CPU."""
from __future__ import annotations

import collections
import functools
import resource
import time
from collections.abc import Callable, Iterator
from typing import Any

#: Thread CPU seconds per step, summed over the calls; a step that calls another counts it too.
spent: collections.Counter[str] = collections.Counter()


def timed(owner: Any, name: str, step: str) -> None:
    """Count the thread CPU of each call of ``owner.name`` under ``step``."""
    f = getattr(owner, name)

    @functools.wraps(f)
    def call(*args: Any, **kwargs: Any) -> Any:
        t = time.thread_time()
        try:
            return f(*args, **kwargs)
        finally:
            spent[step] += time.thread_time() - t
    setattr(owner, name, call)


def timed_iterator(owner: Any, name: str, step: str) -> None:
    """Count the thread CPU of producing each item of the iterator ``owner.name`` returns under ``step``."""
    f: Callable[..., Iterator[Any]] = getattr(owner, name)

    @functools.wraps(f)
    def call(*args: Any, **kwargs: Any) -> Iterator[Any]:
        it = f(*args, **kwargs)
        while True:
            t = time.thread_time()
            try:
                item = next(it)
            except StopIteration:
                spent[step] += time.thread_time() - t
                return
            spent[step] += time.thread_time() - t
            yield item
    setattr(owner, name, call)


def install(steps: list[tuple[Any, str, str, bool]]) -> None:
    """Time each ``(owner, name, step, is_iterator)`` of ``steps`` (`timed`, or `timed_iterator`)."""
    for owner, name, step, iterator in steps:
        (timed_iterator if iterator else timed)(owner, name, step)


def cpu(who: int) -> float:
    """CPU seconds, user and system, of ``resource.RUSAGE_SELF`` or ``RUSAGE_CHILDREN`` so far."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime
