#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the synthetic traces of bench/fragmentation, gzip-compressed, in
RMM's CSV allocation-log format (Thread,Time,Action,Pointer,Size,Stream),
the format cmr's logging adaptor writes:

  torch_small_first.csv.gz  PyTorch's expandable-segments example (its
                            2026 devlog): 8 x 16 MiB allocated and freed,
                            then 4 x 32 MiB allocated and freed. A
                            caching allocator whose 16 MiB segments cannot
                            merge reserves 256 MiB for a peak in use of
                            128 MiB.
  torch_large_first.csv.gz  the reverse order, 4 x 32 MiB then 8 x 16 MiB:
                            the 32 MiB segments split, 128 MiB reserved.
  random.csv.gz             RMM's random_allocations benchmark
                            (bench_random_allocations, uniform_random_allocations):
                            10,000 allocations of 1 B to 4 MiB, uniform,
                            allocating with probability 0.73 while under
                            1 GiB in use, else freeing a random live one;
                            written by cmr-make-random-log (cmr's logging
                            adaptor over the simulated resource), seed 1.
  mixed.csv.gz              small mixed sizes, the shape of cmr-make-random-log's
                            mixed log: 20,000 allocations of 1 B to 64 KiB,
                            log-uniform, under 32 MiB in use (seed 1): the
                            trace whose requests fit fixed_size's blocks.

    python3 bench/traces/make_traces.py BUILD_DIR [OUT_DIR]

BUILD_DIR holds cmr-make-random-log; OUT_DIR defaults to bench/traces.
The events are the same on every run (seeded; gzip without a name or time
in its header): the torch files come out byte for byte the same, the
random and mixed ones differ only in their Time column, which the logging
adaptor fills from the clock (no replay reads it)."""
import gzip
import io
import subprocess
import sys
import tempfile
from pathlib import Path

HEADER = "Thread,Time,Action,Pointer,Size,Stream"
MIB = 1 << 20
# Where the synthetic pointers start: a user-space address as a GPU's are.
BASE = 0x7F0000000000


def phases_log(phases):
    """A log of phases, each (count, size): `count` allocations of `size`
    bytes, then their frees in the order made. Pointers are distinct within
    a phase and reused across phases, as an allocator would hand them out."""
    rows, tick = [HEADER], 0

    def row(action, pointer, size):
        nonlocal tick
        tick += 1
        seconds = tick / 1e6
        rows.append(f"1,00:00:{seconds:09.6f},{action},0x{pointer:x},{size},0x0")

    for count, size in phases:
        pointers = [BASE + i * size for i in range(count)]
        for p in pointers:
            row("allocate", p, size)
        for p in pointers:
            row("free", p, size)
    return "\n".join(rows) + "\n"


def write_gzip(path: Path, text: str):
    """gzip with no file name and time 0 in the header: the same bytes every run."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(text.encode())
    path.write_bytes(buffer.getvalue())
    print(f"{path}: {len(text.splitlines()) - 1} rows, {path.stat().st_size} bytes")


def made_log(build: Path, shape: str, allocations: int, max_size: int, max_usage: int) -> str:
    """What cmr-make-random-log writes for `shape` (seed 1)."""
    with tempfile.TemporaryDirectory() as scratch:
        csv = Path(scratch) / f"{shape}.csv"
        subprocess.run([str(build / "cmr-make-random-log"), shape, str(csv), "--allocations", str(allocations),
                        "--max-size", str(max_size), "--max-usage", str(max_usage), "--seed", "1"], check=True)
        return csv.read_text()


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    build = Path(argv[1])
    out = Path(argv[2]) if len(argv) == 3 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    write_gzip(out / "torch_small_first.csv.gz", phases_log([(8, 16 * MIB), (4, 32 * MIB)]))
    write_gzip(out / "torch_large_first.csv.gz", phases_log([(4, 32 * MIB), (8, 16 * MIB)]))
    write_gzip(out / "random.csv.gz", made_log(build, "random", 10000, 4 * MIB, 1 << 30))
    write_gzip(out / "mixed.csv.gz", made_log(build, "mixed", 20000, 64 << 10, 32 * MIB))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
