/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async_managed: stream-ordered managed memory from the current
 * device's default managed pool (CUDA 13), which the driver owns. */
#include "backend.h"
#include "impl.h"
#include "cuda_memory.h"

struct cmr_cuda_async_managed_impl {
  cmr_backend_pool pool;
  int device; /* current at creation: its calls run there */
};
CMR_IMPL_LAYOUT(cuda_async_managed);

/* The default pool belongs to the driver: the resource only names it. */
cmr_status cmr_cuda_async_managed_impl_init(cmr_cuda_async_managed_impl *impl) {
  impl->device = cmr_backend_device_at_creation();
  return cmr_backend_managed_pool(&impl->pool);
}

cmr_status cmr_cuda_async_managed_impl_allocate(cmr_cuda_async_managed_impl *impl, size_t bytes, size_t alignment,
                                                cmr_stream stream, void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_POOL, "cuda_async_managed", impl->device, impl->pool, bytes, stream,
                                  out);
}

cmr_status cmr_cuda_async_managed_impl_deallocate(cmr_cuda_async_managed_impl *impl, void *ptr, size_t bytes,
                                                  size_t alignment, cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_POOL, "cuda_async_managed", impl->device, impl->pool, ptr, bytes,
                                    stream);
}

bool cmr_cuda_async_managed_impl_is_equal(const cmr_cuda_async_managed_impl *impl,
                                          const cmr_cuda_async_managed_impl *other) {
  return impl->pool == other->pool;
}

cmr_status cmr_cuda_async_managed_impl_pool_handle(cmr_cuda_async_managed_impl *impl, void **out) {
  *out = impl->pool;
  return CMR_SUCCESS;
}
