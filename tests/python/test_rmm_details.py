# SPDX-License-Identifier: Apache-2.0
"""Details of RMM 26.08 that its own test suite relies on: the private names
it imports, the tracking adaptor's outstanding allocations (text and
records), the async resource's handle types, and the dask extra."""

import os
import re
import runpy

import pytest

import cmr
from cmr import _capi as capi, mr
from conftest import CUDA_BUILD, GPU, installed_distribution, needs_gpu

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


# ---- the private names RMM's tests import --------------------------------------------------

def test_flush_logs_flushes_every_logging_resource_set_from_python(host_mr, tmp_path):
    """RMM's test_logging imports _flush_logs from here and reads the log
    right after: what was logged is in the file without a flush() of its own."""
    from cmr.pylibrmm.memory_resource._memory_resource import PoolMemoryResource, _flush_logs
    assert PoolMemoryResource is mr.PoolMemoryResource  # RMM's classes live in that module too
    mr.set_current_device_resource(host_mr)
    mr.enable_logging(str(tmp_path / "log.csv"))
    logged = mr.get_current_device_resource()
    ptr = logged.allocate(10)
    logged.deallocate(ptr, 10)
    _flush_logs()
    lines = (tmp_path / "log.dev0.csv").read_text().splitlines()
    assert "Time,Action,Pointer,Size,Stream" in lines[0] and len(lines) == 3
    mr.disable_logging()


def test_flush_logs_without_logging_does_nothing(host_mr):
    from cmr.pylibrmm.memory_resource._memory_resource import _flush_logs
    mr.set_current_device_resource(host_mr)
    assert _flush_logs() is None


def test_supports_cuda_array_interface_is_rmms_protocol(host_mr):
    from typing import Protocol

    from cmr.pylibrmm.device_buffer import SupportsCUDAArrayInterface
    assert Protocol in SupportsCUDAArrayInterface.__mro__
    buffer = cmr.DeviceBuffer(size=16, mr=host_mr)
    assert isinstance(buffer, SupportsCUDAArrayInterface)
    assert not isinstance(b"bytes", SupportsCUDAArrayInterface)
    assert "SupportsCUDAArrayInterface" in cmr.pylibrmm.device_buffer.__all__


# ---- cmr.dask ------------------------------------------------------------------------------

def test_the_package_declares_the_dask_extra():
    """In setup.py (a source tree), and so in the metadata of an installed cmr."""
    setup_py = os.path.join(ROOT, "setup.py")
    distribution = installed_distribution()
    if distribution is None:  # a build tree: setup.py's table, read without building
        extras = runpy.run_path(setup_py, run_name="setup_py_read_by_a_test")["EXTRAS"]
        assert "distributed" in extras["dask"] and "dask" in extras["dask"]
    else:
        metadata = distribution.metadata
        assert "dask" in metadata.get_all("Provides-Extra")
        assert any(r.startswith("distributed") and re.search(r"extra *== *['\"]dask['\"]", r)
                   for r in metadata.get_all("Requires-Dist"))


def test_cmr_dask_exports_what_it_defines():
    dask = pytest.importorskip("cmr.dask", reason="cmr.dask needs distributed (Debian: python3-distributed)")
    assert sorted(dask.__all__) == ["CmrWorkerPlugin", "configure_workers", "worker_resource"]
    for name in dask.__all__:
        assert getattr(dask, name).__module__ == "cmr.dask"


# ---- TrackingResourceAdaptor: the outstanding allocations --------------------------------

def test_the_outstanding_allocations_text_is_empty_when_nothing_is_outstanding(host_mr):
    """RMM's test_tracking_resource_adaptor asserts len(...) == 0 once every
    buffer is gone."""
    tracking = mr.TrackingResourceAdaptor(host_mr, capture_stacks=True)
    assert tracking.get_outstanding_allocations_str() == ""
    ptr = tracking.allocate(1000)
    assert tracking.get_outstanding_allocations_str() != ""
    tracking.deallocate(ptr, 1000)
    assert tracking.get_outstanding_allocations_str() == ""


