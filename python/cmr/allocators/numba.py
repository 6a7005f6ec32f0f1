"""CmrNumbaManager: a Numba EMM plugin whose device allocations are
cmr.DeviceBuffers from the current device resource. Set
NUMBA_CUDA_MEMORY_MANAGER=cmr.allocators.numba, or call
numba.cuda.set_memory_manager(CmrNumbaManager)."""

import ctypes

try:
    from numba import config
    from numba.cuda import GetIpcHandleMixin, HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer
except ImportError as error:
    raise ImportError("cmr.allocators.numba needs Numba with CUDA (numba.cuda)") from error

from .._device_buffer import DeviceBuffer
from .._per_device import available_device_memory


def _device_pointer(address: int):
    """The address as the kind of pointer Numba's driver layer takes."""
    if getattr(config, "CUDA_USE_NVIDIA_BINDING", False):
        from cuda.bindings import driver
        return driver.CUdeviceptr(address)
    return ctypes.c_uint64(address)


class CmrNumbaManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """Numba's device memory from cmr; host and pinned memory stay Numba's."""

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


# The name Numba looks for in the module NUMBA_CUDA_MEMORY_MANAGER names.
_numba_memory_manager = CmrNumbaManager
