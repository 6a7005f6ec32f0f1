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

CMR_CUDA_POOL_LEAF(cuda_async_managed)
CMR_CUDA_POOL_IS_EQUAL(cuda_async_managed)
CMR_CUDA_POOL_HANDLE(cuda_async_managed)
