# SPDX-License-Identifier: Apache-2.0
"""cmr.DeviceBuffer: RMM's DeviceBuffer, over cmr_device_buffer.

The C buffer holds a share of its resource; the Python object also keeps
the resource object (mr), so a resource with Python callbacks outlives
every buffer made from it, and the stream object its work is ordered on (a
cmr.Stream or another library's stream), so that the stream is not
destroyed before the buffer frees its memory on it, whatever order Python
collects them in (as RMM's DeviceBuffer keeps its stream). Work is ordered on the buffer's stream; a copy
between the buffer and memory Python owns (host data, another object's
device memory) waits until it is done, so that memory may go as soon as the
call returns. A `stream` argument other than the buffer's own is waited for
first, so that work already ordered on it (a kernel writing the buffer)
comes before the copy.

What is done per allocation (construction, ptr, size, the free) is the
extension's C type (python/swig/fast_device_buffer.swg), made here over the class
holding the methods written in Python."""

from __future__ import annotations

import pickle

from . import _args, _per_device
from . import _capi as capi
from ._streams import DEFAULT_STREAM, as_stream_handle


def _count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return _args.size(value, name)


def _contiguous_bytes(interface: dict) -> int:
    """The bytes of a C-contiguous __cuda_array_interface__, or ValueError."""
    shape = tuple(interface["shape"])
    typestr = interface["typestr"]
    itemsize = int(typestr[2:])
    elements = 1
    for extent in shape:
        elements *= extent
    strides = interface.get("strides")
    if strides is not None and elements > 0:
        expected, step = [], itemsize
        for extent in reversed(shape):
            expected.append(step)
            step *= extent
        if tuple(strides) != tuple(reversed(expected)):
            raise ValueError(f"the array is not C-contiguous (strides {tuple(strides)}, shape {shape})")
    return elements * itemsize


# The first line is the C type's signature (its __text_signature__, which
# inspect.signature and help() read), ended by "--" as CPython's are.
_DOC = """DeviceBuffer(*, ptr=0, size=0, stream=DEFAULT_STREAM, mr=None, alignment=256)
--

Untyped, uninitialised device memory from a cmr resource: `size` bytes from `mr` (the current device resource when
None), ordered on `stream`, aligned to `alignment` (a power of two the
resource must honour; every reallocation keeps it); with ptr, a copy of
the `size` bytes at that address (host or device memory, which must hold
them).

An address given here or through copy_from_device is checked before it is
read, where that is cheap: one CUDA does not know must be mapped host
memory (in the host build, every one must be), else ValueError. What
cannot be checked is the caller's to get right: a range that runs past the
end of a device allocation, or over a mapped host page that may not be
read, is undefined behaviour (the process may crash)."""


