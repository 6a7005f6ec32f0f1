/* SPDX-License-Identifier: Apache-2.0 */
/* fixed_size: blocks of one size, carved from upstream chunks of
 * blocks_to_preallocate blocks (fewer when the upstream is short). Each block is a unit of its own (span ==
 * block_size), so free blocks never merge and every take is a whole block.
 * Free blocks live in stream-ordered lists (stream_lists.h says when another
 * stream may reuse one); handed-out blocks in a block map, which is how a
 * foreign pointer is told apart. Chunks go back at destroy, and, past a
 * release threshold, on the free that leaves a whole chunk's blocks free in
 * one stream's list. */
#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "chunks.h"
#include "impl.h"
#include "lock.h"
#include "segments.h"
#include "sizes.h"
#include "suballocator.h"

struct cmr_fixed_size_impl {
  cmr_fixed_size_params params; /* first: what it was created with (impl.h) */
  size_t block_size;
  size_t chunk_size; /* block_size * blocks_to_preallocate */
  cmr_chunks chunks;
  cmr_stream_lists *free_blocks;
  cmr_block_map *handed_out;
  cmr_allocation_path path; /* over free_blocks, on to cmr_fixed_size_beyond */
  /* Held while growing, so threads that all find the lists empty at once
   * add one chunk, not one each. */
  cmr_upstream_lock growth;
  _Atomic size_t release_threshold; /* set_release_threshold's (SIZE_MAX until set) */
};
CMR_IMPL_LAYOUT(fixed_size);

static cmr_status cmr_fixed_size_new_block(const cmr_fixed_size_impl *impl, const cmr_chunk *chunk, size_t index,
                                           cmr_block **out) {
  char *address = (char *)chunk->address + index * impl->block_size;
  return cmr_block_new(address, impl->block_size, impl->block_size, out);
}

/* Gives blocks [first, end) of `chunk` to `stream`'s list (as idle memory
 * when `idle`: the caller synchronized). Should one fail (no host memory for
 * a record, the stream's list not found), the rest of the chunk stays unused
 * until destroy: the resource is smaller, never wrong. Returns how many were
 * listed. */
static size_t cmr_fixed_size_give_blocks(cmr_fixed_size_impl *impl, const cmr_chunk *chunk, size_t first,
                                         cmr_stream stream, bool idle) {
  size_t i = first;
  for (; i < chunk->size / impl->block_size; ++i) {
    cmr_block *block;
    cmr_status status = cmr_fixed_size_new_block(impl, chunk, i, &block);
    if (status == CMR_SUCCESS) {
      status = cmr_stream_lists_give(impl->free_blocks, stream, block, idle ? CMR_GIVEN_IDLE : CMR_GIVEN_FREED);
      if (status != CMR_SUCCESS) cmr_block_delete(block);
    }
    if (status != CMR_SUCCESS) break;
  }
  return i - first;
}

/* A new chunk from the upstream, ordered on `stream`: blocks_to_preallocate
 * blocks, or fewer (down to one) when the upstream is short. With `out`, the
 * first block is the caller's, taken before the others join the stream's
 * list, so no other thread takes it; without (preallocation), all of them
 * join, as idle memory. A chunk of which nothing could be used goes back. */
static cmr_status cmr_fixed_size_add_chunk(cmr_fixed_size_impl *impl, cmr_stream stream, cmr_block **out) {
  cmr_chunk chunk;
  cmr_status status = cmr_chunks_grow(&impl->chunks, impl->block_size, impl->chunk_size, stream, &chunk);
  if (status == CMR_SUCCESS && out == NULL) status = cmr_backend_stream_synchronize(stream);
  if (status != CMR_SUCCESS) return status;
  if (out != NULL) {
    status = cmr_fixed_size_new_block(impl, &chunk, 0, out);
    if (status != CMR_SUCCESS) {
      /* A chunk the upstream refuses back stays recorded until the end; the
       * first failure is the one reported. */
      (void)cmr_chunks_give_back(&impl->chunks, &chunk, stream);
      return status;
    }
    cmr_fixed_size_give_blocks(impl, &chunk, 1, stream, false);
  } else if (cmr_fixed_size_give_blocks(impl, &chunk, 0, stream, true) == 0) {
    return cmr_chunks_give_back(&impl->chunks, &chunk, stream);
  }
  return CMR_SUCCESS;
}

