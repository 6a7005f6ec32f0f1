# SPDX-License-Identifier: Apache-2.0
"""Releasing a small graph of cmr objects in every order: a pool (the
upstream) over a counted base, a tracking adaptor over it, a statistics
adaptor on top, a stream, a buffer on that stream from the top, the
per-device entry set to the top, and the object the table hands back for it.
Each order runs `del` (and the entry's reset) one object at a time, checks
that everything still alive works, and at the end that the base got every
byte back, that no stream is left and that the dead resources' refs raise.
The 5040 orders run in a few fresh interpreters (a crash fails its chunk
and names it). Real streams on a GPU build with a device, host tokens
otherwise."""

import gc
import itertools
import os
import subprocess
import sys
import threading

import pytest

import cmr
from cmr import _capi as capi

NAMES = ("upstream", "tracking", "top", "stream", "buffer", "entry", "current")
CHUNKS = 4
MIB = 1 << 20


def _base():
    """The counted memory under everything: the harness keeps it."""
    bottom = cmr.mr.CudaMemoryResource() if capi.cmr_built_with_cuda() else cmr.mr.SystemMemoryResource()
    return cmr.mr.StatisticsResourceAdaptor(bottom)


def _live_streams() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is cmr.Stream)


def _graph(base) -> dict:
    g = {"upstream": cmr.mr.PoolMemoryResource(base, initial_pool_size=MIB)}
    g["tracking"] = cmr.mr.TrackingResourceAdaptor(g["upstream"])
    g["top"] = cmr.mr.StatisticsResourceAdaptor(g["tracking"])
    g["stream"] = cmr.Stream()
    g["buffer"] = cmr.DeviceBuffer.to_device(b"\x07" * 1000, stream=g["stream"], mr=g["top"])
    cmr.mr.set_current_device_resource(g["top"])
    g["entry"] = True  # released by resetting the table
    g["current"] = cmr.mr.get_current_device_resource()
    return g


def _release(g: dict, name: str) -> None:
    if name == "entry":
        capi.cmr_reset_current_device_resource_ref()
        cmr._per_device._per_device_mrs.clear()
    del g[name]


def _use(g: dict) -> None:
    """Every object still held works."""
    for name in ("upstream", "tracking", "top", "current"):
        if name in g:
            mr = g[name]
            mr.deallocate(mr.allocate(300), 300)
    if "buffer" in g:
        buffer = g["buffer"]
        buffer.resize(5000, buffer.stream)
        assert bytes(buffer)[:1000] == b"\x07" * 1000
        buffer.resize(1000, buffer.stream)
    if "stream" in g:
        g["stream"].synchronize()
    if "entry" in g and "top" in g:
        assert cmr.mr.get_current_device_resource() is g["top"]


def _destroyed(ref) -> None:
    with pytest.raises(RuntimeError, match="DESTROYED_HANDLE"):
        capi.cmr_allocate(ref, 256, 0)


def run_orders(chunk: int, chunks: int) -> int:
    """Runs the chunk-th of `chunks` shares of the orders; returns how many."""
    base = _base()
    count = 0
    for index, order in enumerate(itertools.permutations(NAMES)):
        if index % chunks != chunk:
            continue
        g = _graph(base)
        refs = [g[name].ref for name in ("upstream", "tracking", "top")]
        owner = g["stream"]._obj  # what destroys the stream: only this reference is left once all is released
        _use(g)
        for name in order:
            _release(g, name)
            _use(g)
        assert base.allocation_counts.current_bytes == 0, f"order {order} leaked"
        assert sys.getrefcount(owner) == 2, f"order {order} left its stream"
        del owner
        for ref in refs:
            _destroyed(ref)
        count += 1
    return count


def test_every_release_order_in_fresh_interpreters():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    runs = [subprocess.Popen([sys.executable, "-c", f"import test_release_orders as t; print(t.run_orders({chunk}, {CHUNKS}))"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for chunk in range(CHUNKS)]
    for chunk, run in enumerate(runs):
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, f"chunk {chunk} of the orders: exit {run.returncode}\n{out}\n{err}"
        assert int(out.split()[-1]) == 5040 // CHUNKS


def test_the_collector_releases_a_cycle_of_the_graph_in_any_order():
    """The garbage collector finalizes a cycle's objects in no set order:
    the buffer still frees on its stream, and everything comes back."""
    base = _base()
    streams_before = _live_streams()
    for _ in range(20):
        g = _graph(base)
        capi.cmr_reset_current_device_resource_ref()
        cmr._per_device._per_device_mrs.clear()
        del g["entry"]
        for value in g.values():
            value.cycle = g  # each object refers to the graph, which refers to it
        del value
        del g
        gc.collect()
    assert base.allocation_counts.current_bytes == 0
    assert _live_streams() == streams_before


def _make_buffer_and_return(mr):
    stream = cmr.Stream()
    buffer = cmr.DeviceBuffer.to_device(bytes(range(256)), stream=stream, mr=mr)
    del buffer  # the reproducer of the H200 crash: the locals go when the function returns
    stream2 = cmr.Stream()
    return cmr.DeviceBuffer.to_device(bytes(range(256)), stream=stream2, mr=mr)


def test_a_buffer_keeps_its_stream():
    base = _base()
    before = _live_streams()
    buffer = _make_buffer_and_return(base)
    assert _live_streams() == before + 1, "the returned buffer's stream went with the function's locals"
    assert bytes(buffer) == bytes(range(256))
    stream = buffer._stream
    buffer.resize(512, buffer.stream)  # the same stream, given as its int
    assert buffer._stream is stream, "resizing on the same stream dropped the stream object"
    del stream
    buffer.resize(100, cmr.DEFAULT_STREAM)
    assert _live_streams() == before, "the stream outlived the last buffer ordered on it"
    del buffer
    assert base.allocation_counts.current_bytes == 0


def test_a_copy_keeps_the_stream_too():
    base = _base()
    before = _live_streams()
    original = cmr.DeviceBuffer.to_device(b"abc", stream=cmr.Stream(), mr=base)
    copy = original.copy()
    del original
    assert _live_streams() == before + 1
    assert bytes(copy) == b"abc"
    del copy
    assert _live_streams() == before


def test_the_current_resource_stays_usable_while_other_threads_replace_it():
    base = _base()
    stop = threading.Event()
    errors = []

    def replace():
        try:
            while not stop.is_set():
                cmr.mr.set_current_device_resource(cmr.mr.PoolMemoryResource(base, initial_pool_size=MIB))
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    def use():
        try:
            for _ in range(300):
                mr = cmr.mr.get_current_device_resource()
                mr.deallocate(mr.allocate(1000), 1000)
                buffer = cmr.DeviceBuffer(size=1000)
                del buffer
        except BaseException as error:
            errors.append(error)

    replacer = threading.Thread(target=replace)
    users = [threading.Thread(target=use) for _ in range(4)]
    replacer.start()
    for user in users:
        user.start()
    for user in users:
        user.join()
    stop.set()
    replacer.join()
    assert errors == []
    capi.cmr_reset_current_device_resource_ref()
    cmr._per_device._per_device_mrs.clear()
    gc.collect()
    assert base.allocation_counts.current_bytes == 0
