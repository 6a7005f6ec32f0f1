#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws cmr-bench-fragmentation's CSV as an SVG, with the standard library
alone: one group of bars per trace, one bar per allocator, its height the
peak bytes held over the peak bytes in use (1.0, the dashed line, holds
exactly what is in use; a bar past CLIP, 3.0, is drawn to CLIP and marked
"cut", so one outlier does not flatten the rest), its label the ratio and,
when some were refused, the failures under the cap.

    python3 bench/fragmentation/plot.py RESULTS.csv OUT.svg
    python3 bench/fragmentation/plot.py --check RESULTS.csv OUT.svg

--check reads the SVG back and fails (exit 1) unless it is well-formed XML
holding one bar per row of the CSV, each with its trace, allocator and
ratio as the CSV gives them, and a bar height proportional to the ratio."""
import csv
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SVG = "http://www.w3.org/2000/svg"
COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]
HEIGHT, LEFT, BOTTOM, TOP, BAR = 440, 60, 70, 50, 44
CLIP = 3.0


def read_rows(path):
    """The rows whose held was measured (an empty peak_held was not: no bar)."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["peak_held"] != ""]
    for r in rows:
        r["ratio"] = int(r["peak_held"]) / int(r["peak_in_use"]) if int(r["peak_in_use"]) else 0.0
    return rows


def layout(rows):
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    allocators = list(dict.fromkeys(r["allocator"] for r in rows))
    top_ratio = min(max([r["ratio"] for r in rows] + [1.0]), CLIP) * 1.15
    return traces, allocators, top_ratio


def bar_height(ratio, top_ratio):
    return (HEIGHT - BOTTOM - TOP) * min(ratio, CLIP) / top_ratio


def draw(rows):
    traces, allocators, top_ratio = layout(rows)
    width = max(960, LEFT + len(traces) * (len(allocators) * BAR + 40) + 20)
    svg = ET.Element("svg", xmlns=SVG, width=str(width), height=str(HEIGHT), viewBox=f"0 0 {width} {HEIGHT}")
    ET.SubElement(svg, "rect", width=str(width), height=str(HEIGHT), fill="white")
    title = ET.SubElement(svg, "text", x=str(width // 2), y="22", **{"text-anchor": "middle", "font-size": "16"})
    title.text = "Peak held / peak in use, per trace and allocator (lower is better; 1.0 holds only what is in use)"
    note = ET.SubElement(svg, "text", x=str(width // 2), y="38", **{"text-anchor": "middle", "font-size": "11"})
    note.text = "red: allocations refused (out of memory) under the cap"
    base = HEIGHT - BOTTOM
    ET.SubElement(svg, "line", x1=str(LEFT), y1=str(base), x2=str(width - 10), y2=str(base), stroke="black")
    one = base - bar_height(1.0, top_ratio)
    ET.SubElement(svg, "line", x1=str(LEFT), y1=f"{one:.1f}", x2=str(width - 10), y2=f"{one:.1f}", stroke="grey",
                  **{"stroke-dasharray": "4 3"})
    label = ET.SubElement(svg, "text", x=str(LEFT - 6), y=f"{one + 4:.1f}", **{"text-anchor": "end", "font-size": "11"})
    label.text = "1.0"
    group_width = (width - LEFT - 20) / max(len(traces), 1)
    for t, trace in enumerate(traces):
        x0 = LEFT + t * group_width + (group_width - BAR * len(allocators)) / 2
        name = ET.SubElement(svg, "text", x=f"{LEFT + (t + 0.5) * group_width:.1f}", y=str(base + 18),
                             **{"text-anchor": "middle", "font-size": "12"})
        name.text = trace
        for r in (r for r in rows if r["trace"] == trace):
            a = allocators.index(r["allocator"])
            h = bar_height(r["ratio"], top_ratio)
            x = x0 + a * BAR
            ET.SubElement(svg, "rect", x=f"{x:.1f}", y=f"{base - h:.1f}", width=str(BAR - 3), height=f"{h:.1f}",
                          fill=COLOURS[a % len(COLOURS)], **{"class": "bar", "data-trace": trace,
                                                             "data-allocator": r["allocator"],
                                                             "data-ratio": f"{r['ratio']:.3f}"})
            value = ET.SubElement(svg, "text", x=f"{x + (BAR - 3) / 2:.1f}", y=f"{base - h - 4:.1f}",
                                  **{"text-anchor": "middle", "font-size": "9"})
            value.text = f"{r['ratio']:.2f}" + (" cut" if r["ratio"] > CLIP else "")
            failures = int(r["failures_under_cap"])
            if failures:
                refused = ET.SubElement(svg, "text", x=f"{x + (BAR - 3) / 2:.1f}", y=f"{base - h - 15:.1f}",
                                        fill="#b00000", **{"text-anchor": "middle", "font-size": "9"})
                refused.text = f"{failures} OOM"
    for a, allocator in enumerate(allocators):
        x = LEFT + a * 130
        ET.SubElement(svg, "rect", x=str(x), y=str(HEIGHT - 30), width="12", height="12",
                      fill=COLOURS[a % len(COLOURS)])
        key = ET.SubElement(svg, "text", x=str(x + 16), y=str(HEIGHT - 20), **{"font-size": "12"})
        key.text = allocator
    return ET.ElementTree(svg)


def check(rows, svg_path):
    """The SVG read back: one bar per row with the row's values and height."""
    tree = ET.parse(svg_path)
    bars = [e for e in tree.iter(f"{{{SVG}}}rect") if e.get("class") == "bar"]
    problems = []
    if len(bars) != len(rows):
        problems.append(f"{len(bars)} bars for {len(rows)} rows")
    _, _, top_ratio = layout(rows)
    for r in rows:
        match = [b for b in bars if b.get("data-trace") == r["trace"] and b.get("data-allocator") == r["allocator"]]
        if len(match) != 1:
            problems.append(f"{r['trace']} {r['allocator']}: {len(match)} bars")
            continue
        bar = match[0]
        if bar.get("data-ratio") != f"{r['ratio']:.3f}":
            problems.append(f"{r['trace']} {r['allocator']}: ratio {bar.get('data-ratio')}, the CSV {r['ratio']:.3f}")
        if abs(float(bar.get("height")) - bar_height(r["ratio"], top_ratio)) > 0.1:
            problems.append(f"{r['trace']} {r['allocator']}: height {bar.get('height')} is not its ratio's")
    for p in problems:
        print(f"plot.py --check: {svg_path}: {p}", file=sys.stderr)
    return 1 if problems else 0


def main(argv):
    checking = len(argv) == 4 and argv[1] == "--check"
    if len(argv) != (4 if checking else 3):
        print(__doc__, file=sys.stderr)
        return 2
    csv_path, svg_path = argv[-2], argv[-1]
    rows = read_rows(csv_path)
    if not rows:
        print(f"plot.py: {csv_path}: no row with a measured peak held", file=sys.stderr)
        return 1
    if checking:
        return check(rows, svg_path)
    draw(rows).write(svg_path, encoding="unicode")
    Path(svg_path).write_text(Path(svg_path).read_text() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
