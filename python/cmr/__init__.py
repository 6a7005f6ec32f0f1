"""cmr: GPU memory resources behind a stable C ABI, with RMM's Python API.

Code written for rmm runs on cmr by changing the import: cmr.mr has RMM's
resource classes and per-device functions, cmr.DeviceBuffer RMM's buffer,
cmr.reinitialize RMM's set-up (and stack expressions), cmr.statistics
RMM's statistics and profiler, and cmr.allocators the CuPy, Numba and
PyTorch allocators. cmr.capi is the C API as SWIG sees it, which trusts its
caller; nothing else in the package lets a Python caller crash it."""

from . import capi, mr, statistics
from ._bytes import parse_bytes
from ._device_buffer import DeviceBuffer
from ._per_device import is_initialized
from ._reinitialize import register_reinitialize_hook, reinitialize, unregister_reinitialize_hook
from ._streams import DEFAULT_STREAM, LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream

__version__ = capi.cmr_version()

__all__ = [
    "DEFAULT_STREAM", "DeviceBuffer", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "Stream", "capi", "is_initialized",
    "mr", "parse_bytes", "register_reinitialize_hook", "statistics", "reinitialize", "unregister_reinitialize_hook",
]
