/* SPDX-License-Identifier: Apache-2.0 */
/* pool: coalescing best fit over upstream chunks, in stream-ordered free
 * lists (runtime/src/resource_api/stream_lists.h). An allocation looks in its stream's
 * list, then in other streams' lists, then grows the pool; when the upstream
 * is exhausted it gathers every stream's free memory into its own list, where
 * it coalesces, and looks once more. */
#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "chunks.h"
#include "impl.h"
#include "invariants.h"
#include "lock.h"
#include "segments.h"
#include "sizes.h"
#include "suballocator.h"

struct cmr_pool_impl {
  cmr_pool_params params; /* first: what it was created with (impl.h) */
  cmr_chunks chunks;
  /* Held while deciding to grow, so that threads that all miss at once grow
   * the pool once, and the others find the new chunk when they look again. */
  cmr_upstream_lock growth;
  cmr_stream_lists *free_lists;
  cmr_block_map *handed_out;
  cmr_allocation_path path; /* over free_lists, on to cmr_pool_beyond */
  /* set_release_threshold's and set_max_split_size's (SIZE_MAX until set). */
  _Atomic size_t release_threshold;
  _Atomic size_t max_split_size;
};
CMR_IMPL_LAYOUT(pool);

/* How many bytes a growth of at least `least` asks for: as many as the pool
 * holds, at most maximum_growth; a request above max_split_size gets a chunk
 * of its own size, and any other a chunk of at most max_split_size, so
 * that no chunk above it is ever split. */
static size_t cmr_pool_growth(cmr_pool_impl *impl, size_t least) {
  size_t max_split = atomic_load_explicit(&impl->max_split_size, memory_order_relaxed);
  if (least > max_split) return least;
  size_t held = cmr_chunks_bytes(&impl->chunks);
  size_t step = held < impl->params.maximum_growth ? held : impl->params.maximum_growth;
  if (step > max_split) step = max_split;
  return step > least ? step : least;
}

/* Takes a chunk of at least `least` bytes on `stream`. The pool doubles (a
 * chunk as large as what it holds, at most maximum_growth) unless that is
 * less than asked for.
 * With `out`, `size` bytes at `alignment` are cut out of it for the caller
 * and the rest joins the stream's list as if freed there; without, all of it
 * joins as idle memory (the caller synchronizes: the initial chunk). */
static cmr_status cmr_pool_add_chunk(cmr_pool_impl *impl, size_t least, size_t size, size_t alignment,
                                     cmr_stream stream, cmr_block **out) {
  cmr_chunk chunk;
  cmr_status status = cmr_chunks_grow(&impl->chunks, least, cmr_pool_growth(impl, least), stream, &chunk);
  if (status == CMR_SUCCESS && out == NULL) status = cmr_backend_stream_synchronize(stream);
  if (status != CMR_SUCCESS) return status;
  cmr_log(CMR_LOG_DEBUG, "pool %p: grew by %zu bytes from the upstream (at least %zu needed): pool size %zu",
          (void *)impl, chunk.size, least, cmr_chunks_bytes(&impl->chunks));
  cmr_block *block = NULL;
  status = cmr_block_new(chunk.address, chunk.size, chunk.size, &block);
  if (status == CMR_SUCCESS) {
    status = out != NULL
                 ? cmr_stream_lists_carve(impl->free_lists, stream, block, size, alignment, CMR_GIVEN_FREED, out)
                 : cmr_stream_lists_give(impl->free_lists, stream, block, CMR_GIVEN_IDLE);
  }
  if (status == CMR_SUCCESS && out != NULL) CMR_CHECK(cmr_chunks_hold, &impl->chunks, (*out)->address, size);
  /* Unlisted, the chunk would be unusable yet count against the maximum
   * until destroy: it goes back to the upstream. */
  if (status != CMR_SUCCESS) {
    if (block != NULL) cmr_block_delete(block);
    /* One the upstream refuses back stays recorded until the end; the first
     * failure is the one reported. */
    cmr_kept_message reason;
    cmr_keep_message(&reason);
    (void)cmr_chunks_give_back(&impl->chunks, &chunk, stream);
    cmr_restore_message(&reason);
  }
  return status;
}

/* ---- release_threshold: whole free chunks back to the upstream ---------------------------- */

/* Whether holding `more` bytes more would pass release_threshold. */
static bool cmr_pool_past_threshold(cmr_pool_impl *impl, size_t more) {
  size_t held = cmr_chunks_bytes(&impl->chunks);
  size_t threshold = atomic_load_explicit(&impl->release_threshold, memory_order_relaxed);
  return held > threshold || more > threshold - held;
}

