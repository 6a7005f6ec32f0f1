/* cuda: device memory straight from cudaMalloc / cudaFree, each free
 * vouched for (cuda_memory.h). cudaMalloc's pointers are aligned to at
 * least 256 bytes, the most the spec lets reach here; the stream is ignored
 * because both calls synchronize. */
#include "cuda_memory.h"
#include "impl.h"

cmr_status cmr_cuda_impl_allocate(size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_DEVICE, "cuda", NULL, bytes, stream, out);
}

cmr_status cmr_cuda_impl_deallocate(void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_DEVICE, "cuda", NULL, ptr, bytes, stream);
}
