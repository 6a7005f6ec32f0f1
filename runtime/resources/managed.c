/* SPDX-License-Identifier: Apache-2.0 */
/* managed: unified memory from cudaMallocManaged / cudaFree, each free
 * vouched for (cuda_memory.h) and made on the device current when the
 * resource was; aligned to at least 256 bytes; both
 * calls synchronize, so the stream is ignored. */
#include <stdlib.h>

#include "cuda_memory.h"
#include "impl.h"

/* Only its device: the memory is the driver's and the ledger's. */
struct cmr_managed_impl {
  cmr_cuda_memory_leaf leaf;
};

cmr_status cmr_managed_impl_create(cmr_managed_impl **out) {
  return cmr_cuda_memory_leaf_create("managed", (cmr_cuda_memory_leaf **)out);
}

void cmr_managed_impl_destroy(cmr_managed_impl *impl) { free(impl); }

cmr_status cmr_managed_impl_allocate(cmr_managed_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                    void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_MANAGED, "managed", impl->leaf.device, NULL, bytes, stream, out);
}

cmr_status cmr_managed_impl_deallocate(cmr_managed_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                      cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_MANAGED, "managed", impl->leaf.device, NULL, ptr, bytes, stream);
}
