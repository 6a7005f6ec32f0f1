"""cmr_cupy_allocator (RMM's rmm_cupy_allocator): CuPy's allocations from
cmr's current device resource, each a cmr.DeviceBuffer on CuPy's current
stream:

    cupy.cuda.set_allocator(cmr.allocators.cupy.cmr_cupy_allocator)

As RMM's module, this one imports without CuPy; the allocator then raises
ModuleNotFoundError when called."""

try:
    import cupy
except ImportError:
    cupy = None

from .._device_buffer import DeviceBuffer


def cmr_cupy_allocator(nbytes: int) -> "cupy.cuda.MemoryPointer":
    """nbytes from the current device resource, as a CuPy memory pointer that keeps its buffer."""
    if cupy is None:
        raise ModuleNotFoundError("No module named 'cupy'")
    stream = cupy.cuda.get_current_stream()
    buffer = DeviceBuffer(size=nbytes, stream=stream)  # the buffer keeps CuPy's stream until it frees on it
    # CuPy finds the device of an address itself (device -1); an empty
    # buffer has no address, so it gets the current device.
    device = cupy.cuda.device.get_device_id() if buffer.ptr == 0 else -1
    memory = cupy.cuda.memory.UnownedMemory(buffer.ptr, nbytes, buffer, device)
    return cupy.cuda.memory.MemoryPointer(memory, 0)


rmm_cupy_allocator = cmr_cupy_allocator
