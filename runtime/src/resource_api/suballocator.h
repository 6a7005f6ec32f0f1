/* SPDX-License-Identifier: Apache-2.0 */
/* What the stream-ordered suballocators (pool, fixed_size, arena, expandable) do alike
 * around their free lists: growing once when many threads miss at once, and
 * taking a freed block back with its checks. */
#ifndef CMR_SUBALLOCATOR_H
#define CMR_SUBALLOCATOR_H

#include <pthread.h>

#include "block_map.h"
#include "chunks.h"
#include "stream_lists.h"
#include "upstream_lock.h"
#include "usage.h"

/* A resource's growth step: new memory on `stream`, out of which it cuts
 * `size` bytes at `alignment` into *out before the rest joins the lists
 * (cmr_stream_lists_carve), so no other thread takes the caller's room. */
typedef cmr_status (*cmr_grow_function)(void *resource, size_t size, size_t alignment, cmr_stream stream,
                                        cmr_block **out);

/* A suballocator's map of handed-out blocks and its stream lists over it
 * (cmr_stream_lists_create's `owner`, `fit` and `keying`). On failure
 * neither is made (both NULL). */
cmr_status cmr_suballocator_lists_create(const char *owner, cmr_fit fit, cmr_stream_keying keying,
                                         cmr_block_map **handed_out, cmr_stream_lists **lists);
/* Destroys what cmr_suballocator_lists_create made (either may be NULL):
 * the lists first, since an ending thread's list moves its hand-outs into
 * the map. */
void cmr_suballocator_lists_destroy(cmr_stream_lists *lists, cmr_block_map *handed_out);

/* Hands `block` out for a request of `bytes`: recorded in `handed_out`,
 * its address in *out. */
void cmr_suballocator_hand_out(cmr_block_map *handed_out, cmr_block *block, size_t bytes, void **out);

/* What an allocation path's rest (cmr_allocation_path.beyond) does for a
 * resource that grows: `block` (a fit the take found, or NULL) is handed
 * out for a request of `bytes`, growing first if need be. `growth` is held
 * across the upstream's call: a call back into the resource that needs to
 * grow it from inside that call is refused (CMR_ERROR_REENTRANT_CALL); one
 * its lists can serve, and every free, is served. Under `growth` the lists
 * are looked at again (another thread may just have grown the resource, so
 * threads that all miss at once grow it once), else `grow`. */
cmr_status cmr_suballocator_find(cmr_stream_lists *lists, cmr_block_map *handed_out, cmr_upstream_lock *growth,
                                 size_t size, size_t alignment, size_t bytes, cmr_stream stream, cmr_grow_function grow,
                                 void *resource, cmr_block *block, void **out);

/* cmr_suballocator_find, then the retry once no more memory can be had
 * (the growth failed with CMR_ERROR_OUT_OF_MEMORY, whose message is kept
 * and quoted): every stream's free memory gathered into `stream`'s list,
 * where it coalesces (cmr_stream_lists_reclaim), and `size` bytes at
 * `alignment` handed out from there; CMR_ERROR_OUT_OF_MEMORY, naming
 * `owner`, when even that has no fit. The rest of an allocation for a
 * suballocator that grows and, once it cannot, gathers what is free. */
cmr_status cmr_suballocator_find_or_reclaim(cmr_stream_lists *lists, cmr_block_map *handed_out,
                                            cmr_upstream_lock *growth, const char *owner, size_t size, size_t alignment,
                                            size_t bytes, cmr_stream stream, cmr_grow_function grow, void *resource,
                                            cmr_block *block, void **out);

/* Statistics (usage.h): the free memory over all of `lists` (bytes,
 * blocks, the largest block, how many lists) into *out and, when `spread`
 * is not NULL, how it lies over the streams. Each list's recent blocks join
 * its index first, where they merge. */
void cmr_stream_lists_stats(cmr_stream_lists *lists, cmr_stats *out, cmr_free_by_stream *spread);
/* A suballocator's whole memory: its chunks (held now and at peak,
 * segments) and its lists' free memory. */
void cmr_suballocator_stats(cmr_stream_lists *lists, cmr_chunks *chunks, cmr_stats *out, cmr_free_by_stream *spread);

/* The stats hooks (spec hooks "stats") of suballocator `name` whose struct
 * keeps its lists in the member `lists` (a cmr_stream_lists *) and its
 * chunks in `chunks` (a cmr_chunks): everything it knows is there. */
#define CMR_SUBALLOCATOR_RESET_PEAK_STATS(name, chunks)                    \
  cmr_status cmr_##name##_impl_reset_peak_stats(cmr_##name##_impl *impl) { \
    cmr_chunks_reset_peak(&impl->chunks);                                  \
    return CMR_SUCCESS;                                                    \
  }
#define CMR_SUBALLOCATOR_STATS(name, lists, chunks)                                                         \
  cmr_status cmr_##name##_impl_stats(cmr_##name##_impl *impl, cmr_stats *out, cmr_free_by_stream *spread) { \
    cmr_suballocator_stats(impl->lists, &impl->chunks, out, spread);                                        \
    return CMR_SUCCESS;                                                                                     \
  }                                                                                                         \
  CMR_SUBALLOCATOR_RESET_PEAK_STATS(name, chunks)

#endif /* CMR_SUBALLOCATOR_H */
