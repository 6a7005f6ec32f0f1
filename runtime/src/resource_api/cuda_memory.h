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

#endif /* CMR_CUDA_MEMORY_H */
