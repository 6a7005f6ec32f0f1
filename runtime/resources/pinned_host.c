/* pinned_host: page-locked host memory from cudaMallocHost / cudaFreeHost,
 * each free vouched for (cuda_memory.h); page aligned; cudaFreeHost
 * synchronizes, so the stream is ignored. */
#include "cuda_memory.h"
#include "impl.h"

cmr_status cmr_pinned_host_impl_allocate(size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_PINNED, "pinned_host", NULL, bytes, stream, out);
}

cmr_status cmr_pinned_host_impl_deallocate(void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_PINNED, "pinned_host", NULL, ptr, bytes, stream);
}
