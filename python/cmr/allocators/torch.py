# SPDX-License-Identifier: Apache-2.0
"""cmr_torch_allocator (RMM's rmm_torch_allocator): a PyTorch
CUDAPluggableAllocator over libcmr's cmr_pluggable_allocate /
cmr_pluggable_deallocate, which allocate from the per-device table (the
resources cmr.mr.set_per_device_resource sets):

    torch.cuda.memory.change_current_allocator(cmr.allocators.torch.cmr_torch_allocator)

(before PyTorch allocates anything on the GPU). As RMM's, it is None where
PyTorch or its CUDA is missing.

PyTorch's memory statistics do not work through it:
torch.cuda.max_memory_allocated(), memory_stats() and
reset_peak_memory_stats() raise, as CUDAPluggableAllocator does not pass
getDeviceStats and resetPeakStats on to the library it loads
(pytorch/pytorch#133281). cmr.max_memory_allocated(), cmr.memory_stats()
(PyTorch's key names) and cmr.reset_peak_memory_stats() answer instead,
for the resource this allocator allocates from (the current device
resource)."""

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
