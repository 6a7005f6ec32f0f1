# SPDX-License-Identifier: Apache-2.0
"""RMM 26.08's public Python API on cmr: its modules and names at RMM's paths,
RMMError, MemoryError for every failed allocation, stream=None, the logger,
CudaStreamPool, the copy functions, enable_fabric, SamHeadroom, binning
bins of other accessibility and reinitialize's rules."""

import importlib
import warnings

import pytest

import cmr
from cmr import _capi as capi, mr
from conftest import GPU, needs_gpu

# ---- layout ------------------------------------------------------------------------------

TOP_LEVEL = ["DeviceBuffer", "RMMError", "disable_logging", "enable_logging", "flush_logger", "get_flush_level",
             "get_log_filenames", "get_logging_level", "is_initialized", "level_enum", "mr",
             "register_reinitialize_hook", "reinitialize", "set_flush_level", "set_logging_level", "should_log",
             "unregister_reinitialize_hook", "__version__", "__git_commit__"]
MR = ["ArenaMemoryResource", "BinningMemoryResource", "CallbackMemoryResource", "CudaAsyncMemoryResource",
      "CudaAsyncViewMemoryResource", "CudaMemoryResource", "DeviceMemoryResource", "FailureCallbackResourceAdaptor",
      "FixedSizeMemoryResource", "LimitingResourceAdaptor", "LoggingResourceAdaptor", "ManagedMemoryResource",
      "PinnedHostMemoryResource", "PoolMemoryResource", "PrefetchResourceAdaptor", "StatisticsResourceAdaptor",
      "SystemMemoryResource", "TrackingResourceAdaptor", "UpstreamResourceAdaptor", "available_device_memory",
      "disable_logging", "enable_logging", "get_current_device_resource", "get_current_device_resource_type",
      "get_log_filenames", "get_per_device_resource", "get_per_device_resource_type", "is_initialized",
      "set_current_device_resource", "set_per_device_resource"]
PATHS = {
    "cmr.pylibrmm.stream": ["Stream", "DEFAULT_STREAM", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM",
                            "CudaStreamFlags"],
    "cmr.pylibrmm.cuda_stream": ["CudaStream", "CudaStreamFlags"],
    "cmr.pylibrmm.device_buffer": ["DeviceBuffer", "to_device", "copy_ptr_to_host", "copy_host_to_ptr",
                                   "copy_device_to_ptr"],
    "cmr.pylibrmm.memory_resource": MR + ["experimental"],
    "cmr.pylibrmm.memory_resource.experimental": ["CudaAsyncManagedMemoryResource"],
    "cmr.pylibrmm.cuda_stream_pool": ["CudaStreamPool", "CudaStreamFlags"],
    "cmr.pylibrmm.logger": ["level_enum", "set_logging_level", "get_logging_level", "set_flush_level",
                            "get_flush_level", "flush_logger", "should_log"],
    "cmr.pylibrmm.helper": ["parse_bytes"],
    "cmr.pylibrmm.utils": ["as_stream"],
    "cmr.pylibrmm": ["DeviceBuffer", "CudaStreamPool", "CudaStreamFlags", "memory_resource"],
    "cmr.mr": MR,
    "cmr.mr.experimental": ["CudaAsyncManagedMemoryResource"],
    "cmr.statistics": ["Statistics", "ProfilerRecords", "enable_statistics", "get_statistics", "push_statistics",
                       "pop_statistics", "statistics", "profiler", "default_profiler_records"],
    "cmr.allocators.cupy": ["rmm_cupy_allocator", "cmr_cupy_allocator"],
    "cmr.allocators.torch": ["rmm_torch_allocator", "cmr_torch_allocator"],
}


def test_the_top_level_has_rmms_names():
    for name in TOP_LEVEL:
        assert hasattr(cmr, name), name
    assert cmr.__version__.split("+")[0] == capi.cmr_version()
    assert isinstance(cmr.__git_commit__, str)
    assert cmr.mr.experimental.CudaAsyncManagedMemoryResource is mr.CudaAsyncManagedMemoryResource


@pytest.mark.parametrize("module", sorted(PATHS))
def test_each_module_has_rmms_names_at_rmms_path(module):
    imported = importlib.import_module(module)
    for name in PATHS[module]:
        assert hasattr(imported, name), f"{module}.{name}"
    from cmr.mr.experimental import CudaAsyncManagedMemoryResource  # noqa: F401 (the import itself is the test)


