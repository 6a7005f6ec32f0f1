# SPDX-License-Identifier: Apache-2.0
"""cmr_torch_allocator (RMM's rmm_torch_allocator): a PyTorch
CUDAPluggableAllocator over libcmr's cmr_pluggable_allocate /
cmr_pluggable_deallocate, which allocate from the per-device table (the
resources cmr.mr.set_per_device_resource sets):

    torch.cuda.memory.change_current_allocator(cmr.allocators.torch.cmr_torch_allocator)

(before PyTorch allocates anything on the GPU). As RMM's, it is None where
PyTorch or its CUDA is missing."""

cmr_torch_allocator = None

try:
    from torch.cuda.memory import CUDAPluggableAllocator
except ImportError:
    pass
else:
    from torch.cuda import is_available

    if is_available():
        from ._library import library_path

        cmr_torch_allocator = CUDAPluggableAllocator(library_path(), "cmr_pluggable_allocate",
                                                     "cmr_pluggable_deallocate")
    del is_available

rmm_torch_allocator = cmr_torch_allocator
