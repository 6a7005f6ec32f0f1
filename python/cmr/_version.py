# SPDX-License-Identifier: Apache-2.0
"""cmr.__version__ (the C library's, cmr_version()) and cmr.__git_commit__
(the commit the package was built from, written at configure time; "" when
the source was no git checkout)."""

import importlib.resources

from . import capi

__version__ = capi.cmr_version()
try:
    __git_commit__ = importlib.resources.files("cmr").joinpath("GIT_COMMIT").read_text().strip()
except OSError:
    __git_commit__ = ""
