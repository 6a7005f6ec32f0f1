# SPDX-License-Identifier: Apache-2.0
"""What cmr.mr's classes add by hand to what the spec generates: a
resource's spec names a class here in its [python] table (`extends`), and
the generated class derives from it, so these methods come first. Each
__init__ here has RMM's signature and calls the generated _create."""

from __future__ import annotations

import logging

from . import _args
from . import _capi as capi
from ._counts import AllocationRecord, Statistics
from ._errors import CmrError
from ._resource import _ref_of


class CallbackExtras:
    """CallbackMemoryResource(allocate_func, deallocate_func): allocate_func(size,
    stream) returns the address of `size` bytes aligned to 256 (0 or None when
    it cannot: MemoryError), deallocate_func(ptr, size, stream) frees it. An
    exception either raises reaches the caller of allocate / deallocate. The
    memory is taken to be that of the build: host accessible too in a host
    build."""

    def __init__(self, allocate_func, deallocate_func):
        properties = capi.CMR_PROPERTY_DEVICE_ACCESSIBLE
        if not capi.cmr_built_with_cuda():
            properties |= capi.CMR_PROPERTY_HOST_ACCESSIBLE
        self._create(allocate_func, deallocate_func, properties)


class BinningExtras:
    """BinningMemoryResource(upstream_mr, min_size_exponent=None,
    max_size_exponent=None); add_bin(allocation_size, bin_resource=None) and
    bin_mrs as RMM's."""

    def __init__(self, upstream_mr, min_size_exponent=None, max_size_exponent=None):
        self._create(upstream_mr, min_size_exponent, max_size_exponent)
        self._bins = {}  # allocation size -> the resource given for it (kept alive)

    def add_bin(self, allocation_size, bin_resource=None) -> None:
        """A bin for requests up to allocation_size bytes: bin_resource, or a
        new fixed_size resource over upstream_mr when None (then an existing
        bin of that size is kept)."""
        size = _args.size(allocation_size, "allocation_size")
        if bin_resource is None:
            capi.cmr_binning_resource_add_bin(self._handle, size)
        else:
            capi.cmr_binning_resource_add_bin_resource(self._handle, size, _ref_of(bin_resource, "bin_resource"))
            self._bins[capi.cmr_binning_resource_bin_size_for(self._handle, size)] = bin_resource

    @property
    def bin_mrs(self) -> list:
        """The resources given to add_bin (the automatic bins are C-only)."""
        return list(self._bins.values())


class StatisticsExtras:
    """StatisticsResourceAdaptor(upstream_mr) with RMM's allocation_counts and
    push/pop_counters."""

    @property
    def allocation_counts(self) -> Statistics:
        """The top level's counts, as RMM's: current is what the level
        allocated less what it freed (negative when it freed memory allocated
        before its push); peak and total are counted from its push."""
        h = self._handle
        return Statistics(
            current_bytes=capi.cmr_statistics_resource_bytes_current(h)
            - capi.cmr_statistics_resource_bytes_at_push(h),
            current_count=capi.cmr_statistics_resource_allocations_current(h)
            - capi.cmr_statistics_resource_allocations_at_push(h),
            peak_bytes=capi.cmr_statistics_resource_bytes_peak(h),
            peak_count=capi.cmr_statistics_resource_allocations_peak(h),
            total_bytes=capi.cmr_statistics_resource_bytes_total(h),
            total_count=capi.cmr_statistics_resource_allocations_total(h))

    def push_counters(self) -> Statistics:
        """Starts a new level of counters; returns the counts before it."""
        counts = self.allocation_counts
        capi.cmr_statistics_resource_push_counters(self._handle)
        return counts

    def pop_counters(self) -> Statistics:
        """Merges the top level into the one below; returns the top level's
        counts. Popping the base level is an IndexError, as in RMM."""
        if capi.cmr_statistics_resource_counter_levels(self._handle) == 1:
            raise IndexError("cannot pop the last counter pair")
        counts = self.allocation_counts
        capi.cmr_statistics_resource_pop_counters(self._handle)
        return counts


