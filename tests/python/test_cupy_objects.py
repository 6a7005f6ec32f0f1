# SPDX-License-Identifier: Apache-2.0
"""cmr_cupy_allocator's CuPy objects made directly (python/swig/cupy_objects.swg),
over Cython stand-ins for CuPy's UnownedMemory and MemoryPointer built here
with Debian's cython3 (tests/python/cython/cupy_memory_standin.pyx): where
their fields lie is learned and checked at set-up; classes that look alike
but whose constructors do more, or whose tp_new needs arguments, are called
as before. Skipped where there is no cython3."""

import gc
import importlib
import inspect
import pathlib
import sys
import threading
import types
import weakref

import pytest
from conftest import cython_extension

import cmr
import cmr.allocators.cupy  # noqa: F401  (makes cmr.DeviceBuffer's type, which the allocator makes)
from cmr import _capi as capi, mr

STANDIN = pathlib.Path(__file__).parent / "cython" / "cupy_memory_standin.pyx"
DEFAULT_STREAM = types.SimpleNamespace(ptr=0)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return cython_extension(STANDIN, tmp_path_factory.mktemp("cupy_standin"), link_cmr=False)


@pytest.fixture
def allocator_over():
    """allocator_over(UnownedMemory, MemoryPointer): the allocator over
    those classes (the set-up is the process's: the module's own allocator
    is made again afterwards)."""
    yield lambda unowned, pointer: capi.cmr_py_cupy_allocator(lambda: DEFAULT_STREAM, unowned, pointer, None)
    importlib.reload(importlib.import_module("cmr.allocators.cupy"))


@pytest.fixture
def stats(host_mr):
    counted = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(counted)
    return counted


def direct_allocator(standin, allocator_over):
    """The allocator over the stand-ins, which it makes directly."""
    allocate = allocator_over(standin.UnownedMemory, standin.MemoryPointer)
    assert capi.cmr_py_cupy_makes_objects_directly()
    return allocate


def _check_pointer(pointer, pointer_type, memory_type, nbytes, stats):
    memory = pointer.mem
    buffer = memory._owner
    assert type(pointer) is pointer_type and type(memory) is memory_type
    assert isinstance(buffer, cmr.DeviceBuffer) and buffer.size == nbytes and buffer.mr is stats
    assert pointer.ptr == memory.ptr == buffer.ptr
    assert memory.size == nbytes
    assert pointer.device_id == memory.device_id == capi.cmr_current_device()
    assert buffer._stream is DEFAULT_STREAM  # CuPy's current stream (here without its C function)
    return buffer


def test_the_stand_ins_are_made_directly_and_hold_what_the_constructors_would(standin, allocator_over, stats):
    allocate = direct_allocator(standin, allocator_over)
    pointer = allocate(1000)
    buffer = _check_pointer(pointer, standin.MemoryPointer, standin.UnownedMemory, 1000, stats)
    assert buffer.ptr != 0 and stats.allocation_counts.current_bytes == 1000
    # The same objects through the constructors, field for field.
    called = standin.MemoryPointer(standin.UnownedMemory(buffer.ptr, 1000, buffer, pointer.device_id), 0)
    assert (called.ptr, called.device_id, called.mem.ptr, called.mem.size, called.mem.device_id) == \
        (pointer.ptr, pointer.device_id, pointer.mem.ptr, pointer.mem.size, pointer.mem.device_id)
    # The collector sees what each holds.
    assert pointer.mem in gc.get_referents(pointer) and buffer in gc.get_referents(pointer.mem)
    freed = weakref.ref(buffer)
    del pointer, buffer, called
    gc.collect()
    assert freed() is None and stats.allocation_counts.current_bytes == 0


def test_a_zero_byte_allocation_is_made_directly_too(standin, allocator_over, stats):
    allocate = direct_allocator(standin, allocator_over)
    pointer = allocate(0)
    _check_pointer(pointer, standin.MemoryPointer, standin.UnownedMemory, 0, stats)
    assert pointer.ptr == 0


def test_objects_made_directly_keep_every_reference_count_right(standin, allocator_over, stats):
    """The fields a bare object holds (None) are given back when they are
    filled; the pointer holds the memory, the memory the buffer, and each
    lets go once."""
    allocate = direct_allocator(standin, allocator_over)
    for _ in range(100):
        allocate(64)
    nones = sys.getrefcount(None)
    pointers = [allocate(64) for _ in range(1000)]
    buffers = [weakref.ref(pointer.mem._owner) for pointer in pointers]
    assert all(sys.getrefcount(pointer.mem) == 2 for pointer in pointers)  # the pointer's, and the argument's
    assert stats.allocation_counts.current_bytes == 64 * 1000
    del pointers
    assert all(buffer() is None for buffer in buffers) and stats.allocation_counts.current_bytes == 0
    # A lost or extra reference to the placeholders would move None's count by 1,000 or more (on Python 3.12+
    # None is immortal: its count does not move, and a wrong one would do no harm; CI's 3.11 checks it).
    assert abs(sys.getrefcount(None) - nones) < 50


