/* SPDX-License-Identifier: Apache-2.0 */
/* cuda: device memory straight from cudaMalloc / cudaFree, each free
 * vouched for (cuda_memory.h) and made on the device current when the
 * resource was; cudaMalloc's pointers are aligned
 * to at least 256 bytes, the most the spec lets reach here; the stream is
 * ignored because both calls synchronize. */
#include "cuda_memory.h"
#include "impl.h"

/* Only its device: the memory is the driver's and the ledger's. */
struct cmr_cuda_impl {
  int device; /* current at creation: its calls run there */
};
CMR_IMPL_LAYOUT(cuda);

cmr_status cmr_cuda_impl_init(cmr_cuda_impl *impl) {
  impl->device = cmr_backend_device_at_creation();
  return CMR_SUCCESS;
}

cmr_status cmr_cuda_impl_allocate(cmr_cuda_impl *impl, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(CMR_CUDA_MEMORY_DEVICE, "cuda", impl->device, NULL, bytes, stream, out);
}

cmr_status cmr_cuda_impl_deallocate(cmr_cuda_impl *impl, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(CMR_CUDA_MEMORY_DEVICE, "cuda", impl->device, NULL, ptr, bytes, stream);
}
