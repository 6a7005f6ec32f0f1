# SPDX-License-Identifier: Apache-2.0
"""cmr.libcmr: the .pxd declarations shipped with the package, used by a real
Cython extension (built here with Debian's cython3 and the C compiler) that
allocates through a Python resource's ref and reads a DeviceBuffer's C
handle (skipped where there is no cython3)."""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

import cmr
import cmr.libcmr
from cmr import mr

PACKAGE_PARENT = pathlib.Path(cmr.__file__).resolve().parent.parent
PROBE = pathlib.Path(__file__).parent / "cython" / "cmr_cython_probe.pyx"


def _cython():
    return shutil.which("cython3") or shutil.which("cython")


def test_the_package_ships_the_declarations_and_headers():
    libcmr = pathlib.Path(cmr.libcmr.__file__).parent
    for name in ("__init__.pxd", "core.pxd", "device_buffer.pxd", "stack.pxd"):
        assert (libcmr / name).is_file()
    include = pathlib.Path(cmr.libcmr.get_include())
    assert (include / "cmr" / "cmr.h").is_file() and (include / "cmr" / "resources.h").is_file()
    assert any(name.startswith("libcmr.so") for name in os.listdir(cmr.libcmr.get_library_dir()))


def test_c_ref_and_c_handle_are_the_c_objects(host_mr):
    buffer = cmr.DeviceBuffer(size=64, mr=host_mr)
    assert buffer.c_handle == int(buffer._handle) != 0
    assert host_mr.c_ref != 0 and host_mr.c_handle == int(host_mr._handle)
    pool = mr.PoolMemoryResource(host_mr, 1 << 20)
    assert cmr.capi.cmr_pool_resource_pool_size(pool._handle) == 1 << 20
    del buffer
    empty = cmr.DeviceBuffer.__new__(cmr.DeviceBuffer)  # never made: no handle to give
    with pytest.raises(ValueError):
        empty.c_handle


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    cython = _cython()
    if cython is None:
        pytest.skip("no cython3 here (Debian: apt-get install cython3)")
    build = tmp_path_factory.mktemp("cython")
    c_file = build / "cmr_cython_probe.c"
    subprocess.run([cython, "-3", "-I", str(PACKAGE_PARENT), str(PROBE), "-o", str(c_file)], check=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    library_dir = cmr.libcmr.get_library_dir()
    # The library by its path: a wheel holds libcmr.so.N, not the libcmr.so that -lcmr looks for.
    library = min(name for name in os.listdir(library_dir) if name.startswith("libcmr.so"))
    compiler = os.environ.get("CC", "cc")
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", f"-I{sysconfig.get_paths()['include']}",
                    f"-I{cmr.libcmr.get_include()}", str(c_file), os.path.join(library_dir, library),
                    f"-Wl,-rpath,{library_dir}", "-o", str(build / f"cmr_cython_probe{suffix}")], check=True)
    sys.path.insert(0, str(build))
    try:
        import cmr_cython_probe
    finally:
        sys.path.remove(str(build))
    return cmr_cython_probe


def test_a_cython_extension_allocates_through_a_python_resource(probe, host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    assert probe.allocate_and_free(stats, 1000) != 0
    counts = stats.allocation_counts  # the same C object counted it: one library, one resource
    assert (counts.current_bytes, counts.total_bytes, counts.total_count) == (0, 1000, 1)
    with pytest.raises(MemoryError):
        probe.allocate_and_free(mr.LimitingResourceAdaptor(host_mr, 256), 1 << 20)


def test_a_cython_extension_reads_a_buffer_and_the_per_device_table(probe, host_mr):
    assert probe.buffer_size(cmr.DeviceBuffer(size=77, mr=host_mr)) == 77
    mr.set_current_device_resource(mr.StatisticsResourceAdaptor(host_mr))
    assert probe.current_type_name() == "statistics"
