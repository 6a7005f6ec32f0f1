# SPDX-License-Identifier: Apache-2.0
"""cmr.reinitialize: RMM's, plus a stack expression (resource=...)."""

from __future__ import annotations

import os
import collections.abc
import typing

from . import _args, mr
from . import _capi as capi
from ._bytes import parse_bytes
from ._per_device import _per_device_log_name, set_per_device_resource

# (function, args, kwargs), called newest first before every reinitialize.
_F = typing.TypeVar("_F", bound=collections.abc.Callable[..., object])
_hooks: list[tuple[collections.abc.Callable[..., object], tuple[typing.Any, ...], dict[str, typing.Any]]] = []


def register_reinitialize_hook(func: _F, *args: typing.Any, **kwargs: typing.Any) -> _F:
    """Calls func(*args, **kwargs) at the start of every later reinitialize
    (newest hook first), e.g. to free what was allocated from the resources
    about to be replaced. Returns func."""
    _hooks.append((func, args, kwargs))
    return func


def unregister_reinitialize_hook(func: collections.abc.Callable[..., object]) -> None:
    """Forgets every registration of func."""
    _hooks[:] = [hook for hook in _hooks if hook[0] is not func]


def _devices(devices) -> list[int]:
    if devices is None:  # RMM's: device 0
        return [0]
    listed = [devices] if isinstance(devices, int) else list(devices)
    for device in listed:
        if isinstance(device, bool) or not isinstance(device, int):
            raise TypeError(f"devices must be an int or a list of ints, not {devices!r}")
    return listed


def _pool_size(value, name: str) -> int:
    """A pool size as RMM's parse_bytes reads it: an int as it is, a str by
    the size grammar (ValueError if it is none), any other type TypeError;
    then a size_t (SizeRangeError, an OverflowError, outside [0, 2**64))."""
    if isinstance(value, str):
        return parse_bytes(value)
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int or a str such as \"1GiB\", not {type(value).__name__}")
    return _args.c_unsigned(value, name)


def _log_file_from_environment() -> str:
    """The log file logging=True without log_file_name writes: CMR_LOG_FILE,
    else RMM's RMM_LOG_FILE; neither is a ValueError, as in RMM."""
    name = os.environ.get("CMR_LOG_FILE") or os.environ.get("RMM_LOG_FILE")
    if not name:
        raise ValueError("the log file must be given either by the log_file_name= argument or by the CMR_LOG_FILE "
                         "(or RMM_LOG_FILE) environment variable")
    return name


def _from_expression(expression: str) -> mr.DeviceMemoryResource:
    """The top of the stack `expression` makes (the stack's own shares are
    dropped: the top holds the rest)."""
    if not isinstance(expression, str):
        raise TypeError(f"resource must be a stack expression (a str), not {type(expression).__name__}")
    stack = capi.cmr_stack_parse(expression)
    try:
        return mr._wrap_ref(capi.cmr_stack_ref(stack))
    finally:
        capi.cmr_stack_destroy(stack)


def _build(pool_allocator, managed_memory, initial_pool_size, maximum_pool_size, logging, log_file_name, device):
    if capi.cmr_built_with_cuda():
        base = mr.ManagedMemoryResource() if managed_memory else mr.CudaMemoryResource()
    else:  # the host build's memory is the host's, managed or not
        base = mr.SystemMemoryResource()
    top = mr.PoolMemoryResource(base, initial_pool_size, maximum_pool_size) if pool_allocator else base
    if logging:
        top = mr.LoggingResourceAdaptor(top, _per_device_log_name(log_file_name, device))
    return top


def reinitialize(pool_allocator: bool = False, managed_memory: bool = False,
                 initial_pool_size: int | str | None = None, maximum_pool_size: int | str | None = None,
                 devices: int | collections.abc.Iterable[int] = 0, logging: bool = False, log_file_name: str | None = None, *,
                 resource: str | None = None) -> None:
    """Replaces the resource of each of `devices` (an int or a list): RMM's
    choice of cuda or managed memory, under a pool or not, logged or not; or,
    with resource=, the stack expression it names (for example
    "statistics(pool(cuda, initial_pool_size=1GiB))"), one per device.
    The registered hooks run first. Each resource is made on its device."""
    if resource is not None and (pool_allocator or managed_memory or initial_pool_size is not None
                                 or maximum_pool_size is not None or logging or log_file_name is not None):
        raise ValueError("reinitialize takes either resource= or RMM's arguments, not both")
    if pool_allocator:  # as RMM, the sizes are read (by parse_bytes's rules) only for a pool, else ignored
        initial_pool_size = None if initial_pool_size is None else _pool_size(initial_pool_size, "initial_pool_size")
        maximum_pool_size = None if maximum_pool_size is None else _pool_size(maximum_pool_size, "maximum_pool_size")
    else:
        initial_pool_size = maximum_pool_size = None
    if logging and log_file_name is None:
        log_file_name = _log_file_from_environment()
    targets = _devices(devices)
    for func, args, kwargs in reversed(list(_hooks)):
        func(*args, **kwargs)
    previous = capi.cmr_current_device()
    try:
        for device in targets:
            capi.cmr_set_current_device(device)
            if resource is not None:
                top = _from_expression(resource)
            else:
                top = _build(pool_allocator, managed_memory, initial_pool_size, maximum_pool_size, logging,
                             log_file_name, device)
            set_per_device_resource(device, top)
    finally:
        capi.cmr_set_current_device(previous)
