"""Run SWIG over the rendered interfaces, so that its output is committed in
generated/ and a build needs no SWIG (the GPU machine has none)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The output differs between SWIG versions; generated/ is made with
# Debian 12's, the one CI installs.
SWIG_VERSION = "4.1.0"


# What SWIG writes, relative to generated/.
SWIG_OUTPUTS = ("swig/cmr_python_wrap.c", "python/cmr/capi.py")


class SwigError(Exception):
    def __init__(self, message: str, missing: bool = False):
        super().__init__(message)
        self.missing = missing  # no SWIG at all (rather than a wrong one or a failed run)


def _check_version(swig: str) -> None:
    shown = subprocess.run([swig, "-version"], capture_output=True, text=True, check=False).stdout
    found = re.search(r"SWIG Version (\S+)", shown)
    version = found.group(1) if found else "unknown"
    if version != SWIG_VERSION:
        raise SwigError(f"{swig}: SWIG {version}; generated/ is made with SWIG {SWIG_VERSION} (Debian 12's swig)")


def python_outputs(files: dict[str, str]) -> dict[str, str]:
    """The SWIG output of swig/cmr_python.i: the C wrapper and the module
    cmr.capi. `files` are the rendered files (the interface includes the
    rendered resources.h, not the one on disk)."""
    swig = shutil.which("swig")
    if swig is None:
        raise SwigError("swig not found: regenerating needs SWIG 4.1.0 (apt-get install swig)", missing=True)
    _check_version(swig)
    with tempfile.TemporaryDirectory(prefix="cmr-swig-") as tmp:
        work = Path(tmp)
        for name in ("swig/cmr_python.i", "include/cmr/resources.h"):
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(files[name], encoding="utf-8")
        command = [swig, "-python", "-threads", "-I" + str(ROOT / "python" / "swig"),
                   "-I" + str(work / "include"), "-I" + str(ROOT / "runtime" / "include"),
                   "-o", "cmr_python_wrap.c", "-outdir", ".", "swig/cmr_python.i"]
        run = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise SwigError(f"swig failed on swig/cmr_python.i:\n{run.stderr.strip()}")
        wrapper, module = SWIG_OUTPUTS
        return {wrapper: (work / "cmr_python_wrap.c").read_text(encoding="utf-8"),
                module: (work / "capi.py").read_text(encoding="utf-8")}
