# SPDX-License-Identifier: Apache-2.0
"""history.snapshot_format: the snapshots cmr-snapshot-workload writes, read
back with Python's own pickle and json modules, checked against the keys and
values of PyTorch's snapshot (torch.cuda.memory._snapshot()'s docstring:
Segment, Block, TraceEntry) and against what the workload did; then, where
torch is installed, put through torch.cuda._memory_viz's readers; and
cmr-report's page for the JSON must be the C writer's own page.

    python3 check_snapshots.py PATH/cmr-snapshot-workload PATH/cmr-report
"""

import json
import os
import pickle
import subprocess
import sys
import tempfile

from expectations import expect, finish

SEGMENT_KEYS = {"device", "address", "total_size", "stream", "segment_type", "allocated_size", "active_size",
                "requested_size", "is_expandable", "segment_pool_id", "frames", "blocks"}
BLOCK_KEYS = {"address", "size", "requested_size", "state", "frames"}
TRACE_KEYS = {"action", "addr", "size", "stream", "time_us", "frames"}
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom"}
STATES = {"active_allocated", "inactive"}
FRAME_KEYS = {"filename", "line", "name"}

def check_frames(frames, where):
    expect(isinstance(frames, list), f"{where}: frames is a list")
    for frame in frames:
        expect(set(frame) == FRAME_KEYS, f"{where}: a frame has {sorted(frame)}")
        expect(isinstance(frame["name"], str) and isinstance(frame["line"], int), f"{where}: frame types")


def check_segment(name, segment, index):
    where = f"{name} segment {index}"
    expect(SEGMENT_KEYS <= set(segment), f"{where}: keys {sorted(SEGMENT_KEYS - set(segment))} missing")
    blocks = segment["blocks"]
    expect(segment["segment_type"] in ("large", "small"), f"{where}: segment_type")
    expect(segment["segment_pool_id"] == (0, 0), f"{where}: segment_pool_id is a tuple")
    expect(len(segment["frames"]) > 0, f"{where}: the segment has its growth's frames")
    check_frames(segment["frames"], where)
    start, end = segment["address"], segment["address"] + segment["total_size"]
    at = start
    allocated = requested = 0
    for b, block in enumerate(blocks):
        expect(BLOCK_KEYS <= set(block), f"{where} block {b}: keys")
        expect(block["state"] in STATES, f"{where} block {b}: state {block['state']}")
        expect(block["address"] >= at, f"{where} block {b}: in address order, apart")
        at = block["address"] + block["size"]
        expect(at <= end, f"{where} block {b}: inside its segment")
        if block["state"] == "active_allocated":
            allocated += block["size"]
            requested += block["requested_size"]
            expect(0 < block["requested_size"] <= block["size"], f"{where} block {b}: requested_size")
            expect(len(block["frames"]) > 0, f"{where} block {b}: an allocated block has its allocation's frames")
        check_frames(block["frames"], f"{where} block {b}")
    # Every byte of a chunk is in one block, free or handed out.
    expect(sum(b["size"] for b in blocks) == segment["total_size"], f"{where}: the blocks tile the segment")
    expect(segment["allocated_size"] == allocated == segment["active_size"], f"{where}: allocated_size")
    expect(segment["requested_size"] == requested, f"{where}: requested_size")
    return allocated, sum(1 for b in blocks if b["state"] == "active_allocated")


def check_traces(name, snapshot):
    traces = snapshot["device_traces"]
    expect(isinstance(traces, list) and len(traces) == 1, f"{name}: one device's traces")
    entries = traces[0]
    live = {}
    for e, entry in enumerate(entries):
        expect(TRACE_KEYS <= set(entry), f"{name} trace {e}: keys {sorted(TRACE_KEYS - set(entry))} missing")
        expect(entry["action"] in ACTIONS, f"{name} trace {e}: action {entry['action']}")
        check_frames(entry["frames"], f"{name} trace {e}")
        if entry["action"] == "alloc":
            expect(entry["addr"] not in live, f"{name} trace {e}: an address allocated twice")
            live[entry["addr"]] = entry["size"]
        elif entry["action"] == "free_completed":
            expect(live.pop(entry["addr"], None) == entry["size"], f"{name} trace {e}: a free of what was allocated")
    times = [entry["time_us"] for entry in entries]
    expect(times == sorted(times), f"{name}: traces in time order")
    return entries, live


