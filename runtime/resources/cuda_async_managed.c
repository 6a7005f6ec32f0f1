/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async_managed: stream-ordered managed memory from the current
 * device's default managed pool (CUDA 13), which the driver owns. */
#include "backend.h"
#include "impl.h"
#include "cuda_memory.h"

struct cmr_cuda_async_managed_impl {
  cmr_cuda_source source; /* pool memory of the default managed pool */
};
CMR_IMPL_LAYOUT(cuda_async_managed);

/* The default pool belongs to the driver: the resource only names it. */
cmr_status cmr_cuda_async_managed_impl_init(cmr_cuda_async_managed_impl *impl) {
  impl->source = cmr_cuda_source_here(CMR_CUDA_MEMORY_POOL, "cuda_async_managed", NULL);
  return cmr_backend_managed_pool(&impl->source.pool);
}

CMR_CUDA_LEAF_CALLS(cuda_async_managed)
CMR_CUDA_POOL_STATS(cuda_async_managed)
CMR_CUDA_POOL_METHODS(cuda_async_managed)

bool cmr_cuda_async_managed_impl_is_equal(const cmr_cuda_async_managed_impl *impl,
                                          const cmr_cuda_async_managed_impl *other) {
  return impl->source.pool == other->source.pool;
}

cmr_status cmr_cuda_async_managed_impl_pool_handle(cmr_cuda_async_managed_impl *impl, void **out) {
  *out = impl->source.pool;
  return CMR_SUCCESS;
}
