# SPDX-License-Identifier: Apache-2.0
"""The generated C is laid out by clang-format (.clang-format), and the
generator refuses to write C it cannot format."""

from __future__ import annotations

import subprocess
import unittest

from generator.c_format import STYLE, clang_format

from .support import GENERATED, GeneratorTestCase, run_generator

NOWHERE = {"CMR_CLANG_FORMAT": "/nonexistent/clang-format"}


class Formatting(GeneratorTestCase):
    def test_generated_c_is_what_clang_format_makes_of_it(self):
        sources = sorted(p for p in GENERATED.rglob("*") if p.suffix in (".c", ".h"))
        self.assertGreater(len(sources), 20)
        for source in sources:
            with self.subTest(source=str(source.relative_to(GENERATED))):
                done = subprocess.run([clang_format(), f"--style=file:{STYLE}", str(source)], capture_output=True,
                                      text=True, check=True)
                self.assertEqual(done.stdout, source.read_text(encoding="utf-8"))

    def test_without_clang_format_it_writes_nothing_and_says_why(self):
        out = self.tmp() / "out"
        run = run_generator("--out", out, extra_env=NOWHERE)
        self.assertEqual(run.rc, 1)
        self.assertIn("clang-format was not found (CMR_CLANG_FORMAT=/nonexistent/clang-format", run.stderr)
        self.assertNotIn("Traceback", run.stderr)
        self.assertFalse(out.exists())

    def test_its_check_is_skipped_without_clang_format(self):
        # 77: ctest's skip (the GPU machine has no clang-format)
        run = run_generator("--check", extra_env=NOWHERE)
        self.assertEqual(run.rc, 77)
        self.assertIn("clang-format was not found", run.stderr)


if __name__ == "__main__":
    unittest.main()
