# SPDX-License-Identifier: Apache-2.0
"""The key sweeps of a GPU benchmark run as PNG plots (matplotlib), from the
CSV files that bench/run_gpu.sh has the benchmarks write:

    python3 bench/plot.py DIR    (DIR holds random_allocations.csv, suballocators.csv, python.csv)

Writes into DIR: random_allocations_large.png (ns per operation against the
maximum size, 100,000 allocations), random_allocations_small.png (the same
for the small sizes), threads.png (pairs per second against threads),
python.png (ns per allocate+free pair from Python, per size) and, from
python_workloads.csv, python_workloads.png (the workloads' medians against
their peers')."""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on the GPU machine
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def _rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _series(rows, key_x, key_y, keep=lambda row: True) -> dict[str, list[tuple[float, float]]]:
    series = defaultdict(list)
    for row in rows:
        if keep(row):
            series[row["subject"]].append((float(row[key_x]), float(row[key_y])))
    return {name: sorted(points) for name, points in series.items()}


def _save(fig, ax, out) -> None:
    """The legend, and the figure written to `out`."""
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"wrote {out}")


def _line_plot(series, title, xlabel, ylabel, out: Path, logy=True) -> None:
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, points in series.items():
        ax.plot([x for x, _ in points], [y for _, y in points], marker="o", label=name)
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    _save(fig, ax, out)


def _python_plot(rows, out: Path) -> None:
    sizes = sorted({int(row["bytes"]) for row in rows})
    subjects = list(dict.fromkeys(row["subject"] for row in rows))
    value = {(int(row["bytes"]), row["subject"]): float(row["ns_per_pair"]) for row in rows}
    fig, ax = plt.subplots(figsize=(9, 5))
    width = 0.8 / len(subjects)
    for i, subject in enumerate(subjects):
        ax.bar([k + i * width for k in range(len(sizes))], [value.get((n, subject), 0) for n in sizes], width,
               label=subject)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(sizes))], [f"{n} B" for n in sizes])
    ax.set_ylabel("ns per allocate+free pair (lower is better)")
    ax.set_title("Per-call cost from Python")
    _save(fig, ax, out)


def workloads_plot(rows, out) -> None:
    """Median wall time of each workload's configurations, as a multiple of
    the workload's first (the peer's); rows: dicts of workload, subject, median_s."""
    workloads = list(dict.fromkeys(row["workload"] for row in rows))
    fig, ax = plt.subplots(figsize=(8, 5))
    for k, workload in enumerate(workloads):
        mine = [row for row in rows if row["workload"] == workload]
        peer = float(mine[0]["median_s"])
        width = 0.8 / len(mine)
        for i, row in enumerate(mine):
            ratio = float(row["median_s"]) / peer
            ax.bar(k + i * width, ratio, width, label=f"{workload}: {row['subject']}")
            ax.annotate(f"{ratio:.2f}x", (k + i * width, ratio), ha="center", va="bottom", fontsize="small")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks([k + 0.2 for k in range(len(workloads))], workloads)
    ax.set_ylabel("median wall time / the peer's (lower is better)")
    ax.set_title("Workloads, each configuration in fresh processes")
    _save(fig, ax, out)


def main(folder: Path) -> None:
    random_rows = _rows(folder / "random_allocations.csv")
    largest = max(int(row["count"]) for row in random_rows if row["table"] == "large")
    _line_plot(_series(random_rows, "max_bytes", "ns_per_op",
                       lambda row: row["table"] == "large" and int(row["count"]) == largest),
               f"random_allocations, {largest} allocations", "maximum allocation size (bytes)",
               "ns per operation (lower is better)", folder / "random_allocations_large.png")
    _line_plot(_series(random_rows, "max_bytes", "ns_per_op", lambda row: row["table"] == "small"),
               "random_allocations, small sizes", "maximum allocation size (bytes)",
               "ns per operation (lower is better)", folder / "random_allocations_small.png")
    suballocator_rows = _rows(folder / "suballocators.csv")
    _line_plot(_series(suballocator_rows, "column", "value", lambda row: row["table"] == "threads"),
               "threads, each on its own stream", "threads", "allocate+free pairs per second (higher is better)",
               folder / "threads.png")
    python_csv = folder / "python.csv"
    if python_csv.exists():
        _python_plot(_rows(python_csv), folder / "python.png")
    workloads_csv = folder / "python_workloads.csv"
    if workloads_csv.exists() and _rows(workloads_csv):
        workloads_plot(_rows(workloads_csv), folder / "python_workloads.png")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
