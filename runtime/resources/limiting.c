/* SPDX-License-Identifier: Apache-2.0 */
/* limiting: a count of bytes (each request rounded up to the adaptor's
 * alignment) reserved with compare-and-swap before the upstream is asked, so
 * that no interleaving of threads ever takes it past the limit. The limit
 * itself may move (set_limit): a reservation checks it as it is then, and a
 * count above it refuses every reservation until frees bring it under. */
#include "impl.h"
#include "sizes.h"

struct cmr_limiting_impl {
  cmr_limiting_params params; /* first: what it was created with (impl.h) */
  _Atomic size_t allocated;   /* zero-filled: none yet */
  _Atomic size_t limit;       /* params.allocation_limit until set_limit moves it */
};
CMR_IMPL_LAYOUT(limiting);

cmr_status cmr_limiting_impl_init(cmr_limiting_impl *impl) {
  atomic_init(&impl->limit, impl->params.allocation_limit);
  return CMR_SUCCESS;
}

cmr_status cmr_limiting_impl_set_limit(cmr_limiting_impl *impl, size_t limit) {
  atomic_store(&impl->limit, limit);
  return CMR_SUCCESS;
}

/* Adds `counted` to the count unless that would pass the limit. */
static cmr_status cmr_limiting_reserve(cmr_limiting_impl *impl, size_t bytes, size_t counted) {
  size_t allocated = atomic_load(&impl->allocated);
  do {
    size_t limit = atomic_load(&impl->limit);
    if (allocated > limit || counted > limit - allocated) {
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY,
                       "limiting: %zu bytes (%zu counted) would pass the allocation_limit of %zu bytes (%zu "
                       "allocated)",
                       bytes, counted, limit, allocated);
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
  if (!cmr_round_up(bytes, impl->params.allocation_alignment, out)) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "limiting: %zu bytes overflow once rounded up to %zu", bytes,
                     impl->params.allocation_alignment);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_limiting_impl_allocate(cmr_limiting_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                      void **out) {
  size_t counted = 0;
  cmr_status status = cmr_limiting_counted(impl, bytes, &counted);
  if (status == CMR_SUCCESS) status = cmr_limiting_reserve(impl, bytes, counted);
  if (status != CMR_SUCCESS) return status;
  status = cmr_allocate_aligned(impl->params.upstream, bytes, alignment, stream, out);
  if (status != CMR_SUCCESS) atomic_fetch_sub(&impl->allocated, counted);
  return status;
}

/* The memory counts until the upstream has it back, so the count never drops
 * below what is really out; a free of more than is counted is refused first. */
cmr_status cmr_limiting_impl_deallocate(cmr_limiting_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                        cmr_stream stream) {
  /* A size too large to round was never counted: more than is allocated. */
  size_t counted;
  if (!cmr_round_up(bytes, impl->params.allocation_alignment, &counted)) counted = SIZE_MAX;
  size_t allocated = atomic_load(&impl->allocated);
  if (counted > allocated) return cmr_limiting_overfreed(ptr, bytes, counted, allocated);
  cmr_status status = cmr_deallocate_aligned(impl->params.upstream, ptr, bytes, alignment, stream);
  if (status != CMR_SUCCESS) return status;
  /* Fails only when frees of more than was allocated race each other. */
  return cmr_limiting_unreserve(impl, ptr, bytes, counted);
}

cmr_status cmr_limiting_impl_allocated_bytes(cmr_limiting_impl *impl, size_t *out) {
  *out = atomic_load(&impl->allocated);
  return CMR_SUCCESS;
}
