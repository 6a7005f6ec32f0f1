# SPDX-License-Identifier: Apache-2.0
"""multiprocessing's fork start method (Linux's default) while threads
allocate: the child makes its own pool and uses it, and the parent's pool
answers CMR_ERROR_FORKED there (README, ownership rule 6). The host build:
a child cannot use the CUDA its parent initialised."""

import multiprocessing
import os
import threading

import pytest

import cmr
from cmr import _capi as capi, mr

# Skipped as a file (pytest exits 5, which ctest reports as skipped).
if capi.cmr_built_with_cuda():
    pytest.skip("a forked child cannot use the CUDA its parent initialised", allow_module_level=True)
if "asan" in os.environ.get("LD_PRELOAD", ""):
    # clang 14's AddressSanitizer allocator takes no lock over a fork: the
    # child of a parent whose threads allocate may wait forever in malloc.
    pytest.skip("AddressSanitizer's allocator is not fork-safe", allow_module_level=True)

SIZES = (256, 4096, 65536)


def _allocate_until(resource, stop, rounds):
    while not stop.is_set():
        blocks = [(resource.allocate(n), n) for n in SIZES]
        for ptr, n in blocks:
            resource.deallocate(ptr, n)
        buffer = cmr.DeviceBuffer(size=1000, mr=resource)
        del buffer
        rounds.append(1)


def _in_the_child(parents_pool, results):
    own = mr.PoolMemoryResource(mr.SystemMemoryResource(), initial_pool_size=1 << 20)
    blocks = [(own.allocate(n), n) for n in SIZES]
    for ptr, n in blocks:
        own.deallocate(ptr, n)
    buffer = cmr.DeviceBuffer(size=1000)  # the child's own default resource
    try:
        parents_pool.allocate(256)
        parents = "allocated"
    except MemoryError as error:  # every failure to allocate, as in RMM
        parents = str(error)
    results.put((own.pool_size(), buffer.size, parents))


def test_a_forked_child_makes_and_uses_its_own_pool_while_the_parents_threads_allocate(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    mr.set_current_device_resource(pool)
    stop = threading.Event()
    rounds = [[] for _ in range(4)]
    threads = [threading.Thread(target=_allocate_until, args=(pool, stop, r)) for r in rounds]
    for thread in threads:
        thread.start()
    context = multiprocessing.get_context("fork")
    try:
        for _ in range(8):
            while not all(rounds):  # every thread under way
                pass
            results = context.Queue()
            child = context.Process(target=_in_the_child, args=(pool, results))
            child.start()
            child.join(60)
            stuck = child.is_alive()
            if stuck:
                child.kill()
                child.join()
            assert not stuck, "the child was stuck for 60 s"
            assert child.exitcode == 0
            pool_size, buffer_size, parents = results.get(timeout=10)
            assert pool_size == 1 << 20
            assert buffer_size == 1000
            assert "CMR_ERROR_FORKED" in parents and "before this process forked" in parents
            for r in rounds:
                r.clear()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert pool.pool_size() >= 1 << 20  # the parent's pool is as it was
