# SPDX-License-Identifier: Apache-2.0
"""Behaviours where cmr follows RMM 26.08's Python package to the detail
(RMM's own tests match on them): the array interface's keys, the host
buffers DeviceBuffer takes, pickling out of band, a failure callback's own
exception, RMM's error wording, Stream's flags and the stream protocol's
version; and DeviceBuffer's explicit alignment (RMM's device_buffer)."""

import array
import gc
import pickle

import pytest

import cmr
from cmr import mr
from cmr.pylibrmm import device_buffer as pylibrmm_device_buffer
from cmr.pylibrmm.stream import CudaStreamFlags
from conftest import needs_numpy, numpy



@pytest.fixture
def counted(host_mr):
    """A statistics adaptor over host memory, made current: what is made on it must all come back."""
    stats = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(stats)
    yield stats
    gc.collect()
    assert stats.allocation_counts.current_bytes == 0


# ---- __cuda_array_interface__ ------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 5])
def test_the_array_interface_has_exactly_rmms_keys(counted, size):
    buffer = cmr.DeviceBuffer(size=size)
    interface = buffer.__cuda_array_interface__
    assert set(interface) == {"data", "shape", "strides", "typestr", "version"}
    assert interface["data"] == (buffer.ptr, False)
    assert interface["shape"] == (size,)
    assert interface["strides"] is None
    assert interface["typestr"] == "|u1"
    assert interface["version"] == 0


# ---- host buffers: RMM's const unsigned char[::1] ------------------------------------------


def _host_buffers():
    """(object, what RMM does with it): "ok", ValueError or TypeError."""
    cases = [
        (b"abc", "ok"), (bytearray(b"abc"), "ok"), (memoryview(b"abc"), "ok"), (b"", "ok"),
        (memoryview(bytearray(b"abcd"))[1:3], "ok"),
        (memoryview(b"abcdef")[::2], ValueError),                     # a stride of 2
        (memoryview(b"abcd").cast("B", (2, 2)), ValueError),          # two dimensions
        (memoryview(array.array("H", [1, 2])), ValueError),           # format H
        (memoryview(b"abcd").cast("c"), ValueError),                  # format c: not unsigned bytes
        (array.array("b", [1, 2]), ValueError),                       # format b: signed bytes
        (None, TypeError), ("abc", TypeError), (123, TypeError), (object(), TypeError),
    ]
    if numpy is not None:
        cases += [
            (numpy.asarray(memoryview(b"abc")), "ok"), (numpy.arange(3, dtype="u1"), "ok"),
            (numpy.ones((2,), "u2"), ValueError), (numpy.ones((2, 2), "u1"), ValueError),
            (numpy.ones(4, "u1")[::2], ValueError), (numpy.ones(4, "i1"), ValueError),
        ]
    return cases


@pytest.mark.parametrize("host, expected", _host_buffers())
def test_to_device_takes_what_rmm_takes(counted, host, expected):
    for to_device in (cmr.DeviceBuffer.to_device, pylibrmm_device_buffer.to_device):
        if expected == "ok":
            buffer = to_device(host)
            assert buffer.tobytes() == bytes(memoryview(host)) and bytes(buffer) == bytes(memoryview(host))
            del buffer
        else:
            with pytest.raises(expected):
                to_device(host)
    assert counted.allocation_counts.current_bytes == 0  # a refused one allocated nothing it kept


@pytest.mark.parametrize("host, expected", _host_buffers())
def test_every_host_copy_takes_what_rmm_takes(counted, host, expected):
    buffer = cmr.DeviceBuffer.to_device(b"\x00" * 8)
    copies = [buffer.copy_from_host, lambda h: pylibrmm_device_buffer.copy_host_to_ptr(h, buffer.ptr)]
    for copy in copies:
        if expected == "ok":
            copy(host)
            assert buffer.tobytes()[:len(bytes(memoryview(host)))] == bytes(memoryview(host))
        else:
            with pytest.raises(expected):
                copy(host)


