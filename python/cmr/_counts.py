# SPDX-License-Identifier: Apache-2.0
"""Statistics, the counts a StatisticsResourceAdaptor reports: a module of
its own, fully typed and without a stub, so that _extras.py and its stub
both take it from here."""

from __future__ import annotations

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
