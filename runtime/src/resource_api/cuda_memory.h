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

#include <stdlib.h> /* free, in CMR_CUDA_MEMORY_LEAF */

#include "backend.h"

typedef enum cmr_cuda_memory {
  CMR_CUDA_MEMORY_DEVICE,  /* cudaMalloc / cudaFree */
  CMR_CUDA_MEMORY_MANAGED, /* cudaMallocManaged / cudaFree */
  CMR_CUDA_MEMORY_PINNED,  /* cudaMallocHost / cudaFreeHost */
  CMR_CUDA_MEMORY_POOL,    /* cudaMallocFromPoolAsync / cudaFreeAsync */
  CMR_CUDA_MEMORY_KINDS
} cmr_cuda_memory;

/* `owner` names the resource in messages; `device` is the resource's (the
 * one current at its creation), made current around the CUDA calls and the
 * caller's restored after; `pool` is NULL but for pool memory. */
cmr_status cmr_cuda_memory_allocate(cmr_cuda_memory kind, const char *owner, int device, cmr_backend_pool pool,
                                    size_t bytes, cmr_stream stream, void **out);
cmr_status cmr_cuda_memory_deallocate(cmr_cuda_memory kind, const char *owner, int device, cmr_backend_pool pool,
                                      void *ptr, size_t bytes, cmr_stream stream);

/* What the plain leaves (cuda, managed, pinned_host) keep: their device. */
typedef struct cmr_cuda_memory_leaf {
  int device;
} cmr_cuda_memory_leaf;
cmr_status cmr_cuda_memory_leaf_create(const char *owner, cmr_cuda_memory_leaf **out);

/* Defines what the algorithm file of the plain leaf `name` (cuda, managed,
 * pinned_host) must: its impl, only its device, and create, destroy,
 * allocate and deallocate over memory of `kind`. Every kind's pointers are
 * aligned to at least 256 bytes, the most the spec lets reach these leaves,
 * so the alignment is not passed on. */
#define CMR_CUDA_MEMORY_LEAF(name, kind)                                                                            \
  struct cmr_##name##_impl {                                                                                        \
    cmr_cuda_memory_leaf leaf;                                                                                      \
  };                                                                                                                \
  cmr_status cmr_##name##_impl_create(cmr_##name##_impl **out) {                                                    \
    return cmr_cuda_memory_leaf_create(#name, (cmr_cuda_memory_leaf **)out);                                        \
  }                                                                                                                 \
  void cmr_##name##_impl_destroy(cmr_##name##_impl *impl) { free(impl); }                                           \
  cmr_status cmr_##name##_impl_allocate(cmr_##name##_impl *impl, size_t bytes, size_t alignment, cmr_stream stream, \
                                        void **out) {                                                               \
    (void)alignment;                                                                                                \
    return cmr_cuda_memory_allocate(kind, #name, impl->leaf.device, NULL, bytes, stream, out);                      \
  }                                                                                                                 \
  cmr_status cmr_##name##_impl_deallocate(cmr_##name##_impl *impl, void *ptr, size_t bytes, size_t alignment,       \
                                          cmr_stream stream) {                                                      \
    (void)alignment;                                                                                                \
    return cmr_cuda_memory_deallocate(kind, #name, impl->leaf.device, NULL, ptr, bytes, stream);                    \
  }

#endif /* CMR_CUDA_MEMORY_H */
