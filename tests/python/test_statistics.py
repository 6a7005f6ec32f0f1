# SPDX-License-Identifier: Apache-2.0
"""cmr.statistics: statistics of the current device resource and the profiler."""

import pytest

import cmr
from cmr import mr
from cmr.statistics import (ProfilerRecords, Statistics, enable_statistics, get_statistics, pop_statistics,
                            profiler, push_statistics, statistics)


@pytest.fixture
def host_current(host_mr):
    mr.set_current_device_resource(host_mr)
    return host_mr


def _allocate(nbytes):
    current = mr.get_current_device_resource()
    return current, current.allocate(nbytes)


def test_without_statistics_there_are_none(host_current):
    assert get_statistics() is None and push_statistics() is None and pop_statistics() is None


def test_enable_wraps_the_current_resource_once(host_current):
    enable_statistics()
    stats = mr.get_current_device_resource()
    assert isinstance(stats, mr.StatisticsResourceAdaptor) and stats.upstream_mr is host_current
    enable_statistics()
    assert mr.get_current_device_resource() is stats
    current, ptr = _allocate(1000)
    assert get_statistics() == Statistics(1000, 1, 1000, 1, 1000, 1)
    current.deallocate(ptr, 1000)
    assert get_statistics() == Statistics(0, 0, 1000, 1, 1000, 1)


def test_push_and_pop_levels(host_current):
    enable_statistics()
    current, a = _allocate(1000)
    assert push_statistics() == Statistics(1000, 1, 1000, 1, 1000, 1)
    _, b = _allocate(300)
    assert get_statistics() == Statistics(300, 1, 300, 1, 300, 1)  # the pushed level's own counts, as RMM's
    popped = pop_statistics()
    assert popped == Statistics(300, 1, 300, 1, 300, 1)
    # The base level's peak becomes the larger of its own and its value (1000) plus the popped peak.
    assert get_statistics() == Statistics(1300, 2, 1300, 2, 1300, 2)
    current.deallocate(a, 1000)
    current.deallocate(b, 300)


def test_a_level_that_frees_older_memory_counts_negative(host_current):
    """RMM's example: 10 bytes allocated in a pushed level over 20 allocated
    before count 10 there (cmr once reported 30, the total outstanding), and
    a level freeing what was allocated before its push goes negative."""
    enable_statistics()
    current, a = _allocate(20)
    push_statistics()
    _, b = _allocate(10)
    assert get_statistics() == Statistics(10, 1, 10, 1, 10, 1)
    push_statistics()
    current.deallocate(a, 20)
    assert get_statistics() == Statistics(-20, -1, 0, 0, 0, 0)
    assert pop_statistics() == Statistics(-20, -1, 0, 0, 0, 0)
    assert get_statistics() == Statistics(-10, 0, 10, 1, 10, 1)
    assert pop_statistics() == Statistics(-10, 0, 10, 1, 10, 1)
    assert get_statistics() == Statistics(10, 1, 30, 2, 30, 2)
    current.deallocate(b, 10)
    assert get_statistics() == Statistics(0, 0, 30, 2, 30, 2)
    with pytest.raises(IndexError):
        pop_statistics()


def test_the_context_manager_enables_and_restores(host_current):
    with statistics():
        stats = mr.get_current_device_resource()
        assert isinstance(stats, mr.StatisticsResourceAdaptor)
        current, ptr = _allocate(256)
        assert get_statistics().total_bytes == 256
        current.deallocate(ptr, 256)
    assert mr.get_current_device_resource() is host_current


def test_the_context_manager_nests_levels_and_survives_exceptions(host_current):
    enable_statistics()
    stats = mr.get_current_device_resource()
    with pytest.raises(KeyError):
        with statistics():
            _allocate(512)
            assert stats.counter_levels() == 2
            raise KeyError("inside")
    assert stats.counter_levels() == 1 and mr.get_current_device_resource() is stats
    assert get_statistics().total_bytes == 512


def test_replacing_the_resource_inside_is_an_error(host_current):
    with pytest.raises(ValueError, match="replaced inside"):
        with statistics():
            mr.set_current_device_resource(host_current)


def test_the_bodys_exception_is_not_masked(host_current):
    with pytest.raises(KeyError, match="the body's"):
        with statistics():
            mr.set_current_device_resource(host_current)
            raise KeyError("the body's")


def test_profiler_as_decorator_and_context_manager(host_current):
    records = ProfilerRecords()

    @profiler(records=records)
    def make(nbytes):
        current, ptr = _allocate(nbytes)
        current.deallocate(ptr, nbytes)
        return nbytes

    assert make(1000) == 1000 and make(3000) == 3000
    with profiler(records=records, name="block"):
        current, ptr = _allocate(700)
        current.deallocate(ptr, 700)
    (decorated,) = [name for name in records.records if name.endswith("make)")]
    assert "test_statistics.py:" in decorated
    assert records.records[decorated] == ProfilerRecords.MemoryRecord(num_calls=2, memory_total=4000,
                                                                     memory_peak=3000)
    assert records.records["block"] == ProfilerRecords.MemoryRecord(1, 700, 700)
    report = records.report()
    assert report.index(decorated) < report.index("block")  # ordered by peak, largest first
    assert "3000" in report and "4000" in report
    assert records.report("num_calls").index(decorated) < records.report("num_calls").index("block")
    table = str(records)  # RMM's pretty_print
    assert table.startswith("Memory Profiling\n================\n\nOrdered by:   memory_peak\n")
    assert table.index(decorated) < table.index("block") and "3,000" in table and "4,000" in table
    assert ProfilerRecords.Data is ProfilerRecords.MemoryRecord
    assert ProfilerRecords().pretty_print().endswith("No data, maybe profiling wasn't enabled?")


def test_profiler_bad_inputs():
    with pytest.raises(ValueError, match="needs a name"):
        with profiler():
            pass
    with pytest.raises(TypeError):
        profiler(records={})
    with pytest.raises(TypeError):
        profiler(name=5)
    with pytest.raises(TypeError):
        profiler()(42)
    with pytest.raises(ValueError, match="ordered_by"):
        ProfilerRecords().report("speed")
    with pytest.raises(TypeError):
        ProfilerRecords().add("x", {"total_bytes": 1})


def test_the_module_is_in_the_package():
    assert cmr.statistics.get_statistics is get_statistics
