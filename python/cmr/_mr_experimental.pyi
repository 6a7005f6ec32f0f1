# SPDX-License-Identifier: Apache-2.0
from .mr import CudaAsyncManagedMemoryResource as CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
