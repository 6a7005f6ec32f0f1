# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.helper: RMM's parse_bytes, by cmr's one size grammar (cmr._bytes)."""

from .._bytes import parse_bytes

__all__ = ["parse_bytes"]
