/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async_device_pool: stream-ordered allocation from the current
 * device's current or default pool, which the driver owns: the resource
 * names the pool and never destroys it. */
#include "backend.h"
#include "cuda_memory.h"
#include "impl.h"

struct cmr_cuda_async_device_pool_impl {
  cmr_cuda_async_device_pool_params params; /* first: what it was created with (impl.h) */
  cmr_cuda_source source;                   /* pool memory of the device's pool */
};
CMR_IMPL_LAYOUT(cuda_async_device_pool);

cmr_status cmr_cuda_async_device_pool_impl_init(cmr_cuda_async_device_pool_impl *impl) {
  impl->source = cmr_cuda_source_here(CMR_CUDA_MEMORY_POOL, "cuda_async_device_pool", NULL);
  return cmr_backend_device_pool(impl->params.which_pool == CMR_CUDA_ASYNC_DEVICE_POOL_WHICH_POOL_CURRENT,
                                 &impl->source.pool);
}

CMR_CUDA_POOL_LEAF(cuda_async_device_pool)
CMR_CUDA_POOL_IS_EQUAL(cuda_async_device_pool)
CMR_CUDA_POOL_HANDLE(cuda_async_device_pool)
