/* SPDX-License-Identifier: Apache-2.0 */
/* statistics: a stack of counter levels under one mutex. Only the top level
 * counts; popping merges it into the level below with RMM's rule. A level's
 * value may go negative (it frees memory allocated before its push), so
 * values are signed; peaks and totals never are. */
#include <pthread.h>
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

struct cmr_statistics_impl {
  cmr_statistics_params params; /* first: what it was created with (impl.h) */
  pthread_mutex_t lock;
  cmr_statistics_level *levels; /* levels[0] is the base, levels[count - 1] the top */
  size_t count;
  size_t capacity;
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

/* Counts one allocation (sign +1) or free (-1) of `bytes` in the top level. */
static void cmr_statistics_record(cmr_statistics_impl *impl, size_t bytes, int sign) {
  cmr_mutex_lock(&impl->lock);
  cmr_statistics_level *top = &impl->levels[impl->count - 1];
  cmr_statistics_count(&top->bytes, sign * (int64_t)bytes);
  cmr_statistics_count(&top->allocations, sign);
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

/* ---- reading ---------------------------------------------------------------- */

typedef enum cmr_statistics_kind { CMR_STATISTICS_BYTES, CMR_STATISTICS_ALLOCATIONS } cmr_statistics_kind;
typedef enum cmr_statistics_field { CMR_STATISTICS_PEAK, CMR_STATISTICS_TOTAL } cmr_statistics_field;

static const cmr_statistics_counter *cmr_statistics_counter_of(const cmr_statistics_level *level,
                                                               cmr_statistics_kind kind) {
  return kind == CMR_STATISTICS_BYTES ? &level->bytes : &level->allocations;
}

/* The sum of the values of the levels but the `top_levels_left` topmost:
 * with none left out, what is outstanding through the adaptor; with the top
 * left out, what was outstanding when it was pushed (the levels below it
 * change no more while it is there). No free takes either below zero. */
static size_t cmr_statistics_sum(cmr_statistics_impl *impl, cmr_statistics_kind kind, size_t top_levels_left) {
  cmr_mutex_lock(&impl->lock);
  int64_t sum = 0;
  for (size_t i = 0; i + top_levels_left < impl->count; ++i) {
    sum += cmr_statistics_counter_of(&impl->levels[i], kind)->value;
  }
  cmr_mutex_unlock(&impl->lock);
  return (size_t)sum;
}

static size_t cmr_statistics_top(cmr_statistics_impl *impl, cmr_statistics_kind kind, cmr_statistics_field field) {
  cmr_mutex_lock(&impl->lock);
  const cmr_statistics_counter *counter = cmr_statistics_counter_of(&impl->levels[impl->count - 1], kind);
  int64_t value = field == CMR_STATISTICS_PEAK ? counter->peak : counter->total;
  cmr_mutex_unlock(&impl->lock);
  return (size_t)value;
}

cmr_status cmr_statistics_impl_bytes_current(cmr_statistics_impl *impl, size_t *out) {
  *out = cmr_statistics_sum(impl, CMR_STATISTICS_BYTES, 0);
  return CMR_SUCCESS;
}

cmr_status cmr_statistics_impl_bytes_peak(cmr_statistics_impl *impl, size_t *out) {
  *out = cmr_statistics_top(impl, CMR_STATISTICS_BYTES, CMR_STATISTICS_PEAK);
  return CMR_SUCCESS;
}

cmr_status cmr_statistics_impl_bytes_total(cmr_statistics_impl *impl, size_t *out) {
  *out = cmr_statistics_top(impl, CMR_STATISTICS_BYTES, CMR_STATISTICS_TOTAL);
  return CMR_SUCCESS;
}

cmr_status cmr_statistics_impl_allocations_current(cmr_statistics_impl *impl, size_t *out) {
  *out = cmr_statistics_sum(impl, CMR_STATISTICS_ALLOCATIONS, 0);
  return CMR_SUCCESS;
}

cmr_status cmr_statistics_impl_allocations_peak(cmr_statistics_impl *impl, size_t *out) {
  *out = cmr_statistics_top(impl, CMR_STATISTICS_ALLOCATIONS, CMR_STATISTICS_PEAK);
  return CMR_SUCCESS;
}

cmr_status cmr_statistics_impl_allocations_total(cmr_statistics_impl *impl, size_t *out) {
  *out = cmr_statistics_top(impl, CMR_STATISTICS_ALLOCATIONS, CMR_STATISTICS_TOTAL);
  return CMR_SUCCESS;
}

cmr_status cmr_statistics_impl_bytes_at_push(cmr_statistics_impl *impl, size_t *out) {
  *out = cmr_statistics_sum(impl, CMR_STATISTICS_BYTES, 1);
  return CMR_SUCCESS;
}

cmr_status cmr_statistics_impl_allocations_at_push(cmr_statistics_impl *impl, size_t *out) {
  *out = cmr_statistics_sum(impl, CMR_STATISTICS_ALLOCATIONS, 1);
  return CMR_SUCCESS;
}

cmr_status cmr_statistics_impl_counter_levels(cmr_statistics_impl *impl, size_t *out) {
  cmr_mutex_lock(&impl->lock);
  *out = impl->count;
  cmr_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
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
  cmr_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
}
