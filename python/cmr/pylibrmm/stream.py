# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.stream: RMM's Stream, the default streams and CudaStreamFlags."""

from .._streams import DEFAULT_STREAM, LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, CudaStreamFlags, Stream


__all__ = ["CudaStreamFlags", "DEFAULT_STREAM", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "Stream"]
