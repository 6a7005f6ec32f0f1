/* SPDX-License-Identifier: Apache-2.0 */
/* limiting: a count of bytes (each request rounded up to the adaptor's
 * alignment) reserved with compare-and-swap before the upstream is asked, so
 * that no interleaving of threads ever takes it past the limit. */
#include <stdlib.h>

#include "impl.h"
#include "sizes.h"

struct cmr_limiting_impl {
  cmr_resource_ref upstream; /* the handle holds its share */
  size_t limit;
  size_t alignment;
  _Atomic size_t allocated;
};

cmr_status cmr_limiting_impl_create(cmr_resource_ref upstream, size_t allocation_limit, size_t allocation_alignment,
                                    cmr_limiting_impl **out) {
  cmr_limiting_impl *impl = calloc(1, sizeof *impl);
  if (impl == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "limiting: no host memory for the resource");
  impl->upstream = upstream;
  impl->limit = allocation_limit;
  impl->alignment = allocation_alignment;
  atomic_init(&impl->allocated, 0);
  *out = impl;
  return CMR_SUCCESS;
}

void cmr_limiting_impl_destroy(cmr_limiting_impl *impl) { free(impl); }

/* Adds `counted` to the count unless that would pass the limit. */
static cmr_status cmr_limiting_reserve(cmr_limiting_impl *impl, size_t bytes, size_t counted) {
  size_t allocated = atomic_load(&impl->allocated);
  do {
    if (counted > impl->limit - allocated) {
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY,
                       "limiting: %zu bytes (%zu counted) would pass the allocation_limit of %zu bytes (%zu "
                       "allocated)",
                       bytes, counted, impl->limit, allocated);
    }
  } while (!atomic_compare_exchange_weak(&impl->allocated, &allocated, allocated + counted));
  return CMR_SUCCESS;
}

static cmr_status cmr_limiting_overfreed(const void *ptr, size_t bytes, size_t counted, size_t allocated) {
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "limiting: freeing %p of %zu bytes (%zu counted) but only %zu bytes are allocated", ptr, bytes,
                   counted, allocated);
}

/* Takes `counted` off the count unless fewer bytes are counted. */
static cmr_status cmr_limiting_unreserve(cmr_limiting_impl *impl, const void *ptr, size_t bytes, size_t counted) {
  size_t allocated = atomic_load(&impl->allocated);
  do {
    if (counted > allocated) return cmr_limiting_overfreed(ptr, bytes, counted, allocated);
  } while (!atomic_compare_exchange_weak(&impl->allocated, &allocated, allocated - counted));
  return CMR_SUCCESS;
}

/* Every request is counted rounded up; a size too large to round could never
 * fit under any limit. */
static cmr_status cmr_limiting_counted(cmr_limiting_impl *impl, size_t bytes, size_t *out) {
  if (!cmr_round_up(bytes, impl->alignment, out)) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "limiting: %zu bytes overflow once rounded up to %zu", bytes,
                     impl->alignment);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_limiting_impl_allocate(cmr_limiting_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                      void **out) {
  size_t counted = 0;
  cmr_status status = cmr_limiting_counted(impl, bytes, &counted);
  if (status == CMR_SUCCESS) status = cmr_limiting_reserve(impl, bytes, counted);
  if (status != CMR_SUCCESS) return status;
  status = cmr_allocate_aligned(impl->upstream, bytes, alignment, stream, out);
  if (status != CMR_SUCCESS) atomic_fetch_sub(&impl->allocated, counted);
  return status;
}

/* The memory counts until the upstream has it back, so the count never drops
 * below what is really out; a free of more than is counted is refused first. */
cmr_status cmr_limiting_impl_deallocate(cmr_limiting_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                        cmr_stream stream) {
  /* A size too large to round was never counted: more than is allocated. */
  size_t counted;
  if (!cmr_round_up(bytes, impl->alignment, &counted)) counted = SIZE_MAX;
  size_t allocated = atomic_load(&impl->allocated);
  if (counted > allocated) return cmr_limiting_overfreed(ptr, bytes, counted, allocated);
  cmr_status status = cmr_deallocate_aligned(impl->upstream, ptr, bytes, alignment, stream);
  if (status != CMR_SUCCESS) return status;
  /* Fails only when frees of more than was allocated race each other. */
  return cmr_limiting_unreserve(impl, ptr, bytes, counted);
}

cmr_status cmr_limiting_impl_allocated_bytes(cmr_limiting_impl *impl, size_t *out) {
  *out = atomic_load(&impl->allocated);
  return CMR_SUCCESS;
}
