/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA leaves' vouched-for memory (see cuda_memory.h). */
#include "cuda_memory.h"
#include "ledger.h"

static cmr_ledger cmr_cuda_ledgers[CMR_CUDA_MEMORY_KINDS];
CMR_SHARE_LEDGERS(cuda, cmr_cuda_ledgers, CMR_CUDA_MEMORY_KINDS)

/* One call each way of the source's kind, made with its device current.
 * Every kind's pointers are aligned to at least 256, the most the spec lets
 * reach these resources; cudaFree and cudaFreeHost synchronize, so only the
 * pools use the stream. */
/* The plain calls are not stream-ordered, and cudaFree and cudaFreeHost
 * synchronize: made for a stream capturing a graph they would break the
 * capture (cudaErrorStreamCaptureUnsupported, in the global and
 * thread-local modes), so they are refused there, before any call. The
 * pools' calls are stream-ordered: in a capture, graph memory nodes. */
static cmr_status cmr_plain_refused_in_capture(const cmr_cuda_source *source, cmr_stream stream, const char *what) {
  bool capturing = false;
  cmr_status status =
      source->kind == CMR_CUDA_MEMORY_POOL ? CMR_SUCCESS : cmr_backend_stream_capturing(stream, &capturing);
  if (status != CMR_SUCCESS || !capturing) return status;
  return cmr_error(CMR_ERROR_STREAM_CAPTURE,
                   "%s on stream %p, which is capturing a graph: a synchronous CUDA allocation or free would break "
                   "the capture (allocate in a capture through a suballocator or cuda_async, whose allocations there "
                   "are graph memory; free this memory after the capture)",
                   what, (void *)stream);
}

static cmr_status cmr_cuda_obtain_here(const cmr_cuda_source *source, size_t bytes, cmr_stream stream, void **out) {
  cmr_status status = cmr_plain_refused_in_capture(source, stream, "allocating");
  if (status != CMR_SUCCESS) return status;
  switch (source->kind) {
  case CMR_CUDA_MEMORY_DEVICE: return cmr_backend_device_alloc(bytes, out);
  case CMR_CUDA_MEMORY_MANAGED: return cmr_backend_managed_alloc(bytes, out);
  case CMR_CUDA_MEMORY_PINNED: return cmr_backend_pinned_alloc(bytes, out);
  default: return cmr_backend_pool_alloc(source->pool, bytes, stream, out);
  }
}

static cmr_status cmr_cuda_release_here(const cmr_cuda_source *source, void *ptr, cmr_stream stream) {
  cmr_status status = cmr_plain_refused_in_capture(source, stream, "freeing");
  if (status != CMR_SUCCESS) return status;
  switch (source->kind) {
  case CMR_CUDA_MEMORY_DEVICE:
  case CMR_CUDA_MEMORY_MANAGED: return cmr_backend_device_free(ptr);
  case CMR_CUDA_MEMORY_PINNED: return cmr_backend_pinned_free(ptr);
  default: return cmr_backend_pool_free(ptr, stream);
  }
}

/* Makes the source's device current (the caller's kept in *guard). */
static cmr_status cmr_cuda_memory_enter(const cmr_cuda_source *source, cmr_backend_device_guard *guard) {
  cmr_status status = cmr_backend_device_enter(source->device, guard);
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "%s: making device %d current", source->owner, source->device);
  }
  return CMR_SUCCESS;
}

/* The ledger's memory: its context is the cmr_cuda_source. */
static cmr_status cmr_cuda_obtain(void *source, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment;
  cmr_backend_device_guard guard;
  cmr_status status = cmr_cuda_memory_enter(source, &guard);
  return status != CMR_SUCCESS ? status
                               : cmr_backend_device_leave(&guard, cmr_cuda_obtain_here(source, bytes, stream, out));
}

static cmr_status cmr_cuda_release(void *source, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)bytes, (void)alignment;
  cmr_backend_device_guard guard;
  cmr_status status = cmr_cuda_memory_enter(source, &guard);
  return status != CMR_SUCCESS ? status : cmr_backend_device_leave(&guard, cmr_cuda_release_here(source, ptr, stream));
}

static const cmr_ledger_memory cmr_cuda_ledger_memory = {cmr_cuda_obtain, cmr_cuda_release};

cmr_status cmr_cuda_memory_allocate(const cmr_cuda_source *source, size_t bytes, cmr_stream stream, void **out) {
  return cmr_ledger_allocate(&cmr_cuda_ledgers[source->kind], source->owner, source->pool, &cmr_cuda_ledger_memory,
                             (void *)source, bytes, CMR_DEFAULT_ALIGNMENT, stream, out);
}

cmr_status cmr_cuda_memory_deallocate(const cmr_cuda_source *source, void *ptr, size_t bytes, cmr_stream stream) {
  return cmr_ledger_deallocate(&cmr_cuda_ledgers[source->kind], source->owner, source->pool, &cmr_cuda_ledger_memory,
                               (void *)source, ptr, bytes, CMR_DEFAULT_ALIGNMENT, stream);
}

cmr_status cmr_cuda_pool_stats(const cmr_cuda_source *source, cmr_stats *out) {
  cmr_backend_pool_counters counters;
  cmr_status status = cmr_backend_pool_usage(source->pool, &counters);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s: reading its pool's counters", source->owner);
  out->bytes_held = counters.reserved;
  out->bytes_held_peak = counters.reserved_high;
  out->pool_bytes_used = counters.used;
  out->pool_bytes_used_peak = counters.used_high;
  out->supported |=
      CMR_STATS_BYTES_HELD | CMR_STATS_BYTES_HELD_PEAK | CMR_STATS_POOL_BYTES_USED | CMR_STATS_POOL_BYTES_USED_PEAK;
  return CMR_SUCCESS;
}

cmr_status cmr_cuda_pool_reset_peaks(const cmr_cuda_source *source) {
  cmr_status status = cmr_backend_pool_reset_highs(source->pool);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s: resetting its pool's highs", source->owner);
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

/* An imported pointer is given back to the driver as any pool pointer. */
static cmr_status cmr_import_release(void *context, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)context, (void)bytes, (void)alignment;
  return cmr_backend_pool_free(ptr, stream);
}

static const cmr_ledger_memory cmr_cuda_import_memory = {cmr_import_obtain, cmr_import_release};

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
