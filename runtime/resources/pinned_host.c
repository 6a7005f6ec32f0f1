/* pinned_host: page-locked host memory from cudaMallocHost / cudaFreeHost
 * (page aligned; cudaFreeHost synchronizes, so the stream is ignored). */
#include "backend.h"
#include "impl.h"

cmr_status cmr_pinned_host_impl_allocate(size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment, (void)stream;
  return cmr_backend_pinned_alloc(bytes, out);
}

cmr_status cmr_pinned_host_impl_deallocate(void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)bytes, (void)alignment, (void)stream;
  return cmr_backend_pinned_free(ptr);
}
