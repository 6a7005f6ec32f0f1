"""Per-call cost of cmr's Python package, against the peers in the same
process: ns per allocate+free pair of `--bytes` bytes, warm, best of
`--repeat` runs of `--pairs` pairs each. Ratios are the peer's time over
cmr's (higher is better for cmr).

    PYTHONPATH=build/<dir>/python python3 bench/bench_python.py [--bytes N] [--pairs N] [--repeat N]

Rows: cmr.mr.allocate/deallocate on a pool, cmr.DeviceBuffer create+delete
on the same pool, and the C call through the extension alone (what the
binding layer adds is the difference); with a GPU also over cudaMallocAsync
(cmr's cuda_async), and CuPy's MemoryPool.malloc / PyTorch's caching
allocator (torch.empty) where they are installed."""

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
    pool = mr.PoolMemoryResource(base, initial_pool_size="64MiB")
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
    return subjects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=1 << 20)
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    build = "CUDA" if capi.cmr_built_with_cuda() else "host"
    print(f"cmr {cmr.__version__} ({build} build), {args.bytes} bytes, ns per allocate+free pair")
    times = {name: _pair_time(pair, args.pairs, args.repeat) for name, pair in _subjects(args.bytes).items()}
    peer = times.get("CuPy MemoryPool.malloc+free")
    reference = ("CuPy's pool", peer) if peer else ("the extension call", times["cmr pool: extension call alone"])
    print(f"| subject | ns per pair | {reference[0]} / subject |")
    print("|---|---|---|")
    for name, ns in times.items():
        print(f"| {name} | {ns:.0f} | {reference[1] / ns:.2f}x |")


if __name__ == "__main__":
    main()
