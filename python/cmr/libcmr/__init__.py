# SPDX-License-Identifier: Apache-2.0
"""cmr.libcmr: the C API for Cython, as rmm.librmm is RMM's C++ API.

    from cmr.libcmr.core cimport cmr_resource_ref, cmr_allocate, resource_ref_of
    from cmr.libcmr.device_buffer cimport cmr_device_buffer, device_buffer_of

declares <cmr/cmr.h> (core.pxd, device_buffer.pxd, stack.pxd); an extension
compiles with get_include() on its include path and links libcmr (in
get_library_dir()), the one the package loads, so both share one
per-device table. resource_ref_of(mr) gives the cmr_resource_ref of any
cmr.mr resource and device_buffer_of(buf) the cmr_device_buffer of a
cmr.DeviceBuffer (valid while the Python object lives), through their c_ref
and c_handle properties."""

from __future__ import annotations

import os

from ..allocators._library import library_path

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def get_include() -> str:
    """The folder holding cmr/cmr.h (and the .pxd files' headers)."""
    return os.path.join(_PACKAGE, "include")


def get_library_dir() -> str:
    """The folder of the libcmr this process uses."""
    return os.path.dirname(library_path())


__all__ = ["get_include", "get_library_dir"]
