# SPDX-License-Identifier: Apache-2.0
"""cmr.memory (history and snapshots with PyTorch's names) and cmr.viz (the
HTML report): the snapshot dict's keys and numbers, Python frames for the
calls made from Python and for those made through PyTorch's entry points
with the GIL let go, recording off and on, bad arguments, and the report
written from a snapshot and from its pickle by ``python3 -m cmr.viz``."""

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import threading

import pytest

import cmr
from cmr import mr
from conftest import pluggable_library


@pytest.fixture(autouse=True)
def history_stopped():
    yield
    cmr.memory.record_history(None)


def allocate_here(pool, nbytes):
    """A named frame the snapshot must show."""
    return pool.allocate(nbytes)


def test_a_pool_snapshot_has_its_segments_blocks_and_traces(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    cmr.memory.record_history(stacks="all")
    assert cmr.memory.is_recording()
    ptrs = [allocate_here(pool, 1000 + i) for i in range(5)]
    pool.deallocate(ptrs.pop(0), 1000)
    snapshot = cmr.memory.snapshot(pool)
    assert set(snapshot) == {"segments", "device_traces", "cmr"}
    (segment,) = snapshot["segments"]
    assert segment["total_size"] == 1 << 20
    assert segment["segment_type"] == "large" and segment["resource"] == "pool"
    active = [b for b in segment["blocks"] if b["state"] == "active_allocated"]
    assert sorted(b["address"] for b in active) == sorted(ptrs)
    assert segment["allocated_size"] == sum(b["size"] for b in active) == 4 * 1024
    assert sum(b["size"] for b in segment["blocks"]) == segment["total_size"]
    assert sorted(b["requested_size"] for b in active) == [1001, 1002, 1003, 1004]
    # Python frames after the C ones, innermost first: this file's function is there.
    for block in active:
        names = [f["name"] for f in block["frames"]]
        assert "allocate_here" in names, names
        assert "cmr_allocate" in names or any("cmr_" in n for n in names), names
        assert "context" not in block
    (trace,) = snapshot["device_traces"]
    actions = [t["action"] for t in trace]
    assert actions == ["alloc"] * 5 + ["free_requested", "free_completed"]
    assert [t["size"] for t in trace[:5]] == [1000, 1001, 1002, 1003, 1004]
    assert all({"action", "addr", "size", "stream", "time_us", "frames"} <= set(t) for t in trace)
    here = [f for f in trace[0]["frames"] if f["name"] == "allocate_here"]
    assert here and here[0]["filename"] == __file__ and here[0]["line"] > 0
    for ptr, nbytes in zip(ptrs, (1001, 1002, 1003, 1004)):
        pool.deallocate(ptr, nbytes)


def through_pytorchs_entry_points(library, nbytes, lines):
    """What PyTorch's allocator does for a tensor made and dropped here: the
    entry points called from C with the GIL let go (ctypes lets it go around
    each call). The lines of the two calls go to `lines`."""
    lines.append(sys._getframe().f_lineno + 1)
    ptr = library.cmr_pluggable_allocate(nbytes, 0, None)
    lines.append(sys._getframe().f_lineno + 1)
    library.cmr_pluggable_deallocate(ptr, nbytes, 0, None)
    return ptr


def test_pytorchs_entry_points_take_the_gil_for_the_callers_frames(host_mr):
    """The entry points take the GIL before they enter cmr, for the frames of
    the thread that called them, while another thread runs Python (this one,
    spinning): each alloc and free of theirs has the caller's function and
    line. Taking the GIL there cannot deadlock with cmr's locks (none is held
    yet): tests/c/test_history.c plays that out deterministically with a
    mutex for the GIL, which Python's own threads cannot be made to."""
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    mr.set_current_device_resource(pool)  # device 0's: host memory in the host build
    library = pluggable_library()
    cmr.memory.record_history(stacks="all")
    calls, failures = [], []
    finished = threading.Event()

    def make_and_drop_tensors():
        try:
            for nbytes in (1000, 3000):
                lines = []
                calls.append((through_pytorchs_entry_points(library, nbytes, lines), nbytes, lines))
        except Exception as error:  # noqa: BLE001  (reported below)
            failures.append(error)
        finally:
            finished.set()

    thread = threading.Thread(target=make_and_drop_tensors)
    thread.start()
    while not finished.is_set():  # holds the GIL but for the interpreter's switches
        pass
    thread.join()
    assert failures == [] and len(calls) == 2
    (trace,) = cmr.memory.snapshot(pool)["device_traces"]
    for ptr, nbytes, (allocate_line, free_line) in calls:
        entries = [t for t in trace if t["addr"] == ptr and t["size"] == nbytes]
        assert [t["action"] for t in entries] == ["alloc", "free_requested", "free_completed"]
        for entry, line in zip(entries, (allocate_line, free_line, free_line)):
            python = [f for f in entry["frames"] if f["filename"] == __file__]
            assert python and python[0]["name"] == "through_pytorchs_entry_points", entry["frames"]
            assert python[0]["line"] == line
            names = [f["name"] for f in python]
            assert "make_and_drop_tensors" in names  # the calling thread's, not the spinning one's
            assert "test_pytorchs_entry_points_take_the_gil_for_the_callers_frames" not in names


def test_stacks_none_records_no_frames_and_off_records_nothing(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    ptr = pool.allocate(256)
    pool.deallocate(ptr, 256)
    assert not cmr.memory.is_recording()
    cmr.memory.record_history(stacks=None)
    ptr = pool.allocate(512)
    snapshot = cmr.memory.snapshot(pool)
    (trace,) = snapshot["device_traces"]
    assert [(t["action"], t["size"], t["frames"]) for t in trace] == [("alloc", 512, [])]
    pool.deallocate(ptr, 512)
    cmr.memory.record_history(None)
    assert not cmr.memory.is_recording()
    ptr = pool.allocate(768)
    assert len(cmr.memory.snapshot(pool)["device_traces"][0]) == 3  # alloc, free_requested, free_completed
    pool.deallocate(ptr, 768)


def test_out_of_memory_is_traced(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20, maximum_pool_size=1 << 20)
    cmr.memory.record_history(stacks="python")
    with pytest.raises(MemoryError):
        pool.allocate(2 << 20)
    (oom,) = [t for t in cmr.memory.snapshot(pool)["device_traces"][0] if t["action"] == "oom"]
    assert oom["size"] == 2 << 20
    assert any(f["name"] == "test_out_of_memory_is_traced" for f in oom["frames"])


def test_the_default_is_the_current_device_resource(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    mr.set_current_device_resource(pool)
    assert cmr.memory.snapshot()["segments"][0]["total_size"] == 1 << 20


def test_bad_arguments_are_refused(host_mr):
    with pytest.raises(ValueError, match='enabled must be "all" or None'):
        cmr.memory.record_history("state")
    with pytest.raises(ValueError, match="stacks must be"):
        cmr.memory.record_history(stacks="cpp")
    with pytest.raises(ValueError, match="max_entries must be a positive int"):
        cmr.memory.record_history(max_entries=0)
    with pytest.raises(ValueError, match="capacity"):
        cmr.memory.record_history(max_entries=1 << 27)
    with pytest.raises(TypeError):
        cmr.memory.snapshot("not a resource")
    assert not cmr.memory.is_recording()


def test_dump_snapshot_and_the_report(host_mr, tmp_path):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=1 << 20)
    cmr.memory.record_history()
    ptr = pool.allocate(4096)
    path = tmp_path / "snapshot.pickle"
    cmr.memory.dump_snapshot(path, pool)
    with open(path, "rb") as f:
        loaded = pickle.load(f)
    assert loaded["segments"][0]["blocks"][0]["size"] == 4096
    page = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "cmr.viz", str(path), "-o", str(page)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "__CMR_SNAPSHOT_JSON__" not in text
    embedded = text.split('id="cmr-snapshot">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded) == json.loads(json.dumps(loaded))
    # The dict itself, and refusals.
    cmr.viz.report(loaded, tmp_path / "direct.html")
    assert (tmp_path / "direct.html").read_text() == text
    with pytest.raises(TypeError):
        cmr.viz.report([1], tmp_path / "x.html")
    with pytest.raises(OSError):
        cmr.viz.report(loaded, tmp_path / "missing" / "x.html")
    (tmp_path / "bad.json").write_text("[1, 2]")
    run = subprocess.run([sys.executable, "-m", "cmr.viz", str(tmp_path / "bad.json")], capture_output=True, text=True)
    assert run.returncode == 1 and "is not a memory snapshot" in run.stderr
    pool.deallocate(ptr, 4096)


import cmr.viz  # noqa: E402  (the module under test, beside cmr.memory)


def test_the_reports_holders_name_the_programs_own_line(tmp_path):
    """The holders table groups by the program's own frame: past cmr's and
    an installed package's Python frames (CuPy's `empty`), and past C
    frames; a stack of installed frames alone falls back to the innermost
    of them. Drawn by headless Chromium (skipped without it)."""
    if shutil.which("chromium") is None:
        pytest.skip("chromium is not installed")
    cupy_empty = {"filename": "/venv/lib/python3.12/site-packages/cupy/_creation/basic.py", "line": 34,
                  "name": "empty"}
    own = {"filename": "/home/me/train.py", "line": 12, "name": "step"}
    c_frame = {"filename": "/usr/lib/libfoo.so", "line": 0, "name": "foo_alloc"}
    ours = {"filename": "/venv/lib/python3.12/site-packages/cmr/allocators/cupy.py", "line": 40, "name": "malloc"}

    def block(address, size, frames):
        return {"address": address, "size": size, "requested_size": size, "state": "active_allocated",
                "frames": frames}

    snapshot = {"segments": [{"address": 1 << 20, "total_size": 1 << 20, "stream": 0, "segment_type": "large",
                              "allocated_size": 3 << 12, "active_size": 3 << 12, "device": 0,
                              "blocks": [block((1 << 20), 1 << 13, [c_frame, ours, cupy_empty, own]),
                                         block((1 << 20) + (1 << 13), 1 << 12, [ours, cupy_empty])]}],
                "device_traces": [[]]}
    page = tmp_path / "holders.html"
    cmr.viz.report(snapshot, page)
    # The browser without what the ASan build preloads into this interpreter.
    browser_env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=180, env=browser_env, cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    sites = re.findall(r'class="holder-site"[^>]*>([^<]*)<', dom.stdout)
    assert sites == ["step (train.py:12)", "empty (basic.py:34)"], sites


def map_here(resource, nbytes):
    """A named frame of a call that lets the GIL go to wait."""
    return resource.allocate(nbytes)


def test_a_call_that_lets_the_gil_go_keeps_its_python_frames():
    """registered_host maps and touches its pages, letting the GIL go first
    (the blocking hook): its events are recorded without the GIL, and carry
    the Python frames the hook took as it let go."""
    registered = mr.RegisteredHostMemoryResource()
    cmr.memory.record_history(stacks="all")
    ptr = map_here(registered, 1 << 20)
    snapshot = cmr.memory.snapshot(registered)
    cmr.memory.record_history(None)
    registered.deallocate(ptr, 1 << 20)
    allocs = [t for t in snapshot["device_traces"][0] if t["action"] == "alloc" and t["addr"] == ptr]
    assert allocs, snapshot["device_traces"]
    names = [f["name"] for f in allocs[0]["frames"]]
    assert "map_here" in names, names
