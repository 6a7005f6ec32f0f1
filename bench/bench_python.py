# SPDX-License-Identifier: Apache-2.0
"""cmr's Python package against its peers, in one run:

1. per-call cost, in the same process: ns per allocate+free pair of each
   `--bytes` size (small and large by default), warm, best of `--repeat`
   runs of `--pairs` pairs each (the subjects taking turns), with ratios
   of CuPy's pool's time over the row's (higher is better; without CuPy,
   the extension call's);
2. the host figure (issue 18), in the same process: the time of
   mr.allocate+deallocate on pool(system) and of DeviceBuffer(size=1000) +
   delete, each as a multiple of bytearray(1000) creation + deletion, on a
   line of its own: `host-ratio mr_pair=X device_buffer=Y`;
3. workloads, each configuration in a fresh process, `--runs` times (the
   configurations taking turns), median wall time and the ratio to the
   peer's median of the same run: a CuPy array workload (temporaries of
   mixed sizes, a matmul and an FFT per step; CuPy's default pool against
   cmr_cupy_allocator over pool(cuda)) and a PyTorch training loop (an MLP
   with varying batch sizes; the caching allocator against
   cmr_torch_allocator over pool(cuda)). Each skips, saying why, without
   CuPy, PyTorch or a GPU. The CuPy workload also runs with both
   allocators in each of `--runs` processes, taking turns every 100 steps:
   the processes' times vary by half from one to the next, the blocks of
   one process far less, so this ratio is the one that can tell a few
   percent apart.

    PYTHONPATH=build/<dir>/python python3 bench/bench_python.py [--bytes N ...] [--pairs N] [--repeat N]
        [--runs N] [--steps N] [--workloads [cupy] [torch]] [--csv FILE] [--workloads-csv FILE]
        [--plot FILE] [--quick]

--quick: the host figure alone, from few pairs (what the ctest runs: it
checks the line is printed, not the figures). --plot writes the workloads'
medians as a PNG (bench/plot.py's conventions; needs matplotlib).

Rows of the per-call table: cmr.mr.allocate/deallocate on a pool,
cmr.DeviceBuffer create+delete on the same pool, and the C call through the
SWIG extension alone; with a GPU also over cudaMallocAsync (cmr's
cuda_async), and CuPy's MemoryPool.malloc, PyTorch's caching allocator
(torch.empty) and cuda.core's device memory resource (allocate + close)
where they are installed. Targets (issue 18): mr.allocate+deallocate at
least 2.0x, DeviceBuffer at least 1.4x (CuPy's time over cmr's); the CuPy
workload at most 1.0x CuPy's pool's time, the PyTorch loop at most 1.0x
the caching allocator's; host-ratio at most 2.5 and 3.5."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import timeit

import cmr
from cmr import _capi as capi, mr


def _best_times(subjects: dict, pairs: int, repeat: int) -> dict:
    """ns per call of each subject: the best of `repeat` runs of `pairs`
    calls, the subjects taking turns (a machine that speeds up or slows
    down as it goes, as the GPU machine's CPUs do, moves every row alike)."""
    for pair in subjects.values():
        pair()  # warm: the pool holds the block after the first pair
    best = {name: float("inf") for name in subjects}
    for _ in range(repeat):
        for name, pair in subjects.items():
            best[name] = min(best[name], timeit.timeit(pair, number=pairs) / pairs * 1e9)
    return best


def _subjects(nbytes: int) -> dict:
    gpu = capi.cmr_built_with_cuda()
    base = mr.CudaMemoryResource() if gpu else mr.SystemMemoryResource()
    pool = mr.PoolMemoryResource(base, initial_pool_size="1GiB" if gpu else "64MiB")
    ref = pool.ref
    extension = capi._capi_c

    def c_call():
        extension.cmr_deallocate(ref, extension.cmr_allocate(ref, nbytes, 0), nbytes, 0)

    def allocate():
        pool.deallocate(pool.allocate(nbytes), nbytes)

    def buffer():
        cmr.DeviceBuffer(size=nbytes, mr=pool)

    subjects = {"cmr pool: extension call alone": c_call, "cmr pool: mr.allocate+deallocate": allocate,
                "cmr pool: DeviceBuffer": buffer}
    if gpu:
        driver_pool = mr.CudaAsyncMemoryResource()
        subjects["cmr cuda_async: mr.allocate+deallocate"] = \
            lambda: driver_pool.deallocate(driver_pool.allocate(nbytes), nbytes)
        try:
            import cupy
            cupy_pool = cupy.cuda.MemoryPool()
            # The pointer is dropped at once: its block goes back to the pool.
            subjects["CuPy MemoryPool.malloc+free"] = lambda: cupy_pool.malloc(nbytes)
            # What CuPy calls per allocation with cmr's allocator set (the pool the current resource).
            from cmr.allocators.cupy import cmr_cupy_allocator
            mr.set_current_device_resource(pool)
            made = "made directly" if capi.cmr_py_cupy_makes_objects_directly() else "through their constructors"
            subjects[f"cmr pool: cmr_cupy_allocator (current resource; CuPy's objects {made})"] = \
                lambda: cmr_cupy_allocator(nbytes)
            subjects["cmr pool: DeviceBuffer (current resource)"] = lambda: cmr.DeviceBuffer(size=nbytes)
        except ImportError:
            pass
        try:
            import torch
            subjects["PyTorch torch.empty (caching allocator)"] = \
                lambda: torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        except ImportError:
            pass
        core_pair = _cuda_core_pair(nbytes)
        if core_pair is not None:
            subjects["cuda.core device memory resource"] = core_pair
    return subjects


def _cuda_core_pair(nbytes: int):
    """allocate + close through cuda.core's memory resource of device 0, or
    None without cuda.core (its module moved out of `experimental` in 0.3)."""
    try:
        from cuda.core import Device
    except ImportError:
        try:
            from cuda.core.experimental import Device
        except ImportError:
            return None
    device = Device(0)
    device.set_current()
    resource = device.memory_resource
    stream = device.create_stream()

    def pair():
        resource.allocate(nbytes, stream=stream).close(stream)
    return pair


def _host_ratio_line(pairs: int, repeat: int) -> str:
    """The host figure's line; in a CUDA build it needs a device (the system
    resource's free waits on the stream), and says it skipped without one."""
    if capi.cmr_built_with_cuda():
        try:
            devices = capi.cmr_device_count()
        except RuntimeError:
            devices = 0
        if devices == 0:
            return "host-ratio skipped: a CUDA build without a GPU"
    mr_pair, device_buffer = _host_ratio(pairs, repeat)
    return f"host-ratio mr_pair={mr_pair:.2f} device_buffer={device_buffer:.2f}"


def _host_ratio(pairs: int, repeat: int) -> tuple[float, float]:
    """(mr pair, DeviceBuffer) time over bytearray(1000)'s, in this process,
    each the best of `repeat` runs (_best_times)."""
    pool = mr.PoolMemoryResource(mr.SystemMemoryResource(), initial_pool_size="64MiB")

    def mr_pair():
        pool.deallocate(pool.allocate(1000), 1000)

    def device_buffer():
        cmr.DeviceBuffer(size=1000, mr=pool)

    def host_bytes():
        bytearray(1000)

    best = _best_times({"mr": mr_pair, "buffer": device_buffer, "bytes": host_bytes}, pairs, repeat)
    return best["mr"] / best["bytes"], best["buffer"] / best["bytes"]


# ---- workloads: one configuration per process --------------------------------------------

WORKLOADS = {"cupy": ("CuPy's default pool", "cmr_cupy_allocator"),
             "torch": ("caching allocator", "cmr_torch_allocator")}


class Skip(Exception):
    """The workload cannot run here; the message says why."""


def _cmr_pool_as_current():
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size="1GiB")
    mr.set_current_device_resource(pool)
    return pool


