# SPDX-License-Identifier: Apache-2.0
"""An RMM-style program written against cmr (rmm -> cmr), checked by
`mypy --strict` (python.mypy_strict) and run (python.typing's test): a
pool under statistics, DeviceBuffers, the profiler, reinitialize, a
tracking adaptor and the CuPy allocator. Every line is typed code a user
writes; mypy must find nothing to report."""

from __future__ import annotations

import inspect

import cmr
import cmr.mr
import cmr.statistics
from cmr.allocators.cupy import rmm_cupy_allocator
from cmr.pylibrmm.device_buffer import SupportsCUDAArrayInterface


def make_pool() -> cmr.mr.PoolMemoryResource:
    upstream: cmr.mr.DeviceMemoryResource = cmr.mr.get_current_device_resource()
    return cmr.mr.PoolMemoryResource(upstream, initial_pool_size="1MiB", maximum_pool_size=2**24)


def copy_through(buffer: SupportsCUDAArrayInterface, size: int) -> bytes:
    target = cmr.DeviceBuffer(size=size)
    target.copy_from_device(buffer)
    return target.tobytes()


@cmr.statistics.profiler(name="fill")
def fill(size: int) -> cmr.DeviceBuffer:
    return cmr.DeviceBuffer.to_device(bytes(range(256)) * (size // 256))


def main() -> int:
    cmr.reinitialize(pool_allocator=True, initial_pool_size="1MiB", maximum_pool_size="16MiB", devices=[0])
    pool = make_pool()
    cmr.mr.set_current_device_resource(cmr.mr.StatisticsResourceAdaptor(pool))
    with cmr.statistics.statistics():
        buffer = fill(1024)
        counts: cmr.statistics.Statistics | None = cmr.statistics.get_statistics()
        assert counts is not None and counts.current_bytes == 1024
        assert copy_through(buffer, buffer.size) == buffer.tobytes()
        host = bytearray(buffer.nbytes)
        buffer.copy_to_host(host)
        buffer.resize(512)
        assert len(buffer) == 512 and buffer.ptr != 0 and buffer.capacity() >= 512
    records: dict[str, cmr.statistics.ProfilerRecords.MemoryRecord] = cmr.statistics.default_profiler_records.records
    assert records["fill"].num_calls == 1
    report: str = cmr.statistics.default_profiler_records.report(ordered_by="num_calls")
    assert "Legends:" in report

    tracking = cmr.mr.TrackingResourceAdaptor(pool, capture_stacks=True)
    address: int = tracking.allocate(1000)
    outstanding: list[cmr.mr.AllocationRecord] = tracking.outstanding_allocations()
    assert outstanding[0].pointer == address and tracking.get_outstanding_allocations_str() != ""
    tracking.deallocate(address, 1000)

    stats: dict[str, int] = cmr.memory_stats(pool)
    peak: int = cmr.max_memory_allocated(pool)
    assert stats["allocated_bytes.all.peak"] == peak
    cmr.reset_peak_memory_stats(pool)
    seen: list[cmr.OutOfMemoryEvent] = []
    cmr.set_oom_observer(seen.append)
    cmr.set_oom_observer(None)

    allocator = rmm_cupy_allocator  # cupy.cuda.set_allocator(allocator) where CuPy is installed
    assert callable(allocator) and "nbytes" in inspect.signature(allocator).parameters
    version: str = cmr.__version__
    assert version
    cmr.reinitialize()  # RMM's defaults again
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
