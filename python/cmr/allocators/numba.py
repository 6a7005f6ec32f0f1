# SPDX-License-Identifier: Apache-2.0
"""CmrNumbaManager (RMM's RMMNumbaManager): a Numba EMM plugin whose device allocations are
cmr.DeviceBuffers from the current device resource. Set
NUMBA_CUDA_MEMORY_MANAGER=cmr.allocators.numba, or call
numba.cuda.set_memory_manager(CmrNumbaManager)."""

import ctypes

try:
    from numba.cuda import GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer
    from numba.cuda.cudadrv import driver as _numba_driver
except ImportError as error:
    raise ImportError("cmr.allocators.numba needs Numba with CUDA (numba.cuda)") from error

from .._device_buffer import DeviceBuffer
from .._per_device import available_device_memory, get_current_device_resource


def _device_pointer(address: int):
    """The address as the kind of pointer Numba's driver layer takes: the
    NVIDIA binding's CUdeviceptr, or a ctypes integer under Numba's own
    ctypes binding. numba-cuda releases without the ctypes binding have no
    USE_NV_BINDING flag at all."""
    if getattr(_numba_driver, "USE_NV_BINDING", True):
        return _numba_driver.binding.CUdeviceptr(address)
    return ctypes.c_uint64(address)


class CmrNumbaManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """Numba's device memory from cmr; host and pinned memory stay Numba's."""

    def initialize(self):
        # Numba calls this once its context exists: make the current
        # device's resource now, so that the first memalloc does not.
        super().initialize()
        get_current_device_resource()

    def memalloc(self, size):
        buffer = DeviceBuffer(size=size)
        held = [buffer]

        def release():
            # Numba calls this when the pointer is collected: the buffer's
            # last reference goes, and its memory back to cmr.
            held.clear()

        return MemoryPointer(self.context, _device_pointer(buffer.ptr), size, finalizer=release)

    def get_memory_info(self):
        free, total = available_device_memory()
        return MemoryInfo(free=free, total=total)

    @property
    def interface_version(self):
        return 1


RMMNumbaManager = CmrNumbaManager

# The name Numba looks for in the module NUMBA_CUDA_MEMORY_MANAGER names.
_numba_memory_manager = CmrNumbaManager
