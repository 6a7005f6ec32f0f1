# SPDX-License-Identifier: Apache-2.0
"""cmr.mr's classes on the host build: construction with RMM's keywords,
allocation through them (checked by writing the memory), their typed
methods and RMM aliases, errors, and Python callbacks."""

import ctypes
import threading

import pytest

import cmr
from cmr import mr
from conftest import GPU


def _write_and_check(resource, sizes=(1, 255, 4096, 100_000)):
    """Allocates each size, fills each block with its own byte, checks none overlap."""
    blocks = [(resource.allocate(n), n) for n in sizes]
    for i, (ptr, n) in enumerate(blocks):
        assert ptr % 256 == 0
        ctypes.memset(ptr, i + 1, n)
    for i, (ptr, n) in enumerate(blocks):
        assert ctypes.string_at(ptr, n) == bytes([i + 1]) * n
        resource.deallocate(ptr, n)


def test_fixed_size_serves_up_to_its_block_size(host_mr):
    fixed = mr.FixedSizeMemoryResource(host_mr, block_size="128KiB", blocks_to_preallocate=4)
    assert fixed.block_size() == 128 * 1024
    _write_and_check(fixed, sizes=(1, 1000, 128 * 1024))
    with pytest.raises(MemoryError):
        fixed.allocate(128 * 1024 + 1)


def test_simulated_memory_is_counted_not_used():
    simulated = mr.SimulatedMemoryResource(capacity="1GiB")
    ptr = simulated.allocate(1000)
    assert simulated.bytes_in_use() >= 1000 and simulated.allocation_count() == 1
    simulated.deallocate(ptr, 1000)
    assert simulated.bytes_in_use() == 0 and simulated.deallocation_count() == 1


def test_rmm_aliases_and_typed_methods(host_mr, tmp_path):
    limited = mr.LimitingResourceAdaptor(host_mr, 10_000)
    ptr = limited.allocate(1000)
    assert limited.get_allocated_bytes() == limited.allocated_bytes() >= 1000
    assert limited.get_allocation_limit() == 10_000
    limited.deallocate(ptr, 1000)
    tracked = mr.TrackingResourceAdaptor(host_mr)
    ptr = tracked.allocate(64)
    assert tracked.get_allocated_bytes() == 64 and tracked.outstanding_count() == 1
    assert f"{ptr:#x}" in tracked.get_outstanding_allocations_str()
    tracked.deallocate(ptr, 64)
    assert tracked.outstanding_count() == 0
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    assert pool.pool_size() == 1 << 20 and pool.free_size() == 1 << 20
    assert pool.upstream_mr is host_mr and pool.get_upstream() is host_mr


def test_tracking_logs_what_is_outstanding(host_mr, caplog):
    tracked = mr.TrackingResourceAdaptor(host_mr, capture_stacks=True)
    ptr = tracked.allocate(96)
    with caplog.at_level("DEBUG", logger="cmr"):
        tracked.log_outstanding_allocations()
    assert f"Outstanding Allocations: {ptr:#x}: 96 B : callstack:\n#0 in " in caplog.text  # RMM's text
    tracked.deallocate(ptr, 96)