def check(name, snapshot, expected_live):
    expect(set(snapshot) >= {"segments", "device_traces", "cmr"}, f"{name}: top-level keys")
    live_blocks = 0
    allocated = 0
    for i, segment in enumerate(snapshot["segments"]):
        got, count = check_segment(name, segment, i)
        allocated += got
        live_blocks += count
    entries, live = check_traces(name, snapshot)
    segment_allocs = {e["addr"] for e in entries if e["action"] == "segment_alloc"}
    if name != "binning":  # binning's bins hold fixed_size segments cut from its pool's blocks
        expect(live_blocks == expected_live, f"{name}: {live_blocks} blocks handed out, the workload left {expected_live}")
        expect(len(live) == expected_live, f"{name}: {len(live)} allocations without a free in the trace")
        for segment in snapshot["segments"]:
            expect(segment["address"] in segment_allocs, f"{name}: segment {segment['address']:#x} has its segment_alloc")
    else:
        expect(len(live) == expected_live, f"{name}: {len(live)} allocations through binning without a free")
        expect({s["resource"] for s in snapshot["segments"]} == {"pool", "fixed_size"}, f"{name}: its pool and bins")
    expect(snapshot["cmr"]["resource"] == name, f"{name}: cmr.resource")
    if name == "pool":
        ooms = [e for e in entries if e["action"] == "oom"]
        expect(len(ooms) == 1 and ooms[0]["size"] == 16 << 20, f"{name}: the out-of-memory failure is traced")
    return allocated


def check_with_torch(path):
    try:
        from torch.cuda import _memory_viz
    except ImportError:
        print("torch is not installed: torch.cuda._memory_viz not run (the GPU machine's suite runs it)")
        return
    with open(path, "rb") as f:
        data = pickle.load(f)
    _memory_viz.segsum(data)
    _memory_viz.trace(data)
    _memory_viz.segment_plot(data)
    _memory_viz.trace_plot(data)


def main():
    workload, reporter = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([workload, out], capture_output=True, text=True)
        if run.returncode == 77:
            print(run.stdout.strip())
            return 77
        expect(run.returncode == 0, f"the workload failed: {run.stderr}")
        live = {line.split()[0]: int(line.split()[2]) for line in run.stdout.splitlines()}
        expect(set(live) == {"pool", "arena", "fixed_size", "binning"}, f"the workload's stacks: {run.stdout}")
        for name, expected in live.items():
            with open(os.path.join(out, name + ".pickle"), "rb") as f:
                raw4 = f.read()
            with open(os.path.join(out, name + ".p2.pickle"), "rb") as f:
                raw2 = f.read()
            expect(raw4[:2] == b"\x80\x04" and raw2[:2] == b"\x80\x02", f"{name}: pickle protocols 4 and 2")
            data = pickle.loads(raw4)
            with open(os.path.join(out, name + ".json"), encoding="utf-8") as f:
                # JSON has lists where the pickle has tuples (segment_pool_id).
                expect(json.load(f) == json.loads(json.dumps(data)), f"{name}: the JSON is the pickle's dict")
            expect(pickle.loads(raw2) == data, f"{name}: protocol 2 gives the same dict")
            check(name, data, expected)
            check_with_torch(os.path.join(out, name + ".pickle"))
            page = os.path.join(out, name + ".tool.html")
            tool = subprocess.run([reporter, "-o", page, os.path.join(out, name + ".json")], capture_output=True,
                                  text=True)
            expect(tool.returncode == 0, f"{name}: cmr-report failed: {tool.stderr}")
            with open(page, "rb") as a, open(os.path.join(out, name + ".html"), "rb") as b:
                expect(a.read() == b.read(), f"{name}: cmr-report's page is the C writer's")
        refused = subprocess.run([reporter, os.path.join(out, "pool.pickle")], capture_output=True, text=True)
        expect(refused.returncode == 1 and "is a pickle" in refused.stderr, "cmr-report refuses a pickle, saying so")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