def test_the_same_objects_at_every_path():
    from cmr.pylibrmm import device_buffer, memory_resource, stream
    assert device_buffer.DeviceBuffer is cmr.DeviceBuffer
    assert memory_resource.PoolMemoryResource is mr.PoolMemoryResource
    assert stream.Stream is cmr.Stream and stream.DEFAULT_STREAM is cmr.DEFAULT_STREAM


def test_sam_headroom_is_exported_once_generated(host_mr):
    if not hasattr(capi, "cmr_sam_headroom_resource_create"):
        pytest.skip("the sam_headroom spec resource is not in this build yet")
    assert "SamHeadroomMemoryResource" in mr.__all__
    from cmr.pylibrmm.memory_resource import SamHeadroomMemoryResource
    assert SamHeadroomMemoryResource is mr.SamHeadroomMemoryResource
    if GPU:
        try:
            resource = mr.SamHeadroomMemoryResource(headroom=1 << 30)
        except cmr.CmrError as error:  # as RMM: refused without pageable memory access (the H200 here)
            assert "CMR_ERROR_UNSUPPORTED" in str(error) and "pageable" in str(error)
            return
        ptr = resource.allocate(4096)
        resource.deallocate(ptr, 4096)


# ---- errors ------------------------------------------------------------------------------


def test_rmm_error_is_cmrs_error_class():
    error = cmr.RMMError(7, "what")
    assert error.errcode == 7 and str(error) == "what" and isinstance(error, Exception)
    assert issubclass(cmr.CmrError, cmr.RMMError) and issubclass(cmr.CmrError, RuntimeError)
    handle = capi.cmr_system_resource_create()
    capi.cmr_system_resource_destroy(handle)
    with pytest.raises(cmr.RMMError) as raised:  # a cmr failure that is no bad value nor allocation
        capi.cmr_system_resource_destroy(handle)
    assert isinstance(raised.value, RuntimeError) and raised.value.errcode == capi.CMR_ERROR_DESTROYED_HANDLE
    assert "CMR_ERROR_DESTROYED_HANDLE" in str(raised.value)


def test_a_refused_value_is_a_value_error_and_rmms_runtime_error(host_mr):
    with pytest.raises(ValueError) as raised:
        mr.PoolMemoryResource(host_mr, initial_pool_size=1000)  # not a multiple of 256
    assert isinstance(raised.value, RuntimeError) and isinstance(raised.value, cmr.RMMError)
    assert raised.value.errcode == capi.CMR_ERROR_INVALID_ARGUMENT


def test_sizes_out_of_range_are_overflow_errors_as_in_rmm(host_mr):
    with pytest.raises(OverflowError):
        mr.LimitingResourceAdaptor(host_mr, -1)
    with pytest.raises(OverflowError):
        mr.FixedSizeMemoryResource(host_mr, block_size=2**64)
    with pytest.raises(ValueError):  # the same error is a ValueError too
        mr.FixedSizeMemoryResource(host_mr, block_size=-5)


def test_every_failed_allocation_is_a_memory_error(host_mr):
    limited = mr.LimitingResourceAdaptor(host_mr, 1 << 20)
    with pytest.raises(MemoryError, match="allocation_limit"):
        limited.allocate(2 << 20)
    with pytest.raises(MemoryError):
        cmr.DeviceBuffer(size=2 << 20, mr=limited)
    buffer = cmr.DeviceBuffer(size=16, mr=limited)
    with pytest.raises(MemoryError):
        buffer.resize(4 << 20)
    with pytest.raises(MemoryError):
        buffer.reserve(4 << 20)
    with pytest.raises(MemoryError):  # more bytes than there can be
        host_mr.allocate(2**64 - 1)
    pool = mr.PoolMemoryResource(host_mr, 1 << 20, 1 << 20)
    with pytest.raises(MemoryError):
        pool.allocate(4 << 20)


@needs_gpu
def test_a_cuda_error_from_a_destroyed_pool_is_a_memory_error():
    cuda_runtime = pytest.importorskip("cuda.bindings.runtime")
    error, pool = cuda_runtime.cudaMemPoolCreate(_pool_props(cuda_runtime))
    assert error == cuda_runtime.cudaError_t.cudaSuccess
    view = mr.CudaAsyncViewMemoryResource(int(pool))
    cuda_runtime.cudaMemPoolDestroy(pool)
    with pytest.raises(MemoryError):
        view.allocate(1 << 20)


