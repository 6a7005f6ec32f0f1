# SPDX-License-Identifier: Apache-2.0
"""Shared by the pytest suites: which build this is, the GPU check, and
the helpers and fixtures several suites use."""

import ctypes
import importlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

import cmr
from cmr import _capi as capi
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

# The name of the distribution a wheel of this build installs (setup.py): cmr-cu13 for CUDA 13.
DISTRIBUTION_NAME = r"cmr-cu\d+" if CUDA_BUILD else "cmr-host"


def installed_distribution():
    """The distribution whose files hold this very cmr package (a wheel or
    pip install .), or None where cmr runs from a build tree."""
    import importlib.metadata
    here = pathlib.Path(cmr.__file__).resolve()
    for name in importlib.metadata.packages_distributions().get("cmr", []):
        distribution = importlib.metadata.distribution(name)
        if pathlib.Path(distribution.locate_file("cmr/__init__.py")).resolve() == here:
            return distribution
    return None



def pytest_collection_modifyitems(config, items):
    """A CUDA build without a GPU has neither the device table nor the copies
    the suites use: it runs none of them (pytest then exits 5, which ctest
    counts as skipped); the host build runs them all on host memory."""
    if CUDA_BUILD and not GPU:
        items.clear()
needs_gpu = pytest.mark.skipif(not GPU, reason="needs a CUDA build and a GPU")

try:  # an optional dependency of cmr (copy_to_host's default result)
    import numpy
except ImportError:
    numpy = None
needs_numpy = pytest.mark.skipif(numpy is None, reason="needs numpy, which this interpreter lacks")


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


def cython_extension(pyx: pathlib.Path, build: pathlib.Path, link_cmr: bool):
    """The module of `pyx`, built into `build` with Debian's cython3 and the
    C compiler (with cmr's headers and library where `link_cmr`), or a skip
    where there is no cython3."""
    cython = shutil.which("cython3") or shutil.which("cython")
    if cython is None:
        pytest.skip("no cython3 here (Debian: apt-get install cython3)")
    package_parent = pathlib.Path(cmr.__file__).resolve().parent.parent
    c_file = build / f"{pyx.stem}.c"
    subprocess.run([cython, "-3", "-I", str(package_parent), str(pyx), "-o", str(c_file)], check=True)
    command = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", f"-I{sysconfig.get_paths()['include']}",
               str(c_file), "-o", str(build / f"{pyx.stem}{sysconfig.get_config_var('EXT_SUFFIX')}")]
    if link_cmr:
        from cmr import libcmr
        library_dir = libcmr.get_library_dir()
        # The library by its path: a wheel holds libcmr.so.N, not the libcmr.so that -lcmr looks for.
        library = min(name for name in os.listdir(library_dir) if name.startswith("libcmr.so"))
        command += [f"-I{libcmr.get_include()}", os.path.join(library_dir, library), f"-Wl,-rpath,{library_dir}"]
    subprocess.run(command, check=True)
    sys.path.insert(0, str(build))
    try:
        return importlib.import_module(pyx.stem)
    finally:
        sys.path.remove(str(build))
