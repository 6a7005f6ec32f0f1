# SPDX-License-Identifier: Apache-2.0
# cython: language_level=3
"""Stand-ins for CuPy's memory classes (cupy/cuda/memory.pyx), of the
shape CuPy's Cython gives them: the fields cmr_cupy_allocator writes when
it makes them directly, a vtable, a typed object field. And classes that
look alike but must not be made that way: the allocator has to find out
and call their constructors (tests/python/test_cupy_objects.py)."""

from libc.stdint cimport intptr_t


cdef class BaseMemory:
    cdef public intptr_t ptr
    cdef public size_t size
    cdef public int device_id


cdef class UnownedMemory(BaseMemory):
    cdef readonly object _owner

    def __init__(self, intptr_t ptr, size_t size, object owner, int device_id=-1):
        if device_id < 0:
            raise ValueError("the stand-in cannot ask CUDA for a pointer's device")
        self.ptr = ptr
        self.size = size
        self.device_id = device_id
        self._owner = owner


cdef class MemoryPointer:
    cdef readonly intptr_t ptr
    cdef readonly int device_id
    cdef readonly BaseMemory mem

    def __init__(self, BaseMemory mem, Py_ssize_t offset):
        self._init(mem, offset)

    cdef _init(self, BaseMemory mem, Py_ssize_t offset):
        assert mem.ptr > 0 or offset == 0
        self.ptr = mem.ptr + offset
        self.device_id = mem.device_id
        self.mem = mem

    cpdef memset_async(self, int value, size_t size):
        raise NotImplementedError("a stand-in")


cdef class CountedMemory(UnownedMemory):
    """Its __init__ does more than set the fields: not to be made directly."""
    cdef readonly int made_by_init

    def __init__(self, intptr_t ptr, size_t size, object owner, int device_id=-1):
        UnownedMemory.__init__(self, ptr, size, owner, device_id)
        self.made_by_init = 1


cdef class PickyPointer(MemoryPointer):
    """Its tp_new needs the arguments: not to be made directly."""
    def __cinit__(self, BaseMemory mem, Py_ssize_t offset):
        pass
