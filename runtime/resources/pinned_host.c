/* SPDX-License-Identifier: Apache-2.0 */
/* pinned_host: page-locked host memory from cudaMallocHost / cudaFreeHost, each free
 * vouched for (cuda_memory.h) and made on the device current when the
 * resource was; page aligned; cudaFreeHost
 * synchronizes, so the stream is ignored. */
#include <stdlib.h>

#include "cuda_memory.h"
#include "impl.h"

/* Only its device: the memory is the driver's and the ledger's. */
struct cmr_pinned_host_impl {
  cmr_cuda_memory_leaf leaf;
};

cmr_status cmr_pinned_host_impl_create(cmr_pinned_host_impl **out) {
  return cmr_cuda_memory_leaf_create("pinned_host", (cmr_cuda_memory_leaf **)out);
}

void cmr_pinned_host_impl_destroy(cmr_pinned_host_impl *impl) { free(impl); }

cmr_status cmr_pinned_host_impl_allocate(cmr_pinned_host_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                    void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_PINNED, "pinned_host", impl->leaf.device, NULL, bytes, stream, out);
}

cmr_status cmr_pinned_host_impl_deallocate(cmr_pinned_host_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                      cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_PINNED, "pinned_host", impl->leaf.device, NULL, ptr, bytes, stream);
}
