# SPDX-License-Identifier: Apache-2.0
"""The host run behind docs/diagnosing-memory.md's pictures: a pool over host
memory, a workload with three call sites that hold memory, a leak-like
cache, an out-of-memory failure, then the snapshot and its report.

    PYTHONPATH=build/host/python python3 docs/examples/diagnose_host.py OUT_DIR
"""

import os
import sys

import cmr
from cmr import mr

MiB = 1 << 20


def load_batch(pool, n):
    return [pool.allocate(64 * 1024 + 4096 * i) for i in range(n)]


def build_cache(pool, cache):
    cache.append(pool.allocate(2 * MiB))


def scratch(pool):
    buffers = [pool.allocate(256 * 1024) for _ in range(8)]
    for b in buffers:
        pool.deallocate(b, 256 * 1024)


def main(out):
    pool = mr.PoolMemoryResource(mr.SystemMemoryResource(), initial_pool_size=4 * MiB,
                                 maximum_pool_size=32 * MiB, maximum_growth=4 * MiB)
    cmr.memory.record_history(stacks="all")
    cache = []
    held = []
    for step in range(6):
        batch = load_batch(pool, 12)
        scratch(pool)
        build_cache(pool, cache)
        held.extend(batch[:4])
        for i, b in enumerate(batch[4:], start=4):
            pool.deallocate(b, 64 * 1024 + 4096 * i)
    try:
        pool.allocate(24 * MiB)
    except MemoryError as error:
        print("out of memory, as intended:", str(error)[:100], "...")
    path = os.path.join(out, "host_snapshot.pickle")
    cmr.memory.dump_snapshot(path, pool)
    cmr.viz.report(cmr.viz.load(path), os.path.join(out, "host_report.html"))
    print("wrote", path, "and host_report.html")


if __name__ == "__main__":
    import cmr.viz
    main(sys.argv[1])
