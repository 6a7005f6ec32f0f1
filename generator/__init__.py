"""The cmr generator: spec/*.toml in, generated/ out (python3 -m generator)."""
