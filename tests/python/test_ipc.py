# SPDX-License-Identifier: Apache-2.0
"""cmr.ipc: buffers shared between processes. On the host build the
descriptor's own machinery (pickling its two file descriptors through
multiprocessing into another process, closing them), the check of the
export records' descriptor and the refusals; on a GPU, two processes share
one buffer (one writes, the other reads and writes back) and each misuse
raises its status, a buffer the exporter freed or a pool it destroyed
included."""

import fcntl
import multiprocessing
import os
import struct

import pytest

import cmr
import ipc_worker
from cmr import _capi as capi
from conftest import CUDA_BUILD, needs_gpu

SPAWN = multiprocessing.get_context("spawn")  # a child that starts without the parent's CUDA state


DESCRIPTOR = struct.Struct("=QqQ64sQQQ")  # cmr_ipc_descriptor: ..., the driver's 64 bytes, the export's record


def own_descriptor_bytes(pid, size=4096):
    """The bytes of a cmr_ipc_descriptor (struct_size, exporter_pid, size, 64 bytes of the driver's, a record)."""
    return DESCRIPTOR.pack(DESCRIPTOR.size, pid, size, bytes(64), 0, 0, 0)


def export_records_lookalike():
    """A memfd laid out and sealed as export records are, with no export in them."""
    fd = os.memfd_create("records", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4096)
    os.pwrite(fd, struct.pack("=QQ", 0x636D722D72656373, 1), 0)  # "cmr-recs", version 1
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    return fd


def run_child(target, *args):
    parent, child = SPAWN.Pipe()
    process = SPAWN.Process(target=target, args=(*args, child))
    process.start()
    child.close()
    try:
        answer = parent.recv()
    finally:
        process.join(timeout=120)
    assert process.exitcode == 0
    return answer


def test_a_descriptor_pickles_its_file_descriptors_into_another_process():
    read_end, write_end = os.pipe()
    records_read_end, records_write_end = os.pipe()
    data = own_descriptor_bytes(os.getpid(), 123)
    with cmr.ipc.IPCBufferDescriptor(write_end, records_write_end, data, 123) as descriptor:
        size, seen = run_child(ipc_worker.use_descriptor_fds, descriptor)
    assert descriptor.closed and descriptor.records_fd == -1  # the with block closed this process's copies
    assert (size, seen) == (123, data)
    assert os.read(read_end, 64) == b"through the pool's descriptor"
    assert os.read(records_read_end, 64) == b"through the records' descriptor"
    os.close(read_end)
    os.close(records_read_end)


def test_a_closed_descriptor_is_neither_sent_nor_imported():
    read_end, write_end = os.pipe()
    os.close(read_end)
    descriptor = cmr.ipc.IPCBufferDescriptor(write_end, os.dup(write_end), own_descriptor_bytes(os.getpid() + 1), 4096)
    descriptor.close()
    with pytest.raises(ValueError, match="closed IPCBufferDescriptor"):
        descriptor.__reduce__()
    with pytest.raises(ValueError, match="is not open") as raised:
        cmr.ipc.import_buffer(descriptor)
    assert raised.value.errcode == capi.CMR_ERROR_INVALID_ARGUMENT
    descriptor.close()  # twice is harmless


def test_records_that_are_not_export_records_are_refused():
    read_end, write_end = os.pipe()
    other = cmr.ipc.IPCBufferDescriptor(write_end, os.dup(read_end), own_descriptor_bytes(os.getpid() + 1), 4096)
    with other as descriptor, pytest.raises(ValueError, match="not an export record table") as raised:
        cmr.ipc.import_buffer(descriptor)
    assert raised.value.errcode == capi.CMR_ERROR_INVALID_ARGUMENT
    with pytest.raises(ValueError, match="records_file_descriptor -7 is not open"):
        cmr.ipc.ImportedPool(read_end, -7)
    os.close(read_end)


def test_an_import_into_the_exporting_process_is_refused():
    read_end, write_end = os.pipe()
    records = export_records_lookalike()
    with cmr.ipc.IPCBufferDescriptor(write_end, records, own_descriptor_bytes(os.getpid()), 4096) as descriptor:
        with pytest.raises(cmr.CmrError, match="exported by this process") as raised:
            cmr.ipc.import_buffer(descriptor)
    assert raised.value.errcode == capi.CMR_ERROR_IPC_SAME_PROCESS
    os.close(read_end)


def test_what_is_not_a_descriptor_is_refused():
    with pytest.raises(TypeError, match="IPCBufferDescriptor"):
        cmr.ipc.import_buffer(b"\0" * 88)
    read_end, write_end = os.pipe()
    with cmr.ipc.IPCBufferDescriptor(write_end, os.dup(write_end), b"short", 4096) as descriptor:
        with pytest.raises(TypeError, match=f"descriptor is the {DESCRIPTOR.size} bytes"):
            cmr.ipc.import_buffer(descriptor)
    os.close(read_end)


