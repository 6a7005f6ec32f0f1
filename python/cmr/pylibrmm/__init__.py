"""cmr.pylibrmm: RMM's pylibrmm modules at their paths (stream,
device_buffer, memory_resource, cuda_stream_pool, logger, helper, utils),
over cmr."""

from . import cuda_stream, cuda_stream_pool, device_buffer, helper, logger, memory_resource, stream, utils
from .device_buffer import DeviceBuffer

__all__ = ["DeviceBuffer", "cuda_stream", "cuda_stream_pool", "device_buffer", "helper", "logger", "memory_resource",
           "stream", "utils"]
