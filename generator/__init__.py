# SPDX-License-Identifier: Apache-2.0
"""The cmr generator: spec/*.toml in, generated/ out (python3 -m generator)."""
