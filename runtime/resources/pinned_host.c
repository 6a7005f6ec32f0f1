/* SPDX-License-Identifier: Apache-2.0 */
/* pinned_host: page-locked host memory from cudaMallocHost / cudaFreeHost, each free
 * vouched for (cuda_memory.h) and made on the device current when the
 * resource was; page aligned; cudaFreeHost
 * synchronizes, so the stream is ignored. */
#include "cuda_memory.h"
#include "impl.h"

/* Only its device: the memory is the driver's and the ledger's. */
struct cmr_pinned_host_impl {
  int device; /* current at creation: its calls run there */
};
CMR_IMPL_LAYOUT(pinned_host);

cmr_status cmr_pinned_host_impl_init(cmr_pinned_host_impl *impl) {
  impl->device = cmr_backend_device_at_creation();
  return CMR_SUCCESS;
}

cmr_status cmr_pinned_host_impl_allocate(cmr_pinned_host_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                         void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_PINNED, "pinned_host", impl->device, NULL, bytes, stream, out);
}

cmr_status cmr_pinned_host_impl_deallocate(cmr_pinned_host_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                           cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_PINNED, "pinned_host", impl->device, NULL, ptr, bytes, stream);
}
