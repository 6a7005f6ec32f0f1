# SPDX-License-Identifier: Apache-2.0
"""cmr.__version__ and cmr.__git_commit__.

__version__ is the version of the distribution this package was installed
from (its metadata's, e.g. 0.1.0+cuda: the build kind is the local label),
and, where it was not installed (a build tree on PYTHONPATH), the C
library's, cmr_version(). __git_commit__ is the commit the package was built
from, written at configure time ("" when the source was no git checkout)."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import os

from . import _capi as capi


def _installed_version() -> str | None:
    """The version in the metadata of the distribution that holds this very
    package (not another cmr installed elsewhere on the path), or None."""
    try:
        distribution = importlib.metadata.distribution("cmr")
    except importlib.metadata.PackageNotFoundError:
        return None
    here = os.path.realpath(os.path.join(os.path.dirname(__file__), "__init__.py"))
    located = os.path.realpath(str(distribution.locate_file("cmr/__init__.py")))
    return distribution.version if located == here else None


__version__: str = _installed_version() or capi.cmr_version()
try:
    __git_commit__: str = importlib.resources.files("cmr").joinpath("GIT_COMMIT").read_text().strip()
except OSError:
    __git_commit__ = ""
