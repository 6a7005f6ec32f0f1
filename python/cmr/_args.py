# SPDX-License-Identifier: Apache-2.0
"""How cmr.mr turns Python arguments into the C API's: the generated classes
call these, so every resource checks the same way and says what was wrong
with which argument."""

from __future__ import annotations

from . import _capi as capi
from ._bytes import parse_bytes
from ._errors import SizeRangeError
from ._resource import _ref_of
from ._streams import Stream

def size(value, name: str) -> int:
    """A byte count: an int, or a string with units ("1GiB", "512MB")."""
    if isinstance(value, str):
        return parse_bytes(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or a str such as \"1GiB\", not {type(value).__name__}")
    if not 0 <= value < 2**64:
        raise SizeRangeError(f"{name} must be in [0, 2**64), not {value}")
    return value


def optional_size(value, name: str) -> int | None:
    """A size parameter with a default: None asks for the default (the C
    side's CMR_SIZE_DEFAULT); every int, 2**64 - 1 too, is a value."""
    return None if value is None else size(value, name)


def integer(value, name: str) -> int:
    """A C int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not -(2**31) <= value < 2**31:
        raise SizeRangeError(f"{name} must be in [-2**31, 2**31), not {value}")
    return value


def optional_integer(value, name: str) -> int | None:
    """An int parameter with a default: None asks for the default (CMR_INT_DEFAULT)."""
    return None if value is None else integer(value, name)


def boolean(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__}")
    return value


def real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def string(value, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if "\0" in value:
        raise ValueError(f"{name} must not contain a NUL character")
    return value


def address(value, name: str) -> int:
    """An address or handle: an int, or an object that converts to one (cuda-python handles do)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an address (an int), not bool")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an address (an int), not {type(value).__name__}") from None
    if not 0 <= number < 2**64:
        raise ValueError(f"{name} must be an address in [0, 2**64), not {number}")
    return number


def enum(value, name: str, constants: dict) -> int:
    """One of the spec's enum values, by name."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str (one of {', '.join(constants)}), not {type(value).__name__}")
    if value not in constants:
        raise ValueError(f"{name} must be one of {', '.join(constants)}, not {value!r}")
    return constants[value]


def ref(mr, name: str):
    """The ref of a cmr.mr resource."""
    return _ref_of(mr, name)


def c_unsigned(value, name: str) -> int:
    """An unsigned C value (size_t, uintptr_t) of RMM's Cython signatures:
    an int (TypeError otherwise) in [0, 2**64) (SizeRangeError, an
    OverflowError as Cython's conversion raises, otherwise)."""
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < 2**64:
        raise SizeRangeError(f"{name} must be in [0, 2**64), not {value}")
    return int(value)


# Callbacks: the callable C calls (through the type's trampoline in
# cmr_python.swg) for a Python function; the stream reaches the function as
# a Stream, as RMM passes it.

def _callable(function, name: str):
    if not callable(function):
        raise TypeError(f"{name} must be callable, not {type(function).__name__}")
    # From now on cmr may call Python from any thread: the fast path looks
    # for the exceptions callbacks keep (python/swig/fast_path.swg).
    capi.cmr_py_note_python_callbacks()
    return function


def allocate_callback(function, name: str):
    """allocate(nbytes, stream) -> address (0 or None when it cannot)."""
    _callable(function, name)
    return lambda nbytes, stream: function(nbytes, Stream(stream))


def deallocate_callback(function, name: str):
    """deallocate(ptr, nbytes, stream)."""
    _callable(function, name)
    return lambda ptr, nbytes, stream: function(ptr, nbytes, Stream(stream))


def failure_callback(function, name: str):
    """callback(nbytes) -> True to try again."""
    return _callable(function, name)
