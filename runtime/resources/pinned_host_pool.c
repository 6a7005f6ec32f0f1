/* SPDX-License-Identifier: Apache-2.0 */
/* pinned_host_pool: a cudaMemPool_t of the resource's own located on the
 * host or on a host NUMA node, allocated from in stream order; the device
 * current at creation may read and write it. */
#include "backend.h"
#include "cuda_memory.h"
#include "impl.h"

struct cmr_pinned_host_pool_impl {
  cmr_pinned_host_pool_params params; /* first: what it was created with (impl.h) */
  cmr_cuda_source source;             /* pool memory of the pool it made */
};
CMR_IMPL_LAYOUT(pinned_host_pool);

cmr_status cmr_pinned_host_pool_impl_init(cmr_pinned_host_pool_impl *impl) {
  const cmr_pinned_host_pool_params *params = &impl->params;
  impl->source = cmr_cuda_source_here(CMR_CUDA_MEMORY_POOL, "pinned_host_pool", NULL);
  cmr_status status = cmr_backend_host_pool_create(params->numa_node, params->release_threshold, &impl->source.pool);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "pinned_host_pool: numa_node %d", params->numa_node);
  if (params->initial_pool_size > 0) status = cmr_cuda_pool_reserve(&impl->source, params->initial_pool_size);
  if (status != CMR_SUCCESS) cmr_backend_pool_destroy(impl->source.pool);
  return status;
}

CMR_CUDA_OWN_POOL_FINI(pinned_host_pool)
CMR_CUDA_POOL_LEAF(pinned_host_pool)
CMR_CUDA_POOL_HANDLE(pinned_host_pool)
