# SPDX-License-Identifier: Apache-2.0
"""The generated C, formatted by clang-format with the repository's
.clang-format, as the hand-written C is (scripts/format.sh). Templates then
only have to be readable; the layout of what they print is clang-format's.

The generated files are compared byte for byte (`--check`), so the formatter
is part of the generator: without it the generator stops and says so, and a
version other than CI's (14) is named in a warning, since another version may
lay the same code out differently."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

STYLE = Path(__file__).resolve().parent.parent / ".clang-format"
CI_MAJOR = 14
C_SUFFIXES = (".c", ".h")


class FormatterMissing(Exception):
    """clang-format is not installed (or CMR_CLANG_FORMAT names nothing runnable)."""


@cache
def clang_format() -> str:
    """The clang-format to run: $CMR_CLANG_FORMAT, else clang-format-14, else clang-format."""
    wanted = os.environ.get("CMR_CLANG_FORMAT")
    for name in ([wanted] if wanted else [f"clang-format-{CI_MAJOR}", "clang-format"]):
        found = shutil.which(name)
        if found:
            _warn_on_other_version(found)
            return found
    raise FormatterMissing(
        f"clang-format was not found ({'CMR_CLANG_FORMAT=' + wanted if wanted else 'clang-format-14, clang-format'}"
        f" on PATH): the generator formats the C it writes with it. Install it (Debian: apt-get install clang-format)"
        f" or point CMR_CLANG_FORMAT at one.")


def _warn_on_other_version(tool: str) -> None:
    version = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True).stdout
    major = re.search(r"version (\d+)", version)
    if major is None or int(major.group(1)) != CI_MAJOR:
        print(f"warning: {version.strip()}: generated/ is formatted by clang-format {CI_MAJOR} (CI's);"
              f" another version may lay it out differently", file=sys.stderr)


def format_c(files: dict[str, str]) -> dict[str, str]:
    """files with every .c and .h text formatted; other files as they are.
    One clang-format run over all of them, in a scratch folder."""
    c_paths = [p for p in files if p.endswith(C_SUFFIXES)]
    if not c_paths:
        return dict(files)
    tool = clang_format()
    with tempfile.TemporaryDirectory(prefix="cmr-format-") as scratch:
        targets = []
        for i, p in enumerate(c_paths):
            # flat names: the scratch folder needs no tree, only the suffix
            target = Path(scratch) / f"{i}{Path(p).suffix}"
            target.write_text(files[p], encoding="utf-8")
            targets.append(target)
        subprocess.run([tool, f"--style=file:{STYLE}", "-i", *map(str, targets)], check=True)
        formatted = {p: t.read_text(encoding="utf-8") for p, t in zip(c_paths, targets)}
    return {p: formatted.get(p, text) for p, text in files.items()}
