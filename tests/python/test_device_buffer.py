# SPDX-License-Identifier: Apache-2.0
"""cmr.DeviceBuffer on the host build (its memory is host memory there, so
ctypes can read it to check what the copies did)."""

import copy
import ctypes
import gc
import pickle
import weakref

import pytest

import cmr
from cmr import mr
from conftest import needs_gpu, needs_numpy, numpy



@pytest.fixture
def counted(host_mr):
    """A statistics adaptor over host memory: buffers over it must give everything back."""
    stats = mr.StatisticsResourceAdaptor(host_mr)
    yield stats
    gc.collect()
    assert stats.allocation_counts.current_bytes == 0


def test_a_sized_buffer(counted):
    buffer = cmr.DeviceBuffer(size=1000, mr=counted)
    assert buffer.size == buffer.nbytes == len(buffer) == 1000
    assert buffer.capacity() >= 1000
    assert buffer.ptr != 0
    assert buffer.mr is counted
    assert counted.allocation_counts.current_bytes == 1000
    del buffer
    assert counted.allocation_counts.current_bytes == 0


def test_an_empty_buffer_has_no_memory(counted):
    buffer = cmr.DeviceBuffer(mr=counted)
    assert (buffer.size, buffer.ptr, bytes(buffer)) == (0, 0, b"")
    assert counted.allocation_counts.total_count == 0


def test_the_default_resource_is_the_current_devices(counted):
    mr.set_current_device_resource(counted)
    buffer = cmr.DeviceBuffer(size=64)
    assert buffer.mr is counted
    assert counted.allocation_counts.current_count == 1


@needs_numpy
def test_contents_round_trip(counted):
    data = bytes(range(256)) * 4
    buffer = cmr.DeviceBuffer.to_device(data, mr=counted)
    assert buffer.size == len(data)
    assert ctypes.string_at(buffer.ptr, buffer.size) == data
    assert buffer.tobytes() == bytes(buffer) == data
    host = buffer.copy_to_host()
    assert isinstance(host, numpy.ndarray) and host.dtype == numpy.uint8
    assert host.tobytes() == data
    into = bytearray(len(data) + 10)
    assert buffer.copy_to_host(into) is into
    assert bytes(into[: len(data)]) == data and into[len(data):] == bytearray(10)


@needs_numpy
def test_copy_from_host_writes_the_start(counted):
    buffer = cmr.DeviceBuffer.to_device(b"\x00" * 16, mr=counted)
    buffer.copy_from_host(numpy.arange(4, dtype=numpy.uint8))
    assert buffer.tobytes() == bytes([0, 1, 2, 3]) + b"\x00" * 12
    buffer.copy_from_host(memoryview(b"zz"))
    assert buffer.tobytes()[:4] == b"zz\x02\x03"


def test_a_buffer_from_an_address_copies(counted):
    source = cmr.DeviceBuffer.to_device(b"abcdef", mr=counted)
    copied = cmr.DeviceBuffer(ptr=source.ptr, size=source.size, mr=counted)
    assert copied.ptr != source.ptr and copied.tobytes() == b"abcdef"
    source.copy_from_host(b"ZZZ")
    assert copied.tobytes() == b"abcdef"


def test_copy_pickle_and_copy_module(counted):
    buffer = cmr.DeviceBuffer.to_device(b"hello world", mr=counted)
    for twin in (buffer.copy(), copy.copy(buffer), copy.deepcopy(buffer)):
        assert twin.ptr != buffer.ptr and twin.tobytes() == b"hello world" and twin.mr is counted
    mr.set_current_device_resource(counted)
    loaded = pickle.loads(pickle.dumps(buffer))
    assert loaded.tobytes() == b"hello world" and loaded.ptr != buffer.ptr


def test_resize_and_reserve_keep_the_contents(counted):
    buffer = cmr.DeviceBuffer.to_device(b"0123456789", mr=counted)
    buffer.reserve(1000)
    assert buffer.capacity() >= 1000 and buffer.size == 10 and buffer.tobytes() == b"0123456789"
    buffer.resize(4)
    assert buffer.tobytes() == b"0123"
    buffer.resize("2KiB")
    assert buffer.size == 2048 and buffer.tobytes()[:4] == b"0123"


def test_the_cuda_array_interface(counted):
    buffer = cmr.DeviceBuffer.to_device(b"xyz", mr=counted)
    interface = buffer.__cuda_array_interface__
    assert interface == {"data": (buffer.ptr, False), "shape": (3,), "strides": None, "typestr": "|u1", "version": 0}


def test_copy_from_device_reads_another_buffer(counted):
    source = cmr.DeviceBuffer.to_device(b"device!", mr=counted)
    target = cmr.DeviceBuffer(size=10, mr=counted)
    target.copy_from_device(source)
    assert target.tobytes()[:7] == b"device!"


class _Array:
    """A stand-in for a device array, exposing an interface as given."""

    def __init__(self, **interface):
        self.__cuda_array_interface__ = interface


