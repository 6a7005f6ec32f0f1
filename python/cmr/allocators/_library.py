# SPDX-License-Identifier: Apache-2.0
"""Where the libcmr this process loaded lives: the pluggable allocator of
PyTorch loads the same library by path, so that both share one per-device
table."""

from __future__ import annotations

import os

from .. import _capi as capi  # loads cmr's extension, and with it libcmr

_NAME = "libcmr.so"


def library_path() -> str:
    """The path of the libcmr mapped into this process (Linux reads it from
    /proc/self/maps), else the one installed beside the package."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:  # address perms offset device inode [path]
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith(_NAME):
                    return fields[5].strip()
    except OSError:
        pass
    beside = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(capi.__file__))), _NAME)
    if os.path.exists(beside):
        return beside
    raise RuntimeError(f"cmr: cannot find the {_NAME} this process uses (not in /proc/self/maps, not at {beside})")