@pytest.mark.parametrize("destination, expected", [
    (bytearray(3), "ok"), (memoryview(bytearray(3)), "ok"),
    (memoryview(bytearray(6))[::2], ValueError), (memoryview(bytearray(4)).cast("B", (2, 2)), ValueError),
    (array.array("H", [0, 0]), ValueError), (array.array("b", [0, 0, 0]), ValueError),
    (b"abc", TypeError), ("abc", TypeError), (42, TypeError),
])
def test_every_copy_to_host_takes_what_rmm_takes(counted, destination, expected):
    buffer = cmr.DeviceBuffer.to_device(b"xyz")
    copies = [lambda d: buffer.copy_to_host(d),
              lambda d: pylibrmm_device_buffer.copy_ptr_to_host(buffer.ptr, d)]
    for copy in copies:
        if expected == "ok":
            copy(destination)
            assert bytes(memoryview(destination)) == b"xyz"
        else:
            with pytest.raises(expected):
                copy(destination)


# ---- pickling ----------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"123", bytes(range(256)) * 3])
def test_pickle_protocol_5_hands_the_bytes_out_of_band(counted, data):
    buffer = cmr.DeviceBuffer.to_device(data)
    buffers = []
    pickled = pickle.dumps(buffer, protocol=5, buffer_callback=buffers.append)
    del buffer
    assert len(buffers) == 1 and isinstance(buffers[0], pickle.PickleBuffer)
    assert bytes(buffers[0]) == data
    assert data == b"" or data not in pickled  # out of band: not in the pickle itself
    loaded = pickle.loads(pickled, buffers=buffers)
    assert isinstance(loaded, cmr.DeviceBuffer) and loaded.tobytes() == data
    assert loaded.mr is counted  # onto the current device resource


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_every_protocol_pickles_in_band_without_a_callback(counted, protocol):
    data = b"in band \x00\xff"
    pickled = pickle.dumps(cmr.DeviceBuffer.to_device(data), protocol=protocol)
    assert pickle.loads(pickled).tobytes() == data


def test_below_protocol_5_a_callback_gets_nothing(counted):
    buffers = []
    with pytest.raises(ValueError):  # pickle itself: a buffer_callback needs protocol 5
        pickle.dumps(cmr.DeviceBuffer.to_device(b"abc"), protocol=4, buffer_callback=buffers.append)
    pickled = pickle.dumps(cmr.DeviceBuffer.to_device(b"abc"), protocol=4)
    assert b"abc" in pickled and pickle.loads(pickled).tobytes() == b"abc"


# ---- the failure callback's own exception ------------------------------------------------------


def test_a_failure_callbacks_exception_reaches_the_caller_over_the_upstreams_memory_error():
    def callback(nbytes):
        raise RuntimeError("MyError")

    def allocate(size, stream):
        raise MemoryError("Intentional allocation failure")

    failing = mr.CallbackMemoryResource(allocate, lambda ptr, size, stream: None)
    adaptor = mr.FailureCallbackResourceAdaptor(failing, callback)
    mr.set_current_device_resource(adaptor)
    with pytest.raises(RuntimeError, match="MyError") as caught:
        cmr.DeviceBuffer(size=256)
    assert type(caught.value) is RuntimeError and str(caught.value) == "MyError"  # unchanged
    assert isinstance(caught.value.__context__, MemoryError)  # what it was called for
    with pytest.raises(RuntimeError, match="MyError"):
        adaptor.allocate(256)


class _FailingFirst:
    """A callback resource's functions over host memory whose first `failures` allocations raise MemoryError."""

    def __init__(self, host_mr, failures):
        self.host_mr, self.failures, self.calls = host_mr, failures, 0

    def allocate(self, size, stream):
        self.calls += 1
        if self.calls <= self.failures:
            raise MemoryError(f"failure {self.calls}")
        return self.host_mr.allocate(size)  # a cmr call inside a callback

    def deallocate(self, ptr, size, stream):
        self.host_mr.deallocate(ptr, size)


