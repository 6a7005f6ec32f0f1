# SPDX-License-Identifier: Apache-2.0
"""Allocation history and memory snapshots, with PyTorch's names.

``record_history()`` starts cmr's process-wide history (cmr/history.h): every
allocation and free through any cmr resource, the suballocators' growth from
and release to their upstreams, out-of-memory failures and failure-callback
retries, each with its time, stream, address, size and, as asked, its call
stack: C frames, and Python frames for the calls made from Python (the
resources' ``allocate``, ``DeviceBuffer``, the CuPy and Numba allocators: the
calls that keep the GIL) and for PyTorch's allocations through
``cmr.allocators.torch`` (its entry points take the GIL for them before they
enter cmr, as PyTorch's own history does); a call made while cmr has let the
GIL go, to wait, or from a thread that runs no Python, has C frames only.
``snapshot()`` is the dict ``torch.cuda.memory._snapshot()``
returns, for a cmr resource stack: its segments (each chunk its
suballocators hold, with their blocks) and the history's events of that
stack; ``dump_snapshot()`` pickles it as ``torch.cuda.memory._dump_snapshot``
does, so PyTorch's ``torch.cuda._memory_viz`` and cmr's report
(``python3 -m cmr.viz``) open it. Recording costs nothing measurable while it
is off.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

from . import _capi as capi

__all__ = ["record_history", "is_recording", "snapshot", "dump_snapshot"]

_STACKS = {"all": (True, True), "python": (False, True), "c": (True, False), None: (False, False)}
_PICKLE = 1  # CMR_SNAPSHOT_PICKLE (cmr/history.h)
_C_STACKS = 1  # CMR_HISTORY_C_STACKS


def record_history(enabled: str | None = "all", *, stacks: str | None = "all", max_entries: int = 65536,
                   stack_depth: int = 16) -> None:
    """Starts recording (``enabled="all"``) into a new, empty history of at most
    ``max_entries`` events (the oldest are overwritten), or stops it
    (``enabled=None``; what was recorded stays in snapshots until the next
    start). ``stacks``: ``"all"`` (C and Python frames), ``"python"``, ``"c"`` or
    None, each at most ``stack_depth`` frames deep (C: at most 64)."""
    if enabled is None or enabled is False:
        capi.cmr_history_stop()
        return
    if enabled not in ("all", True):
        raise ValueError(f'enabled must be "all" or None, not {enabled!r}')
    if stacks not in _STACKS:
        raise ValueError(f'stacks must be "all", "python", "c" or None, not {stacks!r}')
    for name, value in (("max_entries", max_entries), ("stack_depth", stack_depth)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, not {value!r}")
    c_frames, python_frames = _STACKS[stacks]
    capi.cmr_py_history_start(max_entries, _C_STACKS if c_frames else 0, min(stack_depth, 64) if c_frames else 0,
                              stack_depth if python_frames else 0)


def is_recording() -> bool:
    """Whether the history is recording."""
    return bool(capi.cmr_history_recording())


def _with_python_frames(entry: dict[str, Any]) -> None:
    token = entry.pop("context", None)
    if token is None:
        return
    frames = capi.cmr_py_history_frames(token)
    if frames:  # innermost first, after the C frames (which are inside the Python call)
        entry["frames"] = list(entry.get("frames", [])) + [
            {"filename": filename, "line": line, "name": name} for filename, line, name in frames]


def snapshot(mr=None) -> dict[str, Any]:
    """PyTorch's memory-snapshot dict for the resource stack ``mr`` (default:
    the current device's resource): ``segments`` (``address``, ``total_size``,
    ``stream``, ``segment_type``, ``allocated_size``, ``active_size``,
    ``requested_size``, ``blocks`` with ``address``, ``size``, ``requested_size``,
    ``state`` and ``frames``) and ``device_traces`` (``action``, ``addr``, ``size``,
    ``stream``, ``time_us``, ``frames``), plus cmr's own (``resource`` on segments
    and events, ``cmr``). docs/diagnosing-memory.md says what each means."""
    from ._resource import _ref_of
    from .mr import get_current_device_resource
    ref = _ref_of(get_current_device_resource() if mr is None else mr, "mr")
    data: dict[str, Any] = pickle.loads(capi.cmr_snapshot_bytes(ref, _PICKLE))
    for segment in data["segments"]:
        for block in segment["blocks"]:
            _with_python_frames(block)
    for trace in data["device_traces"]:
        for entry in trace:
            _with_python_frames(entry)
    for entry in data["cmr"]["retries"]:
        _with_python_frames(entry)
    return data


def dump_snapshot(filename: str | os.PathLike[str] = "dump_snapshot.pickle", mr=None) -> None:
    """Pickles ``snapshot(mr)`` to ``filename``, as
    ``torch.cuda.memory._dump_snapshot`` does."""
    with open(filename, "wb") as f:
        pickle.dump(snapshot(mr), f)
