# SPDX-License-Identifier: Apache-2.0
"""The per-device resource table, as RMM's Python shows it, over cmr's one C
table (a C program, the PyTorch allocator entry points and Python all see
the same resources). The Python objects set here are also kept here, so a
resource whose callbacks are Python functions stays alive while the table
holds it; a resource set from C, or the lazy default, comes back as a new
object of its class holding a share of it."""

from __future__ import annotations

import os

from . import _capi as capi
from ._resource import DeviceMemoryResource, _ref_of

# device -> the Python object last set for it
_per_device_mrs: dict[int, DeviceMemoryResource] = {}


def _device(device) -> int:
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device must be an int, not {type(device).__name__}")
    return device


def get_current_device() -> int:
    return capi.cmr_current_device()


def get_per_device_resource(device: int) -> DeviceMemoryResource:
    """The resource `device` allocates from (the default cuda resource, or the
    host one in the host build, until one is set)."""
    # A share taken with the read: another thread replacing the entry
    # cannot take the resource away before the object returned holds it.
    ref = capi.cmr_acquire_per_device_resource_ref(_device(device))
    kept = _per_device_mrs.get(device)
    if kept is not None and kept._identity == ref.identity():
        capi.cmr_ref_release(ref)  # the object holds a share of its own
        return kept
    from .mr import _wrap_ref
    return _wrap_ref(ref, held=True)


def set_per_device_resource(device: int, mr: DeviceMemoryResource) -> None:
    """Makes `mr` the resource of `device` (the table retains it)."""
    capi.cmr_set_per_device_resource_ref(_device(device), _ref_of(mr, "mr"))
    _per_device_mrs[device] = mr


def get_current_device_resource() -> DeviceMemoryResource:
    return get_per_device_resource(get_current_device())


def set_current_device_resource(mr: DeviceMemoryResource) -> None:
    set_per_device_resource(get_current_device(), mr)


def get_per_device_resource_type(device: int) -> type:
    return type(get_per_device_resource(device))


def get_current_device_resource_type() -> type:
    return type(get_current_device_resource())


def is_initialized() -> bool:
    """Whether a resource was set from Python (by reinitialize or set_*_resource)."""
    return bool(_per_device_mrs)


def available_device_memory() -> tuple[int, int]:
    """(free, total) bytes of the current device."""
    free, total = capi.cmr_device_memory_info()
    return free, total


def _per_device_log_name(log_file_name: str | None, device: int) -> str | None:
    """RMM's naming of one device's log: name.dev<device>.ext."""
    if log_file_name is None:
        return None
    stem, extension = os.path.splitext(log_file_name)
    return f"{stem}.dev{device}{extension}"


def enable_logging(log_file_name: str | None = None) -> None:
    """Puts a LoggingResourceAdaptor over each device's resource set from
    Python (the current device's when none is), one log per device
    (name.dev<N>.ext; CMR_LOG_FILE when log_file_name is None)."""
    from .mr import LoggingResourceAdaptor
    devices = list(_per_device_mrs) or [get_current_device()]
    for device in devices:
        mr = get_per_device_resource(device)
        if not isinstance(mr, LoggingResourceAdaptor):
            set_per_device_resource(device, LoggingResourceAdaptor(mr, _per_device_log_name(log_file_name, device)))


def disable_logging() -> None:
    """Takes away the adaptors enable_logging put there."""
    from .mr import LoggingResourceAdaptor
    for device, mr in list(_per_device_mrs.items()):
        if isinstance(mr, LoggingResourceAdaptor) and mr.upstream_mr is not None:
            mr.flush()
            set_per_device_resource(device, mr.upstream_mr)


def _flush_logs() -> None:
    """Flushes the log of every LoggingResourceAdaptor set from Python as a
    device's resource (RMM's private rmm.pylibrmm.memory_resource.
    _memory_resource._flush_logs, which RMM's tests call before reading a log)."""
    from .mr import LoggingResourceAdaptor
    for mr in list(_per_device_mrs.values()):
        if isinstance(mr, LoggingResourceAdaptor):
            mr.flush()


def get_log_filenames() -> dict[int, str | None]:
    """device -> the file its resource logs to, or None where it does not log."""
    from .mr import LoggingResourceAdaptor
    return {device: mr.get_file_name() if isinstance(mr, LoggingResourceAdaptor) else None
            for device, mr in _per_device_mrs.items()}
