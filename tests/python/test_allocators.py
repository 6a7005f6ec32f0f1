# SPDX-License-Identifier: Apache-2.0
"""cmr.allocators: what runs without the libraries (the library lookup and
the pluggable entry points, called through ctypes as PyTorch calls them),
and the real interop on a GPU machine with CuPy, Numba and PyTorch."""

import ctypes
import importlib

import pytest

import cmr
from cmr import _capi as capi, mr
from cmr.allocators._library import library_path
from conftest import needs_gpu, pluggable_library


def test_the_library_is_the_one_this_process_loaded():
    path = library_path()
    assert "libcmr.so" in path
    library = ctypes.CDLL(path)
    library.cmr_version.restype = ctypes.c_char_p
    assert library.cmr_version().decode() == capi.cmr_version()


def test_the_pluggable_entry_points_allocate_from_the_current_resource(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(stats)
    library = pluggable_library()
    ptr = library.cmr_pluggable_allocate(5000, 0, None)
    assert ptr and stats.allocation_counts.current_bytes == 5000
    library.cmr_pluggable_deallocate(ptr, 5000, 0, None)
    assert stats.allocation_counts.current_bytes == 0 and stats.allocation_counts.total_count == 1


def _installed(library: str) -> bool:
    try:
        importlib.import_module(library)
    except ImportError:
        return False
    return True


def test_the_cupy_allocator_imports_without_cupy_and_says_so_when_called():
    """As RMM's: the module imports; the allocator raises ModuleNotFoundError."""
    if _installed("cupy"):
        pytest.skip("cupy is installed: the allocator is tested below on a GPU")
    from cmr.allocators import cupy as allocator
    assert allocator.rmm_cupy_allocator is allocator.cmr_cupy_allocator
    with pytest.raises(ModuleNotFoundError, match="No module named 'cupy'"):
        allocator.rmm_cupy_allocator(256)


def test_the_torch_allocator_is_none_without_torch():
    """As RMM's: the module imports, and rmm_torch_allocator is None."""
    if _installed("torch"):
        pytest.skip("torch is installed: the allocator is tested below on a GPU")
    from cmr.allocators import torch as allocator
    assert allocator.rmm_torch_allocator is None and allocator.cmr_torch_allocator is None


def test_the_numba_allocator_needs_numba():
    """As RMM's, the module imports Numba itself."""
    if _installed("numba.cuda"):
        pytest.skip("numba.cuda is installed: the allocator is tested below on a GPU")
    with pytest.raises(ImportError, match="cmr.allocators.numba needs"):
        importlib.import_module("cmr.allocators.numba")


@pytest.fixture
def counted_current():
    stats = mr.StatisticsResourceAdaptor(mr.get_current_device_resource())
    mr.set_current_device_resource(stats)
    return stats


@needs_gpu
def test_a_cupy_array_through_cmr(counted_current):
    cupy = pytest.importorskip("cupy")
    import cmr.allocators.cupy
    importlib.reload(cmr.allocators.cupy)  # set up over the real CuPy (another suite may have used a stand-in)
    from cmr.allocators.cupy import rmm_cupy_allocator as cmr_cupy_allocator  # RMM's spelling
    # The CuPy installed here is one whose UnownedMemory and MemoryPointer the allocator learned to make
    # directly (python/swig/cupy_objects.swg); another CuPy's classes may be called instead, as correctly.
    assert capi.cmr_py_cupy_makes_objects_directly()
    cupy.cuda.set_allocator(cmr_cupy_allocator)
    try:
        array = cupy.arange(1000, dtype=cupy.float64)
        assert counted_current.allocation_counts.current_bytes >= 8000
        assert float(array.sum()) == 499500.0
        memory = array.data.mem
        assert type(memory) is cupy.cuda.memory.UnownedMemory and isinstance(memory._owner, cmr.DeviceBuffer)
        assert (memory.ptr, memory.size, memory.device_id) == (memory._owner.ptr, 8000, cupy.cuda.Device().id)
        del array, memory
    finally:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)


@needs_gpu
def test_a_numba_kernel_writes_a_device_buffer(counted_current, monkeypatch):
    numba_cuda = pytest.importorskip("numba.cuda")
    import numpy
    # The first compile of the numba-cuda on the GPU machine registers an overload of np.row_stack,
    # which NumPy 2.5 removed (seen on the GPU machine: numba-cuda cannot
    # compile any kernel there without it). It was an alias of vstack.
    if not hasattr(numpy, "row_stack"):
        monkeypatch.setattr(numpy, "row_stack", numpy.vstack, raising=False)
    buffer = cmr.DeviceBuffer(size=256)
    array = numba_cuda.as_cuda_array(buffer)

    @numba_cuda.jit
    def fill(out):
        i = numba_cuda.grid(1)
        if i < out.size:
            out[i] = i

    fill[1, 256](array)
    numba_cuda.synchronize()
    assert buffer.tobytes() == bytes(range(256))


@needs_gpu
def test_numba_allocates_through_the_plugin(counted_current):
    numba_cuda = pytest.importorskip("numba.cuda")
    from cmr.allocators.numba import CmrNumbaManager, RMMNumbaManager
    assert RMMNumbaManager is CmrNumbaManager
    numba_cuda.set_memory_manager(CmrNumbaManager)
    numba_cuda.close()  # the next context uses the plugin
    try:
        array = numba_cuda.device_array(1000, dtype="uint8")
        assert counted_current.allocation_counts.current_bytes >= 1000
        del array
    finally:
        from numba.cuda.cudadrv.driver import NumbaCUDAMemoryManager
        numba_cuda.set_memory_manager(NumbaCUDAMemoryManager)
        numba_cuda.close()


@needs_gpu
def test_a_torch_tensor_through_the_pluggable_allocator(counted_current):
    torch = pytest.importorskip("torch")
    from cmr.allocators.torch import cmr_torch_allocator, rmm_torch_allocator
    assert rmm_torch_allocator is cmr_torch_allocator
    torch.cuda.memory.change_current_allocator(cmr_torch_allocator)  # once per process, before any tensor
    tensor = torch.ones(1 << 20, dtype=torch.uint8, device="cuda")
    assert counted_current.allocation_counts.current_bytes >= 1 << 20
    assert int(tensor.sum()) == 1 << 20
