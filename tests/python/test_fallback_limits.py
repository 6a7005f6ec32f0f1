# SPDX-License-Identifier: Apache-2.0
"""cmr.mr.FallbackResourceAdaptor over a primary that runs out, and limits as
fractions and moved at run time (LimitingResourceAdaptor.set_limit), from
Python; the generated tests cover the shared surface and the spec's
expectations."""

import gc

import pytest

from cmr import mr


def test_what_the_primary_refuses_the_fallback_serves(host_mr):
    primary = mr.LimitingResourceAdaptor(host_mr, allocation_limit=4096)
    counted = mr.StatisticsResourceAdaptor(host_mr)
    both = mr.FallbackResourceAdaptor(primary, counted)
    first = both.allocate(4096)
    second = both.allocate(1000)
    assert primary.allocated_bytes() == 4096
    assert counted.bytes_current() == 1000
    assert (both.fallback_allocations(), both.fallback_bytes()) == (1, 1000)
    both.deallocate(second, 1000)
    assert both.fallback_bytes() == 0
    both.deallocate(first, 4096)
    assert primary.allocated_bytes() == 0


def test_both_out_of_memory_is_a_memory_error(host_mr):
    both = mr.FallbackResourceAdaptor(mr.LimitingResourceAdaptor(host_mr, allocation_limit=256),
                                      mr.LimitingResourceAdaptor(host_mr, allocation_limit=512))
    with pytest.raises(MemoryError):
        both.allocate(1000)
    assert both.fallback_allocations() == 0


def test_the_fallback_lives_as_long_as_the_adaptor(host_mr):
    both = mr.FallbackResourceAdaptor(mr.LimitingResourceAdaptor(host_mr, allocation_limit=256),
                                      mr.StatisticsResourceAdaptor(host_mr))
    gc.collect()
    ptr = both.allocate(4096)  # served by the fallback, whose only Python reference was dropped
    assert both.fallback_bytes() == 4096
    both.deallocate(ptr, 4096)


def test_a_limit_as_a_fraction_of_free_memory(host_mr):
    free, total = mr.available_device_memory()
    limiting = mr.LimitingResourceAdaptor(host_mr, allocation_limit="50%")
    assert 0 < limiting.allocation_limit() <= total // 2
    assert limiting.allocation_limit() % 256 == 0
    with pytest.raises(ValueError):
        mr.LimitingResourceAdaptor(host_mr, allocation_limit="101%")


def test_set_limit_below_the_count_waits_for_frees(host_mr):
    limiting = mr.LimitingResourceAdaptor(host_mr, allocation_limit="1MiB")
    ptr = limiting.allocate(4096)
    limiting.set_limit(2048)
    assert limiting.allocation_limit() == 2048
    with pytest.raises(MemoryError):
        limiting.allocate(256)
    limiting.deallocate(ptr, 4096)
    limiting.deallocate(limiting.allocate(2048), 2048)
    _, total = mr.available_device_memory()
    limiting.set_limit("1%")
    assert 0 < limiting.allocation_limit() <= total // 100
