# SPDX-License-Identifier: Apache-2.0
"""cmr.statistics: statistics of the current device resource and the profiler."""

import functools

import pytest

import cmr
from cmr import mr
from cmr.statistics import (ProfilerContext, ProfilerRecords, Statistics, _get_descriptive_name_of_object,
                            enable_statistics, get_statistics, pop_statistics, profiler, push_statistics, statistics)


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
    enable_statistics()
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
    decorated = _get_descriptive_name_of_object(make)
    assert records.records[decorated] == ProfilerRecords.MemoryRecord(num_calls=2, memory_total=4000,
                                                                     memory_peak=3000)
    assert records.records["block"] == ProfilerRecords.MemoryRecord(1, 700, 700)
    report = records.report()
    assert report.index(decorated) < report.index("  block")  # ordered by peak, largest first
    assert "3,000" in report and "4,000" in report
    assert records.report("num_calls").index(decorated) < records.report("num_calls").index("  block")
    assert str(records) == report and records.pretty_print() == report
    assert ProfilerRecords().report() == "Memory Profiling\n================\n\nNo data, maybe profiling wasn't enabled?"


def test_the_report_is_rmms_table_with_its_legend():
    records = ProfilerRecords()
    records.add("small", Statistics(0, 0, 10, 1, 20, 2))
    records.add("large", Statistics(0, 0, 12345, 1, 1234567, 3))
    assert records.report() == (
        "Memory Profiling\n"
        "================\n"
        "\n"
        "Legends:\n"
        "  ncalls       - number of times the function or code block was called\n"
        "  memory_peak  - peak memory allocated in function or code block (in bytes)\n"
        "  memory_total - total memory allocated in function or code block (in bytes)\n"
        "\n"
        "Ordered by: memory_peak\n"
        "\n"
        "ncalls     memory_peak    memory_total  filename:lineno(function)\n"
        "     1          12,345       1,234,567  large\n"
        "     1              10              20  small")
    assert records.report("num_calls").splitlines()[8] == "Ordered by: num_calls"
    assert repr(records).startswith("ProfilerRecords({'small': ")


def test_the_profiler_records_nothing_without_statistics(host_current):
    """As RMM's: the profiler does not enable statistics; without them a
    profiled function or block runs and nothing is recorded."""
    records = ProfilerRecords()

    @profiler(records=records)
    def make():
        current, ptr = _allocate(100)
        current.deallocate(ptr, 100)
        return "made"

    assert make() == "made"
    with profiler(records=records, name="block"):
        _allocate(10)
    assert records.records == {}
    assert mr.get_current_device_resource() is host_current
    assert "No data" in records.report()


def test_profiler_is_a_profiler_context(host_current):
    context = profiler(name="block")
    assert isinstance(context, ProfilerContext)
    enable_statistics()
    records = ProfilerRecords()
    block = ProfilerContext(records, "again")
    for nbytes in (100, 300):  # one context entered twice
        with block as entered:
            assert entered is block
            current, ptr = _allocate(nbytes)
            current.deallocate(ptr, nbytes)
    assert records.records["again"] == ProfilerRecords.MemoryRecord(2, 400, 300)
    assert get_statistics().total_bytes == 400  # the levels were popped into the base


def test_the_descriptive_name_is_rmms():
    def inner():
        pass

    name = _get_descriptive_name_of_object(inner)
    assert name == f"{__file__}:{inner.__code__.co_firstlineno}({inner.__qualname__})"
    wrapped = functools.wraps(inner)(lambda: None)
    assert _get_descriptive_name_of_object(wrapped) == name  # what it wraps, as RMM's
    with pytest.raises(TypeError):
        _get_descriptive_name_of_object(42)


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
