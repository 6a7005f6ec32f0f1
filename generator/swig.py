"""Run SWIG over the rendered interfaces, so that its output is committed in
generated/ and a build needs no SWIG (the GPU machine has none)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The output differs between SWIG versions; generated/ is made with
# Debian 12's, the one CI installs.
SWIG_VERSION = "4.1.0"


@dataclass(frozen=True)
class SwigTarget:
    """One language's SWIG run. Paths are relative to generated/ unless said."""
    interface: str           # the rendered interface SWIG reads
    flags: tuple[str, ...]   # the language and its options
    swg_dir: Path            # the hand-written .swg files the interface includes
    wrapper: str             # the C wrapper SWIG writes
    outdir: str              # where the language's own files SWIG writes go


SWIG_TARGETS = (
    SwigTarget(interface="swig/cmr_python.i", flags=("-python", "-threads"), swg_dir=ROOT / "python" / "swig",
               wrapper="swig/cmr_python_wrap.c", outdir="python/cmr"),
    # Go: cgo compiles the wrapper as part of the package, so both sit in its folder.
    SwigTarget(interface="swig/cmr_go.i", flags=("-go", "-cgo", "-intgosize", "64"), swg_dir=ROOT / "go" / "swig",
               wrapper="go/capi/cmr_go_wrap.c", outdir="go/capi"),
    SwigTarget(interface="swig/cmr_java.i", flags=("-java", "-package", "org.cmr"), swg_dir=ROOT / "java" / "swig",
               wrapper="swig/cmr_java_wrap.c", outdir="java/org/cmr"),
    SwigTarget(interface="swig/cmr_csharp.i", flags=("-csharp", "-namespace", "Cmr", "-dllimport", "cmr_csharp"),
               swg_dir=ROOT / "csharp" / "swig", wrapper="swig/cmr_csharp_wrap.c", outdir="csharp/native"),
)


class SwigError(Exception):
    def __init__(self, message: str, missing: bool = False):
        super().__init__(message)
        self.missing = missing  # no SWIG at all (rather than a wrong one or a failed run)


def is_swig_output(path: str, rendered: dict[str, str]) -> bool:
    """Whether a file of generated/ is written by SWIG (not by a template)."""
    return path not in rendered and any(
        path == t.wrapper or path.startswith(t.outdir + "/") for t in SWIG_TARGETS)


def _check_version(swig: str) -> None:
    shown = subprocess.run([swig, "-version"], capture_output=True, text=True, check=False).stdout
    found = re.search(r"SWIG Version (\S+)", shown)
    version = found.group(1) if found else "unknown"
    if version != SWIG_VERSION:
        raise SwigError(f"{swig}: SWIG {version}; generated/ is made with SWIG {SWIG_VERSION} (Debian 12's swig)")


def _run(swig: str, target: SwigTarget, files: dict[str, str]) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="cmr-swig-") as tmp:
        work = Path(tmp)
        for name in (target.interface, "include/cmr/resources.h"):
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(files[name], encoding="utf-8")
        outdir = work / "out"
        outdir.mkdir()
        command = [swig, *target.flags, "-I" + str(target.swg_dir),
                   "-I" + str(work / "include"), "-I" + str(ROOT / "runtime" / "include"),
                   "-o", "wrap.c", "-outdir", str(outdir), target.interface]
        run = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise SwigError(f"swig failed on {target.interface}:\n{run.stderr.strip()}")
        produced = {target.wrapper: (work / "wrap.c").read_text(encoding="utf-8")}
        for path in sorted(outdir.rglob("*")):
            if path.is_file():
                produced[f"{target.outdir}/{path.relative_to(outdir)}"] = path.read_text(encoding="utf-8")
        return produced


def swig_outputs(files: dict[str, str]) -> dict[str, str]:
    """What SWIG writes for every target, as {path in generated/: text}.
    `files` are the rendered files (an interface includes the rendered
    resources.h, not the one on disk)."""
    swig = shutil.which("swig")
    if swig is None:
        raise SwigError("swig not found: regenerating needs SWIG 4.1.0 (apt-get install swig)", missing=True)
    _check_version(swig)
    produced: dict[str, str] = {}
    for target in SWIG_TARGETS:
        produced.update(_run(swig, target, files))
    return produced