def _pool_props(cuda_runtime):
    props = cuda_runtime.cudaMemPoolProps()
    props.allocType = cuda_runtime.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.location.type = cuda_runtime.cudaMemLocationType.cudaMemLocationTypeDevice
    props.location.id = 0
    return props


def test_a_failure_callbacks_exception_is_that_very_exception(host_mr):
    class Refusal(Exception):
        pass

    raised = Refusal("no retry")

    def callback(nbytes):
        raise raised

    adaptor = mr.FailureCallbackResourceAdaptor(mr.LimitingResourceAdaptor(host_mr, 1024), callback)
    with pytest.raises(Refusal) as caught:
        adaptor.allocate(1 << 20)
    assert caught.value is raised
    with pytest.raises(Refusal):
        cmr.DeviceBuffer(size=1 << 20, mr=adaptor)


def test_the_callbacks_get_a_stream(host_mr):
    seen = []

    def allocate(nbytes, stream):
        seen.append(stream)
        return host_mr.allocate(nbytes, stream)

    callback = mr.CallbackMemoryResource(allocate, lambda ptr, nbytes, stream: host_mr.deallocate(ptr, nbytes, stream))
    callback.deallocate(callback.allocate(64), 64)
    assert isinstance(seen[0], cmr.Stream) and seen[0] == 0


# ---- stream=None -------------------------------------------------------------------------

NONE_MESSAGE = "^stream argument cannot be None. Please provide a valid Stream instance.$"


def test_stream_none_is_a_type_error_in_rmms_words_everywhere(host_mr):
    from cmr.pylibrmm import device_buffer, utils
    buffer = cmr.DeviceBuffer(size=64, mr=host_mr)
    ptr = host_mr.allocate(64)
    host = bytearray(64)
    calls = [
        lambda: host_mr.allocate(64, None),
        lambda: host_mr.deallocate(ptr, 64, None),
        lambda: cmr.DeviceBuffer(size=8, stream=None, mr=host_mr),
        lambda: cmr.DeviceBuffer.to_device(b"abc", None),
        lambda: device_buffer.to_device(b"abc", None),
        lambda: buffer.copy_to_host(stream=None),
        lambda: buffer.copy_from_host(b"abc", None),
        lambda: buffer.tobytes(None),
        lambda: buffer.resize(10, None),
        lambda: buffer.reserve(1000, None),
        lambda: buffer.prefetch(stream=None),
        lambda: device_buffer.copy_ptr_to_host(ptr, host, None),
        lambda: device_buffer.copy_host_to_ptr(host, ptr, None),
        lambda: device_buffer.copy_device_to_ptr(ptr, ptr, 0, None),
        lambda: utils.as_stream(None),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=NONE_MESSAGE):
            call()
    host_mr.deallocate(ptr, 64)


# ---- copies ------------------------------------------------------------------------------


def test_copy_functions_move_bytes_between_pointers_and_host_buffers(host_mr):
    import array
    from cmr.pylibrmm.device_buffer import copy_device_to_ptr, copy_host_to_ptr, copy_ptr_to_host, to_device
    source = bytes(range(64))
    buffer = to_device(memoryview(source))
    assert isinstance(buffer, cmr.DeviceBuffer) and buffer.size == 64
    back = bytearray(64)
    copy_ptr_to_host(buffer.ptr, memoryview(back))
    assert back == source
    copy_host_to_ptr(memoryview(bytes(range(64, 128))), buffer.ptr)
    assert buffer.tobytes() == bytes(range(64, 128))
    other = cmr.DeviceBuffer(size=64, mr=host_mr)
    copy_device_to_ptr(buffer.ptr, other.ptr, 64, cmr.DEFAULT_STREAM)
    cmr.DEFAULT_STREAM.synchronize()
    assert other.tobytes() == bytes(range(64, 128))
    with pytest.raises(TypeError, match="writable"):
        copy_ptr_to_host(buffer.ptr, b"read-only")
    # RMM's const unsigned char[::1]: one dimension, contiguous, format B.
    with pytest.raises(ValueError, match="not contiguous"):
        copy_host_to_ptr(memoryview(bytearray(8))[::2], buffer.ptr)
    with pytest.raises(ValueError, match="format is not B"):
        copy_host_to_ptr(array.array("i", range(4)), buffer.ptr)
    with pytest.raises(ValueError, match="format is not B"):
        copy_ptr_to_host(buffer.ptr, array.array("i", range(4)))
    with pytest.raises(TypeError, match="bytes-like"):
        copy_host_to_ptr("text", buffer.ptr)
    with pytest.raises(OverflowError):
        copy_ptr_to_host(-1, bytearray(1))