def test_copy_from_device_checks_the_array(counted):
    source = cmr.DeviceBuffer.to_device(bytes(64), mr=counted)
    target = cmr.DeviceBuffer(size=32, mr=counted)
    strided = _Array(data=(source.ptr, False), shape=(4, 4), strides=(4, 16), typestr="<f4", version=3)
    with pytest.raises(ValueError, match="not C-contiguous"):
        target.copy_from_device(strided)
    too_big = _Array(data=(source.ptr, False), shape=(16,), strides=None, typestr="<f4", version=3)
    with pytest.raises(ValueError, match="exceed the buffer's size"):
        target.copy_from_device(too_big)
    fitting = _Array(data=(source.ptr, False), shape=(2, 4), strides=(16, 4), typestr="<f4", version=3)
    target.copy_from_device(fitting)
    with pytest.raises(TypeError, match="no __cuda_array_interface__"):
        target.copy_from_device(b"host bytes")


def test_bad_inputs(counted):
    with pytest.raises(TypeError):
        cmr.DeviceBuffer(size=1.5, mr=counted)
    with pytest.raises(ValueError):
        cmr.DeviceBuffer(size=-1, mr=counted)
    with pytest.raises(TypeError):
        cmr.DeviceBuffer(size=10, mr="not a resource")
    with pytest.raises(TypeError):
        cmr.DeviceBuffer(size=10, stream=None, mr=counted)
    buffer = cmr.DeviceBuffer(size=4, mr=counted)
    with pytest.raises(ValueError, match="exceed the buffer's size"):
        buffer.copy_from_host(b"too long")
    with pytest.raises(ValueError, match="fewer than"):
        buffer.copy_to_host(bytearray(2))
    with pytest.raises(TypeError):
        buffer.copy_to_host(b"read-only")
    with pytest.raises(TypeError):
        buffer.copy_from_host(12)
    with pytest.raises(ValueError):
        buffer.prefetch(device=-5)
    with pytest.raises(ValueError, match="CMR_ERROR_UNKNOWN_DEVICE"):
        buffer.prefetch(device=cmr._capi.cmr_device_count())
    buffer.prefetch()  # host memory stays where it is
    assert buffer.size == 4


def test_out_of_memory_is_memory_error(host_mr):
    limited = mr.LimitingResourceAdaptor(host_mr, 1000)
    with pytest.raises(MemoryError):
        cmr.DeviceBuffer(size=5000, mr=limited)


def test_a_buffer_keeps_its_resource(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    watch = weakref.ref(stats)
    buffer = cmr.DeviceBuffer.to_device(b"kept", mr=stats)
    del stats
    gc.collect()
    assert watch() is not None
    assert buffer.tobytes() == b"kept"
    del buffer
    gc.collect()
    assert watch() is None


def test_replacing_the_current_resource_while_buffers_live(host_mr):
    first = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(first)
    buffer = cmr.DeviceBuffer.to_device(b"from the first")
    mr.set_current_device_resource(mr.StatisticsResourceAdaptor(host_mr))
    del first
    gc.collect()
    assert buffer.tobytes() == b"from the first"
    assert buffer.mr.allocation_counts.current_count == 1
    del buffer


def test_cycles_holding_buffers_and_resources_are_collected(host_mr):
    class Holder:
        pass

    calls = []
    callback = mr.CallbackMemoryResource(lambda n, s: calls.append(n) or host_mr.allocate(n, s),
                                         lambda p, n, s: host_mr.deallocate(p, n, s))
    holder = Holder()
    holder.buffer = cmr.DeviceBuffer.to_device(b"cycle", mr=callback)
    holder.mr = callback
    holder.self = holder
    callback.holder = holder  # resource -> holder -> buffer -> resource
    watch = weakref.ref(holder)
    del holder, callback
    gc.collect()
    assert watch() is None
    assert calls == [5]


@needs_gpu
def test_cupy_reads_a_buffer_through_its_array_interface():
    cupy = pytest.importorskip("cupy")
    buffer = cmr.DeviceBuffer.to_device(bytes(range(10)))
    array = cupy.asarray(buffer)
    assert array.dtype == cupy.uint8 and array.shape == (10,)
    assert cupy.asnumpy(array).tobytes() == bytes(range(10))


@needs_gpu
def test_managed_memory_prefetches():
    buffer = cmr.DeviceBuffer(size=1 << 20, mr=mr.ManagedMemoryResource())
    buffer.prefetch()
    buffer.prefetch(device=0, stream=cmr.DEFAULT_STREAM)
    assert buffer.size == 1 << 20


def test_simulated_memory_is_never_copied():
    """simulated hands out addresses with no bytes behind them: a buffer over it
    can be made and freed, but every copy raises (it would fault), and a
    refused resize leaves the buffer as it was."""
    simulated = mr.SimulatedMemoryResource(capacity="1GiB")
    buffer = cmr.DeviceBuffer(size=64, mr=simulated)
    for copy_out in (buffer.tobytes, lambda: buffer.copy_to_host(bytearray(64))):
        with pytest.raises(ValueError, match="simulated"):
            copy_out()
    with pytest.raises(ValueError, match="simulated"):
        buffer.copy_from_host(bytes(64))
    ptr = buffer.ptr
    with pytest.raises(ValueError, match="simulated"):
        buffer.resize(1 << 20)
    assert (buffer.size, buffer.ptr) == (64, ptr)
    with pytest.raises(ValueError, match="simulated"):
        cmr.DeviceBuffer.to_device(bytes(64), mr=simulated)
    del buffer
    gc.collect()
    assert simulated.bytes_in_use() == 0
