# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.device_buffer: RMM's DeviceBuffer and its module's copy
functions. Host memory is what RMM's `const unsigned char[::1]` takes: a
buffer-protocol object of one contiguous dimension of format B (bytes,
bytearray, a memoryview, a NumPy uint8 array; another format, shape or
stride is a ValueError, an object without the buffer protocol a
TypeError); device addresses are ints, checked as DeviceBuffer's docstring
says (one that is not memory is a ValueError)."""

from __future__ import annotations

from .. import _args
from .. import _capi as capi
from .._array_interface import SupportsCUDAArrayInterface, _CUDAArrayInterface  # noqa: F401
from .._device_buffer import DeviceBuffer
from .._streams import DEFAULT_STREAM


def to_device(b, stream=DEFAULT_STREAM) -> DeviceBuffer:
    """A new DeviceBuffer (from the current device resource) holding the bytes of host buffer `b`."""
    return DeviceBuffer.to_device(b, stream)


def copy_ptr_to_host(db: int, hb, stream=DEFAULT_STREAM) -> None:
    """Copies len(hb) bytes (all of the writable buffer hb) from address db
    into hb, ordered on stream, and waits for the copy."""
    capi.cmr_py_copy_ptr_to_host(_args.c_unsigned(db, "db"), hb, stream)


def copy_host_to_ptr(hb, db: int, stream=DEFAULT_STREAM) -> None:
    """Copies all the bytes of host buffer hb to address db, ordered on
    stream, and waits for the copy (hb is the caller's again on return)."""
    capi.cmr_py_copy_host_to_ptr(hb, _args.c_unsigned(db, "db"), stream)


def copy_device_to_ptr(d_src: int, d_dst: int, count: int, stream=DEFAULT_STREAM) -> None:
    """Copies count bytes from address d_src to address d_dst, ordered on
    stream (stream.synchronize() waits for it)."""
    capi.cmr_memcpy(_args.c_unsigned(d_dst, "d_dst"), _args.c_unsigned(d_src, "d_src"),
                    _args.c_unsigned(count, "count"), stream)


__all__ = ["DeviceBuffer", "SupportsCUDAArrayInterface", "copy_device_to_ptr", "copy_host_to_ptr", "copy_ptr_to_host", "to_device"]
