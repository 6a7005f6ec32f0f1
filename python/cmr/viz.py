# SPDX-License-Identifier: Apache-2.0
"""cmr's memory report: a self-contained HTML page (no network needed to view
it) of a memory snapshot: memory over time, the segment map and the largest
holders by call site, drawn as SVG. The page is libcmr's one template
(``cmr_snapshot_report``), which the C tool ``cmr-report`` also renders.

    python3 -m cmr.viz SNAPSHOT.pickle [-o REPORT.html]

SNAPSHOT is a pickle (``cmr.memory.dump_snapshot``'s, or PyTorch's own
``torch.cuda.memory._dump_snapshot``'s) or its JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
from typing import Any

from . import _capi as capi

__all__ = ["report", "load", "main"]


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The snapshot dict in ``path``: a pickle, or JSON."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:1] == b"\x80":
        snapshot = pickle.loads(data)
    else:
        snapshot = json.loads(data)
    if not isinstance(snapshot, dict) or "segments" not in snapshot:
        raise ValueError(f"{os.fspath(path)} is not a memory snapshot (a dict with 'segments')")
    return snapshot


def report(snapshot: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Writes the HTML report of ``snapshot`` (a snapshot dict) to ``path``."""
    if not isinstance(snapshot, dict):
        raise TypeError(f"snapshot must be a dict, not {type(snapshot).__name__}")
    text = json.dumps(snapshot, default=repr, separators=(",", ":"))
    capi.cmr_snapshot_report(text.encode("utf-8"), os.fspath(path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m cmr.viz", description="cmr's HTML memory report of a snapshot")
    parser.add_argument("snapshot", help="a snapshot pickle (cmr's or PyTorch's) or its JSON")
    parser.add_argument("-o", "--output", help="where the report goes (default: SNAPSHOT.html)")
    args = parser.parse_args(argv)
    output = args.output or os.path.splitext(args.snapshot)[0] + ".html"
    try:
        report(load(args.snapshot), output)
    except (OSError, ValueError, pickle.UnpicklingError) as error:
        print(f"python3 -m cmr.viz: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
