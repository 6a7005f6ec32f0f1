/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async_managed: stream-ordered managed memory from the current
 * device's default managed pool (CUDA 13), which the driver owns. */
#include "backend.h"
#include "cuda_memory.h"
#include "impl.h"

CMR_CUDA_MEMORY_LEAF_CALLS(cuda_async_managed, CMR_CUDA_MEMORY_POOL)

/* Its device is the one current at creation: its calls run there. */
cmr_status cmr_cuda_async_managed_impl_create(cmr_cuda_async_managed_impl **out) {
  cmr_backend_pool pool;
  cmr_status status = cmr_backend_managed_pool(&pool);
  if (status != CMR_SUCCESS) return status;
  return cmr_cuda_memory_leaf_create("cuda_async_managed", pool, (cmr_cuda_memory_leaf **)out);
}

/* The default pool belongs to the driver: only the resource goes. */
void cmr_cuda_async_managed_impl_destroy(cmr_cuda_async_managed_impl *impl) { free(impl); }

bool cmr_cuda_async_managed_impl_is_equal(const cmr_cuda_async_managed_impl *impl,
                                          const cmr_cuda_async_managed_impl *other) {
  return impl->leaf.pool == other->leaf.pool;
}

cmr_status cmr_cuda_async_managed_impl_pool_handle(cmr_cuda_async_managed_impl *impl, void **out) {
  *out = impl->leaf.pool;
  return CMR_SUCCESS;
}
