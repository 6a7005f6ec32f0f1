/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA leaves' vouched-for memory (see cuda_memory.h). */
#include "cuda_memory.h"
#include "ledger.h"

static cmr_ledger cmr_cuda_ledgers[CMR_CUDA_MEMORY_KINDS];

/* Every kind's pointers are aligned to at least 256, the most the spec lets
 * reach these resources; cudaFree and cudaFreeHost synchronize, so only the
 * pools use the stream. */
static cmr_status cmr_device_obtain(void *pool, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)pool, (void)alignment, (void)stream;
  return cmr_backend_device_alloc(bytes, out);
}

static cmr_status cmr_device_release(void *pool, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)pool, (void)bytes, (void)alignment, (void)stream;
  return cmr_backend_device_free(ptr);
}

static cmr_status cmr_managed_obtain(void *pool, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)pool, (void)alignment, (void)stream;
  return cmr_backend_managed_alloc(bytes, out);
}

static cmr_status cmr_managed_release(void *pool, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)pool, (void)bytes, (void)alignment, (void)stream;
  return cmr_backend_managed_free(ptr);
}

static cmr_status cmr_pinned_obtain(void *pool, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)pool, (void)alignment, (void)stream;
  return cmr_backend_pinned_alloc(bytes, out);
}

static cmr_status cmr_pinned_release(void *pool, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)pool, (void)bytes, (void)alignment, (void)stream;
  return cmr_backend_pinned_free(ptr);
}

static cmr_status cmr_pool_obtain(void *pool, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment;
  return cmr_backend_pool_alloc(pool, bytes, stream, out);
}

static cmr_status cmr_pool_release(void *pool, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)pool, (void)bytes, (void)alignment;
  return cmr_backend_pool_free(ptr, stream);
}

static const cmr_ledger_memory cmr_cuda_memories[CMR_CUDA_MEMORY_KINDS] = {
    [CMR_CUDA_MEMORY_DEVICE] = {cmr_device_obtain, cmr_device_release},
    [CMR_CUDA_MEMORY_MANAGED] = {cmr_managed_obtain, cmr_managed_release},
    [CMR_CUDA_MEMORY_PINNED] = {cmr_pinned_obtain, cmr_pinned_release},
    [CMR_CUDA_MEMORY_POOL] = {cmr_pool_obtain, cmr_pool_release},
};

cmr_status cmr_cuda_memory_allocate(cmr_cuda_memory kind, const char *owner, int device, cmr_backend_pool pool,
                                    size_t bytes, cmr_stream stream, void **out) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_backend_device_enter(device, &guard);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s: making device %d current", owner, device);
  status = cmr_ledger_allocate(&cmr_cuda_ledgers[kind], owner, pool, &cmr_cuda_memories[kind], pool, bytes,
                               CMR_DEFAULT_ALIGNMENT, stream, out);
  return cmr_backend_device_leave(&guard, status);
}

cmr_status cmr_cuda_memory_deallocate(cmr_cuda_memory kind, const char *owner, int device, cmr_backend_pool pool,
                                      void *ptr, size_t bytes, cmr_stream stream) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_backend_device_enter(device, &guard);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s: making device %d current", owner, device);
  status = cmr_ledger_deallocate(&cmr_cuda_ledgers[kind], owner, pool, &cmr_cuda_memories[kind], pool, ptr, bytes,
                                 CMR_DEFAULT_ALIGNMENT, stream);
  return cmr_backend_device_leave(&guard, status);
}
