/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async_view: stream-ordered allocation from a pool the caller owns. */
#include "backend.h"
#include "impl.h"
#include "cuda_memory.h"

struct cmr_cuda_async_view_impl {
  cmr_cuda_async_view_params params; /* first: what it was created with (impl.h) */
  cmr_cuda_source source;            /* pool memory of params.pool_handle */
};
CMR_IMPL_LAYOUT(cuda_async_view);

cmr_status cmr_cuda_async_view_impl_init(cmr_cuda_async_view_impl *impl) {
  impl->source = cmr_cuda_source_here(CMR_CUDA_MEMORY_POOL, "cuda_async_view", impl->params.pool_handle);
  return CMR_SUCCESS;
}

CMR_CUDA_POOL_LEAF(cuda_async_view)
CMR_CUDA_POOL_IS_EQUAL(cuda_async_view)
