# SPDX-License-Identifier: Apache-2.0
from ...mr import *
from ...mr import __all__ as __all__
from ..._per_device import _flush_logs as _flush_logs
