# SPDX-License-Identifier: Apache-2.0
"""Experimental resources, at RMM's path (rmm.pylibrmm.memory_resource.experimental)."""

from ...mr import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
