# SPDX-License-Identifier: Apache-2.0
from .stream import CudaStreamFlags as CudaStreamFlags
from .stream import Stream

class CudaStream(Stream):
    def __new__(cls) -> CudaStream: ...
