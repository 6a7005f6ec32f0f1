/* SPDX-License-Identifier: Apache-2.0 */
/* The statistics every one of cmr's resources keeps without its algorithm's
 * help, and what an algorithm adds (its class's stats hook).
 *
 * Dispatch counts each successful call of an allocate or deallocate entry
 * of one of cmr's resources in the resource object's cmr_usage (relaxed
 * atomics: one add and one increment each way, and a compare with the peak
 * on allocate), and the out-of-memory answers (stats.c); every call into
 * those entries is one of dispatch's. cmr_ref_stats
 * reads them, then calls the class's hook, which fills what only the
 * algorithm knows (a suballocator's chunks and free lists, a driver pool's
 * counters), or, for an adaptor, takes them from its upstream. */
#ifndef CMR_USAGE_H
#define CMR_USAGE_H

#include <stdatomic.h>
#include <stdint.h>

#include <cmr/stats.h>

#include "errors.h"

typedef struct cmr_usage {
  _Atomic size_t bytes_in_use;
  _Atomic size_t bytes_in_use_peak;
  _Atomic size_t allocations;
  _Atomic size_t deallocations;
  _Atomic size_t out_of_memory;
} cmr_usage;

/* Raises `peak` to at least `now` (another thread may raise it meanwhile). */
static inline void cmr_peak_raise(_Atomic size_t *peak, size_t now) {
  size_t seen = atomic_load_explicit(peak, memory_order_relaxed);
  while (now > seen &&
         !atomic_compare_exchange_weak_explicit(peak, &seen, now, memory_order_relaxed, memory_order_relaxed)) {
  }
}

/* The allocate answer `status` of a request of `bytes`, counted when a
 * success; returned as it is. */
static inline __attribute__((always_inline)) cmr_status cmr_usage_allocated(cmr_usage *usage, cmr_status status,
                                                                            size_t bytes) {
  if (__builtin_expect(status == CMR_SUCCESS, 1)) {
    size_t now = atomic_fetch_add_explicit(&usage->bytes_in_use, bytes, memory_order_relaxed) + bytes;
    atomic_fetch_add_explicit(&usage->allocations, 1, memory_order_relaxed);
    if (now > atomic_load_explicit(&usage->bytes_in_use_peak, memory_order_relaxed)) {
      cmr_peak_raise(&usage->bytes_in_use_peak, now);
    }
  }
  return status;
}

/* The deallocate answer `status` of `bytes`, counted when a success. */
static inline __attribute__((always_inline)) cmr_status cmr_usage_deallocated(cmr_usage *usage, cmr_status status,
                                                                              size_t bytes) {
  if (__builtin_expect(status == CMR_SUCCESS, 1)) {
    atomic_fetch_sub_explicit(&usage->bytes_in_use, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&usage->deallocations, 1, memory_order_relaxed);
  }
  return status;
}

/* How a suballocator's free memory is spread over its streams' lists: the
 * lists with the most free bytes, most first, and how many have any. */
enum { CMR_FREE_BY_STREAM_SHOWN = 6 };
typedef struct cmr_stream_free {
  uint64_t key; /* the list's stream key (stream_lists.h); CMR_STREAM_KEY_SHARED for idle memory */
  size_t bytes;
  size_t blocks;
  size_t largest;
} cmr_stream_free;
typedef struct cmr_free_by_stream {
  size_t lists;                                  /* lists holding free memory */
  size_t shown;                                  /* entries filled in `top` */
  cmr_stream_free top[CMR_FREE_BY_STREAM_SHOWN]; /* the lists with the most free bytes */
} cmr_free_by_stream;

/* The key of the list of idle memory, which every stream takes from. */
#define CMR_STREAM_KEY_SHARED (UINT64_C(1) << 61)
/* The key a suballocator gives free memory outside its stream lists (the arena's global arena). */
#define CMR_STREAM_KEY_UNLISTED (CMR_STREAM_KEY_SHARED + 1)

/* Counts `entry` into `spread`, keeping the lists with the most free bytes. */
void cmr_free_by_stream_add(cmr_free_by_stream *spread, const cmr_stream_free *entry);

/* For a hook: sets the fields of an adaptor's memory from `upstream`'s
 * statistics (bytes held, free memory, segments, lists, pool counters and
 * retries) into *out, leaving the adaptor's own counts. */
void cmr_stats_take_memory_of(cmr_stats *out, const cmr_stats *upstream);

#endif /* CMR_USAGE_H */
