/* SPDX-License-Identifier: Apache-2.0 */
/* statistics: a stack of counter levels under one mutex. Only the top level
 * counts; popping merges it into the level below with RMM's rule. A level's
 * value may go negative (it frees memory allocated before its push), so
 * values are signed; peaks and totals never are. Each change publishes what
 * the getters read (spec: counter) while it holds the mutex. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "impl.h"
#include "lock.h"

typedef struct cmr_statistics_counter {
  int64_t value; /* net change since the level was pushed */
  int64_t peak;  /* highest value since the push (0 at the push) */
  int64_t total; /* sum of increments since the push */
} cmr_statistics_counter;

typedef struct cmr_statistics_level {
  cmr_statistics_counter bytes;
  cmr_statistics_counter allocations;
} cmr_statistics_level;

/* One kind of counter as the getters read it: what is outstanding through
 * the adaptor (all levels), the top level's peak and total, and what was
 * outstanding when the top level was pushed (0 for the base level). */
typedef struct cmr_statistics_readout {
  _Atomic size_t current;
  _Atomic size_t peak;
  _Atomic size_t total;
  _Atomic size_t at_push;
} cmr_statistics_readout;

struct cmr_statistics_impl {
  cmr_statistics_params params; /* first: what it was created with (impl.h) */
  pthread_mutex_t lock;
  cmr_statistics_level *levels; /* levels[0] is the base, levels[count - 1] the top */
  size_t count;
  size_t capacity;
  cmr_statistics_readout bytes;
  cmr_statistics_readout allocations;
  _Atomic size_t depth; /* count, for counter_levels */
};
CMR_IMPL_LAYOUT(statistics);

cmr_status cmr_statistics_impl_init(cmr_statistics_impl *impl) {
  impl->levels = calloc(1, sizeof *impl->levels);
  if (impl->levels == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "statistics: no host memory for the resource");
  cmr_status status = cmr_mutex_init(&impl->lock, "statistics");
  if (status != CMR_SUCCESS) {
    free(impl->levels);
    return status;
  }
  impl->count = 1;
  impl->capacity = 1;
  atomic_store_explicit(&impl->depth, 1, memory_order_relaxed);
  return CMR_SUCCESS;
}

void cmr_statistics_impl_fini(cmr_statistics_impl *impl) {
  pthread_mutex_destroy(&impl->lock);
  free(impl->levels);
}

static void cmr_statistics_count(cmr_statistics_counter *counter, int64_t change) {
  counter->value += change;
  if (change > 0) counter->total += change;
  if (counter->value > counter->peak) counter->peak = counter->value;
}

/* Publishes the top level's counter of one kind (the lock held; at_push
 * is current). No free takes current below zero. */
static void cmr_statistics_publish(cmr_statistics_readout *readout, const cmr_statistics_counter *top) {
  int64_t at_push = (int64_t)atomic_load_explicit(&readout->at_push, memory_order_relaxed);
  atomic_store_explicit(&readout->current, (size_t)(at_push + top->value), memory_order_relaxed);
  atomic_store_explicit(&readout->peak, (size_t)top->peak, memory_order_relaxed);
  atomic_store_explicit(&readout->total, (size_t)top->total, memory_order_relaxed);
}

static void cmr_statistics_publish_top(cmr_statistics_impl *impl) {
  const cmr_statistics_level *top = &impl->levels[impl->count - 1];
  cmr_statistics_publish(&impl->bytes, &top->bytes);
  cmr_statistics_publish(&impl->allocations, &top->allocations);
}

/* Counts one allocation (sign +1) or free (-1) of `bytes` in the top level. */
static void cmr_statistics_record(cmr_statistics_impl *impl, size_t bytes, int sign) {
  cmr_mutex_lock(&impl->lock);
  cmr_statistics_level *top = &impl->levels[impl->count - 1];
  cmr_statistics_count(&top->bytes, sign * (int64_t)bytes);
  cmr_statistics_count(&top->allocations, sign);
  cmr_statistics_publish_top(impl);
  cmr_mutex_unlock(&impl->lock);
}

cmr_status cmr_statistics_impl_allocate(cmr_statistics_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                        void **out) {
  cmr_status status = cmr_allocate_aligned(impl->params.upstream, bytes, alignment, stream, out);
  if (status == CMR_SUCCESS) cmr_statistics_record(impl, bytes, +1);
  return status;
}

cmr_status cmr_statistics_impl_deallocate(cmr_statistics_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                          cmr_stream stream) {
  cmr_status status = cmr_deallocate_aligned(impl->params.upstream, ptr, bytes, alignment, stream);
  if (status == CMR_SUCCESS) cmr_statistics_record(impl, bytes, -1);
  return status;
}

/* After a push or pop (the lock held): what was outstanding when the top
 * level was pushed, the sum of the values of the levels below it (which
 * change no more while it is there), then the top level itself. */
static void cmr_statistics_publish_levels(cmr_statistics_impl *impl) {
  int64_t bytes = 0, allocations = 0;
  for (size_t i = 0; i + 1 < impl->count; ++i) {
    bytes += impl->levels[i].bytes.value;
    allocations += impl->levels[i].allocations.value;
  }
  atomic_store_explicit(&impl->bytes.at_push, (size_t)bytes, memory_order_relaxed);
  atomic_store_explicit(&impl->allocations.at_push, (size_t)allocations, memory_order_relaxed);
  atomic_store_explicit(&impl->depth, impl->count, memory_order_relaxed);
  cmr_statistics_publish_top(impl);
}

/* ---- the stack ----------------------------------------------------------------- */

cmr_status cmr_statistics_impl_push_counters(cmr_statistics_impl *impl) {
  cmr_mutex_lock(&impl->lock);
  if (impl->count == impl->capacity) {
    cmr_statistics_level *grown = realloc(impl->levels, 2 * impl->capacity * sizeof *grown);
    if (grown == NULL) {
      cmr_mutex_unlock(&impl->lock);
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "statistics: no host memory for level %zu of counters",
                       impl->count + 1);
    }
    impl->levels = grown;
    impl->capacity *= 2;
  }
  impl->levels[impl->count++] = (cmr_statistics_level){{0, 0, 0}, {0, 0, 0}};
  cmr_statistics_publish_levels(impl);
  cmr_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
}

/* RMM's rule: the child's peak was reached on top of the parent's value. */
static void cmr_statistics_merge(cmr_statistics_counter *parent, const cmr_statistics_counter *child) {
  if (parent->value + child->peak > parent->peak) parent->peak = parent->value + child->peak;
  parent->value += child->value;
  parent->total += child->total;
}

cmr_status cmr_statistics_impl_pop_counters(cmr_statistics_impl *impl) {
  cmr_mutex_lock(&impl->lock);
  if (impl->count == 1) {
    cmr_mutex_unlock(&impl->lock);
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "statistics: pop_counters: only the base level is left (push_counters first)");
  }
  const cmr_statistics_level *child = &impl->levels[--impl->count];
  cmr_statistics_level *parent = &impl->levels[impl->count - 1];
  cmr_statistics_merge(&parent->bytes, &child->bytes);
  cmr_statistics_merge(&parent->allocations, &child->allocations);
  cmr_statistics_publish_levels(impl);
  cmr_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
}
