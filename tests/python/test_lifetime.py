# SPDX-License-Identifier: Apache-2.0
"""Lifetimes: Python may drop cmr objects in any order, in cycles, while
memory from them is outstanding, and nothing crashes or leaks."""

import ctypes
import gc
import weakref

import pytest

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
    cmr._capi.cmr_reset_current_device_resource_ref()
    cmr._per_device._per_device_mrs.clear()
    ptr = first.allocate(100)  # the table let go; this object's share keeps the stack's top
    assert first.allocation_counts.current_bytes == 100
    first.deallocate(ptr, 100)


def _gone(ref) -> None:
    with pytest.raises(RuntimeError, match="DESTROYED_HANDLE"):
        cmr._capi.cmr_allocate(ref, 256, 0)


def test_objects_made_from_the_tables_ref_hold_one_share_each(host_mr):
    """An entry set from C comes back as an object of its class (its handle
    from _from_ref): each holds exactly one share, so it works once every
    other owner let go, and the pool goes (giving its chunk back) when the
    last one does."""
    base = mr.StatisticsResourceAdaptor(host_mr)
    pool = mr.PoolMemoryResource(base, initial_pool_size=1 << 20)
    ref = pool.ref
    cmr._capi.cmr_set_current_device_resource_ref(ref)  # set from C: Python keeps no object for it
    wrapped = [mr.get_current_device_resource() for _ in range(3)]
    assert all(type(w) is mr.PoolMemoryResource and w is not pool for w in wrapped)
    cmr._capi.cmr_reset_current_device_resource_ref()
    del pool
    gc.collect()
    for w in wrapped:
        w.deallocate(w.allocate(1000), 1000)
    assert base.allocation_counts.current_bytes == 1 << 20
    del w, wrapped
    gc.collect()
    assert base.allocation_counts.current_bytes == 0
    _gone(ref)


def test_a_stack_expressions_top_holds_one_share():
    top = cmr._reinitialize._from_expression("statistics(limiting(system, allocation_limit=1MiB))")
    ref = top.ref
    top.deallocate(top.allocate(1000), 1000)  # the stack is gone; the top's share keeps it all
    del top
    gc.collect()
    _gone(ref)
