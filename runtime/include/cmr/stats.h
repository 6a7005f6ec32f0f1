/* SPDX-License-Identifier: Apache-2.0 */
/* What a resource knows about its memory, in one call on any ref
 * (cmr_ref_stats), a reset of its peaks, and a process-wide observer of
 * out-of-memory answers.
 *
 * cmr_stats is versioned by its first field: a caller sets `size` to
 * sizeof(cmr_stats) as it was compiled, and cmr writes only that many
 * bytes, so a program built against an older, smaller struct keeps working
 * when fields are added at the end. `supported` says which fields the
 * resource filled (CMR_STATS_* bits); a field whose bit is clear is 0.
 *
 * Every byte count is a size_t, every event count too. What each field
 * means for each resource family (suballocators, adaptors, leaves,
 * cuda_async) is in the API reference ("Statistics"). */
#ifndef CMR_STATS_H
#define CMR_STATS_H

#include <cmr/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cmr_stats {
  size_t size;        /* in: sizeof(cmr_stats) as the caller knows it (at least CMR_STATS_MIN_SIZE) */
  unsigned supported; /* out: CMR_STATS_* bits of the fields filled */
  /* Bytes the callers asked for and have not freed (requested sizes, not
   * rounded), and the most there were at once since creation or the last
   * peak reset. */
  size_t bytes_in_use;
  size_t bytes_in_use_peak;
  /* Bytes the resource holds from the memory below it (its upstream, the
   * driver, the system), in use or free, now and at peak. */
  size_t bytes_held;
  size_t bytes_held_peak;
  /* Successful allocations and deallocations since creation; their
   * difference is the number of allocations alive. */
  size_t allocations;
  size_t deallocations;
  /* Free memory the resource holds: bytes, blocks, the largest block. */
  size_t bytes_free;
  size_t free_blocks;
  size_t largest_free_block;
  /* Allocations the resource answered with CMR_ERROR_OUT_OF_MEMORY. */
  size_t out_of_memory_count;
  /* Times a failure callback asked for an allocation to be tried again. */
  size_t failure_callback_retries;
  /* Pieces of memory held from below (a suballocator's chunks). */
  size_t segments;
  /* Streams (and threads, for per-thread lists) with free memory lists. */
  size_t stream_lists;
  /* A CUDA memory pool's own counters (cudaMemPoolAttrUsedMemCurrent and
   * ...High): bytes allocated from the pool by every user of it. */
  size_t pool_bytes_used;
  size_t pool_bytes_used_peak;
} cmr_stats;

/* The smallest `size` accepted: the header (size and supported). */
#define CMR_STATS_MIN_SIZE (offsetof(cmr_stats, bytes_in_use))

/* Bits of cmr_stats.supported, one per field. */
#define CMR_STATS_BYTES_IN_USE (1u << 0)
#define CMR_STATS_BYTES_IN_USE_PEAK (1u << 1)
#define CMR_STATS_BYTES_HELD (1u << 2)
#define CMR_STATS_BYTES_HELD_PEAK (1u << 3)
#define CMR_STATS_ALLOCATIONS (1u << 4)
#define CMR_STATS_DEALLOCATIONS (1u << 5)
#define CMR_STATS_BYTES_FREE (1u << 6)
#define CMR_STATS_FREE_BLOCKS (1u << 7)
#define CMR_STATS_LARGEST_FREE_BLOCK (1u << 8)
#define CMR_STATS_OUT_OF_MEMORY_COUNT (1u << 9)
#define CMR_STATS_FAILURE_CALLBACK_RETRIES (1u << 10)
#define CMR_STATS_SEGMENTS (1u << 11)
#define CMR_STATS_STREAM_LISTS (1u << 12)
#define CMR_STATS_POOL_BYTES_USED (1u << 13)
#define CMR_STATS_POOL_BYTES_USED_PEAK (1u << 14)

/* Fills *out (its `size` bytes, `size` kept) with what the resource `ref`
 * names knows. A foreign resource (not one of cmr's) answers supported = 0.
 * CMR_ERROR_NULL_POINTER for a NULL out; CMR_ERROR_INVALID_ARGUMENT when
 * out->size is below CMR_STATS_MIN_SIZE; the ref's own errors as for every
 * call through a ref. Thread-safe; the numbers are each read at one moment,
 * not all at the same one while other threads allocate. */
CMR_API cmr_status cmr_ref_stats(cmr_resource_ref ref, cmr_stats *out);

/* Sets every peak of the resource (bytes_in_use_peak, bytes_held_peak,
 * pool_bytes_used_peak) to its current value, so that later peaks are
 * measured from now; through an adaptor, its upstream's too. A foreign
 * resource has nothing to reset (CMR_SUCCESS). */
CMR_API cmr_status cmr_ref_reset_peak_stats(cmr_resource_ref ref);

/* Called when a resource answers an allocation with CMR_ERROR_OUT_OF_MEMORY,
 * before the error returns: `ref` the resource that ran out, `stats` its
 * statistics at that moment, `bytes`/`alignment`/`stream` the request,
 * `message` the error message the caller will read (it already describes
 * the resource's state). Called once per failure, by the innermost
 * resource that answered it: an adaptor that passes its upstream's failure
 * on unchanged is not reported again; a resource that fails with its own
 * message after its upstream failed is (a pool whose upstream ran dry),
 * and so is an upstream failure a resource then recovers from (a pool that
 * grows by less, a failure callback that retries): compare `ref` with the
 * resource you care about to tell them apart.
 *
 * Rules: it runs on the allocating thread, inside the allocate call, with
 * the locks held that the resources above the failing one hold (a
 * thread_safe adaptor's, a suballocator's growth lock). It may read
 * statistics (cmr_ref_stats) and log; it must not allocate or free through
 * the resources of that call (a lock it needs may be the one its caller
 * holds). An out-of-memory answer inside the observer does not call it
 * again. Setting the observer from inside it is refused
 * (CMR_ERROR_REENTRANT_CALL). */
typedef void (*cmr_oom_observer)(cmr_resource_ref ref, const cmr_stats *stats, size_t bytes, size_t alignment,
                                 cmr_stream stream, const char *message, void *user);

/* Sets the process-wide observer (NULL: none) and the `user` pointer it is
 * called with. When it returns, the previous observer is no longer running
 * on any thread and will not be called again: its `user` may be freed. */
CMR_API cmr_status cmr_set_oom_observer(cmr_oom_observer observer, void *user);

#ifdef __cplusplus
}
#endif

#endif /* CMR_STATS_H */
