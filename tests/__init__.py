# SPDX-License-Identifier: Apache-2.0
"""Makes tests/ a package, so `python3 -m unittest discover -s tests/generator -t .`
imports tests.generator from here and never a `tests` package installed elsewhere."""
