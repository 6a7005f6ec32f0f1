# SPDX-License-Identifier: Apache-2.0
"""cmr.statistics: RMM's memory statistics and profiler, over the current
device resource and cmr.mr.StatisticsResourceAdaptor (whose counters live
in C: this module only reads them)."""

from __future__ import annotations

import collections.abc
import functools
import inspect
import threading
import types
import typing
from contextlib import contextmanager
from dataclasses import dataclass

from ._counts import Statistics
from ._per_device import get_current_device_resource, set_current_device_resource
from ._resource import DeviceMemoryResource
from .mr import StatisticsResourceAdaptor

__all__ = ["ProfilerContext", "ProfilerRecords", "Statistics", "default_profiler_records", "enable_statistics", "get_statistics",
           "pop_statistics", "profiler", "push_statistics", "statistics"]


def _current_statistics() -> StatisticsResourceAdaptor | None:
    current = get_current_device_resource()
    return current if isinstance(current, StatisticsResourceAdaptor) else None


def enable_statistics() -> None:
    """Puts a StatisticsResourceAdaptor over the current device resource,
    unless it is one already."""
    if _current_statistics() is None:
        set_current_device_resource(StatisticsResourceAdaptor(get_current_device_resource()))


def get_statistics() -> Statistics | None:
    """The current device resource's counts; None when it is not a statistics adaptor."""
    current = _current_statistics()
    return None if current is None else current.allocation_counts


def push_statistics() -> Statistics | None:
    """Starts a new level of counters; returns the counts before it (None without statistics)."""
    current = _current_statistics()
    return None if current is None else current.push_counters()


def pop_statistics() -> Statistics | None:
    """Ends the top level, merging it into the one below; returns its counts (None without statistics)."""
    current = _current_statistics()
    return None if current is None else current.pop_counters()


_P = typing.ParamSpec("_P")
_T = typing.TypeVar("_T")


@contextmanager
def statistics() -> collections.abc.Iterator[None]:
    """Counts what the body allocates on a level of its own: pushes a level
    on entry and pops it on exit, enabling statistics for the body (and
    putting the previous resource back after it) when they were not."""
    before = None
    if push_statistics() is None:
        before = get_current_device_resource()
        enable_statistics()
    inside = get_current_device_resource()
    try:
        yield
    except BaseException:
        _leave(inside, before, quiet=True)
        raise
    _leave(inside, before, quiet=False)


def _leave(inside: DeviceMemoryResource, before: DeviceMemoryResource | None, quiet: bool) -> None:
    """Ends a statistics() block: pops its level, or puts back the resource it
    replaced. When the body replaced the current resource there is no level
    of ours to pop: that is a ValueError (as RMM's), unless the body is
    already raising, whose exception then goes on unmasked."""
    if get_current_device_resource() is not inside:
        if quiet:
            return
        raise ValueError("the current device resource was replaced inside a statistics() block")
    if before is None:
        pop_statistics()
    else:
        set_current_device_resource(before)


