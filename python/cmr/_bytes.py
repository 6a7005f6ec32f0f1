"""Byte counts written as text, by RMM's rules: a number (an integer or a
decimal, "1.5") and an optional unit, case-insensitive, spaces allowed
between them. Decimal units: B, kB, MB, GB, TB, PB (and k, M, G, T, P);
binary ones: KiB, MiB, GiB, TiB, PiB. A unit alone counts one of it."""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12, "p": 10**15, "pb": 10**15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}
_FORM = re.compile(r"^\s*(?P<number>[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)\s*(?P<unit>[A-Za-z]*)\s*$")


def parse_bytes(text: str) -> int:
    """The number of bytes `text` says, e.g. parse_bytes("1GiB") == 1073741824."""
    if not isinstance(text, str):
        raise TypeError(f"parse_bytes takes a str, not {type(text).__name__}")
    form = _FORM.match(text)
    unit = form.group("unit").lower() if form else None
    if form is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a byte count (a number and one of the units "
                         "B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)")
    number = form.group("number")
    if number in ("", "."):
        if not unit:
            raise ValueError(f"{text!r} is not a byte count: it has neither a number nor a unit")
        number = "1"
    value = float(number) * _UNITS[unit] if any(c in number for c in ".eE") else int(number) * _UNITS[unit]
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number of bytes")
    if not 0 <= value < 2**64:
        raise ValueError(f"{text!r} is outside [0, 2**64) bytes")
    return int(value)