class _DeviceBufferMethods:
    """The methods of cmr.DeviceBuffer written in Python; its C type (below)
    adds construction, ptr, size, nbytes, mr and the free."""

    __slots__ = ()

    def _live(self):
        if self._handle is None:
            raise ValueError("the DeviceBuffer has no memory: it was never made")
        return self._handle

    # ---- what it is ----------------------------------------------------------------------

    @property
    def c_handle(self) -> int:
        """The address of the cmr_device_buffer (valid while this object
        lives; not to be destroyed), for C and Cython:
        cmr.libcmr.device_buffer.device_buffer_of."""
        return int(self._live())

    def capacity(self) -> int:
        """Bytes the buffer can hold without reallocating."""
        return capi.cmr_device_buffer_capacity(self._live())

    @property
    def stream(self) -> int:
        """The stream the buffer's work is ordered on, as an int."""
        return capi.cmr_device_buffer_stream(self._live())

    def __len__(self) -> int:
        return self.size

    def __sizeof__(self) -> int:
        return self.size

    @property
    def __cuda_array_interface__(self) -> dict:
        # RMM's keys and version, and so no "stream": a consumer orders its
        # work after the buffer's itself, as with RMM's DeviceBuffer.
        return {"data": (self.ptr, False), "shape": (self.size,), "strides": None, "typestr": "|u1", "version": 0}

    def export_ipc(self):
        """A cmr.ipc.IPCBufferDescriptor of the buffer, for another process to
        import (cmr.ipc.import_buffer). The buffer's resource must be a
        CudaAsyncMemoryResource made with enable_ipc=True; the buffer must
        outlive every import of it."""
        from . import ipc
        return ipc.export_buffer(self)

    # ---- size ----------------------------------------------------------------------------

    def reserve(self, new_capacity, stream=DEFAULT_STREAM) -> None:
        """Makes the capacity at least new_capacity, keeping the contents."""
        capi.cmr_device_buffer_reserve(self._live(), _count(new_capacity, "new_capacity"), stream)
        self._ordered_on(stream)

    def resize(self, new_size, stream=DEFAULT_STREAM) -> None:
        """Makes the size new_size, keeping the first min(size, new_size) bytes."""
        capi.cmr_device_buffer_resize(self._live(), _count(new_size, "new_size"), stream)
        self._ordered_on(stream)

    def _ordered_on(self, stream) -> None:
        """Keeps `stream`, which the buffer's work is ordered on from now on (the
        object held already when it stands for the same stream, as the int
        `self.stream` does)."""
        if as_stream_handle(stream) != as_stream_handle(self._stream):
            self._stream = stream

    def prefetch(self, device=None, stream=DEFAULT_STREAM) -> None:
        """Migrates managed memory to `device` (the current one when None); other memory stays."""
        device = -1 if device is None else _args.integer(device, "device")
        if device < -1:
            raise ValueError(f"device must be None or at least 0, not {device}")
        capi.cmr_device_buffer_prefetch(self._live(), device, stream)

    # ---- copies --------------------------------------------------------------------------

    def _after(self, stream) -> None:
        """Orders what follows after the work on `stream`, when it is not the buffer's."""
        if as_stream_handle(stream) != self.stream:
            capi.cmr_stream_synchronize(stream)

    def copy_to_host(self, ary=None, stream=DEFAULT_STREAM):
        """The contents in host memory: into `ary` (a writable one-dimensional
        contiguous buffer of bytes, format B, of at least size bytes),
        returned; else a new NumPy uint8 array (a bytearray without NumPy).
        Another format, shape or stride is a ValueError."""
        handle = self._live()
        size = self.size
        if ary is None:
            try:
                import numpy
                ary = numpy.empty(size, dtype=numpy.uint8)
            except ImportError:
                ary = bytearray(size)
        self._after(stream)
        capi.cmr_py_device_buffer_copy_to_host(handle, ary, size)
        return ary

    def copy_from_host(self, ary, stream=DEFAULT_STREAM) -> None:
        """Copies all of `ary` (a one-dimensional contiguous buffer of bytes,
        format B: bytes, bytearray, memoryview, a NumPy uint8 array; at most
        size bytes) to the start of the buffer. Another format, shape or
        stride is a ValueError, an object without the buffer protocol a
        TypeError."""
        handle = self._live()
        self._after(stream)
        capi.cmr_py_device_buffer_copy_from_host(handle, ary)

    def copy_from_device(self, cuda_ary, stream=DEFAULT_STREAM) -> None:
        """Copies all of a C-contiguous object with __cuda_array_interface__
        (at most size bytes). Its address is checked as DeviceBuffer's ptr
        is (see DeviceBuffer): one that is not memory is a ValueError."""
        handle = self._live()
        interface = getattr(cuda_ary, "__cuda_array_interface__", None)
        if not isinstance(interface, dict):
            raise TypeError(f"{type(cuda_ary).__name__} has no __cuda_array_interface__")
        nbytes = _contiguous_bytes(interface)
        self._after(stream)
        their_stream = interface.get("stream")
        if their_stream is not None:
            capi.cmr_stream_synchronize(their_stream)  # their work on the data comes first
        capi.cmr_device_buffer_copy_from(handle, interface["data"][0], nbytes)
        capi.cmr_stream_synchronize(self.stream)  # their memory is theirs again on return

    def tobytes(self, stream=DEFAULT_STREAM) -> bytes:
        """The contents as bytes."""
        return bytes(self.copy_to_host(bytearray(self.size), stream))

    def __bytes__(self) -> bytes:
        return self.tobytes()

    def copy(self) -> "DeviceBuffer":
        """A new buffer with the same contents, resource, stream and alignment."""
        return DeviceBuffer(ptr=self.ptr, size=self.size, stream=self._stream, mr=self.mr, alignment=self.alignment)

    def __copy__(self) -> "DeviceBuffer":
        return self.copy()

    def __deepcopy__(self, memo) -> "DeviceBuffer":
        return self.copy()

    @staticmethod
    def to_device(b, stream=DEFAULT_STREAM, mr=None) -> "DeviceBuffer":
        """A new buffer holding the bytes of host buffer `b`, which is taken as
        copy_from_host takes it (one-dimensional, contiguous, format B)."""
        buffer = DeviceBuffer(size=capi.cmr_py_host_buffer_nbytes(b), stream=stream, mr=mr)
        buffer.copy_from_host(b, stream)
        return buffer

    def __reduce_ex__(self, protocol):
        # Unpickled onto the current device resource of the loading process.
        # From protocol 5 the bytes are one PickleBuffer, which a pickler with
        # a buffer_callback hands out of band.
        data = self.tobytes()
        return DeviceBuffer.to_device, (pickle.PickleBuffer(data) if protocol >= 5 else data,)

    def __reduce__(self):
        return self.__reduce_ex__(2)

    def __repr__(self) -> str:
        if self._handle is None:
            return "<cmr.DeviceBuffer (none)>"
        return f"<cmr.DeviceBuffer size={self.size} ptr={self.ptr:#x} stream={self.stream:#x}>"


# With what the C type calls for what it does not do itself: sizes and
# addresses that are not plain ints, the current device's resource when it
# is not the object set from Python.
DeviceBuffer = capi.cmr_py_device_buffer_type(_DeviceBufferMethods, _DOC, DEFAULT_STREAM, _count, _args.address,
                                              _per_device.get_current_device_resource, _per_device._per_device_mrs)
