# SPDX-License-Identifier: Apache-2.0
"""The calls made per allocation, which the extension does in C
(python/swig/fast_*.swg): their arguments, the double-free guard's
table under many live allocations, DeviceBuffer's construction paths, the
current device's resource, threads, and CuPy's allocator over a stand-in
for CuPy (the real one runs on the GPU machine)."""

import ctypes
import gc
import faulthandler
import importlib
import random
import sys
import threading
import types
import weakref

import pytest

import cmr
from cmr import _capi as capi, mr
from conftest import pluggable_library


@pytest.fixture
def pool(host_mr):
    return mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 22)


def test_allocate_and_deallocate_take_rmms_keywords(pool):
    ptr = pool.allocate(nbytes=100, stream=cmr.DEFAULT_STREAM)
    pool.deallocate(ptr=ptr, nbytes=100, stream=0)
    ptr = pool.allocate(100, stream=cmr.Stream(2))
    pool.deallocate(ptr, nbytes=100)
    with pytest.raises(TypeError, match="unexpected keyword argument 'size'"):
        pool.allocate(size=100)
    with pytest.raises(TypeError, match="missing required argument 'nbytes'"):
        pool.allocate()
    with pytest.raises(TypeError, match="multiple values for argument 'nbytes'"):
        pool.allocate(100, nbytes=100)
    with pytest.raises(TypeError, match="at most 3 arguments"):
        pool.deallocate(1, 2, 3, 4)
    with pytest.raises(TypeError, match="nbytes must be an int, not str"):
        pool.allocate("100")
    with pytest.raises(OverflowError):
        pool.allocate(-1)
    pool.deallocate(0, 123)  # nothing was allocated at 0: nothing to do


def test_the_guard_follows_many_live_allocations_freed_in_any_order(pool, host_mr):
    """Thousands of live addresses over two resources (the guard's table
    grows, and every removal keeps the others findable)."""
    sizes = [16 + (i * 37) % 700 for i in range(3000)]
    handed_out = [(pool, pool.allocate(n), n) for n in sizes] + [(host_mr, host_mr.allocate(n), n) for n in sizes[:500]]
    random.Random(18).shuffle(handed_out)
    for resource, ptr, n in handed_out[::2]:
        resource.deallocate(ptr, n)
    for resource, ptr, n in handed_out[::2]:
        with pytest.raises(ValueError, match="freed already"):
            resource.deallocate(ptr, n)
    for resource, ptr, n in handed_out[1::2]:
        with pytest.raises(ValueError, match=f"allocated with {n} bytes, not {n + 1}"):
            resource.deallocate(ptr, n + 1)
        resource.deallocate(ptr, n)