def test_a_retry_after_the_upstreams_memory_error_succeeds_cleanly(host_mr):
    upstream = _FailingFirst(host_mr, failures=2)
    asked = []

    def callback(nbytes):
        asked.append(nbytes)
        freed = cmr.DeviceBuffer(size=64, mr=host_mr)  # cmr calls inside the callback see nothing pending
        del freed
        return len(asked) < 5  # a bound, should the retries fail for good

    adaptor = mr.FailureCallbackResourceAdaptor(
        mr.CallbackMemoryResource(upstream.allocate, upstream.deallocate), callback)
    buffer = cmr.DeviceBuffer(size=256, mr=adaptor)  # fails twice, retried twice, then served
    assert buffer.size == 256 and asked == [256, 256] and upstream.calls == 3
    del buffer


def test_no_retry_lets_the_upstreams_memory_error_stand(host_mr):
    upstream = _FailingFirst(host_mr, failures=1)
    adaptor = mr.FailureCallbackResourceAdaptor(
        mr.CallbackMemoryResource(upstream.allocate, upstream.deallocate), lambda nbytes: False)
    with pytest.raises(MemoryError, match="failure 1"):
        cmr.DeviceBuffer(size=256, mr=adaptor)
    assert cmr.DeviceBuffer(size=8, mr=host_mr).size == 8  # nothing left pending for the next call


def test_a_failure_callbacks_exception_of_any_type_is_unchanged(host_mr):
    class Mine(Exception):
        pass

    def callback(nbytes):
        raise Mine(f"no {nbytes} bytes")

    adaptor = mr.FailureCallbackResourceAdaptor(mr.LimitingResourceAdaptor(host_mr, 1000), callback)
    with pytest.raises(Mine, match="no 5000 bytes"):
        cmr.DeviceBuffer(size=5000, mr=adaptor)
    with pytest.raises(Mine):
        adaptor.allocate(5000)
    assert cmr.DeviceBuffer(size=10, mr=adaptor).size == 10  # and the adaptor goes on working


# ---- RMM's wording -------------------------------------------------------------------------


def test_initial_above_maximum_says_it_in_rmms_words():
    with pytest.raises(RuntimeError) as caught:
        cmr.reinitialize(pool_allocator=True, initial_pool_size=1 << 11, maximum_pool_size=1 << 10)
    assert "Initial pool size exceeds the maximum pool size" in str(caught.value)
    assert "initial_pool_size 2048 is larger than maximum_pool_size 1024" in str(caught.value)  # cmr's details
    with pytest.raises(ValueError, match="Initial pool size exceeds the maximum pool size"):
        mr.PoolMemoryResource(mr.SystemMemoryResource(), 1 << 11, 1 << 10)


def test_an_unparseable_size_says_it_in_rmms_words():
    with pytest.raises(ValueError) as caught:
        cmr.reinitialize(pool_allocator=True, initial_pool_size="2k", maximum_pool_size="8k")
    assert "Could not parse" in str(caught.value) and '"2k"' in str(caught.value)
    assert "not a unit" in str(caught.value)  # cmr's reason after RMM's words
    for text in ("2k", "", "abc", "1.", "1 "):
        with pytest.raises(ValueError, match="Could not parse"):
            cmr.parse_bytes(text)
    with pytest.raises(ValueError, match="Could not parse"):
        cmr.parse_bytes("1\0KiB")
    cmr.reinitialize(pool_allocator=True, initial_pool_size="2kib", maximum_pool_size="8kib")


# ---- Stream(obj=None, flags=None) ------------------------------------------------------------


def test_a_new_stream_takes_its_flags():
    for flags in (None, CudaStreamFlags.SYNC_DEFAULT, CudaStreamFlags.NON_BLOCKING, 1):
        stream = cmr.Stream(flags=flags)
        assert int(stream) != 0 and not stream.is_default()
        stream.synchronize()
        assert cmr.DeviceBuffer(size=8, stream=stream, mr=mr.SystemMemoryResource()).size == 8
    assert cmr.Stream(None, CudaStreamFlags.NON_BLOCKING) != cmr.Stream(None, CudaStreamFlags.NON_BLOCKING)
    assert CudaStreamFlags is cmr.pylibrmm.CudaStreamFlags
    with pytest.raises(ValueError):
        cmr.Stream(flags=7)
    with pytest.raises(TypeError):
        cmr.Stream(flags="NON_BLOCKING")


