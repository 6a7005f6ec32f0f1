/* managed: unified memory from cudaMallocManaged / cudaFree, each free
 * vouched for (cuda_memory.h); aligned to at least 256 bytes; both calls
 * synchronize, so the stream is ignored. */
#include "cuda_memory.h"
#include "impl.h"

cmr_status cmr_managed_impl_allocate(size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_MANAGED, "managed", NULL, bytes, stream, out);
}

cmr_status cmr_managed_impl_deallocate(void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_MANAGED, "managed", NULL, ptr, bytes, stream);
}
