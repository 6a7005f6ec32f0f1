/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA leaves' vouched-for memory (see cuda_memory.h). */
#include "cuda_memory.h"
#include "ledger.h"

static cmr_ledger cmr_cuda_ledgers[CMR_CUDA_MEMORY_KINDS];
CMR_SHARE_LEDGERS(cuda, cmr_cuda_ledgers, CMR_CUDA_MEMORY_KINDS)

/* The kinds of one plain call each way, their context the pair of calls.
 * Every kind's pointers are aligned to at least 256, the most the spec lets
 * reach these resources; cudaFree and cudaFreeHost synchronize, so only the
 * pools use the stream. */
typedef struct cmr_cuda_plain_calls {
  cmr_status (*alloc)(size_t bytes, void **out);
  cmr_status (*free)(void *ptr);
} cmr_cuda_plain_calls;

static cmr_cuda_plain_calls cmr_cuda_plain[CMR_CUDA_MEMORY_POOL] = {
    [CMR_CUDA_MEMORY_DEVICE] = {cmr_backend_device_alloc, cmr_backend_device_free},
    [CMR_CUDA_MEMORY_MANAGED] = {cmr_backend_managed_alloc, cmr_backend_managed_free},
    [CMR_CUDA_MEMORY_PINNED] = {cmr_backend_pinned_alloc, cmr_backend_pinned_free},
};

static cmr_status cmr_plain_obtain(void *calls, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment, (void)stream;
  return ((cmr_cuda_plain_calls *)calls)->alloc(bytes, out);
}

static cmr_status cmr_plain_release(void *calls, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)bytes, (void)alignment, (void)stream;
  return ((cmr_cuda_plain_calls *)calls)->free(ptr);
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
    [CMR_CUDA_MEMORY_DEVICE] = {cmr_plain_obtain, cmr_plain_release},
    [CMR_CUDA_MEMORY_MANAGED] = {cmr_plain_obtain, cmr_plain_release},
    [CMR_CUDA_MEMORY_PINNED] = {cmr_plain_obtain, cmr_plain_release},
    [CMR_CUDA_MEMORY_POOL] = {cmr_pool_obtain, cmr_pool_release},
};

/* What the obtain and release of `kind` take: the pool, or the plain calls. */
static void *cmr_cuda_memory_context(cmr_cuda_memory kind, cmr_backend_pool pool) {
  return kind == CMR_CUDA_MEMORY_POOL ? (void *)pool : &cmr_cuda_plain[kind];
}

/* Makes the source's device current (the caller's kept in *guard). */
static cmr_status cmr_cuda_memory_enter(const cmr_cuda_source *source, cmr_backend_device_guard *guard) {
  cmr_status status = cmr_backend_device_enter(source->device, guard);
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "%s: making device %d current", source->owner, source->device);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_cuda_memory_allocate(const cmr_cuda_source *source, size_t bytes, cmr_stream stream, void **out) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_cuda_memory_enter(source, &guard);
  if (status != CMR_SUCCESS) return status;
  status = cmr_ledger_allocate(&cmr_cuda_ledgers[source->kind], source->owner, source->pool,
                               &cmr_cuda_memories[source->kind], cmr_cuda_memory_context(source->kind, source->pool),
                               bytes, CMR_DEFAULT_ALIGNMENT, stream, out);
  return cmr_backend_device_leave(&guard, status);
}

cmr_status cmr_cuda_memory_deallocate(const cmr_cuda_source *source, void *ptr, size_t bytes, cmr_stream stream) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_cuda_memory_enter(source, &guard);
  if (status != CMR_SUCCESS) return status;
  status = cmr_ledger_deallocate(&cmr_cuda_ledgers[source->kind], source->owner, source->pool,
                                 &cmr_cuda_memories[source->kind], cmr_cuda_memory_context(source->kind, source->pool),
                                 ptr, bytes, CMR_DEFAULT_ALIGNMENT, stream);
  return cmr_backend_device_leave(&guard, status);
}

cmr_status cmr_cuda_pool_reserve(const cmr_cuda_source *source, size_t bytes) {
  void *block;
  cmr_status status = cmr_backend_pool_alloc(source->pool, bytes, CMR_DEFAULT_STREAM, &block);
  if (status != CMR_SUCCESS)
    return cmr_error_context(status, "%s: reserving initial_pool_size %zu", source->owner, bytes);
  status = cmr_backend_pool_free(block, CMR_DEFAULT_STREAM);
  if (status != CMR_SUCCESS) return status;
  return cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM);
}

/* The obtain of an import: the exporter's allocation mapped here. */
typedef struct cmr_cuda_import {
  cmr_backend_pool pool;
  const unsigned char *data;
} cmr_cuda_import;

static cmr_status cmr_import_obtain(void *context, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)bytes, (void)alignment, (void)stream;
  const cmr_cuda_import *import = context;
  return cmr_backend_pool_import_pointer(import->pool, import->data, out);
}

static const cmr_ledger_memory cmr_cuda_import_memory = {cmr_import_obtain, cmr_pool_release};

cmr_status cmr_cuda_memory_import(const cmr_cuda_source *source,
                                  const unsigned char data[CMR_BACKEND_POOL_POINTER_EXPORT_BYTES], size_t bytes,
                                  void **out) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_cuda_memory_enter(source, &guard);
  if (status != CMR_SUCCESS) return status;
  cmr_cuda_import import = {source->pool, data};
  status = cmr_ledger_allocate(&cmr_cuda_ledgers[CMR_CUDA_MEMORY_POOL], source->owner, source->pool,
                               &cmr_cuda_import_memory, &import, bytes, CMR_DEFAULT_ALIGNMENT, CMR_DEFAULT_STREAM, out);
  return cmr_backend_device_leave(&guard, status);
}
