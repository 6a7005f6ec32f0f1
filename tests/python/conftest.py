# SPDX-License-Identifier: Apache-2.0
"""Shared by the pytest suites: which build this is, and the GPU check."""

import ctypes

import pytest

import cmr
from cmr import capi
from cmr.allocators._library import library_path

CUDA_BUILD = capi.cmr_built_with_cuda()


def _gpu_present() -> bool:
    if not CUDA_BUILD:
        return False
    try:
        return capi.cmr_device_count() > 0
    except RuntimeError as error:  # no driver (cudaErrorInsufficientDriver) or no device (cudaErrorNoDevice)
        if "CMR_ERROR_NO_DEVICE" in str(error):
            return False
        raise


GPU = _gpu_present()



def pytest_collection_modifyitems(config, items):
    """A CUDA build without a GPU has neither the device table nor the copies
    the suites use: it runs none of them (pytest then exits 5, which ctest
    counts as skipped); the host build runs them all on host memory."""
    if CUDA_BUILD and not GPU:
        items.clear()
needs_gpu = pytest.mark.skipif(not GPU, reason="needs a CUDA build and a GPU")


def made_or_skip(factory):
    """The resource `factory` makes, or a skip where this device lacks what it
    needs (as the C battery skips on CMR_ERROR_UNSUPPORTED: e.g. sam_headroom
    without pageable memory access). The generated resource tests use it."""
    try:
        return factory()
    except RuntimeError as error:
        if CUDA_BUILD and "CMR_ERROR_UNSUPPORTED" in str(error):
            pytest.skip(f"this device cannot make it: {error}")
        raise


def exercise_resource(resource):
    """Allocates and frees a few sizes through the resource's ref (the
    generated resource tests)."""
    for nbytes in (1, 1000, 4096, 100_000):
        ptr = resource.allocate(nbytes)
        assert ptr != 0 and ptr % 256 == 0
        resource.deallocate(ptr, nbytes)
    assert resource.allocate(0) == 0


@pytest.fixture
def host_mr():
    """A resource every build has: host memory."""
    return cmr.mr.SystemMemoryResource()


@pytest.fixture(autouse=True)
def restore_device_resource():
    """Every test leaves the per-device table as it found it."""
    yield
    capi.cmr_reset_current_device_resource_ref()
    cmr._per_device._per_device_mrs.clear()


def pluggable_library() -> ctypes.CDLL:
    """libcmr through ctypes with the pluggable entry points' signatures, as
    PyTorch calls them (ctypes lets the GIL go around each call)."""
    library = ctypes.CDLL(library_path())
    library.cmr_pluggable_allocate.restype = ctypes.c_void_p
    library.cmr_pluggable_allocate.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    library.cmr_pluggable_deallocate.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    return library
