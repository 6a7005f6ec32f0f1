# SPDX-License-Identifier: Apache-2.0
"""cmr's exceptions: RMMError as RMM spells it; CmrError, what a cmr call
raises for a failure that is neither a MemoryError (every failure to
allocate), a bad value nor a wrong kind of argument (TypeError), an RMMError
and a RuntimeError; CmrValueError, a bad value: a CmrError and a ValueError,
as RMM reports the C++ library's checks as RuntimeError and cmr its own as
ValueError, so that code catching any of them keeps working. Sizes out of a
C type's range raise SizeRangeError, an OverflowError (as Cython's
conversions raise) and a ValueError."""

from __future__ import annotations

from . import _capi as capi


class RMMError(Exception):
    """RMM's error class: errcode is the code of the failure (for a CmrError,
    the cmr_status), the message says what and why."""

    def __init__(self, errcode, msg):
        self.errcode = errcode
        super().__init__(msg)


class CmrError(RMMError, RuntimeError):
    """A failure of a cmr call: errcode is its cmr_status (capi.CMR_ERROR_*)."""

    def __reduce__(self):
        return type(self), (self.errcode, str(self))


class CmrValueError(CmrError, ValueError):
    """A value a cmr call refuses (errcode: its cmr_status)."""


class SizeRangeError(OverflowError, ValueError):
    """An int outside the range of the C type it is passed as."""


capi.cmr_py_set_error_classes(CmrError, CmrValueError)
