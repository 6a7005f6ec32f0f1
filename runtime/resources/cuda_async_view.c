/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async_view: stream-ordered allocation from a pool the caller owns. */
#include "backend.h"
#include "cuda_memory.h"
#include "impl.h"

CMR_CUDA_MEMORY_LEAF_CALLS(cuda_async_view, CMR_CUDA_MEMORY_POOL)

/* Its device is the one current at creation: its calls run there. */
cmr_status cmr_cuda_async_view_impl_create(void *pool_handle, cmr_cuda_async_view_impl **out) {
  return cmr_cuda_memory_leaf_create("cuda_async_view", pool_handle, (cmr_cuda_memory_leaf **)out);
}

void cmr_cuda_async_view_impl_destroy(cmr_cuda_async_view_impl *impl) { free(impl); }

bool cmr_cuda_async_view_impl_is_equal(const cmr_cuda_async_view_impl *impl,
                                       const cmr_cuda_async_view_impl *other) {
  return impl->leaf.pool == other->leaf.pool;
}
