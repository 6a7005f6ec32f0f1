/* SPDX-License-Identifier: Apache-2.0 */
/* simulated: addresses from a bump pointer over a range no process maps, and
 * counters; no memory behind them. The mutex keeps the bump pointer and the
 * counters consistent with each other (they change only under it; the
 * generated getters read each alone, spec: counter); a ledger of its own
 * (every simulated resource hands out the same addresses) vouches for each
 * free. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "impl.h"
#include "ledger.h"
#include "lock.h"
#include "simulated_range.h"

struct cmr_simulated_impl {
  cmr_simulated_params params; /* first: what it was created with (impl.h) */
  pthread_mutex_t lock;
  uintptr_t next; /* offset of the first address never handed out */
  _Atomic size_t in_use;
  _Atomic size_t peak;
  _Atomic size_t allocations;
  _Atomic size_t deallocations;
  cmr_ledger *ledger;
};
CMR_IMPL_LAYOUT(simulated);

cmr_status cmr_simulated_impl_init(cmr_simulated_impl *impl) {
  cmr_status status = cmr_ledger_create("simulated", &impl->ledger);
  if (status == CMR_SUCCESS) status = cmr_mutex_init(&impl->lock, "simulated");
  if (status != CMR_SUCCESS) cmr_ledger_destroy(impl->ledger);
  return status;
}

void cmr_simulated_impl_fini(cmr_simulated_impl *impl) {
  cmr_ledger_destroy(impl->ledger);
  pthread_mutex_destroy(&impl->lock);
}

/* Hands out [start, start + bytes) under the lock; the caller has checked
 * that it fits both the capacity and the range. */
static void *cmr_simulated_take(cmr_simulated_impl *impl, uintptr_t start, size_t bytes) {
  impl->next = start + bytes;
  size_t in_use = atomic_fetch_add_explicit(&impl->in_use, bytes, memory_order_relaxed) + bytes;
  if (in_use > atomic_load_explicit(&impl->peak, memory_order_relaxed)) {
    atomic_store_explicit(&impl->peak, in_use, memory_order_relaxed);
  }
  atomic_fetch_add_explicit(&impl->allocations, 1, memory_order_relaxed);
  return (void *)(CMR_SIMULATED_BASE + start);
}

static cmr_status cmr_simulated_obtain(void *resource, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  cmr_simulated_impl *impl = resource;
  (void)stream;
  *out = NULL;
  if (alignment > CMR_SIMULATED_RANGE) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "simulated: alignment %zu is larger than the simulated range", alignment);
  }
  cmr_mutex_lock(&impl->lock);
  /* The base is aligned to 2^62, so aligning the offset aligns the address. */
  uintptr_t start = (impl->next + alignment - 1) & ~(uintptr_t)(alignment - 1);
  size_t in_use = atomic_load_explicit(&impl->in_use, memory_order_relaxed);
  bool over_capacity = bytes > impl->params.capacity - in_use;
  bool past_range = start > CMR_SIMULATED_RANGE || bytes > CMR_SIMULATED_RANGE - start;
  if (!over_capacity && !past_range) *out = cmr_simulated_take(impl, start, bytes);
  cmr_mutex_unlock(&impl->lock);
  if (over_capacity) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "simulated: %zu bytes with %zu of capacity %zu in use", bytes, in_use,
                     impl->params.capacity);
  }
  if (past_range) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "simulated: %zu bytes at alignment %zu: the address range is spent",
                     bytes, alignment);
  }
  return CMR_SUCCESS;
}

/* Only for an address the ledger vouches for, with its size. */
static cmr_status cmr_simulated_release(void *resource, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  cmr_simulated_impl *impl = resource;
  (void)ptr, (void)alignment, (void)stream;
  cmr_mutex_lock(&impl->lock);
  atomic_fetch_sub_explicit(&impl->in_use, bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&impl->deallocations, 1, memory_order_relaxed);
  cmr_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
}

static const cmr_ledger_memory cmr_simulated_memory = {cmr_simulated_obtain, cmr_simulated_release};

cmr_status cmr_simulated_impl_allocate(cmr_simulated_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                       void **out) {
  return cmr_ledger_allocate(impl->ledger, "simulated", NULL, &cmr_simulated_memory, impl, bytes, alignment, stream,
                             out);
}

cmr_status cmr_simulated_impl_deallocate(cmr_simulated_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                         cmr_stream stream) {
  return cmr_ledger_deallocate(impl->ledger, "simulated", NULL, &cmr_simulated_memory, impl, ptr, bytes, alignment,
                               stream);
}
