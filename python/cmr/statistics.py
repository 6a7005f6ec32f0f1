# SPDX-License-Identifier: Apache-2.0
"""cmr.statistics: RMM's memory statistics and profiler, over the current
device resource and cmr.mr.StatisticsResourceAdaptor (whose counters live
in C: this module only reads them)."""

from __future__ import annotations

import functools
import inspect
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from ._counts import Statistics
from ._per_device import get_current_device_resource, set_current_device_resource
from .mr import StatisticsResourceAdaptor

__all__ = ["ProfilerRecords", "Statistics", "default_profiler_records", "enable_statistics", "get_statistics",
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


@contextmanager
def statistics():
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


def _leave(inside, before, quiet: bool) -> None:
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


@dataclass
class MemoryRecord:
    """What the profiler saw of one function or block."""
    num_calls: int = 0
    memory_total: int = 0
    memory_peak: int = 0

    def add(self, memory_total: int, memory_peak: int) -> None:
        self.num_calls += 1
        self.memory_total += memory_total
        self.memory_peak = max(self.memory_peak, memory_peak)


class ProfilerRecords:
    """Records of profiled functions and blocks, by name (thread-safe)."""

    MemoryRecord = MemoryRecord
    Data = MemoryRecord  # RMM's name

    def __init__(self):
        self._lock = threading.Lock()
        self._records: dict[str, MemoryRecord] = {}

    def add(self, name: str, data: Statistics) -> None:
        """Counts one call of `name` that allocated data.total_bytes, at most data.peak_bytes at once."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if not isinstance(data, Statistics):
            raise TypeError(f"data must be a cmr.statistics.Statistics, not {type(data).__name__}")
        with self._lock:
            self._records.setdefault(name, MemoryRecord()).add(data.total_bytes, data.peak_bytes)

    @property
    def records(self) -> dict[str, MemoryRecord]:
        """A copy of the records."""
        with self._lock:
            return {name: MemoryRecord(r.num_calls, r.memory_total, r.memory_peak) for name, r in self._records.items()}

    def report(self, ordered_by: str = "memory_peak") -> str:
        """A table of the records, largest first by `ordered_by`
        (num_calls, memory_peak or memory_total)."""
        if ordered_by not in ("num_calls", "memory_peak", "memory_total"):
            raise ValueError(f"ordered_by must be num_calls, memory_peak or memory_total, not {ordered_by!r}")
        rows = sorted(self.records.items(), key=lambda item: getattr(item[1], ordered_by), reverse=True)
        lines = ["Memory profile (bytes)", "", f"ordered by {ordered_by}", "",
                 f"{'ncalls':>10} {'memory_peak':>15} {'memory_total':>15}  name"]
        lines += [f"{r.num_calls:>10} {r.memory_peak:>15} {r.memory_total:>15}  {name}" for name, r in rows]
        return "\n".join(lines) + "\n"

    def pretty_print(self, ordered_by: str = "memory_peak") -> str:
        """RMM's table of the records, largest first by `ordered_by`."""
        if ordered_by not in ("num_calls", "memory_peak", "memory_total"):
            raise ValueError(f"ordered_by must be num_calls, memory_peak or memory_total, not {ordered_by!r}")
        rows = sorted(self.records.items(), key=lambda item: getattr(item[1], ordered_by), reverse=True)
        head = "Memory Profiling\n================\n\n"
        if not rows:
            return head + "No data, maybe profiling wasn't enabled?"
        lines = [f"Ordered by:   {ordered_by}", "Memory units: bytes", "",
                 "ncalls     memory_peak    memory_total  filename:lineno(function)"]
        lines += [f"{r.num_calls:6,d} {r.memory_peak:15,d} {r.memory_total:15,d}  {name}" for name, r in rows]
        return head + "\n".join(lines)

    def __str__(self) -> str:
        return self.pretty_print()

    def __repr__(self) -> str:
        return f"<ProfilerRecords of {len(self.records)} names>"


default_profiler_records = ProfilerRecords()


class profiler:
    """Records the memory a function (as a decorator) or a block (as a
    context manager, which needs a name) allocates, in `records`. A
    decorated function's name is its file, line and qualified name unless
    one is given."""

    def __init__(self, *, records: ProfilerRecords = default_profiler_records, name: str = ""):
        if not isinstance(records, ProfilerRecords):
            raise TypeError(f"records must be a ProfilerRecords, not {type(records).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        self._records = records
        self._name = name
        self._blocks = []  # the statistics() contexts of the blocks entered, innermost last

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"profiler decorates a function, not {type(func).__name__}")
        name = self._name
        if not name:
            try:
                where = f"{inspect.getsourcefile(func)}:{inspect.getsourcelines(func)[1]}"
            except (OSError, TypeError):
                where = "<unknown>"
            name = f"{where}({func.__qualname__})"

        @functools.wraps(func)
        def profiled(*args, **kwargs):
            with statistics():
                try:
                    return func(*args, **kwargs)
                finally:
                    self._records.add(name, get_statistics())
        return profiled

    def __enter__(self):
        if not self._name:
            raise ValueError("a profiler used as a context manager needs a name: profiler(name=...)")
        block = statistics()
        block.__enter__()
        self._blocks.append(block)
        return self

    def __exit__(self, *exception):
        block = self._blocks.pop()
        try:
            self._records.add(self._name, get_statistics())
        finally:
            block.__exit__(*exception)
        return False
