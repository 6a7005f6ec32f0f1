"""cmr_cupy_allocator: CuPy's allocations from cmr's current device
resource, each a cmr.DeviceBuffer on CuPy's current stream:

    cupy.cuda.set_allocator(cmr.allocators.cupy.cmr_cupy_allocator)"""

try:
    import cupy
except ImportError as error:
    raise ImportError("cmr.allocators.cupy needs CuPy") from error

from .._device_buffer import DeviceBuffer


def cmr_cupy_allocator(nbytes: int) -> "cupy.cuda.MemoryPointer":
    """nbytes from the current device resource, as a CuPy memory pointer that keeps its buffer."""
    stream = cupy.cuda.get_current_stream()
    buffer = DeviceBuffer(size=nbytes, stream=stream)  # the buffer keeps CuPy's stream until it frees on it
    # CuPy finds the device of an address itself (device -1); an empty
    # buffer has no address, so it gets the current device.
    device = cupy.cuda.device.get_device_id() if buffer.ptr == 0 else -1
    memory = cupy.cuda.memory.UnownedMemory(buffer.ptr, nbytes, buffer, device)
    return cupy.cuda.memory.MemoryPointer(memory, 0)
