# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm: RMM's pylibrmm modules at their paths (stream,
device_buffer, memory_resource, cuda_stream_pool, logger, helper, utils),
over cmr."""

from . import cuda_stream, cuda_stream_pool, device_buffer, helper, logger, memory_resource, stream, utils
from .cuda_stream_pool import CudaStreamPool
from .device_buffer import DeviceBuffer
from .stream import CudaStreamFlags

__all__ = ["CudaStreamFlags", "CudaStreamPool", "DeviceBuffer", "cuda_stream", "cuda_stream_pool", "device_buffer",
           "helper", "logger", "memory_resource", "stream", "utils"]
