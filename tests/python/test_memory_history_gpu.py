# SPDX-License-Identifier: Apache-2.0
"""cmr's snapshots of real GPU workloads in PyTorch's viewer code: a CuPy
workload through cmr's CuPy allocator and a PyTorch training loop through
cmr's pluggable allocator, each over a pool on the device, recorded with
cmr.memory.record_history and put through torch.cuda._memory_viz (segsum,
trace, segment_plot, trace_plot, memory) and cmr.viz; and the training
loop's snapshot beside PyTorch's own (its caching allocator, recorded with
torch.cuda.memory._record_memory_history) has the same shape: the keys the
viewer reads, as many allocations and frees, and the model's Python frames
on its allocations. Each workload runs in a
process of its own (PyTorch takes one allocator per process). Needs a GPU,
CuPy and PyTorch (skipped without). With CMR_HISTORY_GPU_OUT set, the
snapshots and reports are kept there (docs/diagnosing-memory.md's
pictures)."""

import json
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

from conftest import needs_gpu

pytestmark = needs_gpu

TRAINING = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(8):
    x = torch.randn(256, 512, device="cuda")
    loss = model(x).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.cuda.synchronize()
"""

CMR_TRAINING = """
import pickle, sys
import cmr, torch
from cmr.allocators.torch import cmr_torch_allocator
cmr.mr.set_current_device_resource(cmr.mr.PoolMemoryResource(cmr.mr.CudaMemoryResource(), initial_pool_size=64 << 20))
torch.cuda.memory.change_current_allocator(cmr_torch_allocator)
cmr.memory.record_history(stacks="all")
""" + TRAINING + """
cmr.memory.dump_snapshot(sys.argv[1])
"""

TORCH_TRAINING = """
import pickle, sys
import torch
torch.cuda.memory._record_memory_history(max_entries=100000)
""" + TRAINING + """
torch.cuda.memory._dump_snapshot(sys.argv[1])
"""

CUPY = """
import sys
import cmr, cupy
from cmr.allocators.cupy import cmr_cupy_allocator
cmr.mr.set_current_device_resource(cmr.mr.PoolMemoryResource(cmr.mr.CudaMemoryResource(), initial_pool_size=32 << 20))
cupy.cuda.set_allocator(cmr_cupy_allocator)
cmr.memory.record_history(stacks="all")
kept = []
for i in range(32):
    a = cupy.arange((i + 1) * 10000, dtype=cupy.float32)
    b = (a * 2).sum()
    if i % 3 == 0:
        kept.append(a)
big = cupy.zeros(48 << 20, dtype=cupy.uint8)  # past the pool's first chunk: it grows
cupy.cuda.Device().synchronize()
cmr.memory.dump_snapshot(sys.argv[1])
"""


def out_dir(tmp_path):
    kept = os.environ.get("CMR_HISTORY_GPU_OUT")
    if kept:
        os.makedirs(kept, exist_ok=True)
        return kept
    return str(tmp_path)


def run(script, path):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), path], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    with open(path, "rb") as f:
        return pickle.load(f)


def viewer_reads(snapshot, html_path):
    """What PyTorch's viewer code makes of it, and cmr's report."""
    from torch.cuda import _memory_viz
    _memory_viz.segsum(snapshot)
    _memory_viz.trace(snapshot)
    for plot, name in ((_memory_viz.segment_plot, "segments"), (_memory_viz.trace_plot, "trace")):
        page = plot(snapshot)
        assert isinstance(page, str) and len(page) > 1000
        with open(html_path.replace(".html", f".torch_{name}.html"), "w") as f:
            f.write(page)
    import cmr.viz
    cmr.viz.report(snapshot, html_path)


def actions(snapshot):
    counts = {}
    for trace in snapshot["device_traces"]:
        for entry in trace:
            counts[entry["action"]] = counts.get(entry["action"], 0) + 1
    return counts


def python_sites(snapshot):
    """(file's base name, function) of every Python frame of the allocations
    (a C frame's line is 0)."""
    return {(os.path.basename(f["filename"]), f["name"]) for trace in snapshot["device_traces"] for entry in trace
            if entry["action"] == "alloc" for f in entry["frames"] if f["line"] > 0}


def test_a_cupy_workload_opens_in_the_viewers(tmp_path):
    pytest.importorskip("cupy")
    pytest.importorskip("torch")
    out = out_dir(tmp_path)
    snapshot = run(CUPY, os.path.join(out, "cmr_cupy.pickle"))
    counts = actions(snapshot)
    # The pool's first chunk was taken at its creation, before the recording
    # began: the trace has the growth alone, the segments both.
    assert counts.get("alloc", 0) >= 32 and counts.get("segment_alloc", 0) >= 1, counts
    assert len(snapshot["segments"]) >= 2, [s["total_size"] for s in snapshot["segments"]]
    assert any(b["state"] == "active_allocated" for s in snapshot["segments"] for b in s["blocks"])
    frames = [f["name"] for s in snapshot["segments"] for b in s["blocks"] if b["state"] == "active_allocated"
              for f in b["frames"]]
    assert "<module>" in frames, "Python frames of the script's allocations"
    viewer_reads(snapshot, os.path.join(out, "cmr_cupy.html"))


def test_a_training_loop_has_the_shape_of_pytorchs_own_snapshot(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    out = out_dir(tmp_path)
    ours = run(CMR_TRAINING, os.path.join(out, "cmr_torch.pickle"))
    theirs = run(TORCH_TRAINING, os.path.join(out, "torch_native.pickle"))
    viewer_reads(ours, os.path.join(out, "cmr_torch.html"))
    viewer_reads(theirs, os.path.join(out, "torch_native.html"))
    report = {"top": [sorted(ours), sorted(theirs)]}
    # The keys PyTorch's viewer code reads are in both.
    for key in ("segments", "device_traces"):
        assert key in ours and key in theirs
    seg_ours, seg_theirs = set(ours["segments"][0]), set(theirs["segments"][0])
    block_ours, block_theirs = set(ours["segments"][0]["blocks"][0]), set(theirs["segments"][0]["blocks"][0])
    trace_ours = set(ours["device_traces"][0][0])
    trace_theirs = set(theirs["device_traces"][0][0])
    report["missing_in_cmr"] = {"segment": sorted(seg_theirs - seg_ours), "block": sorted(block_theirs - block_ours),
                                "trace": sorted(trace_theirs - trace_ours)}
    print(json.dumps(report, indent=1))
    assert {"address", "total_size", "stream", "segment_type", "allocated_size", "active_size", "blocks"} <= seg_ours
    assert {"address", "size", "state", "frames"} <= block_ours & block_theirs
    assert {"action", "addr", "size", "stream", "frames"} <= trace_ours & trace_theirs
    # The same workload: as many tensors allocated and freed through either allocator.
    a, b = actions(ours), actions(theirs)
    print("cmr", a, "torch", b)
    assert a.get("alloc", 0) > 0 and b.get("alloc", 0) > 0
    assert abs(a["alloc"] - b["alloc"]) <= max(2, b["alloc"] // 10), (a, b)
    assert abs(a.get("free_completed", 0) - b.get("free_completed", 0)) <= max(2, b.get("free_completed", 0) // 10)
    # The model's tensors have the Python frames of the code that made them, as in PyTorch's own snapshot:
    # PyTorch calls cmr's entry points with the GIL let go, and they take it for the frames.
    ours_sites = python_sites(ours)
    assert {("linear.py", "forward"), ("<string>", "<module>")} <= ours_sites, (sorted(ours_sites),
                                                                              sorted(python_sites(theirs)))