/* A free block that is a whole chunk is set aside (a list's lock held). */
static bool cmr_pool_take_chunk(cmr_free_blocks *list, cmr_block *block, void *arg) {
  (void)list;
  if (block->span != block->size) return false;
  cmr_free_blocks_insert(arg, block);
  return true;
}

/* Gives the whole chunks set aside in `whole` back to the upstream on
 * `stream`, with none of the pool's locks held; a chunk the upstream
 * refuses is listed again as idle. The first failure is returned. */
static cmr_status cmr_pool_give_back(cmr_pool_impl *impl, cmr_free_blocks *whole, cmr_stream stream) {
  cmr_status status = CMR_SUCCESS;
  for (cmr_block *block; (block = cmr_free_blocks_pop(whole)) != NULL;) {
    cmr_status given =
        cmr_chunks_give_back(&impl->chunks, &(cmr_chunk){.address = block->address, .size = block->size}, stream);
    if (given == CMR_SUCCESS || cmr_stream_lists_give(impl->free_lists, stream, block, CMR_GIVEN_IDLE) != CMR_SUCCESS) {
      cmr_block_delete(block);
    }
    if (status == CMR_SUCCESS) status = given;
  }
  return status;
}

/* Past the threshold: the whole chunks of `stream`'s own list (of the block
 * just freed at `freed`, or all, NULL) go back to the upstream, ordered on
 * `stream`, where all their work is. Out of line: the common path stays
 * light. */
static __attribute__((noinline)) cmr_status cmr_pool_trim(cmr_pool_impl *impl, cmr_stream stream, const void *freed) {
  cmr_free_blocks whole;
  cmr_free_blocks_init(&whole);
  cmr_status status = cmr_stream_lists_trim(impl->free_lists, stream, freed, cmr_pool_take_chunk, &whole);
  cmr_status given = cmr_pool_give_back(impl, &whole, stream);
  status = status == CMR_SUCCESS ? given : status;
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "pool: giving back past release_threshold");
}

static cmr_status cmr_pool_grow(void *resource, size_t size, size_t alignment, cmr_stream stream, cmr_block **out) {
  size_t needed = cmr_free_blocks_needed(size, alignment);
  if (needed == SIZE_MAX) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "pool: %zu bytes at alignment %zu overflow", size, alignment);
  }
  if (cmr_pool_past_threshold(resource, needed)) {
    cmr_status status = cmr_pool_trim(resource, stream, NULL);
    if (status != CMR_SUCCESS) return status;
  }
  return cmr_pool_add_chunk(resource, needed, size, alignment, stream, out);
}

/* An allocation the lists' take did not serve: the pool grows if no list
 * had a block, and when the upstream has no more, looks once more over all
 * free memory, gathered. */
static cmr_status cmr_pool_beyond(void *resource, cmr_block *fit, size_t size, size_t alignment, size_t bytes,
                                  cmr_stream stream, void **out) {
  cmr_pool_impl *impl = resource;
  return cmr_suballocator_find_or_reclaim(impl->free_lists, impl->handed_out, &impl->growth, "pool", size, alignment,
                                          bytes, stream, cmr_pool_grow, impl, fit, out);
}

cmr_status cmr_pool_impl_init(cmr_pool_impl *impl) {
  const cmr_pool_params *params = &impl->params;
  atomic_init(&impl->release_threshold, SIZE_MAX);
  atomic_init(&impl->max_split_size, SIZE_MAX);
  cmr_status status = cmr_upstream_lock_init(&impl->growth, "pool: allocate (growing from the upstream)");
  if (status != CMR_SUCCESS) return status;
  status = cmr_chunks_init(&impl->chunks, "pool", params->upstream, params->maximum_pool_size);
  if (status != CMR_SUCCESS) {
    cmr_upstream_lock_destroy(&impl->growth);
    return status;
  }
  status =
      cmr_suballocator_lists_create("pool", CMR_FIT_BEST, CMR_KEY_PER_STREAM, &impl->handed_out, &impl->free_lists);
  if (status == CMR_SUCCESS) {
    impl->path = (cmr_allocation_path){impl->free_lists, CMR_TAKE_ANY, cmr_pool_beyond, impl};
    status = cmr_stream_lists_set_capture(
        impl->free_lists, params->capture == CMR_POOL_CAPTURE_REFUSE ? CMR_CAPTURE_REFUSE : CMR_CAPTURE_SERVE,
        params->upstream);
  }
  if (status == CMR_SUCCESS && params->initial_pool_size > 0) {
    status = cmr_pool_add_chunk(impl, params->initial_pool_size, 0, 0, CMR_DEFAULT_STREAM, NULL);
    if (status != CMR_SUCCESS) {
      cmr_error_context(status, "pool: taking initial_pool_size %zu", params->initial_pool_size);
    }
  }
  if (status != CMR_SUCCESS) cmr_pool_impl_fini(impl);
  return status;
}

