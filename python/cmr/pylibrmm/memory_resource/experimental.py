"""Experimental resources, at RMM's path (rmm.pylibrmm.memory_resource.experimental)."""

from ...mr import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