def _cupy_or_skip():
    try:
        import cupy
    except ImportError:
        raise Skip("no CuPy") from None
    if not capi.cmr_built_with_cuda() or cupy.cuda.runtime.getDeviceCount() == 0:
        raise Skip("no GPU (or a host build)")
    return cupy


def _cupy_step(cupy):
    """One step of the CuPy workload: temporaries of mixed sizes, a matmul and an FFT."""
    matrix = cupy.random.random((256, 256), dtype=cupy.float32)
    signal = cupy.random.random(4096, dtype=cupy.float32)
    sizes = [1 + (i * 7919) % 200_000 for i in range(16)]  # 1 B to ~800 KB of float32 temporaries

    def step(i: int):
        temporaries = [cupy.empty(sizes[(i + k) % len(sizes)], dtype=cupy.float32) for k in range(8)]
        product = matrix @ matrix
        spectrum = cupy.fft.fft(signal)
        scaled = (product * 0.5 + 1.0).sum() + cupy.abs(spectrum).sum()
        del temporaries
        return scaled
    return step


def _timed_steps(cupy, step, steps: int) -> float:
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    cupy.cuda.Device().synchronize()
    return time.perf_counter() - start


def _cupy_workload(config: str, steps: int) -> float:
    cupy = _cupy_or_skip()
    if config == "cmr":
        from cmr.allocators.cupy import cmr_cupy_allocator
        _cmr_pool_as_current()
        cupy.cuda.set_allocator(cmr_cupy_allocator)
    step = _cupy_step(cupy)
    _timed_steps(cupy, step, steps // 10)  # warm: the pools hold their blocks, cuBLAS and cuFFT their plans
    return _timed_steps(cupy, step, steps)


BLOCK_STEPS = 100  # steps of a block when the two allocators take turns in one process


def _cupy_taking_turns(steps: int) -> tuple[float, float]:
    """(CuPy's pool, cmr_cupy_allocator): the median time of a block of
    BLOCK_STEPS steps of the CuPy workload, in one process whose allocator
    changes every block (each allocator first in every other pair of
    blocks), so that what the machine does meanwhile lands on both; the
    first pair of blocks only warms."""
    cupy = _cupy_or_skip()
    from cmr.allocators.cupy import cmr_cupy_allocator
    _cmr_pool_as_current()
    allocators = {"peer": cupy.get_default_memory_pool().malloc, "cmr": cmr_cupy_allocator}
    step = _cupy_step(cupy)
    times: dict[str, list[float]] = {"peer": [], "cmr": []}
    for block in range(max(steps // BLOCK_STEPS, 2) + 1):
        for config in ("peer", "cmr") if block % 2 == 0 else ("cmr", "peer"):
            cupy.cuda.set_allocator(allocators[config])
            seconds = _timed_steps(cupy, step, BLOCK_STEPS)
            if block > 0:
                times[config].append(seconds)
    cupy.cuda.set_allocator(allocators["peer"])
    return statistics.median(times["peer"]), statistics.median(times["cmr"])


def _torch_workload(config: str, steps: int) -> float:
    try:
        import torch
    except ImportError:
        raise Skip("no PyTorch") from None
    if not capi.cmr_built_with_cuda() or not torch.cuda.is_available():
        raise Skip("no GPU (or a host build)")
    if config == "cmr":
        from cmr.allocators.torch import cmr_torch_allocator
        _cmr_pool_as_current()
        torch.cuda.memory.change_current_allocator(cmr_torch_allocator)  # before anything is allocated
    device = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [32, 96, 256, 17, 512, 128, 1000, 64]  # varying: the allocator sees new sizes all along

    def step(i: int):
        batch = batches[i % len(batches)]
        inputs = torch.randn(batch, 512, device=device)
        labels = torch.randint(0, 10, (batch,), device=device)
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()

    for i in range(steps // 10):
        step(i)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def _child(workload: str, config: str, steps: int) -> None:
    """Runs one configuration in this (fresh) process; prints `seconds S`
    (config "turns": `seconds PEER CMR`, _cupy_taking_turns) or `skip: why`."""
    try:
        if config == "turns":
            print("seconds " + " ".join(f"{value:.6f}" for value in _cupy_taking_turns(steps)))
        else:
            run = _cupy_workload if workload == "cupy" else _torch_workload
            print(f"seconds {run(config, steps):.6f}")
    except Skip as why:
        print(f"skip: {why}")


class _Children:
    """Runs workload configurations in fresh processes; what a failed one
    said goes into `failed`."""

    def __init__(self, steps: int, failed: list[str]):
        self.steps, self.failed = steps, failed

    def run(self, workload: str, config: str) -> list[float] | str:
        """The seconds the process printed, or why there are none."""
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", workload, config,
                              "--steps", str(self.steps)], capture_output=True, text=True, check=False)
        line = (out.stdout.strip().splitlines() or [""])[-1]
        if out.returncode != 0 or not (line.startswith("seconds ") or line.startswith("skip: ")):
            self.failed.append(f"{workload} {config}: exit {out.returncode}\n{out.stdout}\n{out.stderr[-4000:]}")
            return f"FAILED ({workload} {config}, exit {out.returncode}; the output follows the tables)"
        if line.startswith("skip: "):
            return line[len("skip: "):]
        return [float(value) for value in line.split()[1:]]


def _workloads(names: list[str], runs: int, children: _Children) -> list[tuple[str, str, float, list[float]]]:
    """(workload, configuration, median seconds, every run's seconds) of
    every configuration of the named workloads that ran; prints a table per
    workload, and for CuPy's also the two allocators taking turns in one
    process (_cupy_taking_turns)."""
    rows = []
    for workload in names:
        peer, ours = WORKLOADS[workload]
        times: dict[str, list[float]] = {"peer": [], "cmr": []}
        skipped = None
        for _ in range(runs):
            for config in times:  # taking turns: drift in the machine lands on both
                seconds = children.run(workload, config)
                if isinstance(seconds, str):
                    skipped = seconds
                    break
                times[config] += seconds
            if skipped:
                break
        print(f"\nworkload {workload}: {children.steps} steps, {runs} fresh processes per configuration, "
              "median wall time")
        if skipped:
            print(f"skipped: {skipped}")
            continue
        medians = {config: statistics.median(values) for config, values in times.items()}
        print("| configuration | median s | runs (s) | time / peer's |")
        print("|---|---|---|---|")
        for config, name in (("peer", peer), ("cmr", ours)):
            runs_text = " ".join(f"{value:.3f}" for value in times[config])
            print(f"| {name} | {medians[config]:.4f} | {runs_text} | {medians[config] / medians['peer']:.3f}x |")
            rows.append((workload, name, medians[config], times[config]))
        if workload == "cupy":
            _print_taking_turns(runs, children)
    return rows


def _print_taking_turns(runs: int, children: _Children) -> None:
    """The CuPy workload with both allocators in each of `runs` processes,
    taking turns a block at a time: the median of the processes' ratios."""
    ratios, lines = [], []
    for run in range(runs):
        seconds = children.run("cupy", "turns")
        if isinstance(seconds, str):
            print(f"taking turns: skipped: {seconds}")
            return
        peer, cmr_seconds = seconds
        ratios.append(cmr_seconds / peer)
        lines.append(f"| {run + 1} | {peer * 1e3:.2f} | {cmr_seconds * 1e3:.2f} | {ratios[-1]:.3f}x |")
    print(f"\nworkload cupy, both allocators in each of {runs} processes, taking turns every {BLOCK_STEPS} steps "
          f"({max(children.steps // BLOCK_STEPS, 2)} blocks each): median block time")
    print("| process | CuPy's default pool ms | cmr_cupy_allocator ms | time / CuPy's |")
    print("|---|---|---|---|")
    print("\n".join(lines))
    print(f"| median of the processes | | | {statistics.median(ratios):.3f}x |")


def _plot_workloads(rows, out: str) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import plot  # bench/plot.py: the same conventions as the other plots
    plot.workloads_plot([{"workload": w, "subject": s, "median_s": str(m)} for w, s, m, _ in rows], out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, nargs="+", default=[1000, 1 << 20, 64 << 20])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--csv", help="also write bytes,subject,ns_per_pair lines here")
    parser.add_argument("--runs", type=int, default=9,
                        help="fresh processes per workload configuration (their times vary by half: 9 for a median)")
    parser.add_argument("--steps", type=int, default=2000, help="steps of each workload run")
    parser.add_argument("--workloads", nargs="*", choices=sorted(WORKLOADS), default=sorted(WORKLOADS),
                        help="the workloads to run (none: the per-call tables alone)")
    parser.add_argument("--workloads-csv", help="also write workload,subject,median_s,runs_s lines here")
    parser.add_argument("--plot", help="write the workloads' medians as a PNG here")
    parser.add_argument("--quick", action="store_true", help="the host-ratio line alone, from few pairs")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "CONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child, args.steps)
        return
    if args.quick:
        print(_host_ratio_line(2000, 3))
        return
    build = "CUDA" if capi.cmr_built_with_cuda() else "host"
    rows = []
    for nbytes in args.bytes:
        print(f"\ncmr {cmr.__version__} ({build} build), {nbytes} bytes, ns per allocate+free pair")
        times = _best_times(_subjects(nbytes), args.pairs, args.repeat)
        peer = times.get("CuPy MemoryPool.malloc+free")
        reference = ("CuPy's pool", peer) if peer else ("the extension call", times["cmr pool: extension call alone"])
        print(f"| subject | ns per pair | {reference[0]} / subject |")
        print("|---|---|---|")
        for name, ns in times.items():
            print(f"| {name} | {ns:.0f} | {reference[1] / ns:.2f}x |")
            rows.append(f"{nbytes},{name},{ns:.1f}")
    if args.csv:
        with open(args.csv, "w", encoding="utf-8") as out:
            out.write("bytes,subject,ns_per_pair\n" + "\n".join(rows) + "\n")
    print("\nmr.allocate+deallocate on pool(system) and DeviceBuffer(size=1000)+delete over bytearray(1000), "
          "same process (targets: at most 2.5 and 3.5)")
    print(_host_ratio_line(args.pairs, args.repeat))
    failed: list[str] = []
    workload_rows = _workloads(args.workloads, args.runs, _Children(args.steps, failed))
    if args.workloads_csv:
        with open(args.workloads_csv, "w", encoding="utf-8") as out:
            out.write("workload,subject,median_s,runs_s\n")
            for workload, subject, median, values in workload_rows:
                out.write(f"{workload},{subject},{median:.6f},{' '.join(f'{v:.6f}' for v in values)}\n")
    if args.plot and workload_rows:
        _plot_workloads(workload_rows, args.plot)
    if failed:
        print("\n" + "\n\n".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