static cmr_status cmr_fixed_size_grow(void *resource, size_t size, size_t alignment, cmr_stream stream,
                                      cmr_block **out) {
  (void)size, (void)alignment; /* always one block at 256 */
  return cmr_fixed_size_add_chunk(resource, stream, out);
}

static cmr_status cmr_fixed_size_check_sizes(size_t block_size, size_t blocks_to_preallocate, size_t *rounded) {
  if (!cmr_round_up(block_size, CMR_DEFAULT_ALIGNMENT, rounded)) {
    return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "fixed_size: block_size %zu overflows once rounded up to 256",
                     block_size);
  }
  if (*rounded > SIZE_MAX / blocks_to_preallocate) {
    return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "fixed_size: a chunk of %zu blocks of %zu bytes overflows a size_t",
                     blocks_to_preallocate, *rounded);
  }
  return CMR_SUCCESS;
}

void cmr_fixed_size_impl_fini(cmr_fixed_size_impl *impl) {
  /* Blocks still handed out go back with their chunks: their owner can no
   * longer free them. The chunks go once the device is idle (chunks.h). */
  cmr_suballocator_lists_destroy(impl->free_blocks, impl->handed_out);
  cmr_chunks_release_all(&impl->chunks);
  cmr_upstream_lock_destroy(&impl->growth);
}

/* An allocation the lists' take did not serve: a new chunk if no list had a block. */
static cmr_status cmr_fixed_size_beyond(void *resource, cmr_block *fit, size_t size, size_t alignment, size_t bytes,
                                        cmr_stream stream, void **out) {
  cmr_fixed_size_impl *impl = resource;
  return cmr_suballocator_find(impl->free_blocks, impl->handed_out, &impl->growth, size, alignment, bytes, stream,
                               cmr_fixed_size_grow, impl, fit, out);
}

cmr_status cmr_fixed_size_impl_init(cmr_fixed_size_impl *impl) {
  const cmr_fixed_size_params *params = &impl->params;
  size_t rounded = 0;
  cmr_status status = cmr_fixed_size_check_sizes(params->block_size, params->blocks_to_preallocate, &rounded);
  if (status != CMR_SUCCESS) return status;
  impl->block_size = rounded;
  impl->chunk_size = rounded * params->blocks_to_preallocate;
  atomic_init(&impl->release_threshold, SIZE_MAX);
  status = cmr_upstream_lock_init(&impl->growth, "fixed_size: allocate (growing from the upstream)");
  if (status != CMR_SUCCESS) return status;
  status = cmr_chunks_init(&impl->chunks, "fixed_size", params->upstream, SIZE_MAX);
  if (status != CMR_SUCCESS) {
    cmr_upstream_lock_destroy(&impl->growth);
    return status;
  }
  status = cmr_suballocator_lists_create("fixed_size", CMR_FIT_BEST, CMR_KEY_PER_STREAM, &impl->handed_out,
                                         &impl->free_blocks);
  if (status == CMR_SUCCESS) {
    impl->path = (cmr_allocation_path){impl->free_blocks, CMR_TAKE_ANY, cmr_fixed_size_beyond, impl};
    status = cmr_stream_lists_set_capture(
        impl->free_blocks, params->capture == CMR_FIXED_SIZE_CAPTURE_REFUSE ? CMR_CAPTURE_REFUSE : CMR_CAPTURE_SERVE,
        params->upstream);
  }
  /* Preallocated blocks are idle: every stream may take them at once. */
  if (status == CMR_SUCCESS) status = cmr_fixed_size_add_chunk(impl, CMR_DEFAULT_STREAM, NULL);
  if (status != CMR_SUCCESS) cmr_fixed_size_impl_fini(impl);
  return status;
}

cmr_status cmr_fixed_size_impl_allocate(cmr_fixed_size_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                        void **out) {
  if (bytes > impl->block_size) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "fixed_size: %zu bytes do not fit in a block of %zu bytes", bytes,
                     impl->block_size);
  }
  return cmr_stream_lists_allocate(&impl->path, impl->block_size, alignment, bytes, stream, out);
}

/* ---- release_threshold: whole free chunks back to the upstream ---------------------------- */

