# SPDX-License-Identifier: Apache-2.0
from .._streams import DEFAULT_STREAM as DEFAULT_STREAM
from .._streams import LEGACY_DEFAULT_STREAM as LEGACY_DEFAULT_STREAM
from .._streams import PER_THREAD_DEFAULT_STREAM as PER_THREAD_DEFAULT_STREAM
from .._streams import CudaStreamFlags as CudaStreamFlags
from .._streams import Stream as Stream