def test_device_buffer_takes_only_bytes_of_one_dimension(host_mr):
    import array
    values = array.array("d", [1.5, 2.5])
    with pytest.raises(ValueError, match="format is not B"):
        cmr.DeviceBuffer.to_device(memoryview(values))
    buffer = cmr.DeviceBuffer.to_device(memoryview(values).cast("B"))
    assert buffer.tobytes() == values.tobytes()
    with pytest.raises(ValueError, match="format is not B"):
        buffer.copy_to_host(memoryview(bytearray(16)).cast("d"))
    with pytest.raises(ValueError, match="one dimension"):
        buffer.copy_to_host(memoryview(bytearray(16)).cast("B", (4, 4)))
    with pytest.raises(ValueError, match="format is not B"):
        buffer.copy_from_host(memoryview(array.array("h", [7, 8])))
    buffer.copy_from_host(memoryview(array.array("h", [7, 8])).cast("B"))
    assert buffer.tobytes()[:4] == array.array("h", [7, 8]).tobytes()


# ---- the logger --------------------------------------------------------------------------

needs_log = pytest.mark.skipif(not hasattr(capi, "cmr_log_set_level"), reason="the C log (log.h) is not in this build")


def test_level_enum_has_rmms_names():
    from cmr.pylibrmm.logger import level_enum
    assert [level.name for level in level_enum] == ["trace", "debug", "info", "warn", "error", "critical", "off",
                                                     "n_levels"]
    assert cmr.level_enum is level_enum and int(level_enum.off) == 6


def test_logger_functions_want_a_level_enum():
    for function in (cmr.set_logging_level, cmr.set_flush_level, cmr.should_log):
        with pytest.raises(TypeError, match="level must be an instance of the level_enum enum"):
            function(2)


@needs_log
def test_logging_and_flush_levels_round_trip():
    from cmr.pylibrmm.logger import level_enum
    level, flush = cmr.get_logging_level(), cmr.get_flush_level()
    try:
        for wanted in (level_enum.trace, level_enum.warn, level_enum.off):
            cmr.set_logging_level(wanted)
            assert cmr.get_logging_level() is wanted
        cmr.set_logging_level(level_enum.warn)
        assert cmr.should_log(level_enum.error) and not cmr.should_log(level_enum.info)
        cmr.set_flush_level(level_enum.error)
        assert cmr.get_flush_level() is level_enum.error
        cmr.flush_logger()
    finally:
        cmr.set_logging_level(level)
        cmr.set_flush_level(flush)


@needs_log
def test_the_log_goes_to_a_file(tmp_path):
    from cmr.pylibrmm import logger
    level, before = cmr.get_logging_level(), logger.get_log_file()
    path = tmp_path / "cmr.log"
    try:
        logger.set_log_file(str(path))
        assert logger.get_log_file() == str(path)
        cmr.set_logging_level(cmr.level_enum.trace)
        pool = mr.PoolMemoryResource(mr.SystemMemoryResource(), 1 << 20)
        pool.deallocate(pool.allocate(4 << 20), 4 << 20)  # the pool grows: an event at some level
        cmr.flush_logger()
        assert path.stat().st_size > 0
    finally:
        cmr.set_logging_level(level)
        logger.set_log_file(before)


@needs_log
def test_a_level_that_logs_nothing_warns():
    from cmr.pylibrmm.logger import level_enum
    level = cmr.get_logging_level()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cmr.set_logging_level(level_enum.info)  # logged: no warning
    finally:
        cmr.set_logging_level(level)


# ---- the stream pool ---------------------------------------------------------------------

needs_pool = pytest.mark.skipif(not hasattr(capi, "cmr_stream_pool_create"),
                                reason="the C stream pool is not in this build")


