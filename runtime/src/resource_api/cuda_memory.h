/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA leaves' memory, vouched for by ledgers (ledger.h): a free
 * reaches cudaFree, cudaFreeHost or cudaFreeAsync only for a pointer the same
 * kind of resource handed out, with the size it was allocated with. One
 * ledger per kind, shared by every resource of the kind (they are
 * interchangeable: equality "type"); pool memory (cuda_async,
 * cuda_async_view, cuda_async_managed) is tagged with its pool, so it is
 * taken back only into that pool. CUDA build only. */
#ifndef CMR_CUDA_MEMORY_H
#define CMR_CUDA_MEMORY_H

#include "backend.h"
#include "usage.h"

typedef enum cmr_cuda_memory {
  CMR_CUDA_MEMORY_DEVICE,  /* cudaMalloc / cudaFree */
  CMR_CUDA_MEMORY_MANAGED, /* cudaMallocManaged / cudaFree */
  CMR_CUDA_MEMORY_PINNED,  /* cudaMallocHost / cudaFreeHost */
  CMR_CUDA_MEMORY_POOL,    /* cudaMallocFromPoolAsync / cudaFreeAsync */
  CMR_CUDA_MEMORY_KINDS
} cmr_cuda_memory;

/* Where a CUDA leaf's memory comes from: its kind, the resource's name
 * for messages, the device current at the resource's creation (made current
 * around the CUDA calls, the caller's restored after), and the pool of pool
 * memory (NULL for the other kinds). */
typedef struct cmr_cuda_source {
  cmr_cuda_memory kind;
  const char *owner;
  int device;
  cmr_backend_pool pool;
} cmr_cuda_source;

/* The source of a resource being made now: the device current now. */
static inline cmr_cuda_source cmr_cuda_source_here(cmr_cuda_memory kind, const char *owner, cmr_backend_pool pool) {
  return (cmr_cuda_source){kind, owner, cmr_backend_device_at_creation(), pool};
}

cmr_status cmr_cuda_memory_allocate(const cmr_cuda_source *source, size_t bytes, cmr_stream stream, void **out);
cmr_status cmr_cuda_memory_deallocate(const cmr_cuda_source *source, void *ptr, size_t bytes, cmr_stream stream);

/* Maps the allocation another process exported from the pool that
 * `source`'s pool is the import of (`data`: cmr_backend_pool_export_pointer's),
 * recorded as `bytes` of the source's pool memory, so that
 * cmr_cuda_memory_deallocate frees it (cudaFreeAsync) and nothing else. */
cmr_status cmr_cuda_memory_import(const cmr_cuda_source *source,
                                  const unsigned char data[CMR_BACKEND_POOL_POINTER_EXPORT_BYTES], size_t bytes,
                                  void **out);

/* In an algorithm file whose struct has a `cmr_cuda_source source`:
 * defines its allocate and deallocate over it (the driver aligns to at
 * least 256 bytes, the most the spec lets reach here). */
#define CMR_CUDA_LEAF_CALLS(name)                                                                                   \
  cmr_status cmr_##name##_impl_allocate(cmr_##name##_impl *impl, size_t bytes, size_t alignment, cmr_stream stream, \
                                        void **out) {                                                               \
    (void)alignment;                                                                                                \
    return cmr_cuda_memory_allocate(&impl->source, bytes, stream, out);                                             \
  }                                                                                                                 \
  cmr_status cmr_##name##_impl_deallocate(cmr_##name##_impl *impl, void *ptr, size_t bytes, size_t alignment,       \
                                          cmr_stream stream) {                                                      \
    (void)alignment;                                                                                                \
    return cmr_cuda_memory_deallocate(&impl->source, ptr, bytes, stream);                                           \
  }

/* Statistics of a pool leaf (cuda_async and its view and managed
 * variants): the driver pool's reserved bytes, now and at their high, as
 * the bytes held, and its used bytes as pool_bytes_used (every user of the
 * pool counts there, not only the resource); and the highs reset. The
 * stats and reset_peak_stats hooks of `name` (spec hooks "stats"). */
cmr_status cmr_cuda_pool_stats(const cmr_cuda_source *source, cmr_stats *out);
cmr_status cmr_cuda_pool_reset_peaks(const cmr_cuda_source *source);
#define CMR_CUDA_POOL_STATS(name)                                                                           \
  cmr_status cmr_##name##_impl_stats(cmr_##name##_impl *impl, cmr_stats *out, cmr_free_by_stream *spread) { \
    (void)spread;                                                                                           \
    return cmr_cuda_pool_stats(&impl->source, out);                                                         \
  }                                                                                                         \
  cmr_status cmr_##name##_impl_reset_peak_stats(cmr_##name##_impl *impl) {                                  \
    return cmr_cuda_pool_reset_peaks(&impl->source);                                                        \
  }