class ProfilerRecords:
    """Records of the memory statistics recorded by a profiler, by name
    (thread-safe)."""

    @dataclass
    class MemoryRecord:
        """What the profiler saw of one function or block: how many times it
        ran, the bytes it allocated in all and the most it held at once."""
        num_calls: int = 0
        memory_total: int = 0
        memory_peak: int = 0

        def add(self, memory_total: int, memory_peak: int) -> None:
            self.num_calls += 1
            self.memory_total += memory_total
            self.memory_peak = max(self.memory_peak, memory_peak)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, ProfilerRecords.MemoryRecord] = {}

    def add(self, name: str, data: Statistics) -> None:
        """Counts one call of `name` that allocated data.total_bytes, at most data.peak_bytes at once."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if not isinstance(data, Statistics):
            raise TypeError(f"data must be a cmr.statistics.Statistics, not {type(data).__name__}")
        with self._lock:
            self._records.setdefault(name, ProfilerRecords.MemoryRecord()).add(data.total_bytes, data.peak_bytes)

    @property
    def records(self) -> dict[str, ProfilerRecords.MemoryRecord]:
        """A copy of the records, name -> MemoryRecord."""
        with self._lock:
            return {name: ProfilerRecords.MemoryRecord(r.num_calls, r.memory_total, r.memory_peak)
                    for name, r in self._records.items()}

    def report(self, ordered_by: typing.Literal["num_calls", "memory_peak", "memory_total"] = "memory_peak") -> str:
        """RMM's table of the records, largest first by `ordered_by`, under
        its legend; "No data, maybe profiling wasn't enabled?" without
        records."""
        if ordered_by not in _ORDERINGS:
            raise ValueError(f"ordered_by must be num_calls, memory_peak or memory_total, not {ordered_by!r}")
        rows = sorted(self.records.items(), key=lambda item: getattr(item[1], ordered_by), reverse=True)
        text = "Memory Profiling\n================\n\n"
        if not rows:
            return text + "No data, maybe profiling wasn't enabled?"
        text += _LEGEND + f"\nOrdered by: {ordered_by}\n"
        text += "\nncalls     memory_peak    memory_total  filename:lineno(function)\n"
        text += "".join(f"{r.num_calls:6,d} {r.memory_peak:15,d} {r.memory_total:15,d}  {name}\n" for name, r in rows)
        return text[:-1]

    pretty_print = report  # the name older RMM releases gave it

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.records})"


_ORDERINGS = ("num_calls", "memory_peak", "memory_total")
_LEGEND = ("Legends:\n"
           "  ncalls       - number of times the function or code block was called\n"
           "  memory_peak  - peak memory allocated in function or code block (in bytes)\n"
           "  memory_total - total memory allocated in function or code block (in bytes)\n")


def _get_descriptive_name_of_object(obj: object) -> str:
    """RMM's name of a profiled function: "<file>:<line>(<qualified name>)"
    of what `obj` wraps (OSError or TypeError where its source cannot be
    found, as inspect's)."""
    unwrapped: typing.Any = inspect.unwrap(obj)  # type: ignore[arg-type]
    _, line = inspect.getsourcelines(unwrapped)
    return f"{inspect.getfile(unwrapped)}:{line}({unwrapped.__qualname__})"


default_profiler_records = ProfilerRecords()


class ProfilerContext:
    """RMM's profiler, as a decorator and as a context manager: records what
    a function or block allocates in `records` under `name`, when statistics
    are enabled (the current device resource is a StatisticsResourceAdaptor);
    without statistics it records nothing. A block needs a name; a decorated
    function's default name is _get_descriptive_name_of_object's."""

    def __init__(self, records: ProfilerRecords, name: str) -> None:
        if not isinstance(records, ProfilerRecords):
            raise TypeError(f"records must be a ProfilerRecords, not {type(records).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        self._records = records
        self._name = name

    def __call__(self, func: collections.abc.Callable[_P, _T]) -> collections.abc.Callable[_P, _T]:
        if not callable(func):
            raise TypeError(f"profiler decorates a function, not {type(func).__name__}")
        name = self._name or _get_descriptive_name_of_object(func)
        records = self._records

        @functools.wraps(func)
        def profiled(*args: _P.args, **kwargs: _P.kwargs) -> _T:
            push_statistics()
            try:
                return func(*args, **kwargs)
            finally:
                if (counts := pop_statistics()) is not None:
                    records.add(name, counts)
        return profiled

    def __enter__(self) -> ProfilerContext:
        if not self._name:
            raise ValueError("a profiler used as a context manager needs a name: profiler(name=...)")
        push_statistics()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc_value: BaseException | None,
                 traceback: types.TracebackType | None) -> None:
        if (counts := pop_statistics()) is not None:
            self._records.add(self._name, counts)


def profiler(*, records: ProfilerRecords = default_profiler_records, name: str = "") -> ProfilerContext:
    """A ProfilerContext writing to `records` (default_profiler_records unless
    given) under `name` (needed for a block; a decorated function's default
    is its file, line and qualified name)."""
    return ProfilerContext(records, name)
