# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.memory_resource: the resource classes and per-device
functions of cmr.mr at RMM's path, and its experimental module."""

from ...mr import *  # noqa: F401,F403 (the same names as cmr.mr)
from ...mr import __all__ as _mr_names
from . import experimental

__all__ = [*_mr_names, "experimental"]