def _device_mask(devices):
    """A bitmask of devices (bit k: device k) from None, a mask, or an
    iterable of device ids."""
    if devices is None:
        return 0
    if isinstance(devices, int) and not isinstance(devices, bool):
        return devices
    mask = 0
    for device in devices:
        if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < 64:
            raise ValueError(f"access_devices: {device!r} is not a device id in [0, 64)")
        mask |= 1 << device
    return mask


class CudaAsyncExtras:
    """CudaAsyncMemoryResource(initial_pool_size=None, release_threshold=None,
    enable_ipc=False, enable_fabric=False, *, export_handle_type=None,
    access_devices=None), as RMM's: enable_ipc exports POSIX file
    descriptors, enable_fabric fabric handles, the two together both (or
    export_handle_type names the set). A device or driver that cannot export
    every kind asked raises
    RuntimeError ending in RMM's "Requested IPC memory handle type not
    supported". access_devices, cmr's own, names the other devices whose work
    may use the pool's memory: an iterable of device ids or a bitmask."""

    def __init__(self, initial_pool_size=None, release_threshold=None, enable_ipc=False, enable_fabric=False, *,
                 export_handle_type=None, access_devices=None):
        if export_handle_type is None:
            # As RMM ORs the handle types: each export_handle_type names a set.
            export_handle_type = {(False, False): "none", (True, False): "posix_file_descriptor",
                                  (False, True): "fabric", (True, True): "posix_file_descriptor_and_fabric"}[
                                      (bool(enable_ipc), bool(enable_fabric))]
        elif enable_ipc or enable_fabric:
            raise ValueError("give enable_ipc / enable_fabric or export_handle_type, not both")
        try:
            self._create(initial_pool_size, release_threshold, export_handle_type, _device_mask(access_devices))
        except CmrError as error:
            if error.errcode == capi.CMR_ERROR_UNSUPPORTED and "handle type" in str(error):
                raise CmrError(error.errcode, f"{error}: Requested IPC memory handle type not supported") from None
            raise


class TrackingExtras:
    """TrackingResourceAdaptor(upstream_mr, capture_stacks=False) with RMM's
    get_outstanding_allocations_str and log_outstanding_allocations, and
    outstanding_allocations(), the same allocations as records."""

    def outstanding_allocations(self) -> list[AllocationRecord]:
        """The allocations outstanding now, in address order (one snapshot:
        consistent even while other threads allocate)."""
        h = self._handle
        count = capi.cmr_tracking_resource_outstanding_snapshot(h)
        return [AllocationRecord(capi.cmr_tracking_resource_snapshot_pointer(h, i),
                                 capi.cmr_tracking_resource_snapshot_bytes(h, i),
                                 capi.cmr_tracking_resource_snapshot_stream(h, i),
                                 capi.cmr_tracking_resource_snapshot_alignment(h, i),
                                 tuple(capi.cmr_tracking_resource_snapshot_stack(h, i).splitlines()))
                for i in range(count)]

    def get_outstanding_allocations_str(self) -> str:
        """RMM's text of the outstanding allocations: per allocation, in
        address order, "<pointer>: <size> B", then, when stacks are captured,
        " : callstack:" and the frames one a line; the empty string when
        nothing is outstanding."""
        text = []
        for record in self.outstanding_allocations():
            text.append(f"{record.pointer:#x}: {record.size} B")
            if self.capture_stacks():
                text.append(" : callstack:\n" + "".join(f"{frame}\n" for frame in record.stack))
            text.append("\n")
        return "".join(text)

    def log_outstanding_allocations(self) -> None:
        """Writes the outstanding allocations to the Python logger "cmr", at
        DEBUG level, as RMM writes them to its debug log."""
        logging.getLogger("cmr").debug("Outstanding Allocations: %s", self.get_outstanding_allocations_str())
