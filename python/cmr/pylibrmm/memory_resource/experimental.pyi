from ...mr import CudaAsyncManagedMemoryResource as CudaAsyncManagedMemoryResource
