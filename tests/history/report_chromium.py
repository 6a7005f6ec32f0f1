# SPDX-License-Identifier: Apache-2.0
"""history.report_chromium: cmr's HTML report in a real browser. The pool
snapshot that cmr-snapshot-workload writes is loaded in Debian's headless
Chromium twice: --dump-dom gives the page as its script left it (the SVG
drawn: the two lines over time, a rect per handed-out block, the holders'
bars; the totals, which must be the snapshot's own numbers) and
--screenshot a PNG, decoded here (zlib and PNG's row filters) to check that
the plot's colours were painted. Exit 77 (skipped) without chromium.

    python3 report_chromium.py PATH/cmr-snapshot-workload
"""

import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

from expectations import expect, finish

ALLOCATED_BLUE = (0x38, 0x67, 0xD6)


class Page(html.parser.HTMLParser):
    """The elements of the drawn page: tags by class, and text by id."""

    def __init__(self):
        super().__init__()
        self.elements = []  # (tag, attributes)
        self.text_of = {}
        self._open_id = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.elements.append((tag, attributes))
        self._open_id = attributes.get("id")

    def handle_data(self, data):
        if self._open_id is not None:
            self.text_of[self._open_id] = self.text_of.get(self._open_id, "") + data

    def handle_endtag(self, tag):
        self._open_id = None

    def count(self, tag, cls=None):
        return sum(1 for t, a in self.elements if t == tag and (cls is None or a.get("class") == cls))


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"PNG kind {header}"
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


def chromium(*arguments, cwd):
    return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={os.path.join(cwd, 'profile')}", *arguments],
                          capture_output=True, text=True, timeout=180, cwd=cwd)


def main():
    if shutil.which("chromium") is None:
        print("chromium is not installed (apt-get install chromium): skipped")
        return 77
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([sys.argv[1], out], capture_output=True, text=True)
        if run.returncode == 77:
            print(run.stdout.strip())
            return 77
        if run.returncode != 0:
            print("the workload failed:", run.stderr)
            return 1
        with open(os.path.join(out, "pool.json"), encoding="utf-8") as f:
            snapshot = json.load(f)
        url = "file://" + os.path.join(out, "pool.html")
        dom = chromium("--dump-dom", url, cwd=out)
        expect(dom.returncode == 0, f"chromium --dump-dom failed: {dom.stderr[-2000:]}")
        page = Page()
        page.feed(dom.stdout)
        segments = snapshot["segments"]
        blocks = [b for s in segments for b in s["blocks"] if b["state"] == "active_allocated"]
        traces = snapshot["device_traces"][0]
        numbers = {
            "total-segments": len(segments),
            "total-reserved": sum(s["total_size"] for s in segments),
            "total-allocated": sum(b["size"] for b in blocks),
            "total-free": sum(s["total_size"] for s in segments) - sum(b["size"] for b in blocks),
            "total-active-blocks": len(blocks),
            "total-events": len(traces),
            "total-ooms": sum(1 for t in traces if t["action"] == "oom"),
        }
        for key, value in numbers.items():
            expect(page.text_of.get(key, "").strip() == str(value),
                   f"#{key} shows {page.text_of.get(key)!r}, the snapshot says {value}")
        expect(numbers["total-ooms"] == 1 and numbers["total-active-blocks"] > 0, f"the workload's numbers: {numbers}")
        expect(page.count("svg") == 3, f"{page.count('svg')} svg elements, not 3")
        expect(page.count("path", "allocated") == 1 and page.count("path", "reserved") == 1, "the two lines over time")
        expect(page.count("rect", "oom") == 1, "the out-of-memory mark")
        expect(page.count("rect", "segment") == len(segments), "a rect per segment")
        expect(page.count("rect", "block") == len(blocks), f"{page.count('rect', 'block')} block rects, not {len(blocks)}")
        expect(page.count("rect", "holder") >= 1, "the holders' bars")
        paths = [a.get("d", "") for t, a in page.elements if t == "path" and a.get("class") == "allocated"]
        expect(paths and paths[0].count("L") >= 2 * numbers["total-events"], "the allocated line has a step per event")

        shot = chromium("--screenshot=" + os.path.join(out, "pool.png"), "--window-size=1000,1300", url, cwd=out)
        expect(shot.returncode == 0 and os.path.exists(os.path.join(out, "pool.png")),
               f"chromium --screenshot failed: {shot.stderr[-2000:]}")
        if os.path.exists(os.path.join(out, "pool.png")):
            width, height, rows = png_pixels(os.path.join(out, "pool.png"))
            expect((width, height) == (1000, 1300), f"screenshot of {width}x{height}")
            colours = {}
            for row in rows:
                for pixel in row:
                    colours[pixel] = colours.get(pixel, 0) + 1
            blue = sum(n for c, n in colours.items() if all(abs(c[i] - ALLOCATED_BLUE[i]) <= 8 for i in range(3)))
            white = colours.get((255, 255, 255), 0)
            expect(white < width * height * 0.95, "the screenshot is not blank")
            expect(blue > 2000, f"{blue} pixels of the allocated blue: the blocks and bars were painted")
            if os.environ.get("CMR_REPORT_SCREENSHOT"):
                shutil.copy(os.path.join(out, "pool.png"), os.environ["CMR_REPORT_SCREENSHOT"])
    return finish()


if __name__ == "__main__":
    sys.exit(main())