def test_a_second_object_over_the_same_resource_frees_what_the_first_allocated(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(stats)
    ptr = stats.allocate(64)
    capi_ref = cmr._capi.cmr_acquire_current_device_resource_ref()
    try:
        twin = cmr.mr._wrap_ref(capi_ref)
    finally:
        cmr._capi.cmr_ref_release(capi_ref)
    assert twin is not stats and twin._identity == stats._identity
    twin.deallocate(ptr, 64)
    assert stats.allocation_counts.current_bytes == 0


def test_threads_allocate_and_free_at_once(pool):
    failures = []

    def work():
        try:
            for i in range(2000):
                n = 8 + i % 300
                pool.deallocate(pool.allocate(n), n)
        except Exception as error:  # noqa: BLE001  (reported below)
            failures.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_device_buffer_construction_paths(pool):
    assert cmr.DeviceBuffer(size="1KiB", mr=pool).size == 1024  # not a plain int: _args.size
    with pytest.raises(TypeError, match="keyword arguments only"):
        cmr.DeviceBuffer(10)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nbytes'"):
        cmr.DeviceBuffer(nbytes=10, mr=pool)
    with pytest.raises(TypeError, match="mr must be a cmr.mr.DeviceMemoryResource, not str"):
        cmr.DeviceBuffer(size=10, mr="pool")
    with pytest.raises(TypeError, match="size must be an int"):
        cmr.DeviceBuffer(size=1.5, mr=pool)
    with pytest.raises(ValueError, match=r"size must be in \[0, 2\*\*64\)"):
        cmr.DeviceBuffer(size=-1, mr=pool)
    source = bytearray(b"copied from a host address")
    address = ctypes.addressof((ctypes.c_char * len(source)).from_buffer(source))
    copy = cmr.DeviceBuffer(ptr=address, size=len(source), mr=pool)
    assert copy.tobytes() == bytes(source) and copy.mr is pool
    made = cmr.DeviceBuffer(size=8, mr=pool)
    with pytest.raises(ValueError, match="made already"):
        made.__init__(size=8, mr=pool)


def test_a_subclass_is_made_through_init(pool):
    class Tagged(cmr.DeviceBuffer):
        def __init__(self, tag, **kwargs):
            super().__init__(**kwargs)
            self.tag = tag

    buffer = Tagged("mine", size=40, mr=pool)
    assert isinstance(buffer, cmr.DeviceBuffer) and buffer.tag == "mine" and buffer.size == 40
    assert buffer.mr is pool and buffer._stream is cmr.DEFAULT_STREAM


def test_without_mr_a_buffer_comes_from_the_current_resource(host_mr):
    # the build's default, wrapped from C: cuda in a CUDA build, system in the host build
    default = "cuda" if capi.cmr_built_with_cuda() else "system"
    assert cmr.DeviceBuffer(size=10).mr.type_name == default
    stats = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(stats)
    buffer = cmr.DeviceBuffer(size=10)
    assert buffer.mr is stats and stats.allocation_counts.current_bytes == 10
    # Replaced from C behind Python's back: the object kept is not the one used.
    other = mr.StatisticsResourceAdaptor(host_mr)
    cmr._capi.cmr_set_current_device_resource_ref(other._ref)
    assert cmr.DeviceBuffer(size=10).mr._identity == other._identity


def test_the_current_resource_object_is_kept_while_the_table_stays(host_mr):
    """DeviceBuffer keeps the object it found for the current device while
    the C table's count of changes stays: the same object every time, the
    new entry at once after any change (from Python, from C, a reset), and
    no object kept alive that nothing else holds."""
    cmr.DeviceBuffer(size=10)  # the table makes its default: a change
    default = cmr.DeviceBuffer(size=10).mr
    assert cmr.DeviceBuffer(size=10).mr is default  # the default's wrapper, made once
    first = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(first)
    assert all(cmr.DeviceBuffer(size=10).mr is first for _ in range(3))
    second = mr.StatisticsResourceAdaptor(host_mr)
    changes = capi.cmr_per_device_resource_changes()
    capi.cmr_set_current_device_resource_ref(second._ref)  # from C: Python's dict still holds `first`
    assert capi.cmr_per_device_resource_changes() == changes + 1
    buffer = cmr.DeviceBuffer(size=10)
    assert buffer.mr._identity == second._identity and second.allocation_counts.current_bytes == 10
    del buffer
    capi.cmr_reset_current_device_resource_ref()
    assert cmr.DeviceBuffer(size=10).mr.type_name == default.type_name
    third = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(third)
    assert cmr.DeviceBuffer(size=10).mr is third
    gone = weakref.ref(third)
    mr.set_current_device_resource(first)  # from Python: `third` is let go at once
    del third
    gc.collect()
    assert gone() is None
    assert cmr.DeviceBuffer(size=10).mr is first
    # Reset from C and let go by Python: nothing keeps it either (what is kept is a weak reference).
    gone = weakref.ref(first)
    capi.cmr_reset_current_device_resource_ref()
    cmr._per_device._per_device_mrs.clear()
    del first
    gc.collect()
    assert gone() is None


class _FakeCupy:
    """What cmr_cupy_allocator uses of CuPy, recording what it is given;
    with `handle_function`, CuPy's C function for the current stream's
    handle, as Cython exports it (a capsule in a module's __pyx_capi__)."""

    _CAPSULE_NAME = b"intptr_t (void)"

    def __init__(self, handle_function=None):
        self.module = types.ModuleType("cupy")
        self.stream = types.SimpleNamespace(ptr=0)
        self.stream_calls = 0
        memory = types.SimpleNamespace(UnownedMemory=self.UnownedMemory, MemoryPointer=self.MemoryPointer)
        self.module.cuda = types.SimpleNamespace(get_current_stream=self._current_stream, memory=memory)
        self.modules = {"cupy": self.module}
        if handle_function is not None:
            self._c_function = ctypes.CFUNCTYPE(ctypes.c_ssize_t)(handle_function)
            new_capsule = ctypes.pythonapi.PyCapsule_New
            new_capsule.restype = ctypes.py_object
            new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
            capsule = new_capsule(ctypes.cast(self._c_function, ctypes.c_void_p), self._CAPSULE_NAME, None)
            backend = types.ModuleType("cupy_backends.cuda.stream")
            backend.__pyx_capi__ = {"get_current_stream_ptr": capsule}
            self.modules["cupy_backends.cuda.stream"] = backend

    def _current_stream(self):
        self.stream_calls += 1
        return self.stream

    def install(self):
        """The allocator module, reloaded over this stand-in."""
        sys.modules.update(self.modules)
        return importlib.reload(importlib.import_module("cmr.allocators.cupy"))

    def uninstall(self):
        for name in self.modules:
            del sys.modules[name]
        importlib.reload(importlib.import_module("cmr.allocators.cupy"))

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.offset = mem, offset


def _skip_if_cupy_is_installed():
    try:
        import cupy  # noqa: F401
        pytest.skip("cupy is installed: test_allocators runs the real one on a GPU")
    except ImportError:
        pass


def test_the_cupy_allocator_with_a_stand_in_for_cupy(host_mr):
    _skip_if_cupy_is_installed()
    fake = _FakeCupy()
    stats = mr.StatisticsResourceAdaptor(host_mr)
    mr.set_current_device_resource(stats)
    try:
        allocator = fake.install()
        assert allocator.rmm_cupy_allocator is allocator.cmr_cupy_allocator
        assert not capi.cmr_py_cupy_makes_objects_directly()  # Python classes: called (test_cupy_objects)
        pointer = allocator.cmr_cupy_allocator(1000)
        assert isinstance(pointer, fake.MemoryPointer) and pointer.offset == 0
        memory = pointer.mem
        buffer = memory.owner
        # CuPy is told the current device (with -1 it would ask CUDA about the pointer)
        assert isinstance(memory, fake.UnownedMemory) and memory.size == 1000
        assert memory.device_id == capi.cmr_current_device()
        assert isinstance(buffer, cmr.DeviceBuffer) and buffer.ptr == memory.ptr != 0 and buffer.size == 1000
        assert buffer.mr is stats and buffer._stream is fake.stream
        assert stats.allocation_counts.current_bytes == 1000
        del pointer, memory, buffer
        assert stats.allocation_counts.current_bytes == 0
        empty = allocator.cmr_cupy_allocator(0).mem
        assert empty.ptr == 0 and empty.device_id == capi.cmr_current_device()
        with pytest.raises(TypeError, match="nbytes must be an int"):
            allocator.cmr_cupy_allocator("1000")
    finally:
        fake.uninstall()


def test_the_cupy_allocator_reads_the_stream_through_cupys_c_function(host_mr):
    """With CuPy's get_current_stream_ptr (its capsule), a default stream
    (0, 1, 2: never destroyed) needs no stream object: the buffer keeps a
    plain handle and get_current_stream is not called; any other stream's
    object is fetched and kept, as without the function."""
    _skip_if_cupy_is_installed()
    fake = _FakeCupy(handle_function=lambda: fake.stream.ptr)
    try:
        allocator = fake.install()
        calls = fake.stream_calls  # the allocator's check of the function
        buffer = allocator.cmr_cupy_allocator(100).mem.owner
        assert fake.stream_calls == calls and buffer._stream == 0 and buffer._stream is not fake.stream
        stream = cmr.Stream()
        fake.stream = types.SimpleNamespace(ptr=int(stream))
        buffer = allocator.cmr_cupy_allocator(100).mem.owner
        assert fake.stream_calls == calls + 1 and buffer._stream is fake.stream
    finally:
        fake.uninstall()


def test_the_cupy_allocator_ignores_a_stream_function_that_disagrees(host_mr):
    _skip_if_cupy_is_installed()
    fake = _FakeCupy(handle_function=lambda: 0)  # a default stream, were it believed
    stream = cmr.Stream()
    fake.stream = types.SimpleNamespace(ptr=int(stream))
    try:
        allocator = fake.install()
        calls = fake.stream_calls
        buffer = allocator.cmr_cupy_allocator(100).mem.owner
        assert fake.stream_calls == calls + 1 and buffer._stream is fake.stream
    finally:
        fake.uninstall()


def test_a_thread_waiting_for_a_lock_held_by_a_python_callback_lets_the_gil_go(host_mr):
    """A thread_safe adaptor over a callback resource: one thread holds the
    adaptor's lock while its callback runs Python (and sleeps, letting the
    GIL go); another thread's allocate waits for that lock. Holding the GIL
    while it waits would leave the callback unable to finish: the process
    would hang with the GIL held, so a watchdog that needs no GIL ends it."""
    faulthandler.dump_traceback_later(60, exit=True)
    started = threading.Event()

    def slow_allocate(nbytes, stream):
        started.set()
        threading.Event().wait(0.2)
        return host_mr.allocate(nbytes, stream)

    callback = mr.CallbackMemoryResource(slow_allocate, lambda p, n, s: host_mr.deallocate(p, n, s))
    guarded = mr.ThreadSafeResourceAdaptor(callback)
    done = []

    def allocate_and_free():
        ptr = guarded.allocate(64)
        guarded.deallocate(ptr, 64)
        done.append(ptr)

    first = threading.Thread(target=allocate_and_free, daemon=True)
    first.start()
    started.wait(5)
    second = threading.Thread(target=allocate_and_free, daemon=True)
    second.start()
    first.join(10)
    second.join(10)
    faulthandler.cancel_dump_traceback_later()
    assert len(done) == 2


def test_a_thread_waiting_for_a_pool_growing_through_python_lets_the_gil_go(host_mr):
    """The fast path keeps the GIL; cmr lets it go only when a call is about
    to wait (the blocking hook). One thread's allocate grows an empty pool
    through a Python upstream, which holds the pool's growth lock until a
    second thread has called allocate on the same pool, needing the growth
    lock too, and a little longer. That second thread keeps the GIL until it
    finds the lock held: were it to wait holding it, the upstream could never
    return (the process would hang with the GIL held, which the watchdog
    ends). Both allocations then succeed."""
    faulthandler.dump_traceback_later(60, exit=True)
    growing, second_calls = threading.Event(), threading.Event()
    grown = []

    def upstream_allocate(nbytes, stream):
        growing.set()
        second_calls.wait(10)
        threading.Event().wait(0.1)  # the second thread is inside allocate by now
        ptr = host_mr.allocate(nbytes, stream)
        grown.append(nbytes)
        return ptr

    upstream = mr.CallbackMemoryResource(upstream_allocate, lambda p, n, s: host_mr.deallocate(p, n, s))
    pool = mr.PoolMemoryResource(upstream, initial_pool_size=0)
    ptrs = []

    def allocate(nbytes):
        ptrs.append((pool.allocate(nbytes), nbytes))

    first = threading.Thread(target=allocate, args=(1 << 20,), daemon=True)
    first.start()
    assert growing.wait(10)
    second_calls.set()
    allocate(1 << 20)
    first.join(10)
    faulthandler.cancel_dump_traceback_later()
    assert len(ptrs) == 2 and grown and all(ptr != 0 for ptr, _ in ptrs)
    for ptr, nbytes in ptrs:
        pool.deallocate(ptr, nbytes)


def test_threads_share_a_pool_that_grows_through_python(host_mr):
    """Python threads (holding the GIL into cmr, through the fast path) and
    PyTorch-like threads (entering cmr without the GIL, through the pluggable
    entry points that PyTorch calls, here by ctypes, which lets the GIL go)
    allocate and free on one pool, the current resource, whose upstream is
    Python and which grows by small steps: threads wait for each other's
    growth, and its callback, while others allocate. Every call completes
    (a hang would be ended by the watchdog) and every byte comes back."""
    faulthandler.dump_traceback_later(120, exit=True)
    upstream = mr.CallbackMemoryResource(lambda n, s: host_mr.allocate(n, s),
                                         lambda p, n, s: host_mr.deallocate(p, n, s))
    pool = mr.PoolMemoryResource(upstream, initial_pool_size=0, maximum_growth=1 << 16)
    stats = mr.StatisticsResourceAdaptor(pool)
    mr.set_current_device_resource(stats)
    library = pluggable_library()
    entry_points = (lambda n: library.cmr_pluggable_allocate(n, 0, None),
                    lambda p, n: library.cmr_pluggable_deallocate(p, n, 0, None))
    fast_path = (stats.allocate, stats.deallocate)
    done = []

    def work(seed, calls):
        allocate, deallocate = calls
        rng = random.Random(seed)
        live = []
        for _ in range(300):
            nbytes = rng.randrange(1, 1 << 14)
            ptr = allocate(nbytes)
            assert ptr
            live.append((ptr, nbytes))
            if len(live) > 20:
                deallocate(*live.pop(rng.randrange(len(live))))
        for ptr, nbytes in live:
            deallocate(ptr, nbytes)
        done.append(seed)

    threads = [threading.Thread(target=work, args=(seed, entry_points if seed % 2 else fast_path), daemon=True)
               for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    faulthandler.cancel_dump_traceback_later()
    assert sorted(done) == [0, 1, 2, 3]
    assert stats.allocation_counts.current_bytes == 0 and stats.allocation_counts.total_count == 1200
