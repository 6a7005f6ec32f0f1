# SPDX-License-Identifier: Apache-2.0
"""The values cmr.mr's adaptors report: Statistics, the counts of a
StatisticsResourceAdaptor, and AllocationRecord, an allocation a
TrackingResourceAdaptor lists. A module of its own, fully typed and without
a stub, so that _extras.py and its stub both take them from here."""

from __future__ import annotations

import typing
from dataclasses import dataclass


@dataclass
class Statistics:
    """Counts of a StatisticsResourceAdaptor (RMM's rmm.statistics.Statistics)."""
    current_bytes: int
    current_count: int
    peak_bytes: int
    peak_count: int
    total_bytes: int
    total_count: int


class AllocationRecord(typing.NamedTuple):
    """One allocation outstanding through a TrackingResourceAdaptor: its
    address, the size asked for, the stream it was allocated on (the
    cudaStream_t as an int; 0 for the default stream), the alignment, and the
    frames of the allocating call's backtrace, innermost first ("#<i> in
    <symbol>"; empty unless the adaptor captures stacks)."""
    pointer: int
    size: int
    stream: int
    alignment: int
    stack: tuple[str, ...]
