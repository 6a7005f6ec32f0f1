# SPDX-License-Identifier: Apache-2.0
"""cmr.pylibrmm.cuda_stream_pool: RMM's CudaStreamPool, over cmr's C stream
pool (cmr_stream_pool_*): pool_size streams made at once and handed out
round robin. Each Stream it hands out keeps the pool, so the streams live
as long as anything (a DeviceBuffer ordered on one) holds them."""

from __future__ import annotations

from .. import _args
from .. import _capi as capi
from .._errors import CmrError
from .stream import CudaStreamFlags, Stream


class CudaStreamPool:
    """A pool of CUDA streams (RMM's rmm::cuda_stream_pool).

    CudaStreamPool(pool_size=16, flags=CudaStreamFlags.SYNC_DEFAULT): makes
    pool_size streams with `flags`; get_stream() hands them out round robin,
    get_stream(stream_id) the one at stream_id modulo the pool's size."""

    _handle = None

    def __init__(self, pool_size: int = 16, flags: CudaStreamFlags = CudaStreamFlags.SYNC_DEFAULT):
        pool_size = _args.c_unsigned(pool_size, "pool_size")
        if pool_size == 0:  # the C call would make its default size; RMM refuses it
            raise CmrError(capi.CMR_ERROR_INVALID_ARGUMENT, "Stream pool size must be greater than zero")
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise TypeError(f"flags must be a CudaStreamFlags, not {type(flags).__name__}")
        flags = CudaStreamFlags(flags)  # ValueError for any other int
        handle = capi.cmr_stream_pool_create(pool_size, int(flags))
        self._handle = handle
        # Destroys the streams once the pool and every Stream from it are
        # gone, whatever order the garbage collector finalizes them in.
        self._release = capi.cmr_py_release_capsule(lambda: capi.cmr_stream_pool_destroy(handle))
        self._size = pool_size

    def get_stream(self, stream_id: int | None = None) -> Stream:
        """The next stream (round robin), or the one at stream_id (modulo the pool's size)."""
        if stream_id is None:
            handle = capi.cmr_stream_pool_get_stream(self._handle)
        else:
            handle = capi.cmr_stream_pool_get_stream_at(self._handle, _args.c_unsigned(stream_id, "stream_id") % self._size)
        return Stream._from_handle(handle, self)

    def get_pool_size(self) -> int:
        """The number of streams."""
        return capi.cmr_stream_pool_size(self._handle)

    def __repr__(self) -> str:
        return f"<cmr.pylibrmm.cuda_stream_pool.CudaStreamPool of {self._size} streams>"


__all__ = ["CudaStreamFlags", "CudaStreamPool"]
