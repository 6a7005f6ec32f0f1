# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.utils: RMM's as_stream."""

from .._streams import as_stream

__all__ = ["as_stream"]
