from .mr import CudaAsyncManagedMemoryResource as CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
