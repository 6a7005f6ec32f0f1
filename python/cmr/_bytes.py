# SPDX-License-Identifier: Apache-2.0
"""Byte counts written as text, by cmr's one size grammar (spec/README.md,
"Sizes"), read by the C library's own parser (cmr_parse_size), so Python,
stack expressions and every binding accept exactly the same texts: a whole
or decimal number, optionally blanks and a unit (B, KB, MB, GB, TB, PB,
KiB, MiB, GiB, TiB, PiB, in any case), or a whole percentage of the current
device's free memory ("80%"). A decimal must come to whole bytes."""

from __future__ import annotations

from . import _capi as capi
from ._errors import SizeRangeError


def parse_bytes(text: int | str) -> int:
    """The number of bytes `text` says, e.g. parse_bytes("1.5GiB") == 1610612736.
    An int is returned as it is (as RMM's parse_bytes does), if it fits in
    [0, 2**64). Anything outside the grammar raises ValueError."""
    if isinstance(text, int) and not isinstance(text, bool):
        if not 0 <= text < 2**64:
            raise SizeRangeError(f"{text} bytes is outside [0, 2**64)")
        return text
    if not isinstance(text, str):
        raise TypeError(f"parse_bytes takes a str or an int, not {type(text).__name__}")
    if "\0" in text:  # C would stop reading there
        raise ValueError(f"Could not parse {text!r} as a byte specification: it holds a NUL character")
    return capi.cmr_parse_size(text)
