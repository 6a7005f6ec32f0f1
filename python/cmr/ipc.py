# SPDX-License-Identifier: Apache-2.0
"""cmr.ipc: device memory shared between processes (cmr/ipc.h).

The exporting process allocates a DeviceBuffer from a
CudaAsyncMemoryResource made with enable_ipc=True and calls
``buffer.export_ipc()``: an IPCBufferDescriptor, which owns two file
descriptors, the pool's and its export records', and the description of
the allocation. It pickles through multiprocessing (its file descriptors
are passed as multiprocessing passes descriptors, over a Unix socket), as
cuda.core's IPCBufferDescriptor does: put it on a multiprocessing Queue or
Pipe, or give it to a Process. The importing process calls
``cmr.ipc.import_buffer(d)``: a DeviceBuffer over the same device memory,
which frees its import (never the exporter's memory) when it goes and keeps
the imported pool alive until then.

The exporter keeps its buffer alive until every importer is done with it,
and orders its writes before their reads (a synchronize): the driver does
neither. The export records (cmr/ipc.h) let the importer refuse a buffer
the exporter has already freed, which the driver may map regardless. Misuse
raises cmr.CmrError with the status as errcode: an import into the
exporting process (CMR_ERROR_IPC_SAME_PROCESS), a closed descriptor, or
records that are not export records (ValueError,
CMR_ERROR_INVALID_ARGUMENT), an allocation the exporter freed or a pool it
destroyed (CMR_ERROR_IPC_GONE)."""

from __future__ import annotations

import os
import weakref
from multiprocessing import reduction
from typing import Any

from . import _capi as capi
from ._resource import DeviceMemoryResource
from ._streams import DEFAULT_STREAM

__all__ = ["IPCBufferDescriptor", "ImportedPool", "import_buffer"]


class IPCBufferDescriptor:
    """One exported buffer: file descriptors of its pool and of the pool's
    export records (owned: closed by close() or when the object goes) and
    the buffer's description (bytes), of ``size`` bytes. Made by
    DeviceBuffer.export_ipc()."""

    __slots__ = ("_fd", "_records_fd", "_data", "size")

    def __init__(self, fd: int, records_fd: int, data: bytes, size: int):
        self._fd = fd
        self._records_fd = records_fd
        self._data = bytes(data)
        self.size = size

    @property
    def fd(self) -> int:
        """The pool's file descriptor (-1 once closed)."""
        return self._fd

    @property
    def records_fd(self) -> int:
        """The file descriptor of the pool's export records (-1 once closed)."""
        return self._records_fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        """Closes both file descriptors; an import from the descriptor then fails."""
        fds, self._fd, self._records_fd = (self._fd, self._records_fd), -1, -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> "IPCBufferDescriptor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        if self._fd < 0:
            raise ValueError("a closed IPCBufferDescriptor cannot be sent: its pool's file descriptor is gone")
        # multiprocessing duplicates the descriptors into the receiving process.
        return (_rebuild_descriptor,
                (reduction.DupFd(self._fd), reduction.DupFd(self._records_fd), self._data, self.size))

    def __repr__(self) -> str:
        return f"IPCBufferDescriptor(fd={self._fd}, records_fd={self._records_fd}, size={self.size})"


def _rebuild_descriptor(dup_fd: Any, dup_records_fd: Any, data: bytes, size: int) -> IPCBufferDescriptor:
    return IPCBufferDescriptor(dup_fd.detach(), dup_records_fd.detach(), data, size)


class ImportedPool(DeviceMemoryResource):
    """A pool another process exported, imported from its file descriptor
    and that of its export records (both stay the caller's), against which
    each import of a buffer is checked first. Without ``records_fd`` an
    import has only the driver's answer, which may map memory the exporter
    has freed. Its buffers are import_buffer's; it allocates nothing (an
    imported pool's memory is the exporter's)."""

    def __init__(self, fd: int, records_fd: int | None = None):
        handle = (capi.cmr_ipc_import_pool(fd) if records_fd is None
                  else capi.cmr_ipc_import_pool_with_records(fd, records_fd))
        self._own(handle, capi.cmr_ipc_pool_ref, capi.cmr_ipc_pool_destroy)

    def import_buffer(self, descriptor: IPCBufferDescriptor, stream: object = DEFAULT_STREAM) -> Any:
        """A DeviceBuffer over the memory `descriptor` names, ordered on `stream`."""
        from ._device_buffer import DeviceBuffer  # noqa: F401  (makes the buffer type)
        handle = capi.cmr_ipc_import_buffer(self._handle, descriptor._data, stream)
        try:
            return capi.cmr_py_device_buffer_adopt(handle, self, stream)
        except BaseException:
            capi.cmr_device_buffer_destroy(handle)
            raise


def import_buffer(descriptor: IPCBufferDescriptor, stream: object = DEFAULT_STREAM) -> Any:
    """The buffer another process exported as `descriptor`, imported into
    this one: a DeviceBuffer that frees its import when it goes and keeps
    the imported pool alive until then."""
    if not isinstance(descriptor, IPCBufferDescriptor):
        raise TypeError(f"descriptor must be a cmr.ipc.IPCBufferDescriptor, not {type(descriptor).__name__}")
    capi.cmr_ipc_check_descriptor(descriptor._data)  # this process's own export is refused before any import
    return _pool_of(descriptor).import_buffer(descriptor, stream)


# The pools imported here, by the open file their descriptors name: one
# exporter's pool is imported once while any of its buffers is alive here.
_imported: "weakref.WeakValueDictionary[tuple[int, int], ImportedPool]" = weakref.WeakValueDictionary()


def _pool_of(descriptor: IPCBufferDescriptor) -> ImportedPool:
    if descriptor.closed:
        return ImportedPool(descriptor.fd, descriptor.records_fd)  # raises what a closed descriptor is
    status = os.fstat(descriptor.fd)
    key = (status.st_dev, status.st_ino)
    pool = _imported.get(key)
    if pool is None:
        pool = ImportedPool(descriptor.fd, descriptor.records_fd)
        _imported[key] = pool
    return pool


def export_buffer(buffer: Any) -> IPCBufferDescriptor:
    """What DeviceBuffer.export_ipc() returns for `buffer`."""
    data = capi.cmr_ipc_export_buffer(buffer._live())
    fd = capi.cmr_cuda_async_resource_export_file_descriptor(buffer.mr._handle)
    try:
        records_fd = capi.cmr_ipc_export_records_file_descriptor(buffer.mr._handle)
    except BaseException:
        os.close(fd)
        raise
    return IPCBufferDescriptor(fd, records_fd, data, buffer.size)
