"""cmr_torch_allocator: a PyTorch CUDAPluggableAllocator over libcmr's
cmr_pluggable_allocate / cmr_pluggable_deallocate, which allocate from the
per-device table (the resources cmr.mr.set_per_device_resource sets):

    torch.cuda.memory.change_current_allocator(cmr.allocators.torch.cmr_torch_allocator)

(before PyTorch allocates anything on the GPU)."""

try:
    from torch.cuda.memory import CUDAPluggableAllocator
except ImportError as error:
    raise ImportError("cmr.allocators.torch needs PyTorch with CUDA (torch.cuda.memory.CUDAPluggableAllocator)") \
        from error

from ._library import library_path

cmr_torch_allocator = CUDAPluggableAllocator(library_path(), "cmr_pluggable_allocate", "cmr_pluggable_deallocate")
