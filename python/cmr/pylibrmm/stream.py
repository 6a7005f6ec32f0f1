# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.stream: RMM's Stream, the default streams and CudaStreamFlags."""

from enum import IntEnum

from .. import _capi as capi
from .._streams import DEFAULT_STREAM, LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream


class CudaStreamFlags(IntEnum):
    """How a stream made for a CudaStreamPool orders itself against the
    legacy default stream (cudaStreamDefault / cudaStreamNonBlocking)."""
    SYNC_DEFAULT = getattr(capi, "CMR_STREAM_FLAGS_SYNC_DEFAULT", 0)
    NON_BLOCKING = getattr(capi, "CMR_STREAM_FLAGS_NON_BLOCKING", 1)


__all__ = ["CudaStreamFlags", "DEFAULT_STREAM", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "Stream"]
