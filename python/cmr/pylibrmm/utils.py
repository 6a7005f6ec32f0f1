"""cmr.pylibrmm.utils: RMM's as_stream."""

from .._streams import as_stream

__all__ = ["as_stream"]