@needs_pool
def test_the_pool_hands_out_its_streams_round_robin():
    from cmr.pylibrmm.cuda_stream_pool import CudaStreamFlags, CudaStreamPool
    pool = CudaStreamPool(pool_size=4, flags=CudaStreamFlags.NON_BLOCKING)
    assert pool.get_pool_size() == 4
    handed = [pool.get_stream() for _ in range(8)]
    assert all(isinstance(stream, cmr.Stream) for stream in handed)
    assert len(set(map(int, handed[:4]))) == 4 and list(map(int, handed[4:])) == list(map(int, handed[:4]))
    assert int(pool.get_stream(1)) == int(pool.get_stream(5))  # modulo the size, as RMM's
    assert CudaStreamPool().get_pool_size() == 16


@needs_pool
def test_streams_keep_their_pool_alive(host_mr):
    import gc
    from cmr.pylibrmm.cuda_stream_pool import CudaStreamPool
    stream = CudaStreamPool(2).get_stream()
    gc.collect()
    buffer = cmr.DeviceBuffer(size=256, stream=stream, mr=host_mr)
    stream.synchronize()
    del stream
    gc.collect()
    buffer.resize(512)  # the buffer's stream, from the pool, is still there
    del buffer


@needs_pool
def test_the_pool_refuses_what_rmm_refuses():
    from cmr.pylibrmm.cuda_stream_pool import CudaStreamPool
    with pytest.raises(RuntimeError, match="greater than zero"):
        CudaStreamPool(0)
    with pytest.raises(OverflowError):
        CudaStreamPool(-1)
    with pytest.raises(TypeError):
        CudaStreamPool(2.5)
    with pytest.raises(ValueError):
        CudaStreamPool(2, flags=7)
    with pytest.raises(OverflowError):
        CudaStreamPool(2).get_stream(-1)


# ---- resources ---------------------------------------------------------------------------


def test_a_bin_of_other_accessibility_is_accepted(host_mr):
    binning = mr.BinningMemoryResource(host_mr)
    before = capi.cmr_ref_properties(binning.ref)
    device_only = mr.CallbackMemoryResource(lambda n, s: host_mr.allocate(n, s),
                                            lambda p, n, s: host_mr.deallocate(p, n, s))
    binning.add_bin(4096, device_only)
    assert binning.bin_mrs == [device_only]
    assert capi.cmr_ref_properties(binning.ref) == before & capi.cmr_ref_properties(device_only.ref)
    binning.deallocate(binning.allocate(1000), 1000)


@needs_gpu
def test_cuda_async_with_fabric_as_rmm():
    try:
        resource = mr.CudaAsyncMemoryResource(enable_fabric=True)
    except RuntimeError as error:
        assert str(error).endswith("Requested IPC memory handle type not supported")
    else:
        mr.set_current_device_resource(resource)
        assert mr.get_current_device_resource_type() is mr.CudaAsyncMemoryResource
        cmr.DeviceBuffer(size=1 << 20)


def test_cuda_async_takes_rmms_arguments():
    import inspect
    names = list(inspect.signature(mr.CudaAsyncMemoryResource).parameters)
    assert names[:4] == ["initial_pool_size", "release_threshold", "enable_ipc", "enable_fabric"]


# ---- reinitialize ------------------------------------------------------------------------


def test_reinitialize_reads_sizes_as_rmm():
    cmr.reinitialize(pool_allocator=True, initial_pool_size="1MiB", maximum_pool_size=4 << 20)
    top = mr.get_current_device_resource()
    assert isinstance(top, mr.PoolMemoryResource) and top.pool_size() == 1 << 20
    with pytest.raises(ValueError):
        cmr.reinitialize(pool_allocator=True, initial_pool_size="one megabyte")
    with pytest.raises(TypeError):
        cmr.reinitialize(pool_allocator=True, initial_pool_size=1.5)
    with pytest.raises(OverflowError):
        cmr.reinitialize(pool_allocator=True, initial_pool_size=-256)
    cmr.reinitialize(devices=None)  # RMM's device 0
    cmr.reinitialize(initial_pool_size=object())  # without a pool, ignored


def test_reinitialize_logging_needs_a_file(monkeypatch, tmp_path):
    monkeypatch.delenv("CMR_LOG_FILE", raising=False)
    monkeypatch.delenv("RMM_LOG_FILE", raising=False)
    with pytest.raises(ValueError, match="log_file_name"):
        cmr.reinitialize(logging=True)
    monkeypatch.setenv("RMM_LOG_FILE", str(tmp_path / "rmm.log"))
    cmr.reinitialize(logging=True)
    assert cmr.get_log_filenames()[0].endswith("rmm.dev0.log")
