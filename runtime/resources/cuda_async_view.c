/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async_view: stream-ordered allocation from a pool the caller owns. */
#include "backend.h"
#include "impl.h"
#include "cuda_memory.h"

struct cmr_cuda_async_view_impl {
  cmr_cuda_async_view_params params; /* first: what it was created with (impl.h) */
  cmr_backend_pool pool;             /* params.pool_handle, typed */
  int device;                        /* current at creation: its calls run there */
};
CMR_IMPL_LAYOUT(cuda_async_view);

cmr_status cmr_cuda_async_view_impl_init(cmr_cuda_async_view_impl *impl) {
  impl->device = cmr_backend_device_at_creation();
  impl->pool = impl->params.pool_handle;
  return CMR_SUCCESS;
}

cmr_status cmr_cuda_async_view_impl_allocate(cmr_cuda_async_view_impl *impl, size_t bytes, size_t alignment,
                                             cmr_stream stream, void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_POOL, "cuda_async_view", impl->device, impl->pool, bytes, stream,
                                  out);
}

cmr_status cmr_cuda_async_view_impl_deallocate(cmr_cuda_async_view_impl *impl, void *ptr, size_t bytes,
                                               size_t alignment, cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_POOL, "cuda_async_view", impl->device, impl->pool, ptr, bytes,
                                    stream);
}

bool cmr_cuda_async_view_impl_is_equal(const cmr_cuda_async_view_impl *impl, const cmr_cuda_async_view_impl *other) {
  return impl->pool == other->pool;
}
