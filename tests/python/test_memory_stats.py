# SPDX-License-Identifier: Apache-2.0
"""cmr.memory_stats and its PyTorch-named getters over host memory, the
peaks' reset, and the out-of-memory observer: what it is told, once per
failure, and an exception in it reported through sys.unraisablehook."""

import subprocess
import sys

import pytest

import cmr
from cmr import mr

from conftest import needs_gpu


@pytest.fixture
def pool(host_mr):
    return mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20, maximum_pool_size=1 << 20)


@pytest.fixture(autouse=True)
def no_observer():
    yield
    cmr.set_oom_observer(None)


def test_a_pool_answers_with_pytorchs_names(pool):
    a = pool.allocate(1000)
    b = pool.allocate(3000)
    pool.deallocate(a, 1000)
    stats = cmr.memory_stats(pool)
    assert stats["allocated_bytes.all.current"] == 3000
    assert stats["allocated_bytes.all.peak"] == 4000
    assert stats["reserved_bytes.all.current"] == 1 << 20
    assert stats["reserved_bytes.all.peak"] == 1 << 20
    assert stats["allocation.all.current"] == 1
    assert stats["allocation.all.allocated"] == 2
    assert stats["allocation.all.freed"] == 1
    assert stats["segment.all.current"] == 1
    assert stats["num_ooms"] == 0
    assert stats["cmr.largest_free_block"] == (1 << 20) - 4096
    assert stats["cmr.bytes_free"] == (1 << 20) - 3072
    assert stats["cmr.free_blocks"] == 2
    assert "num_alloc_retries" not in stats  # a pool has no failure callback
    assert cmr.memory_allocated(pool) == 3000
    assert cmr.max_memory_allocated(pool) == 4000
    assert cmr.memory_reserved(pool) == 1 << 20
    assert cmr.max_memory_reserved(pool) == 1 << 20
    cmr.reset_peak_memory_stats(pool)
    assert cmr.max_memory_allocated(pool) == 3000
    pool.deallocate(b, 3000)
    assert cmr.memory_allocated(pool) == 0


def test_none_is_the_current_device_resource(pool):
    mr.set_current_device_resource(pool)
    ptr = pool.allocate(512)
    assert cmr.memory_allocated() == 512
    assert cmr.memory_stats() == cmr.memory_stats(pool)
    pool.deallocate(ptr, 512)


def test_a_leaf_holds_what_it_handed_out_and_knows_no_free_blocks(host_mr):
    ptr = host_mr.allocate(777)
    stats = cmr.memory_stats(host_mr)
    assert stats["reserved_bytes.all.current"] == stats["allocated_bytes.all.current"] == 777
    assert "cmr.largest_free_block" not in stats and "segment.all.current" not in stats
    host_mr.deallocate(ptr, 777)


def test_bad_arguments_raise(pool):
    with pytest.raises(TypeError, match="cmr.mr memory resource"):
        cmr.memory_stats(42)
    with pytest.raises(TypeError, match="callable"):
        cmr.set_oom_observer(42)


def test_the_observer_is_told_once_before_the_memory_error(pool):
    counted = mr.StatisticsResourceAdaptor(pool)
    events = []
    cmr.set_oom_observer(events.append)
    with pytest.raises(MemoryError) as failure:
        counted.allocate(2 << 20)
    assert len(events) == 1
    event = events[0]
    assert event.is_from(pool) and not event.is_from(counted)
    assert event.resource_type == "pool"
    assert event.bytes == 2 << 20
    assert event.stats["reserved_bytes.all.current"] == 1 << 20
    assert event.stats["num_ooms"] == 1
    assert "free by stream" in event.message
    assert event.message in str(failure.value)
    assert cmr.memory_stats(counted)["num_ooms"] == 1
    cmr.set_oom_observer(None)
    with pytest.raises(MemoryError):
        counted.allocate(2 << 20)
    assert len(events) == 1


def test_an_exception_in_the_observer_is_reported_not_lost(pool, monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)

    def broken(event):
        raise ValueError("the observer broke")

    cmr.set_oom_observer(broken)
    with pytest.raises(MemoryError):
        pool.allocate(2 << 20)
    assert len(reported) == 1
    assert isinstance(reported[0].exc_value, ValueError)
    assert str(reported[0].exc_value) == "the observer broke"


def test_the_observer_cannot_replace_itself(pool):
    answers = []

    def replacing(event):
        with pytest.raises(RuntimeError, match="inside the out-of-memory observer"):
            cmr.set_oom_observer(None)
        answers.append(event.bytes)

    cmr.set_oom_observer(replacing)
    with pytest.raises(MemoryError):
        pool.allocate(2 << 20)
    assert answers == [2 << 20]


_TORCH_PROGRAM = """
import cmr, torch
from cmr.allocators.torch import cmr_torch_allocator
pool = cmr.mr.PoolMemoryResource(cmr.mr.CudaMemoryResource(), initial_pool_size=1 << 26)
cmr.mr.set_current_device_resource(pool)
torch.cuda.memory.change_current_allocator(cmr_torch_allocator)
tensor = torch.ones(1 << 20, dtype=torch.uint8, device="cuda")
del tensor
print("cmr", cmr.max_memory_allocated(), cmr.memory_stats()["allocated_bytes.all.current"])
try:
    print("torch", torch.cuda.max_memory_allocated())
except RuntimeError as error:
    print("torch raises", str(error).splitlines()[0])
"""


@needs_gpu
def test_through_the_torch_allocator_cmr_answers_where_torch_cannot():
    """What docs/api.md says of PyTorch's statistics under its pluggable
    allocator (pytorch/pytorch#133281), checked on the PyTorch installed: in
    a process of its own, as the allocator is chosen once per process."""
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-c", _TORCH_PROGRAM], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    peak, current = map(int, lines["cmr"].split())
    assert peak >= 1 << 20 and current == 0
    assert lines["torch"].startswith("raises"), (
        f"torch.cuda.max_memory_allocated() answered {lines['torch']} through the pluggable allocator: "
        "update the PyTorch paragraph of generator/templates/api.md.j2 and python/cmr/allocators/torch.py")