typedef struct cmr_fixed_size_trim {
  cmr_fixed_size_impl *impl;
  cmr_chunk chunk; /* the chunk taken, when `taken` */
  bool taken;
} cmr_fixed_size_trim;

/* The freed block's chunk is taken when every other block of it is free in
 * the same list (`list`, its lock held): their records are deleted. */
static bool cmr_fixed_size_take_chunk(cmr_free_blocks *list, cmr_block *block, void *arg) {
  cmr_fixed_size_trim *trim = arg;
  size_t block_size = trim->impl->block_size;
  if (!cmr_chunks_find(&trim->impl->chunks, block->address, &trim->chunk)) return false;
  char *base = trim->chunk.address;
  size_t count = trim->chunk.size / block_size;
  for (size_t i = 0; i < count; ++i) {
    if (base + i * block_size != block->address && cmr_free_blocks_starting_at(list, base + i * block_size) == NULL) {
      return false;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    char *address = base + i * block_size;
    if (address == block->address) continue;
    cmr_block *member = cmr_free_blocks_starting_at(list, address);
    cmr_free_blocks_remove(list, member);
    cmr_block_delete(member);
  }
  cmr_block_delete(block);
  trim->taken = true;
  return true;
}

/* A free past release_threshold: the block's chunk goes back to the
 * upstream on `stream` if the free leaves it whole there; one the upstream
 * refuses is listed again. Out of line: the common path stays light. */
static __attribute__((noinline)) cmr_status cmr_fixed_size_deallocate_past_threshold(cmr_fixed_size_impl *impl,
                                                                                     void *ptr, size_t bytes,
                                                                                     cmr_stream stream) {
  cmr_status status = cmr_stream_lists_take_back(impl->free_blocks, stream, ptr, bytes);
  cmr_fixed_size_trim trim = {.impl = impl};
  if (status == CMR_SUCCESS)
    status = cmr_stream_lists_trim(impl->free_blocks, stream, ptr, cmr_fixed_size_take_chunk, &trim);
  if (status != CMR_SUCCESS || !trim.taken) return status;
  status = cmr_chunks_give_back(&impl->chunks, &trim.chunk, stream);
  if (status != CMR_SUCCESS) {
    (void)cmr_fixed_size_give_blocks(impl, &trim.chunk, 0, stream, false);
    return cmr_error_context(status, "fixed_size: giving back past release_threshold");
  }
  return CMR_SUCCESS;
}

cmr_status cmr_fixed_size_impl_deallocate(cmr_fixed_size_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                          cmr_stream stream) {
  (void)alignment; /* every block is 256-aligned, the most the spec lets callers ask */
  /* A free leaves the bytes held as they were: the threshold is read first. */
  if (__builtin_expect(
          cmr_chunks_bytes(&impl->chunks) > atomic_load_explicit(&impl->release_threshold, memory_order_relaxed), 0)) {
    return cmr_fixed_size_deallocate_past_threshold(impl, ptr, bytes, stream);
  }
  return cmr_stream_lists_take_back(impl->free_blocks, stream, ptr, bytes);
}

cmr_status cmr_fixed_size_impl_set_release_threshold(cmr_fixed_size_impl *impl, size_t release_threshold) {
  atomic_store_explicit(&impl->release_threshold, release_threshold, memory_order_relaxed);
  return CMR_SUCCESS;
}

cmr_status cmr_fixed_size_impl_block_size(cmr_fixed_size_impl *impl, size_t *out) {
  *out = impl->block_size;
  return CMR_SUCCESS;
}

cmr_status cmr_fixed_size_impl_upstream_bytes(cmr_fixed_size_impl *impl, size_t *out) {
  *out = cmr_chunks_bytes(&impl->chunks);
  return CMR_SUCCESS;
}

cmr_status cmr_fixed_size_impl_largest_free_block(cmr_fixed_size_impl *impl, size_t *out) {
  *out = cmr_stream_lists_largest(impl->free_blocks);
  return CMR_SUCCESS;
}

CMR_SUBALLOCATOR_STATS(fixed_size, free_blocks, chunks)
void cmr_fixed_size_impl_segments(cmr_fixed_size_impl *impl, cmr_segment_sink *sink) {
  cmr_segments_walk(sink, &impl->chunks, impl->free_blocks, impl->handed_out);
}
