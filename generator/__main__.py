"""python3 -m generator [--check] [--spec DIR] [--out DIR]

Reads spec/*.toml, validates it (one `file: field: problem` line per problem,
exit 1) and writes generated/. With --check it writes nothing and exits 1,
naming each stale, missing or extra file, when generated/ differs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .render import render_all
from .spec import SpecError, load_specs
from .swig import SwigError, is_swig_output, swig_outputs

ROOT = Path(__file__).resolve().parent.parent


def _existing(out: Path) -> set[str]:
    if not out.exists():
        return set()
    return {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}


def _shown(path: Path) -> Path:
    """path as messages show it: relative to the repository when inside it."""
    path = path.resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m generator", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if generated/ is not what the spec produces")
    parser.add_argument("--spec", type=Path, default=ROOT / "spec", help="spec folder (default: spec/)")
    parser.add_argument("--out", type=Path, default=ROOT / "generated", help="output folder (default: generated/)")
    args = parser.parse_args(argv)

    try:
        spec = args.spec.resolve()
        resources = load_specs(spec, display_root=ROOT if spec.is_relative_to(ROOT) else None)
    except SpecError as e:
        for line in e.problems:
            print(line, file=sys.stderr)
        return 1
    files = render_all(resources)
    try:
        files.update(swig_outputs(files))
    except SwigError as e:
        if not (args.check and e.missing):
            print(f"error: {e}", file=sys.stderr)
            return 1
        # Without SWIG (the GPU machine) the rest is still checked; exit 77
        # then says "skipped" to ctest rather than "passed".
        existing_unchecked = {p for p in _existing(args.out) if is_swig_output(p, files)}
        print(f"note: {e}; {', '.join(sorted(existing_unchecked))} not checked", file=sys.stderr)
    else:
        existing_unchecked = set()
    existing = _existing(args.out) - existing_unchecked

    if args.check:
        stale = sorted(p for p, text in files.items()
                       if p not in existing or (args.out / p).read_text(encoding="utf-8") != text)
        extra = sorted(existing - set(files))
        out = _shown(args.out)
        for p in stale:
            state = "stale" if p in existing else "missing"
            print(f"{out / p}: {state} (run python3 -m generator)", file=sys.stderr)
        for p in extra:
            print(f"{out / p}: not produced by the spec (remove it or regenerate)", file=sys.stderr)
        if stale or extra:
            return 1
        return 77 if existing_unchecked else 0

    for p in sorted(existing - set(files)):
        (args.out / p).unlink()
    for p, text in sorted(files.items()):
        target = args.out / p
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    print(f"generated {len(files)} files from {len(resources)} resources into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
