# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.cuda_stream: RMM's CudaStream (a new stream of its own) and CudaStreamFlags."""

from .stream import CudaStreamFlags, Stream


class CudaStream(Stream):
    """A new CUDA stream, destroyed when nothing holds it any more."""

    def __new__(cls):
        return super().__new__(cls)


__all__ = ["CudaStream", "CudaStreamFlags"]
