# SPDX-License-Identifier: Apache-2.0
"""The CUDA array interface as RMM types it: rmm.pylibrmm.device_buffer's
SupportsCUDAArrayInterface (shown at cmr.pylibrmm.device_buffer) and the
dictionary it gives. Fully typed, without a stub, so that the package's
stubs take it from here."""

from __future__ import annotations

import typing

__all__ = ["SupportsCUDAArrayInterface"]


class _CUDAArrayInterface(typing.TypedDict):
    """The dictionary of the CUDA array interface (version 3), as RMM types it."""
    data: tuple[int, bool]
    shape: tuple[int, ...]
    typestr: str
    version: int
    strides: typing.NotRequired[tuple[int, ...] | None]
    descr: typing.NotRequired[list[tuple[str, str]]]


@typing.runtime_checkable
class SupportsCUDAArrayInterface(typing.Protocol):
    """An object with the CUDA array interface (DeviceBuffer, a CuPy or Numba
    array, a CUDA torch.Tensor): what DeviceBuffer.copy_from_device takes, as
    RMM types it. isinstance() tells whether an object has the attribute."""

    @property
    def __cuda_array_interface__(self) -> _CUDAArrayInterface: ...
