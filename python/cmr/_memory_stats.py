# SPDX-License-Identifier: Apache-2.0
"""A resource's statistics with PyTorch's names (cmr_ref_stats, cmr/stats.h),
and the process-wide out-of-memory observer.

memory_stats(mr) answers for any resource (None: the current device
resource) with the keys of torch.cuda.memory_stats() whose meaning is the
same, plus every field cmr filled under "cmr.<field>":

    allocated_bytes.all.current / .peak   bytes the callers asked for and hold
    requested_bytes.all.current / .peak   the same (cmr counts requested sizes)
    reserved_bytes.all.current / .peak    bytes held from the memory below
    allocation.all.current / .allocated / .freed   allocations alive, made, freed
    segment.all.current                   chunks held from the upstream
    num_ooms                              out-of-memory answers
    num_alloc_retries                     retries a failure callback asked for

A key appears only when the resource knows its value (a foreign resource
has none). PyTorch's own torch.cuda.max_memory_allocated() cannot answer
through cmr.allocators.torch.cmr_torch_allocator: PyTorch's
CUDAPluggableAllocator raises for getDeviceStats and resetPeakStats
(pytorch/pytorch#133281), so use cmr.max_memory_allocated() there."""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass
from typing import Callable

from . import _capi as capi
from ._per_device import get_current_device_resource
from ._resource import DeviceMemoryResource

__all__ = ["OutOfMemoryEvent", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_peak_memory_stats", "set_oom_observer"]

# PyTorch's key, and the cmr field it is (allocation.all.current is made of two).
_TORCH_KEYS = {
    "allocated_bytes.all.current": "bytes_in_use",
    "allocated_bytes.all.peak": "bytes_in_use_peak",
    "requested_bytes.all.current": "bytes_in_use",
    "requested_bytes.all.peak": "bytes_in_use_peak",
    "reserved_bytes.all.current": "bytes_held",
    "reserved_bytes.all.peak": "bytes_held_peak",
    "allocation.all.allocated": "allocations",
    "allocation.all.freed": "deallocations",
    "segment.all.current": "segments",
    "num_ooms": "out_of_memory_count",
    "num_alloc_retries": "failure_callback_retries",
}


def _stats_dict(fields: dict[str, int]) -> dict[str, int]:
    stats = {key: fields[field] for key, field in _TORCH_KEYS.items() if field in fields}
    if "allocations" in fields and "deallocations" in fields:
        stats["allocation.all.current"] = fields["allocations"] - fields["deallocations"]
    stats.update((f"cmr.{field}", value) for field, value in fields.items())
    return dict(sorted(stats.items()))


def _ref_of(mr: DeviceMemoryResource | None):
    if mr is None:
        mr = get_current_device_resource()
    if not isinstance(mr, DeviceMemoryResource):
        raise TypeError(f"mr must be a cmr.mr memory resource or None, not {type(mr).__name__}")
    return mr.ref


def memory_stats(mr: DeviceMemoryResource | None = None) -> dict[str, int]:
    """The statistics of `mr` (None: the current device resource), with
    PyTorch's key names where they mean the same and cmr's own as "cmr.*"."""
    return _stats_dict(capi.cmr_py_ref_stats(_ref_of(mr)))


def _field(mr: DeviceMemoryResource | None, field: str) -> int:
    fields = capi.cmr_py_ref_stats(_ref_of(mr))
    if field not in fields:
        raise ValueError(f"the resource does not report {field} (cmr.memory_stats lists what it does)")
    return fields[field]


def memory_allocated(mr: DeviceMemoryResource | None = None) -> int:
    """Bytes the callers of `mr` asked for and have not freed."""
    return _field(mr, "bytes_in_use")


def max_memory_allocated(mr: DeviceMemoryResource | None = None) -> int:
    """The most bytes in use at once since creation or the last reset_peak_memory_stats."""
    return _field(mr, "bytes_in_use_peak")


def memory_reserved(mr: DeviceMemoryResource | None = None) -> int:
    """Bytes `mr` holds from the memory below it, in use or free."""
    return _field(mr, "bytes_held")


def max_memory_reserved(mr: DeviceMemoryResource | None = None) -> int:
    """The most bytes held at once since creation or the last reset_peak_memory_stats."""
    return _field(mr, "bytes_held_peak")


def reset_peak_memory_stats(mr: DeviceMemoryResource | None = None) -> None:
    """Sets every peak of `mr` (and, through an adaptor, of its upstream) to its current value."""
    capi.cmr_ref_reset_peak_stats(_ref_of(mr))


@dataclass(frozen=True)
class OutOfMemoryEvent:
    """What the out-of-memory observer is told: the resource that ran out
    (its kind, and its identity, which `is_from` compares), its statistics
    then (as memory_stats gives them), the request, and the message the
    MemoryError the caller gets will carry."""

    resource_type: str
    resource_identity: int
    stats: dict[str, int]
    bytes: int
    alignment: int
    stream: int
    message: str

    def is_from(self, mr: DeviceMemoryResource) -> bool:
        """Whether `mr` is the resource that ran out."""
        return self.resource_identity == mr.ref.identity()


_observer_lock = threading.Lock()
_observer: Callable[[OutOfMemoryEvent], object] | None = None
_delivering = threading.local()  # .active on a thread running the observer


def _deliver(resource_type: str, identity: int, fields: dict[str, int], nbytes: int, alignment: int, stream: int,
             message: str) -> None:
    observer = _observer
    if observer is None:
        return
    _delivering.active = True
    try:
        observer(OutOfMemoryEvent(resource_type, identity, _stats_dict(fields), nbytes, alignment, stream, message))
    finally:
        _delivering.active = False


def set_oom_observer(observer: Callable[[OutOfMemoryEvent], object] | None) -> None:
    """Calls `observer(event)` (an OutOfMemoryEvent) each time a resource
    answers an allocation with out of memory, before the MemoryError is
    raised; None removes it. It runs on the allocating thread, inside the
    allocation, once per failure (by the innermost resource that ran out),
    and not again for a failure inside itself. It may read statistics; it
    must not allocate from the resources of that allocation (their locks
    may be held). An exception it raises cannot replace the caller's
    MemoryError: it is reported through sys.unraisablehook. Setting the
    observer from inside it raises RuntimeError."""
    global _observer
    if observer is not None and not callable(observer):
        raise TypeError(f"observer must be callable or None, not {type(observer).__name__}")
    if getattr(_delivering, "active", False):
        # Refused by C too; refused here before the lock, which a thread
        # setting the observer may hold while it waits for this one to return.
        raise RuntimeError("cmr.set_oom_observer: called from inside the out-of-memory observer")
    with _observer_lock:
        capi.cmr_py_set_oom_observer(None if observer is None else _deliver)
        _observer = observer


@atexit.register
def _forget_observer() -> None:
    """No Python observer outlives the interpreter that made it."""
    set_oom_observer(None)
