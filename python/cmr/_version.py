# SPDX-License-Identifier: Apache-2.0
"""cmr.__version__ and cmr.__git_commit__.

__version__ is VERSION's number as the C library reports it (cmr_version()),
which is also the version in the metadata of the distribution the package
is installed from (cmr-host or cmr-cu13: the name says the build, the
version carries no label). __git_commit__ is the commit the package was
built from, written at configure time ("" when the source was no git
checkout)."""

from __future__ import annotations

import importlib.resources

from . import _capi as capi

__version__: str = capi.cmr_version()
try:
    __git_commit__: str = importlib.resources.files("cmr").joinpath("GIT_COMMIT").read_text().strip()
except OSError:
    __git_commit__ = ""