def test_statistics_counts_and_levels(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    a = stats.allocate(1000)
    before = stats.push_counters()
    assert (before.current_bytes, before.total_count) == (1000, 1)
    b = stats.allocate(500)
    top = stats.pop_counters()
    # RMM's counts of a level are its own: current is what it allocated less what it freed.
    assert (top.current_bytes, top.peak_bytes, top.total_bytes, top.total_count) == (500, 500, 500, 1)
    counts = stats.allocation_counts
    assert (counts.current_bytes, counts.peak_bytes, counts.total_bytes, counts.total_count) == (1500, 1500, 1500, 2)
    stats.deallocate(a, 1000)
    stats.deallocate(b, 500)
    with pytest.raises(IndexError, match="cannot pop the last counter pair"):
        stats.pop_counters()  # only the base level is left: IndexError, as RMM's (std::out_of_range)


def test_binning_bins(host_mr):
    binning = mr.BinningMemoryResource(host_mr)
    assert binning.bin_count() == 0 and binning.bin_mrs == []
    binning.add_bin(1024)
    own = mr.FixedSizeMemoryResource(host_mr, block_size=4096, blocks_to_preallocate=1)
    binning.add_bin(4096, own)
    assert binning.bin_count() == 2 and binning.bin_mrs == [own]
    assert binning.bin_size_for(1000) == 1024 and binning.bin_size_for(3000) == 4096
    assert binning.bin_size_for(5000) == 0
    _write_and_check(binning, sizes=(100, 3000, 10_000))


def test_logging_writes_rmms_csv(host_mr, tmp_path):
    path = tmp_path / "log.csv"
    logged = mr.LoggingResourceAdaptor(host_mr, log_file_name=str(path))
    assert logged.get_file_name() == str(path)
    ptr = logged.allocate(100)
    logged.deallocate(ptr, 100)
    logged.flush()
    rows = path.read_text().splitlines()
    assert rows[0] == "Thread,Time,Action,Pointer,Size,Stream"
    assert [row.split(",")[2:5] for row in rows[1:]] == [["allocate", f"{ptr:#x}", "100"], ["free", f"{ptr:#x}", "100"]]


def test_errors_map_to_python_exceptions(host_mr):
    with pytest.raises(ValueError, match="multiple of 256"):
        mr.PoolMemoryResource(host_mr, initial_pool_size=1000)
    with pytest.raises(ValueError, match="larger than maximum_pool_size"):
        mr.PoolMemoryResource(host_mr, initial_pool_size="2MiB", maximum_pool_size="1MiB")
    with pytest.raises(TypeError, match="upstream_mr"):
        mr.PoolMemoryResource(None)
    with pytest.raises(TypeError, match="capture_stacks"):
        mr.TrackingResourceAdaptor(host_mr, capture_stacks="yes")
    with pytest.raises(MemoryError, match="CMR_ERROR_OUT_OF_MEMORY"):
        mr.LimitingResourceAdaptor(host_mr, 1000).allocate(5000)
    with pytest.raises(MemoryError):
        host_mr.allocate(1 << 62)
    with pytest.raises(TypeError, match="^stream argument cannot be None. Please provide a valid Stream instance.$"):
        host_mr.allocate(10, None)
    with pytest.raises(TypeError):
        host_mr.allocate(10, "a stream?")


def test_none_asks_for_the_default_and_every_int_is_a_value(host_mr):
    # Left out or None: the spec's default (1 MiB blocks, the binning without bins).
    assert mr.FixedSizeMemoryResource(host_mr, blocks_to_preallocate=1).block_size() == 1 << 20
    assert mr.FixedSizeMemoryResource(host_mr, block_size=None, blocks_to_preallocate=1).block_size() == 1 << 20
    assert mr.BinningMemoryResource(host_mr, None, None).bin_count() == 0
    assert mr.BinningMemoryResource(host_mr, 10, 12).bin_count() == 3
    # 2**64 - 1 and -2**31 once meant "default": now they are values, which
    # the resources refuse (a block that overflows once rounded, an exponent
    # outside [8, 40]).
    with pytest.raises(ValueError, match="CMR_ERROR_SIZE_OVERFLOW.*block_size 18446744073709551615"):
        mr.FixedSizeMemoryResource(host_mr, block_size=2**64 - 1)
    with pytest.raises(ValueError, match="max_size_exponent -2147483648 is outside"):
        mr.BinningMemoryResource(host_mr, 10, -(2**31))
    with pytest.raises(ValueError, match=r"\[0, 2\*\*64\)"):
        mr.FixedSizeMemoryResource(host_mr, block_size=2**64)
    # The C module itself: None is the default, an int out of the C type's range is refused.
    ref = host_mr._ref
    handle = cmr._capi.cmr_fixed_size_resource_create(ref, None, 1, cmr._capi.CMR_FIXED_SIZE_CAPTURE_SERVE)
    assert cmr._capi.cmr_fixed_size_resource_block_size(handle) == 1 << 20
    cmr._capi.cmr_fixed_size_resource_destroy(handle)
    with pytest.raises(ValueError, match="size in"):
        cmr._capi.cmr_fixed_size_resource_create(ref, -1, 1, cmr._capi.CMR_FIXED_SIZE_CAPTURE_SERVE)
    with pytest.raises(ValueError, match="int in"):
        cmr._capi.cmr_binning_resource_create(ref, 2**31, None)
    with pytest.raises(TypeError, match="an int or None"):
        cmr._capi.cmr_binning_resource_create(ref, "8", None)


def test_freeing_what_was_not_handed_out_never_reaches_c(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    ptr = pool.allocate(512)
    with pytest.raises(ValueError, match="with 512 bytes, not 256"):
        pool.deallocate(ptr, 256)
    with pytest.raises(ValueError, match="not allocated by this resource"):
        host_mr.deallocate(ptr, 512)
    pool.deallocate(ptr, 512)
    with pytest.raises(ValueError, match="freed already"):
        pool.deallocate(ptr, 512)
    with pytest.raises(ValueError):
        host_mr.deallocate(0xDEAD000, 16)


def test_callback_resource_calls_python(host_mr):
    calls = []

    def allocate(nbytes, stream):
        calls.append(("allocate", nbytes, stream))
        return host_mr.allocate(nbytes, stream)

    def deallocate(ptr, nbytes, stream):
        calls.append(("deallocate", nbytes, stream))
        host_mr.deallocate(ptr, nbytes, stream)

    callback = mr.CallbackMemoryResource(allocate, deallocate)
    ptr = callback.allocate(300)
    ctypes.memset(ptr, 7, 300)
    callback.deallocate(ptr, 300)
    assert calls == [("allocate", 300, 0), ("deallocate", 300, 0)]


def test_exceptions_in_callbacks_reach_the_caller(host_mr):
    def refuse(nbytes, stream):
        raise KeyError("no memory for you")

    # As RMM delivers them: any exception but MemoryError and RuntimeError
    # becomes a RuntimeError carrying its message (the original is its cause).
    with pytest.raises(RuntimeError, match="^'no memory for you'$") as raised:
        mr.CallbackMemoryResource(refuse, lambda p, n, s: None).allocate(10)
    assert type(raised.value) is RuntimeError and isinstance(raised.value.__cause__, KeyError)
    with pytest.raises(RuntimeError, match="^'no memory for you'$"):
        cmr.DeviceBuffer(size=10, mr=mr.CallbackMemoryResource(refuse, lambda p, n, s: None))

    def interrupted(nbytes, stream):
        raise KeyboardInterrupt("stop")  # a BaseException too

    with pytest.raises(RuntimeError, match="^stop$"):
        mr.CallbackMemoryResource(interrupted, lambda p, n, s: None).allocate(10)

    def out_of_memory(nbytes, stream):
        raise MemoryError("all gone")

    with pytest.raises(MemoryError, match="all gone"):
        mr.CallbackMemoryResource(out_of_memory, lambda p, n, s: None).allocate(10)

    def runtime_error(nbytes, stream):
        raise RuntimeError("as it is")

    with pytest.raises(RuntimeError, match="^as it is$"):
        mr.CallbackMemoryResource(runtime_error, lambda p, n, s: None).allocate(10)
    with pytest.raises(MemoryError):
        mr.CallbackMemoryResource(lambda n, s: None, lambda p, n, s: None).allocate(10)
    with pytest.raises(RuntimeError, match="address"):  # the conversion's TypeError, delivered as RMM does
        mr.CallbackMemoryResource(lambda n, s: "an address?", lambda p, n, s: None).allocate(10)
    with pytest.raises(TypeError, match="callable"):
        mr.CallbackMemoryResource(5, 6)

    def fail_free(ptr, nbytes, stream):
        host_mr.deallocate(ptr, nbytes, stream)
        raise RuntimeError("free refused")

    callback = mr.CallbackMemoryResource(lambda n, s: host_mr.allocate(n, s), fail_free)
    ptr = callback.allocate(10)
    with pytest.raises(RuntimeError, match="free refused"):
        callback.deallocate(ptr, 10)


def test_failure_callback_retries_until_it_says_no(host_mr):
    limited = mr.LimitingResourceAdaptor(host_mr, 2048)  # it counts sizes rounded up to 256
    held = [limited.allocate(1500)]
    seen = []

    def on_failure(nbytes):
        seen.append(nbytes)
        if held:
            limited.deallocate(held.pop(), 1500)
            return True
        return False

    adaptor = mr.FailureCallbackResourceAdaptor(limited, on_failure)
    ptr = adaptor.allocate(1000)  # fails once, the callback frees 1500 bytes, the retry succeeds
    assert seen == [1000]
    adaptor.deallocate(ptr, 1000)
    with pytest.raises(MemoryError):
        adaptor.allocate(5000)
    assert seen == [1000, 5000]

    def explode(nbytes):
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError):
        mr.FailureCallbackResourceAdaptor(limited, explode).allocate(5000)


def test_threads_through_python_callbacks_do_not_deadlock(host_mr):
    pool = mr.PoolMemoryResource(mr.CallbackMemoryResource(lambda n, s: host_mr.allocate(n, s),
                                                           lambda p, n, s: host_mr.deallocate(p, n, s)),
                                 initial_pool_size=0)
    errors = []

    def work():
        try:
            for i in range(300):
                n = 256 * (1 + i % 17)
                ptr = pool.allocate(n)
                ctypes.memset(ptr, 1, n)
                pool.deallocate(ptr, n)
        except Exception as error:  # noqa: BLE001 (reported on the main thread)
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "threads deadlocked"
    assert errors == []


@pytest.mark.skipif(not GPU, reason="needs a GPU")
def test_cuda_classes_on_a_gpu():
    for resource in (mr.CudaMemoryResource(), mr.ManagedMemoryResource(), mr.CudaAsyncMemoryResource(),
                     mr.CudaAsyncMemoryResource(initial_pool_size="1MiB", release_threshold="8MiB"),
                     mr.PoolMemoryResource(mr.CudaMemoryResource(), "4MiB")):
        ptr = resource.allocate(1 << 20, cmr.DEFAULT_STREAM)
        assert ptr != 0
        resource.deallocate(ptr, 1 << 20, cmr.DEFAULT_STREAM)


def test_pool_fragmentation_tools_return_memory_to_the_upstream():
    upstream = mr.SimulatedMemoryResource(capacity="1GiB")
    pool = mr.PoolMemoryResource(upstream, initial_pool_size=0, maximum_growth="1MiB")
    a = pool.allocate(4 << 20)  # a chunk of the request's size
    b = pool.allocate(256)  # doubling would take 4 MiB more; maximum_growth caps it at 1 MiB
    assert pool.pool_size() == 5 << 20 and upstream.bytes_in_use() == 5 << 20
    assert pool.largest_free_block() == (1 << 20) - 256
    pool.deallocate(a, 4 << 20)
    assert pool.largest_free_block() == 4 << 20
    pool.release()  # the 4 MiB chunk is wholly free: back to the upstream
    assert pool.pool_size() == 1 << 20 and upstream.bytes_in_use() == 1 << 20
    pool.deallocate(b, 256)
    assert pool.largest_free_block() == pool.pool_size() == 1 << 20
    pool.release()
    assert pool.pool_size() == 0 and upstream.bytes_in_use() == 0 and pool.largest_free_block() == 0


def test_arena_and_binning_report_their_largest_free_block():
    upstream = mr.SimulatedMemoryResource(capacity="1GiB")
    arena = mr.ArenaMemoryResource(upstream, arena_size="4MiB")
    assert arena.largest_free_block() == 4 << 20
    ptr = arena.allocate(1000)  # a 1 MiB superblock leaves the global arena
    assert arena.largest_free_block() == 3 << 20
    arena.deallocate(ptr, 1000)
    binning = mr.BinningMemoryResource(upstream, 8, 10)
    assert binning.largest_free_block() == 1024  # the largest bin's preallocated blocks
