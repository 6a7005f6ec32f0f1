/* SPDX-License-Identifier: Apache-2.0 */
/* managed: unified memory from cudaMallocManaged / cudaFree, each free
 * vouched for (cuda_memory.h) and made on the device current when the
 * resource was; aligned to at least 256 bytes; both
 * calls synchronize, so the stream is ignored. */
#include "cuda_memory.h"
#include "impl.h"

/* Only its device: the memory is the driver's and the ledger's. */
struct cmr_managed_impl {
  int device; /* current at creation: its calls run there */
};
CMR_IMPL_LAYOUT(managed);

cmr_status cmr_managed_impl_init(cmr_managed_impl *impl) {
  impl->device = cmr_backend_device_at_creation();
  return CMR_SUCCESS;
}

cmr_status cmr_managed_impl_allocate(cmr_managed_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                     void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_MANAGED, "managed", impl->device, NULL, bytes, stream, out);
}

cmr_status cmr_managed_impl_deallocate(cmr_managed_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                       cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_MANAGED, "managed", impl->device, NULL, ptr, bytes, stream);
}