def test_a_buffer_of_another_resource_exports_nothing():
    mr = cmr.mr.CudaMemoryResource() if CUDA_BUILD else cmr.mr.SystemMemoryResource()
    buffer = cmr.DeviceBuffer(size=256, mr=mr)
    with pytest.raises(cmr.CmrError, match="not a cuda_async resource") as raised:
        buffer.export_ipc()
    assert raised.value.errcode == capi.CMR_ERROR_UNSUPPORTED


@pytest.mark.skipif(CUDA_BUILD, reason="the host build's refusal")
def test_the_host_build_has_no_pools_to_import():
    read_end, write_end = os.pipe()
    records = export_records_lookalike()
    for arguments in [(write_end,), (write_end, records)]:  # checked, then refused
        with pytest.raises(cmr.CmrError, match="host build") as raised:
            cmr.ipc.ImportedPool(*arguments)
        assert raised.value.errcode == capi.CMR_ERROR_UNSUPPORTED
    for fd in (read_end, write_end, records):
        os.close(fd)


# ---- on a GPU ----------------------------------------------------------------------------

PATTERN = bytes((i * 13 + 1) & 0xFF for i in range(1 << 20))


def exporting_buffer(mr):
    buffer = cmr.DeviceBuffer.to_device(PATTERN, mr=mr)
    capi.cmr_stream_synchronize(0)  # written before another process reads
    return buffer


@needs_gpu
def test_two_processes_share_one_buffer():
    mr = cmr.mr.CudaAsyncMemoryResource(enable_ipc=True)
    buffer = exporting_buffer(mr)
    descriptor = buffer.export_ipc()
    assert descriptor.size == len(PATTERN)
    answer = run_child(ipc_worker.read_then_write, descriptor)
    assert answer[0] == "ok", answer
    assert answer[1] == PATTERN  # the importer read the exporter's bytes
    assert buffer.tobytes() == b"\xa5" * len(PATTERN)  # and the exporter reads the importer's
    descriptor.close()


@needs_gpu
def test_an_import_in_the_exporting_process_is_refused_on_a_gpu():
    buffer = exporting_buffer(cmr.mr.CudaAsyncMemoryResource(enable_ipc=True))
    with buffer.export_ipc() as descriptor:
        with pytest.raises(cmr.CmrError) as raised:
            cmr.ipc.import_buffer(descriptor)
    assert raised.value.errcode == capi.CMR_ERROR_IPC_SAME_PROCESS


@needs_gpu
def test_a_freed_exporter_is_reported_to_the_importer():
    mr = cmr.mr.CudaAsyncMemoryResource(enable_ipc=True)  # kept: the buffer alone goes
    buffer = exporting_buffer(mr)
    descriptor = buffer.export_ipc()
    del buffer
    capi.cmr_stream_synchronize(0)
    answer = run_child(ipc_worker.try_import, descriptor)
    assert answer[0] == "error" and answer[1] == capi.CMR_ERROR_IPC_GONE, answer
    assert "freed the allocation" in answer[2], answer  # the export records' answer, not the driver's
    descriptor.close()


@needs_gpu
def test_a_destroyed_pool_is_reported_to_an_importer_that_imported_it_before():
    mr = cmr.mr.CudaAsyncMemoryResource(enable_ipc=True)
    buffer = exporting_buffer(mr)
    descriptor = buffer.export_ipc()
    parent, child = SPAWN.Pipe()
    process = SPAWN.Process(target=ipc_worker.import_when_told, args=(descriptor, child))
    process.start()
    child.close()
    try:
        assert parent.recv() == "pool imported"
        del buffer, mr  # the last share: the exporter's pool is destroyed
        capi.cmr_stream_synchronize(0)
        parent.send("import the buffer")
        answer = parent.recv()
    finally:
        process.join(timeout=120)
    assert process.exitcode == 0
    assert answer[0] == "error" and answer[1] == capi.CMR_ERROR_IPC_GONE, answer
    assert "destroyed the pool" in answer[2], answer
    descriptor.close()


@needs_gpu
def test_a_pool_made_without_ipc_exports_nothing():
    buffer = exporting_buffer(cmr.mr.CudaAsyncMemoryResource())
    with pytest.raises(cmr.CmrError, match="posix_file_descriptor") as raised:
        buffer.export_ipc()
    assert raised.value.errcode == capi.CMR_ERROR_UNSUPPORTED


@needs_gpu
def test_two_buffers_of_one_pool_share_one_import():
    mr = cmr.mr.CudaAsyncMemoryResource(enable_ipc=True)
    first = exporting_buffer(mr)
    second = cmr.DeviceBuffer.to_device(b"\x07" * 4096, mr=mr)
    capi.cmr_stream_synchronize(0)
    with first.export_ipc() as a, second.export_ipc() as b:
        answer = run_child(ipc_worker.import_two, a, b)
    assert answer == ("ok", True, PATTERN[:4], b"\x07" * 4), answer
