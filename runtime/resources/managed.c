/* managed: unified memory from cudaMallocManaged / cudaFree (aligned to at
 * least 256 bytes; both calls synchronize, so the stream is ignored). */
#include "backend.h"
#include "impl.h"

cmr_status cmr_managed_impl_allocate(size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment, (void)stream;
  return cmr_backend_managed_alloc(bytes, out);
}

cmr_status cmr_managed_impl_deallocate(void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)bytes, (void)alignment, (void)stream;
  return cmr_backend_managed_free(ptr);
}
