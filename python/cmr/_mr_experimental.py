# SPDX-License-Identifier: Apache-2.0
"""cmr.mr.experimental, RMM's rmm.mr.experimental (cmr.mr is one generated
module, so the package registers this one under that name)."""

from .mr import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