void cmr_pool_impl_fini(cmr_pool_impl *impl) {
  cmr_suballocator_lists_destroy(impl->free_lists, impl->handed_out);
  cmr_chunks_release_all(&impl->chunks);
  cmr_upstream_lock_destroy(&impl->growth);
}

/* Through the lists, then cmr_pool_beyond. */
cmr_status cmr_pool_impl_allocate(cmr_pool_impl *impl, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  return cmr_stream_lists_allocate(&impl->path, cmr_round_up_256(bytes), alignment, bytes, stream, out);
}

/* A free past release_threshold: the block's chunk goes back if the free
 * leaves it whole. Out of line: the common path stays light. */
static __attribute__((noinline)) cmr_status cmr_pool_deallocate_past_threshold(cmr_pool_impl *impl, void *ptr,
                                                                               size_t bytes, cmr_stream stream) {
  cmr_status status = cmr_stream_lists_take_back(impl->free_lists, stream, ptr, bytes);
  return status == CMR_SUCCESS ? cmr_pool_trim(impl, stream, ptr) : status;
}

cmr_status cmr_pool_impl_deallocate(cmr_pool_impl *impl, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)alignment; /* the block knows where it starts */
  /* A free leaves the bytes held as they were: the threshold is read first. */
  if (__builtin_expect(cmr_pool_past_threshold(impl, 0), 0)) {
    return cmr_pool_deallocate_past_threshold(impl, ptr, bytes, stream);
  }
  return cmr_stream_lists_take_back(impl->free_lists, stream, ptr, bytes);
}

cmr_status cmr_pool_impl_pool_size(cmr_pool_impl *impl, size_t *out) {
  *out = cmr_chunks_bytes(&impl->chunks);
  return CMR_SUCCESS;
}

cmr_status cmr_pool_impl_free_size(cmr_pool_impl *impl, size_t *out) {
  size_t blocks = 0, lists = 0;
  cmr_stream_lists_totals(impl->free_lists, &blocks, out, &lists);
  return CMR_SUCCESS;
}

cmr_status cmr_pool_impl_largest_free_block(cmr_pool_impl *impl, size_t *out) {
  *out = cmr_stream_lists_largest(impl->free_lists);
  return CMR_SUCCESS;
}

/* A whole chunk, out of a list with its work waited for, set aside (no
 * lock is held here but the lists'; its spans keep it from merging). */
static void cmr_pool_set_aside(cmr_block *chunk, void *arg) { cmr_free_blocks_insert(arg, chunk); }

cmr_status cmr_pool_impl_release(cmr_pool_impl *impl) {
  cmr_free_blocks whole;
  cmr_free_blocks_init(&whole);
  cmr_status status = cmr_stream_lists_release(impl->free_lists, CMR_RELEASE_UNITS, cmr_pool_set_aside, &whole);
  cmr_status given = cmr_pool_give_back(impl, &whole, CMR_DEFAULT_STREAM);
  if (status == CMR_SUCCESS) status = given;
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "pool: release");
}

cmr_status cmr_pool_impl_set_release_threshold(cmr_pool_impl *impl, size_t release_threshold) {
  atomic_store_explicit(&impl->release_threshold, release_threshold, memory_order_relaxed);
  return CMR_SUCCESS;
}

cmr_status cmr_pool_impl_set_max_split_size(cmr_pool_impl *impl, size_t max_split_size) {
  atomic_store_explicit(&impl->max_split_size, max_split_size, memory_order_relaxed);
  cmr_stream_lists_set_max_split(impl->free_lists, max_split_size);
  return CMR_SUCCESS;
}

CMR_SUBALLOCATOR_STATS(pool, free_lists, chunks)

void cmr_pool_impl_segments(cmr_pool_impl *impl, cmr_segment_sink *sink) {
  cmr_segments_walk(sink, &impl->chunks, impl->free_lists, impl->handed_out);
}
