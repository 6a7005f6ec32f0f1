# SPDX-License-Identifier: Apache-2.0
# cmr._capi is SWIG's module over the C API (generated/swig/cmr_python.i):
# private, and typed here as what it is to Python, a module whose every
# function takes and returns what its C function does, unchecked by a type
# checker. cmr's own modules type what they hand out.
from typing import Any

def __getattr__(name: str) -> Any: ...