def test_the_outstanding_allocations_text_is_rmms(host_mr):
    tracking = mr.TrackingResourceAdaptor(host_mr)
    a, b = tracking.allocate(1000), tracking.allocate(300)
    low, high = sorted([(a, 1000), (b, 300)])
    assert tracking.get_outstanding_allocations_str() == f"{low[0]:#x}: {low[1]} B\n{high[0]:#x}: {high[1]} B\n"
    tracking.deallocate(a, 1000)
    tracking.deallocate(b, 300)


def test_captured_stacks_follow_rmms_callstack_form(host_mr):
    tracking = mr.TrackingResourceAdaptor(host_mr, capture_stacks=True)
    ptr = tracking.allocate(256)
    text = tracking.get_outstanding_allocations_str()
    head, _, frames = text.partition(" : callstack:\n")
    assert head == f"{ptr:#x}: 256 B"
    lines = frames.splitlines()
    assert len(lines) >= 3 and lines[0].startswith("#0 in ") and lines[1].startswith("#1 in ")
    assert text.endswith("\n\n")  # the last frame's line, then the allocation's
    tracking.deallocate(ptr, 256)


def test_outstanding_allocations_are_records(host_mr):
    from cmr.mr import AllocationRecord
    tracking = mr.TrackingResourceAdaptor(host_mr)
    stream = cmr.Stream()
    a = tracking.allocate(1000)
    b = tracking.allocate(5000, stream)
    records = tracking.outstanding_allocations()
    assert [r.pointer for r in records] == sorted([a, b])
    by_pointer = {r.pointer: r for r in records}
    assert by_pointer[a] == AllocationRecord(pointer=a, size=1000, stream=0, alignment=256, stack=())
    assert by_pointer[b].size == 5000 and by_pointer[b].stream == stream.handle and by_pointer[b].stack == ()
    tracking.deallocate(a, 1000)
    tracking.deallocate(b, 5000, stream)
    assert tracking.outstanding_allocations() == []


def test_records_carry_the_stack_when_captured(host_mr):
    tracking = mr.TrackingResourceAdaptor(host_mr, capture_stacks=True)
    assert tracking.capture_stacks() is True
    ptr = tracking.allocate(64)
    (record,) = tracking.outstanding_allocations()
    assert record.pointer == ptr and len(record.stack) >= 3
    assert all(frame.startswith(f"#{i} in ") for i, frame in enumerate(record.stack))
    tracking.deallocate(ptr, 64)


def test_the_snapshot_index_is_checked(host_mr):
    tracking = mr.TrackingResourceAdaptor(host_mr)
    assert tracking.outstanding_snapshot() == 0
    with pytest.raises(ValueError, match="index 0 is past the snapshot's 0 allocations"):
        tracking.snapshot_pointer(0)


# ---- CudaAsyncMemoryResource: the handle types, ORed as RMM's --------------------------------

@pytest.mark.parametrize("enable_ipc, enable_fabric, exported", [
    (False, False, "none"), (True, False, "posix_file_descriptor"), (False, True, "fabric"),
    (True, True, "posix_file_descriptor_and_fabric")])
def test_enable_ipc_and_enable_fabric_ask_for_their_set(monkeypatch, enable_ipc, enable_fabric, exported):
    """What the class asks C for, in any build (the host build has no
    cuda_async to make): both flags ask for both kinds of handle."""
    asked = []
    monkeypatch.setattr(mr._CudaAsyncMemoryResource, "_create",
                        lambda self, initial, threshold, export, devices: asked.append(export))
    mr.CudaAsyncMemoryResource(enable_ipc=enable_ipc, enable_fabric=enable_fabric)
    assert asked == [exported]


def test_the_set_is_a_value_of_the_c_enum():
    assert capi.CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_AND_FABRIC == 3
    assert mr._CUDA_ASYNC_EXPORT_HANDLE_TYPE["posix_file_descriptor_and_fabric"] == 3


@needs_gpu
def test_a_pool_exporting_both_kinds_allocates():
    """The H200 exports both (cudaDevAttrMemoryPoolSupportedHandleTypes 9)."""
    resource = mr.CudaAsyncMemoryResource(enable_ipc=True, enable_fabric=True)
    ptr = resource.allocate(1 << 20)
    resource.deallocate(ptr, 1 << 20)