def test_flags_with_an_existing_stream_are_a_value_error():
    with pytest.raises(ValueError, match="flags may only be specified when obj is None"):
        cmr.Stream(cmr.Stream(), flags=CudaStreamFlags.NON_BLOCKING)
    with pytest.raises(ValueError, match="flags may only be specified when obj is None"):
        cmr.Stream(0, CudaStreamFlags.SYNC_DEFAULT)


class _ProtocolStream:
    def __init__(self, version, handle=0):
        self.version, self.handle = version, handle

    def __cuda_stream__(self):
        return (self.version, self.handle)


@pytest.mark.parametrize("version", [1, 2, -1])
def test_a_stream_protocol_other_than_version_0_is_not_implemented(host_mr, version):
    with pytest.raises(NotImplementedError, match=f"version: '{version}'"):
        cmr.Stream(_ProtocolStream(version))
    with pytest.raises(NotImplementedError, match=f"version: '{version}'"):
        cmr.DeviceBuffer(size=8, stream=_ProtocolStream(version), mr=host_mr)
    with pytest.raises(NotImplementedError, match=f"version: '{version}'"):
        host_mr.allocate(8, _ProtocolStream(version))
    assert int(cmr.Stream(_ProtocolStream(0, 2))) == 2


# ---- DeviceBuffer(..., alignment=...) ------------------------------------------------------------


@pytest.mark.parametrize("alignment", [256, 512, 4096, 1 << 16])
def test_a_buffer_is_aligned_as_asked_through_every_reallocation(counted, alignment):
    buffer = cmr.DeviceBuffer(size=100, alignment=alignment)
    assert buffer.alignment == alignment and buffer.ptr % alignment == 0
    buffer.copy_from_host(b"kept")
    buffer.reserve(10_000)
    assert buffer.ptr % alignment == 0 and buffer.tobytes()[:4] == b"kept"
    buffer.resize(50_000)
    assert buffer.ptr % alignment == 0 and buffer.alignment == alignment
    twin = buffer.copy()
    assert twin.alignment == alignment and twin.ptr % alignment == 0 and twin.tobytes()[:4] == b"kept"
    copied = cmr.DeviceBuffer(ptr=buffer.ptr, size=4, alignment=alignment)
    assert copied.ptr % alignment == 0 and copied.tobytes() == b"kept"


def test_the_default_alignment_is_256(counted):
    assert cmr.DeviceBuffer(size=10).alignment == 256
    assert cmr.DeviceBuffer(size=10, alignment=16).alignment == 256  # at least the default, as RMM's


def test_a_bad_alignment_is_refused(counted):
    for alignment in (0, 3, 1000):
        with pytest.raises(ValueError, match="CMR_ERROR_BAD_ALIGNMENT"):
            cmr.DeviceBuffer(size=10, alignment=alignment)
    with pytest.raises(TypeError):
        cmr.DeviceBuffer(size=10, alignment=256.0)
    with pytest.raises(ValueError):
        cmr.DeviceBuffer(size=10, alignment=-256)
    assert counted.allocation_counts.total_count == 0


def test_an_alignment_the_resource_cannot_honour_is_refused(host_mr):
    class Misaligned:
        """A callback resource that hands out 256-aligned memory only."""
        def __init__(self):
            self.live = {}

        def allocate(self, size, stream):
            ptr = host_mr.allocate(size + 512)
            self.live[ptr + 256 if ptr % 512 == 0 else ptr] = ptr
            return ptr + 256 if ptr % 512 == 0 else ptr

        def deallocate(self, ptr, size, stream):
            host_mr.deallocate(self.live.pop(ptr), size + 512)

    misaligned = Misaligned()
    callback = mr.CallbackMemoryResource(misaligned.allocate, misaligned.deallocate)
    with pytest.raises(ValueError, match="CMR_ERROR_UNSUPPORTED_ALIGNMENT"):
        cmr.DeviceBuffer(size=64, alignment=512, mr=callback)
    assert misaligned.live == {}