/* Reserves `bytes` in a new pool by allocating and freeing them once on the
 * default stream, then synchronizing it (a pool's initial_pool_size). */
cmr_status cmr_cuda_pool_reserve(const cmr_cuda_source *source, size_t bytes);

/* In an algorithm file whose struct has a `cmr_cuda_source source` of pool
 * memory: defines the methods of spec/method_sets/driver_pool.toml over
 * the pool's attributes (which need no device current). */
#define CMR_CUDA_POOL_METHODS(name)                                                                              \
  cmr_status cmr_##name##_impl_release_threshold(cmr_##name##_impl *impl, size_t *out) {                         \
    uint64_t threshold = 0;                                                                                      \
    cmr_status status = cmr_backend_pool_release_threshold(impl->source.pool, &threshold);                       \
    if (status == CMR_SUCCESS) *out = threshold > SIZE_MAX ? SIZE_MAX : (size_t)threshold;                       \
    return status;                                                                                               \
  }                                                                                                              \
  cmr_status cmr_##name##_impl_set_release_threshold(cmr_##name##_impl *impl, size_t release_threshold) {        \
    return cmr_backend_pool_set_release_threshold(impl->source.pool, release_threshold);                         \
  }                                                                                                              \
  cmr_status cmr_##name##_impl_trim(cmr_##name##_impl *impl, size_t min_bytes_to_keep) {                         \
    return cmr_backend_pool_trim(impl->source.pool, min_bytes_to_keep);                                          \
  }                                                                                                              \
  CMR_CUDA_POOL_REUSE_METHODS(name, follow_event_dependencies, CMR_BACKEND_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES) \
  CMR_CUDA_POOL_REUSE_METHODS(name, allow_opportunistic, CMR_BACKEND_POOL_REUSE_ALLOW_OPPORTUNISTIC)             \
  CMR_CUDA_POOL_REUSE_METHODS(name, allow_internal_dependencies, CMR_BACKEND_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES)

/* The getter and setter of one reuse policy (CMR_CUDA_POOL_METHODS). */
#define CMR_CUDA_POOL_REUSE_METHODS(name, policy, attribute)                               \
  cmr_status cmr_##name##_impl_reuse_##policy(cmr_##name##_impl *impl, bool *out) {        \
    return cmr_backend_pool_reuse(impl->source.pool, attribute, out);                      \
  }                                                                                        \
  cmr_status cmr_##name##_impl_set_reuse_##policy(cmr_##name##_impl *impl, bool enabled) { \
    return cmr_backend_pool_set_reuse(impl->source.pool, attribute, enabled);              \
  }

/* In an algorithm file whose struct has a `cmr_cuda_source source` of pool
 * memory (cuda_async and its variants): its allocate and deallocate, its
 * statistics and the methods of spec/method_sets/driver_pool.toml. */
#define CMR_CUDA_POOL_LEAF(name) \
  CMR_CUDA_LEAF_CALLS(name)      \
  CMR_CUDA_POOL_STATS(name)      \
  CMR_CUDA_POOL_METHODS(name)

/* The pool_handle method of a pool leaf: its pool. */
#define CMR_CUDA_POOL_HANDLE(name)                                                \
  cmr_status cmr_##name##_impl_pool_handle(cmr_##name##_impl *impl, void **out) { \
    *out = impl->source.pool;                                                     \
    return CMR_SUCCESS;                                                           \
  }

/* The is_equal hook of a pool leaf that names a pool it did not make: two
 * such resources are equal when they name the same pool. */
#define CMR_CUDA_POOL_IS_EQUAL(name)                                                               \
  bool cmr_##name##_impl_is_equal(const cmr_##name##_impl *impl, const cmr_##name##_impl *other) { \
    return impl->source.pool == other->source.pool;                                                \
  }

/* The fini hook of a pool leaf that made its pool: destroys it (the driver
 * frees the pool once outstanding allocations are returned). */
#define CMR_CUDA_OWN_POOL_FINI(name) \
  void cmr_##name##_impl_fini(cmr_##name##_impl *impl) { cmr_backend_pool_destroy(impl->source.pool); }

/* The whole algorithm file of a leaf that is only its source (cuda,
 * managed, pinned_host: spec hooks = ["init"], equality "type"): its struct,
 * CMR_IMPL_LAYOUT, its init (the device current at creation) and calls. */
#define CMR_CUDA_LEAF(name, memory_kind)                           \
  struct cmr_##name##_impl {                                       \
    cmr_cuda_source source;                                        \
  };                                                               \
  CMR_IMPL_LAYOUT(name);                                           \
  cmr_status cmr_##name##_impl_init(cmr_##name##_impl *impl) {     \
    impl->source = cmr_cuda_source_here(memory_kind, #name, NULL); \
    return CMR_SUCCESS;                                            \
  }                                                                \
  CMR_CUDA_LEAF_CALLS(name)

#endif /* CMR_CUDA_MEMORY_H */
