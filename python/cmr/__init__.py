# SPDX-License-Identifier: Apache-2.0
"""cmr: GPU memory resources behind a stable C ABI, with RMM's Python API.

Code written for rmm runs on cmr by changing the import (`rmm` -> `cmr`):
cmr.mr has RMM's resource classes and per-device functions (and
cmr.mr.experimental), cmr.DeviceBuffer RMM's buffer, cmr.reinitialize RMM's
set-up (and stack expressions), cmr.statistics RMM's statistics and
profiler, cmr.allocators the CuPy, Numba and PyTorch allocators, and
cmr.pylibrmm RMM's pylibrmm modules (stream, device_buffer,
memory_resource, cuda_stream_pool, logger, helper, utils). The logger
functions drive cmr's C diagnostic log. cmr._capi, private, is the C API
as SWIG sees it, which trusts its caller with addresses. Elsewhere an
address a caller gives (DeviceBuffer's ptr, a __cuda_array_interface__,
pylibrmm's copies) is checked where that is cheap, and what cannot be
checked is said in DeviceBuffer's docstring: a range past the end of a
device allocation, or over a mapped host page that may not be read, can
still crash the process."""

import sys

from . import _capi  # loads the extension and libcmr first
_capi.cmr_py_refuse_subinterpreter()  # before anything registers a hook: they are the main interpreter's
from ._errors import CmrError, RMMError  # registers cmr's error class before anything can fail
from . import ipc, mr, statistics
from . import memory
from . import _mr_experimental
from ._bytes import parse_bytes
from ._device_buffer import DeviceBuffer
from ._memory_stats import (OutOfMemoryEvent, max_memory_allocated, max_memory_reserved, memory_allocated,
                            memory_reserved, memory_stats, reset_peak_memory_stats, set_oom_observer)
from ._per_device import disable_logging, enable_logging, get_log_filenames, is_initialized
from ._reinitialize import register_reinitialize_hook, reinitialize, unregister_reinitialize_hook
from ._streams import DEFAULT_STREAM, LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream
from ._version import __git_commit__, __version__
from . import pylibrmm
from .pylibrmm.logger import (flush_logger, get_flush_level, get_logging_level, level_enum, set_flush_level,
                              set_logging_level, should_log)

# cmr.mr is one generated module: its experimental part is registered under
# RMM's name, so that `import cmr.mr.experimental` and `cmr.mr.experimental` work.
sys.modules[f"{__name__}.mr.experimental"] = _mr_experimental
mr.experimental = _mr_experimental

__all__ = [
    "CmrError", "DEFAULT_STREAM", "DeviceBuffer", "LEGACY_DEFAULT_STREAM", "OutOfMemoryEvent",
    "PER_THREAD_DEFAULT_STREAM", "RMMError", "Stream", "__version__", "disable_logging", "enable_logging",
    "flush_logger", "get_flush_level", "get_log_filenames", "get_logging_level", "ipc", "is_initialized", "level_enum",
    "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats", "mr",
    "parse_bytes", "pylibrmm", "register_reinitialize_hook", "reinitialize", "reset_peak_memory_stats",
    "set_flush_level", "set_logging_level", "set_oom_observer", "should_log", "statistics",
    "unregister_reinitialize_hook",
]
