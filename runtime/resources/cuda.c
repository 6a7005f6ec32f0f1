/* cuda: device memory straight from cudaMalloc / cudaFree. cudaMalloc's
 * pointers are aligned to at least 256 bytes, the most the spec lets reach
 * here; the stream is ignored because both calls synchronize. */
#include "backend.h"
#include "impl.h"

cmr_status cmr_cuda_impl_allocate(size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment, (void)stream;
  return cmr_backend_device_alloc(bytes, out);
}

cmr_status cmr_cuda_impl_deallocate(void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)bytes;
  (void)alignment, (void)stream;
  return cmr_backend_device_free(ptr);
}
