# SPDX-License-Identifier: Apache-2.0
"""cmr_cupy_allocator (RMM's rmm_cupy_allocator): CuPy's allocations from
cmr's current device resource, each a cmr.DeviceBuffer on CuPy's current
stream:

    cupy.cuda.set_allocator(cmr.allocators.cupy.cmr_cupy_allocator)

The allocator is the extension's (python/swig/fast_cupy.swg): per call it
makes the buffer (which keeps CuPy's stream until it frees on it) and the
UnownedMemory and MemoryPointer over it, without a Python frame, reading
CuPy's current stream through the C function CuPy's Cython module exports
(`__pyx_capi__`) where there is one. As RMM's
module, this one imports without CuPy; the allocator then raises
ModuleNotFoundError when called."""

import importlib

try:
    import cupy
except ImportError:
    cupy = None

from .. import _capi as capi
from .. import _device_buffer  # noqa: F401  (makes cmr.DeviceBuffer's type, which the allocator makes)

if cupy is None:
    def cmr_cupy_allocator(nbytes: int) -> "cupy.cuda.MemoryPointer":
        """nbytes from the current device resource, as a CuPy memory pointer that keeps its buffer."""
        raise ModuleNotFoundError("No module named 'cupy'")
else:
    def _stream_handle_function():
        """CuPy's get_current_stream_ptr as a capsule, or None (the allocator
        checks that it agrees with get_current_stream().ptr before using it)."""
        for name in ("cupy_backends.cuda.stream", "cupy.cuda.stream"):
            try:
                return importlib.import_module(name).__pyx_capi__["get_current_stream_ptr"]
            except (ImportError, AttributeError, KeyError):
                pass
        return None

    cmr_cupy_allocator = capi.cmr_py_cupy_allocator(cupy.cuda.get_current_stream, cupy.cuda.memory.UnownedMemory,
                                                    cupy.cuda.memory.MemoryPointer, _stream_handle_function())


rmm_cupy_allocator = cmr_cupy_allocator
