# SPDX-License-Identifier: Apache-2.0
"""RMM's rmm.pylibrmm.memory_resource._memory_resource, the module its
resource classes are defined in: the same names as cmr.mr, and the private
_flush_logs that RMM's own tests import from here."""

from ...mr import *  # noqa: F401,F403 (the same names as cmr.mr)
from ...mr import __all__ as _mr_names
from ..._per_device import _flush_logs

__all__ = list(_mr_names)
