"""cmr's exceptions: RMMError as RMM spells it, and CmrError, what a cmr call
raises for a failure that is neither a MemoryError (every failure to
allocate), a ValueError (a bad value) nor a TypeError (a wrong kind of
argument). CmrError is an RMMError and a RuntimeError, so that code catching
either keeps working."""

from __future__ import annotations

from . import capi


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


capi.cmr_py_set_error_class(CmrError)
