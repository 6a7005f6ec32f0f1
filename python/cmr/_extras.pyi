# SPDX-License-Identifier: Apache-2.0
# Type stubs of cmr._extras: what cmr.mr's classes add by hand.
from typing import Any, Callable, Iterable

from ._counts import AllocationRecord as AllocationRecord
from ._counts import Statistics as Statistics
from ._resource import DeviceMemoryResource

class CallbackExtras:
    allocate_func: Callable[[int, Any], int | None]
    deallocate_func: Callable[[int, int, Any], None]
    def __init__(self, allocate_func: Callable[[int, Any], int | None],
                 deallocate_func: Callable[[int, int, Any], None]) -> None: ...

class BinningExtras:
    def __init__(self, upstream_mr: DeviceMemoryResource, min_size_exponent: int | None = None,
                 max_size_exponent: int | None = None) -> None: ...
    def add_bin(self, allocation_size: int | str, bin_resource: DeviceMemoryResource | None = None) -> None: ...
    @property
    def bin_mrs(self) -> list[DeviceMemoryResource]: ...

class StatisticsExtras:
    @property
    def allocation_counts(self) -> Statistics: ...
    def push_counters(self) -> Statistics: ...
    def pop_counters(self) -> Statistics: ...

class CudaAsyncExtras:
    def __init__(self, initial_pool_size: int | str | None = None, release_threshold: int | str | None = None,
                 enable_ipc: bool = False, enable_fabric: bool = False, *,
                 export_handle_type: str | None = None,
                 access_devices: int | Iterable[int] | None = None) -> None: ...

class TrackingExtras:
    def outstanding_allocations(self) -> list[AllocationRecord]: ...
    def get_outstanding_allocations_str(self) -> str: ...
    def log_outstanding_allocations(self) -> None: ...
