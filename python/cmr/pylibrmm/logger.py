# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.logger: RMM's debug-logger functions over cmr's C
diagnostic log (log.h: levels trace..off, a file or stderr as its sink,
also set by environment variable), which every language shares.

Levels are level_enum members, as in RMM; anything else is a TypeError."""

from __future__ import annotations

import warnings

from .. import _capi as capi
from ._log_levels import level_enum


def _c_level(level) -> int:
    if not isinstance(level, level_enum):
        raise TypeError("level must be an instance of the level_enum enum")
    if level is level_enum.n_levels:
        raise ValueError("level_enum.n_levels counts the levels: it is no level")
    return int(level)


def _set(level, setter: str) -> None:
    """Sets a level through capi.<setter>; warns, as RMM does, when messages of it would not be logged."""
    c_level = _c_level(level)
    getattr(capi, setter)(c_level)
    if level is not level_enum.off and not should_log(level):
        warnings.warn(f"cmr will not log level_enum.{level.name}. This may be because the C library is "
                      "compiled for a less-verbose logging level.")


def should_log(level: level_enum) -> bool:
    """Whether a message at `level` would be logged now."""
    c_level = _c_level(level)
    return bool(capi.cmr_log_should_log(c_level))


def set_logging_level(level: level_enum) -> None:
    """Logs messages of `level` and above from now on."""
    _set(level, "cmr_log_set_level")


def get_logging_level() -> level_enum:
    """The level from which messages are logged."""
    return level_enum(capi.cmr_log_get_level())


def flush_logger() -> None:
    """Writes out what the log holds buffered."""
    capi.cmr_log_flush()


def set_flush_level(level: level_enum) -> None:
    """Messages of `level` and above are flushed as soon as they are written."""
    _set(level, "cmr_log_set_flush_level")


def get_flush_level() -> level_enum:
    """The level from which messages are flushed at once."""
    return level_enum(capi.cmr_log_get_flush_level())


def set_log_file(path: str | None) -> None:
    """cmr's own: sends the log to the file `path` (appended), or to stderr when None or ""."""
    if path is not None and not isinstance(path, str):
        raise TypeError(f"path must be a str or None, not {type(path).__name__}")
    if path and "\0" in path:
        raise ValueError("path must not contain a NUL character")
    capi.cmr_log_set_file(path or "")


def get_log_file() -> str | None:
    """cmr's own: the file the log goes to; None for stderr."""
    return capi.cmr_log_get_file() or None


__all__ = ["flush_logger", "get_flush_level", "get_log_file", "get_logging_level", "level_enum", "set_flush_level",
           "set_log_file", "set_logging_level", "should_log"]
