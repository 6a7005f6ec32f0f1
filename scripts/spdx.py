# SPDX-License-Identifier: Apache-2.0
"""Every source file carries `SPDX-License-Identifier: Apache-2.0` near its
top, in the comment syntax of its language; generated files get it from the
generator's templates.

    python3 scripts/spdx.py check   # lists the files without it; exit 1 if any
    python3 scripts/spdx.py add     # adds it to those files

Files are those git tracks (plus untracked ones it does not ignore), chosen
by name: see COMMENT_STYLE. Data, documentation and license texts are left
out on purpose."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TAG = "SPDX-License-Identifier: Apache-2.0"

C_STYLE = "/* {} */"
HASH = "# {}"
SLASHES = "// {}"
XML = "<!-- {} -->"
JINJA = "{{# {} #}}"

# The comment a file's name calls for (suffix, or whole name).
COMMENT_STYLE = {
    ".c": C_STYLE, ".h": C_STYLE, ".cu": C_STYLE, ".swg": C_STYLE, ".i": C_STYLE,
    ".java": SLASHES, ".go": SLASHES, ".cs": SLASHES,
    ".py": HASH, ".pyi": HASH, ".pxd": HASH, ".sh": HASH, ".cmake": HASH, ".toml": HASH,
    ".nuspec": XML, ".xml": XML,
    "CMakeLists.txt": HASH, "run": HASH,
}

# Templates: the comment goes into what they render, in the rendered
# language's syntax; templates that only define macros get a Jinja comment.
TEMPLATE_STYLE = {
    ".c.j2": C_STYLE, ".h.j2": C_STYLE, ".i.j2": C_STYLE, ".py.j2": HASH, ".pyi.j2": HASH,
    ".cmake.j2": HASH, ".go.j2": SLASHES, ".java.j2": SLASHES, ".cs.j2": SLASHES, ".md.j2": XML,
}

HEAD_LINES = 6  # the tag must be within the first lines


def tracked_files(root: Path) -> list[Path]:
    listing = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                             check=True, capture_output=True, text=True).stdout
    return [root / name for name in listing.splitlines() if (root / name).is_file()]


def style_of(path: Path) -> str | None:
    name = path.name
    if name.endswith(".j2"):
        for suffix, style in TEMPLATE_STYLE.items():
            if name.endswith(suffix):
                return style
        return JINJA
    if path.parent.name == ".ci" and name == "run":
        return HASH
    if name in COMMENT_STYLE and name != "run":
        return COMMENT_STYLE[name]
    return COMMENT_STYLE.get(path.suffix)


def has_tag(text: str) -> bool:
    return any(TAG in line for line in text.splitlines()[:HEAD_LINES])


def with_tag(text: str, style: str) -> str:
    """text with the tag's line first (after a #! line, an XML declaration,
    or a Jinja line that must stay first)."""
    lines = text.splitlines(keepends=True)
    at = 0
    if lines and (lines[0].startswith("#!") or lines[0].startswith("<?xml")):
        at = 1
    return "".join(lines[:at]) + style.format(TAG) + "\n" + "".join(lines[at:])


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ("check", "add"):
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parent.parent
    missing = []
    for path in tracked_files(root):
        style = style_of(path)
        generated = path.relative_to(root).parts[0] == "generated"
        if style is None or (generated and argv[1] == "add"):
            continue  # generated files get the tag from their templates
        text = path.read_text(encoding="utf-8")
        if has_tag(text):
            continue
        missing.append(path.relative_to(root))
        if argv[1] == "add":
            path.write_text(with_tag(text, style), encoding="utf-8")
    if argv[1] == "check":
        for name in missing:
            print(f"{name}: no '{TAG}' in its first {HEAD_LINES} lines")
        return 1 if missing else 0
    print(f"spdx.py: added the tag to {len(missing)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
