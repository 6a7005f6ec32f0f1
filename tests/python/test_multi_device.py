# SPDX-License-Identifier: Apache-2.0
"""Two devices in one process: reinitialize over a list of devices, device
1's resource set while device 0 is current, a DeviceBuffer of device 1 used
and freed from device 0, and the CuPy and PyTorch allocators on device 1.
ctest runs this file with CMR_HOST_DEVICE_COUNT=3, so the host build runs
it on simulated devices; with fewer than two devices it is skipped."""

import pytest

import cmr
from cmr import _capi as capi, mr

from conftest import CUDA_BUILD, GPU


def _device_count() -> int:
    if CUDA_BUILD and not GPU:
        return 0
    return capi.cmr_device_count()


pytestmark = pytest.mark.skipif(_device_count() < 2, reason="needs two devices")


@pytest.fixture(autouse=True)
def on_device_0():
    """Each test starts and ends with device 0 current and both entries reset."""
    capi.cmr_set_current_device(0)
    yield
    capi.cmr_set_current_device(0)
    for device in (0, 1):
        capi.cmr_reset_per_device_resource_ref(device)
    cmr._per_device._per_device_mrs.clear()


def _made_on(device, make):
    capi.cmr_set_current_device(device)
    try:
        return make()
    finally:
        capi.cmr_set_current_device(0)


def _base():
    return mr.CudaMemoryResource() if CUDA_BUILD else mr.SystemMemoryResource()


def test_reinitialize_makes_each_devices_resource_on_it():
    cmr.reinitialize(pool_allocator=True, initial_pool_size=1 << 20, devices=[0, 1])
    assert capi.cmr_current_device() == 0
    first, second = mr.get_per_device_resource(0), mr.get_per_device_resource(1)
    assert isinstance(first, mr.PoolMemoryResource) and isinstance(second, mr.PoolMemoryResource)
    assert first is not second
    assert mr.get_current_device_resource() is first
    buffer = cmr.DeviceBuffer(size=1000, mr=second)  # device 1's pool, from device 0
    assert buffer.size == 1000
    del buffer
    assert capi.cmr_current_device() == 0


def test_device_1s_resource_is_set_while_device_0_is_current():
    stats = _made_on(1, lambda: mr.StatisticsResourceAdaptor(_base()))
    mr.set_per_device_resource(1, stats)
    assert mr.get_per_device_resource(1) is stats
    assert mr.get_current_device_resource() is not stats
    capi.cmr_set_current_device(1)
    assert mr.get_current_device_resource() is stats


def test_a_buffer_of_device_1_is_used_and_freed_from_device_0():
    stats = _made_on(1, lambda: mr.StatisticsResourceAdaptor(_base()))
    payload = bytes(range(256)) * 16
    buffer = _made_on(1, lambda: cmr.DeviceBuffer.to_device(payload, mr=stats))
    buffer.resize(2 * len(payload))
    assert buffer.tobytes()[: len(payload)] == payload
    assert stats.allocation_counts.current_bytes >= 2 * len(payload)
    del buffer
    assert stats.allocation_counts.current_bytes == 0
    assert capi.cmr_current_device() == 0


@pytest.mark.skipif(not GPU, reason="needs a GPU")
def test_the_cupy_allocator_on_device_1():
    cupy = pytest.importorskip("cupy")
    from cmr.allocators.cupy import cmr_cupy_allocator
    stats = _made_on(1, lambda: mr.StatisticsResourceAdaptor(mr.CudaMemoryResource()))
    mr.set_per_device_resource(1, stats)
    cupy.cuda.set_allocator(cmr_cupy_allocator)
    try:
        with cupy.cuda.Device(1):
            array = cupy.arange(1000, dtype=cupy.float64)
            assert array.data.device_id == 1
            assert cupy.cuda.runtime.pointerGetAttributes(array.data.ptr).device == 1
            assert stats.allocation_counts.current_bytes >= 8000
            assert float(array.sum()) == 499500.0
            del array
    finally:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)


@pytest.mark.skipif(not GPU, reason="needs a GPU")
def test_the_torch_allocator_on_device_1():
    torch = pytest.importorskip("torch")
    from cmr.allocators.torch import cmr_torch_allocator
    stats = _made_on(1, lambda: mr.StatisticsResourceAdaptor(mr.CudaMemoryResource()))
    mr.set_per_device_resource(1, stats)
    torch.cuda.memory.change_current_allocator(cmr_torch_allocator)  # once per process, before any tensor
    tensor = torch.ones(1 << 20, dtype=torch.uint8, device="cuda:1")
    assert tensor.device.index == 1
    assert stats.allocation_counts.current_bytes >= 1 << 20
    assert int(tensor.sum()) == 1 << 20
