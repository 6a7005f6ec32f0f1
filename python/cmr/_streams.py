# SPDX-License-Identifier: Apache-2.0
"""Streams. cmr's Stream is an int (its cudaStream_t), so passing one costs
nothing; anything else a stream argument may be is turned into one by
as_stream_handle, which the C layer calls for arguments that are not ints:
objects with the __cuda_stream__ protocol (cuda.core, recent CuPy, Numba and
PyTorch), PyTorch streams (.cuda_stream), CuPy streams (.ptr) and Numba
streams (.handle). None is refused, as RMM refuses it."""

from __future__ import annotations

from enum import IntEnum

from . import _capi as capi


NONE_STREAM_MESSAGE = "stream argument cannot be None. Please provide a valid Stream instance."


def as_stream_handle(stream) -> int:
    """The cudaStream_t of `stream`, as an int."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return int(stream)
    if stream is None:
        raise TypeError(NONE_STREAM_MESSAGE)
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        version_and_handle = protocol() if callable(protocol) else protocol
        try:
            version, handle = version_and_handle
        except (TypeError, ValueError):
            raise TypeError(f"{type(stream).__name__}.__cuda_stream__ must give (version, handle), "
                            f"not {version_and_handle!r}") from None
        if version != 0:
            raise NotImplementedError(f"cmr does not currently support the CUDA Stream Protocol version: "
                                      f"'{version}' (of {type(stream).__name__}.__cuda_stream__; only version 0).")
        return int(handle)
    for attribute in ("cuda_stream", "ptr"):  # PyTorch, CuPy
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value
    handle = getattr(stream, "handle", None)  # Numba: a ctypes c_void_p
    if handle is not None:
        value = getattr(handle, "value", handle)
        return int(value or 0)
    raise TypeError(f"a stream must be an int, a cmr.Stream or a CUDA stream object, not {type(stream).__name__}")


capi.cmr_py_set_stream_converter(as_stream_handle)


class CudaStreamFlags(IntEnum):
    """RMM's CudaStreamFlags: how a new stream orders itself against the
    legacy default stream (cudaStreamDefault / cudaStreamNonBlocking)."""
    SYNC_DEFAULT = capi.CMR_STREAM_FLAGS_SYNC_DEFAULT
    NON_BLOCKING = capi.CMR_STREAM_FLAGS_NON_BLOCKING


class Stream(int):
    """A CUDA stream, RMM's Stream: Stream() makes a new one (destroyed when
    this object and everything holding it, such as the DeviceBuffers ordered
    on it, are collected, in whatever order), Stream(flags=CudaStreamFlags.
    NON_BLOCKING) one that does not synchronize with the legacy default
    stream; Stream(obj) stands for obj's stream (an int or any CUDA stream
    object: a __cuda_stream__ protocol of version 0, CuPy, Numba, PyTorch)
    and keeps obj alive, and takes no flags (ValueError). It is an int, the
    stream's handle, so it passes to every cmr call as it is."""

    _obj: object  # what keeps the stream alive: the stream object given, or the owner of one made

    def __new__(cls, obj=None, flags=None):
        if obj is None:
            flags = CudaStreamFlags.SYNC_DEFAULT if flags is None else flags
            if isinstance(flags, bool) or not isinstance(flags, int):
                raise TypeError(f"flags must be a CudaStreamFlags, not {type(flags).__name__}")
            try:
                flags = CudaStreamFlags(flags)
            except ValueError:
                raise ValueError(f"flags must be one of {[flag.name for flag in CudaStreamFlags]}, "
                                 f"not {flags!r}") from None
            handle, owner = capi.cmr_py_stream_create_owned(int(flags))
            self = super().__new__(cls, handle)
            self._obj = owner  # a capsule that destroys the stream when it goes
        else:
            if flags is not None:
                raise ValueError("flags may only be specified when obj is None; "
                                 "flags cannot be applied to an existing stream.")
            self = super().__new__(cls, as_stream_handle(obj))
            self._obj = obj
        return self

    @classmethod
    def _from_handle(cls, handle: int, owner) -> "Stream":
        """The stream `handle`, keeping `owner` (what destroys it) alive."""
        self = super().__new__(cls, handle)
        self._obj = owner
        return self

    @property
    def handle(self) -> int:
        """The cudaStream_t, as an int."""
        return int(self)

    def __cuda_stream__(self):
        return (0, int(self))

    def synchronize(self) -> None:
        """Waits for the work ordered on the stream."""
        capi.cmr_stream_synchronize(int(self))

    def is_default(self) -> bool:
        """Whether this is a default stream (legacy or per-thread)."""
        return int(self) in (0, 1, 2)

    def __repr__(self) -> str:
        return f"<cmr.Stream {int(self):#x}>"

    def __reduce__(self):
        raise TypeError("a cmr.Stream cannot be pickled: it lives in one process")


# cudaStreamLegacy is 0x1 and cudaStreamPerThread 0x2 (CUDA's driver_types.h).
DEFAULT_STREAM = Stream(0)
LEGACY_DEFAULT_STREAM = Stream(1)
PER_THREAD_DEFAULT_STREAM = Stream(2)


def as_stream(stream: object) -> Stream:
    """RMM's as_stream: `stream` as a Stream (a Stream as it is; None is a TypeError)."""
    if stream is None:
        raise TypeError(NONE_STREAM_MESSAGE)
    return stream if isinstance(stream, Stream) else Stream(stream)
