# SPDX-License-Identifier: Apache-2.0
"""Helpers of the generator tests: running the CLI, temporary spec and out
folders, and compiling generated C."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec"
GENERATED = ROOT / "generated"
HERE = Path(__file__).resolve().parent
BAD_SPECS = HERE / "bad_specs"
GOOD_SPECS = HERE / "good_specs"

# The warnings the CMake build uses (cmr_warnings), as errors.
C_FLAGS = ["-std=c17", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wstrict-prototypes", "-Werror",
           "-D_POSIX_C_SOURCE=200809L"]


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str

    @property
    def errors(self) -> list[str]:
        return self.stderr.splitlines()


def run_generator(*args, hash_seed: str | None = None, extra_env: dict | None = None) -> Run:
    """`python3 -m generator ARGS` from the repository root."""
    env = {**os.environ, **(extra_env or {})}
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    done = subprocess.run([sys.executable, "-m", "generator", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    return Run(done.returncode, done.stdout, done.stderr)


def tree(folder: Path) -> dict[str, str]:
    """Every file under folder, as {relative path: text}."""
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def write_tree(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def compile_c(source: Path, include_dirs, defines=()) -> subprocess.CompletedProcess:
    """cc -fsyntax-only with the build's warnings as errors."""
    command = ["cc", *C_FLAGS, "-fsyntax-only", *(f"-I{d}" for d in include_dirs),
               *(f"-D{d}" for d in defines), str(source)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def have_cc() -> bool:
    return shutil.which("cc") is not None


def make_spec_dir(parent: Path, *files: Path, real_spec: bool = False) -> Path:
    """parent/spec holding copies of files (and of all of spec/, its method
    sets included, when real_spec)."""
    spec = parent / "spec"
    spec.mkdir()
    for f in (sorted(SPEC.glob("*.toml")) if real_spec else []) + list(files):
        shutil.copy(f, spec / f.name)
    if real_spec:
        shutil.copytree(SPEC / "method_sets", spec / "method_sets")
    return spec


class GeneratorTestCase(unittest.TestCase):
    """A test case with temporary folders that go away after each test."""

    maxDiff = None

    def tmp(self) -> Path:
        path = Path(tempfile.mkdtemp(prefix="cmr-generator-test-"))
        self.addCleanup(shutil.rmtree, path, ignore_errors=True)
        return path

    @classmethod
    def class_tmp(cls) -> Path:
        """A temporary folder for setUpClass, gone after the class's tests."""
        path = Path(tempfile.mkdtemp(prefix="cmr-generator-test-"))
        cls.addClassCleanup(shutil.rmtree, path, ignore_errors=True)
        return path

    def spec_dir(self, *files: Path, real_spec: bool = False) -> Path:
        """A fresh spec folder (see make_spec_dir)."""
        return make_spec_dir(self.tmp(), *files, real_spec=real_spec)

    def assert_contains(self, text: str, snippet: str, where: str) -> None:
        """snippet is in text, whatever the line breaks and indentation: the
        generated C is laid out by clang-format, the tests check its content."""
        self.assertIn(" ".join(snippet.split()), " ".join(text.split()), f"{where} lacks {snippet!r}")

    def assert_has(self, path: str, *snippets: str) -> None:
        """Each snippet is in the generated file path of self.files."""
        for snippet in snippets:
            self.assert_contains(self.files[path], snippet, path)

    def assert_rejected(self, run: Run, out: Path, expected: list[str]) -> None:
        """The generator failed on a bad spec as it should: exit 1, exactly
        the expected problem lines, no traceback, nothing written."""
        self.assertNotIn("Traceback", run.stdout + run.stderr)
        self.assertEqual(run.errors, expected)
        self.assertEqual(run.rc, 1)
        self.assertEqual(run.stdout, "")
        self.assertFalse(out.exists(), f"{out} was written")
