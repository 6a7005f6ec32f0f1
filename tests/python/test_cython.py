# SPDX-License-Identifier: Apache-2.0
"""cmr.libcmr: the .pxd declarations shipped with the package, used by a real
Cython extension (built here with Debian's cython3 and the C compiler) that
allocates through a Python resource's ref and reads a DeviceBuffer's C
handle (skipped where there is no cython3)."""

import os
import pathlib

import pytest
from conftest import cython_extension

import cmr
import cmr.libcmr
from cmr import mr

PROBE = pathlib.Path(__file__).parent / "cython" / "cmr_cython_probe.pyx"


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
    assert cmr._capi.cmr_pool_resource_pool_size(pool._handle) == 1 << 20
    del buffer
    empty = cmr.DeviceBuffer.__new__(cmr.DeviceBuffer)  # never made: no handle to give
    with pytest.raises(ValueError):
        empty.c_handle


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    return cython_extension(PROBE, tmp_path_factory.mktemp("cython"), link_cmr=True)


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


def test_a_cython_extension_makes_an_aligned_buffer(probe, host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    address, alignment = probe.aligned_buffer(stats, 100, 8192)
    assert address % 8192 == 0 and alignment == 8192
    assert stats.allocation_counts.current_bytes == 0 and stats.allocation_counts.total_count == 1
    with pytest.raises(ValueError, match="CMR_ERROR_BAD_ALIGNMENT|alignment"):
        probe.aligned_buffer(stats, 100, 3)
