"""Lifetimes: Python may drop cmr objects in any order, in cycles, while
memory from them is outstanding, and nothing crashes or leaks."""

import ctypes
import gc
import weakref

import cmr
from cmr import mr


def test_an_adaptor_outlives_its_upstreams_python_name(host_mr):
    stats = mr.StatisticsResourceAdaptor(mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20))
    del host_mr
    gc.collect()
    ptr = stats.allocate(4096)
    ctypes.memset(ptr, 3, 4096)
    stats.deallocate(ptr, 4096)
    assert stats.upstream_mr.upstream_mr.type_name == "system"


def test_memory_freed_after_its_resource_object_is_gone(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    pool = mr.PoolMemoryResource(stats, initial_pool_size=0)
    ptr = pool.allocate(1000)
    mr.set_current_device_resource(pool)
    del pool
    gc.collect()
    again = mr.get_current_device_resource()  # the table's object, still holding the pool
    again.deallocate(ptr, 1000)
    mr.set_current_device_resource(host_mr)
    del again
    gc.collect()
    assert stats.allocation_counts.current_bytes == 0  # the pool gave its chunk back when it went


def test_cycles_of_resources_are_collected(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    pool = mr.PoolMemoryResource(stats, initial_pool_size=1 << 20)
    pool.partner = stats
    stats.partner = pool  # a cycle Python alone can break
    watch = weakref.ref(pool)
    del pool
    gc.collect()
    assert watch() is not None  # stats keeps it
    del stats
    gc.collect()
    assert watch() is None


def test_wrapped_refs_hold_a_share():
    cmr.reinitialize(resource="statistics(system)")
    first = mr.get_current_device_resource()
    cmr.capi.cmr_reset_current_device_resource_ref()
    cmr._per_device._per_device_mrs.clear()
    ptr = first.allocate(100)  # the table let go; this object's share keeps the stack's top
    assert first.allocation_counts.current_bytes == 100
    first.deallocate(ptr, 100)