@pytest.mark.parametrize("memory_name, pointer_name", [("CountedMemory", "MemoryPointer"),
                                                        ("UnownedMemory", "PickyPointer")])
def test_classes_that_must_not_be_made_directly_are_called(standin, allocator_over, stats, memory_name,
                                                           pointer_name):
    """CountedMemory's __init__ sets a field of its own (a direct object
    would differ from the constructor's); PickyPointer's tp_new needs the
    arguments. The allocator finds out at set-up and calls them."""
    memory_type, pointer_type = getattr(standin, memory_name), getattr(standin, pointer_name)
    allocate = allocator_over(memory_type, pointer_type)
    assert not capi.cmr_py_cupy_makes_objects_directly()
    pointer = allocate(1000)
    _check_pointer(pointer, pointer_type, memory_type, 1000, stats)
    if memory_name == "CountedMemory":
        assert pointer.mem.made_by_init == 1
    del pointer
    assert stats.allocation_counts.current_bytes == 0


def test_python_classes_and_factories_are_called(allocator_over, stats):
    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id):
            self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr, self.device_id = mem, mem.ptr + offset, mem.device_id

    for memory_type, pointer_type in ((UnownedMemory, MemoryPointer),
                                      (lambda *args: UnownedMemory(*args), lambda *args: MemoryPointer(*args))):
        allocate = allocator_over(memory_type, pointer_type)
        assert not capi.cmr_py_cupy_makes_objects_directly()
        _check_pointer(allocate(100), MemoryPointer, UnownedMemory, 100, stats)
    assert stats.allocation_counts.current_bytes == 0


def test_a_python_subclass_of_the_classes_is_called(standin, allocator_over, stats):
    """Its __init__ may do what leaves no trace in the object (here: count
    the calls), so a class written in Python is never made directly."""
    made = []

    class Counted(standin.UnownedMemory):
        __slots__ = ()

        def __init__(self, *args):
            super().__init__(*args)
            made.append(1)

    allocate = allocator_over(Counted, standin.MemoryPointer)
    assert not capi.cmr_py_cupy_makes_objects_directly()
    calls = len(made)
    _check_pointer(allocate(100), standin.MemoryPointer, Counted, 100, stats)
    assert len(made) == calls + 1


def test_a_refused_allocation_makes_no_objects(standin, allocator_over, host_mr):
    limited = mr.StatisticsResourceAdaptor(mr.LimitingResourceAdaptor(host_mr, 4096))
    mr.set_current_device_resource(limited)
    allocate = direct_allocator(standin, allocator_over)
    kept = allocate(4096)

    def made():
        gc.collect()
        kinds = (cmr.DeviceBuffer, standin.UnownedMemory, standin.MemoryPointer)
        return sum(isinstance(thing, kinds) for thing in gc.get_objects())

    objects = made()
    with pytest.raises(MemoryError):
        allocate(1)
    assert made() == objects == 3
    del kept
    assert limited.allocation_counts.current_bytes == 0
    with pytest.raises(TypeError, match="nbytes must be an int"):
        allocate("1000")
    with pytest.raises(OverflowError):
        allocate(-1)


def test_threads_allocating_directly_lose_nothing(standin, allocator_over, stats):
    allocate = direct_allocator(standin, allocator_over)
    errors = []

    def work(seed):
        try:
            kept = []
            for i in range(3000):
                kept.append(allocate(1 + (seed * 7919 + i * 104729) % 5000))
                if len(kept) > 16:
                    kept.pop(i % len(kept))
            for pointer in kept:
                assert pointer.mem._owner.size == pointer.mem.size
        except BaseException as error:  # noqa: BLE001 (any failure reaches the assertion below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and stats.allocation_counts.current_bytes == 0


def test_the_allocator_shows_its_parameter():
    """help() and inspect.signature read what CuPy's users pass (nbytes)."""
    allocator = capi.cmr_py_cupy_allocator(lambda: DEFAULT_STREAM, lambda *args: None, lambda *args: None, None)
    assert list(inspect.signature(allocator).parameters) == ["nbytes"]
