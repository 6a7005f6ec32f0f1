"""Per-call cost of cmr's Python package, against the peers in the same
process: ns per allocate+free pair of each `--bytes` size (small and large
by default), warm, best of `--repeat` runs of `--pairs` pairs each. Ratios
are CuPy's pool's time over the row's (higher is better; without CuPy, the
extension call's).

    PYTHONPATH=build/<dir>/python python3 bench/bench_python.py [--bytes N ...] [--pairs N] [--repeat N]
                                                                [--csv FILE]

Rows: cmr.mr.allocate/deallocate on a pool, cmr.DeviceBuffer create+delete
on the same pool, and the C call through the extension alone (what the
binding layer adds is the difference); with a GPU also over cudaMallocAsync
(cmr's cuda_async), and CuPy's MemoryPool.malloc, PyTorch's caching
allocator (torch.empty) and cuda.core's device memory resource (allocate +
close) where they are installed. Targets (issue 7): DeviceBuffer at most
0.5x CuPy's time, mr.allocate+deallocate at most 0.3x."""

from __future__ import annotations

import argparse
import timeit

import cmr
from cmr import capi, mr


def _pair_time(pair, pairs: int, repeat: int) -> float:
    pair()  # warm: the pool holds the block after the first pair
    return min(timeit.repeat(pair, number=pairs, repeat=repeat)) / pairs * 1e9


def _subjects(nbytes: int) -> dict:
    gpu = capi.cmr_built_with_cuda()
    base = mr.CudaMemoryResource() if gpu else mr.SystemMemoryResource()
    pool = mr.PoolMemoryResource(base, initial_pool_size="1GiB" if gpu else "64MiB")
    ref = pool.ref
    extension = capi._capi

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, nargs="+", default=[1000, 1 << 20, 64 << 20])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--csv", help="also write bytes,subject,ns_per_pair lines here")
    args = parser.parse_args()
    build = "CUDA" if capi.cmr_built_with_cuda() else "host"
    rows = []
    for nbytes in args.bytes:
        print(f"\ncmr {cmr.__version__} ({build} build), {nbytes} bytes, ns per allocate+free pair")
        times = {name: _pair_time(pair, args.pairs, args.repeat) for name, pair in _subjects(nbytes).items()}
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


if __name__ == "__main__":
    main()
