# SPDX-License-Identifier: Apache-2.0
"""level_enum, the levels of cmr.pylibrmm.logger: a module of its own, fully
typed and without a stub, so that logger.py and its stub both take it from
here."""

from __future__ import annotations

from enum import IntEnum


class level_enum(IntEnum):  # noqa: N801 (RMM's name)
    """The log's levels, from the most verbose; `off` logs nothing.
    n_levels counts them (RMM's enum has it too); it is no level."""
    trace = 0
    debug = 1
    info = 2
    warn = 3
    error = 4
    critical = 5
    off = 6
    n_levels = 7
