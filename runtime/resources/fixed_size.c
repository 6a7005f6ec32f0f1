/* fixed_size: blocks of one size, carved from upstream chunks of
 * blocks_per_chunk blocks. Each block is a unit of its own (span ==
 * block_size), so free blocks never merge and every take is a whole block.
 * Free blocks live in stream-ordered lists (stream_lists.h says when another
 * stream may reuse one); handed-out blocks in a block map, which is how a
 * foreign pointer is told apart. Chunks are returned only at destroy. */
#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "block_map.h"
#include "impl.h"
#include "sizes.h"
#include "stream_lists.h"

struct cmr_fixed_size_impl {
  cmr_resource_ref upstream;
  size_t block_size;
  size_t blocks_per_chunk;
  size_t chunk_size;
  cmr_stream_lists *free_blocks;
  cmr_block_map *handed_out;
  /* Guards the chunk table and is held while growing, so threads that all
   * find the lists empty at once add one chunk, not one each. */
  pthread_mutex_t growth;
  void **chunks;
  size_t chunk_count;
  size_t chunk_capacity;
};

/* Room in the chunk table for one more, before asking the upstream, so that
 * a chunk once obtained is always recorded. */
static cmr_status cmr_fixed_size_reserve_chunk_slot(cmr_fixed_size_impl *impl) {
  if (impl->chunk_count < impl->chunk_capacity) return CMR_SUCCESS;
  size_t capacity = impl->chunk_capacity == 0 ? 8 : impl->chunk_capacity * 2;
  void **chunks = realloc(impl->chunks, capacity * sizeof *chunks);
  if (chunks == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "fixed_size: no host memory for the chunk table");
  impl->chunks = chunks;
  impl->chunk_capacity = capacity;
  return CMR_SUCCESS;
}

static cmr_status cmr_fixed_size_new_block(cmr_fixed_size_impl *impl, char *chunk, size_t index, cmr_block **out) {
  char *address = chunk + index * impl->block_size;
  return cmr_block_new(address, impl->block_size, impl->block_size, out);
}

/* Gives blocks [first, blocks_per_chunk) of `chunk` to `stream`'s list.
 * Should the host have no memory for a record, the rest of the chunk stays
 * unused until destroy: the resource is smaller, never wrong. */
static void cmr_fixed_size_give_blocks(cmr_fixed_size_impl *impl, char *chunk, size_t first, cmr_stream stream) {
  for (size_t i = first; i < impl->blocks_per_chunk; ++i) {
    cmr_block *block;
    if (cmr_fixed_size_new_block(impl, chunk, i, &block) != CMR_SUCCESS) return;
    if (cmr_stream_lists_give(impl->free_blocks, stream, block) != CMR_SUCCESS) {
      cmr_block_delete(block);
      return;
    }
  }
}

/* A new chunk from the upstream, ordered on `stream`. With `kept` set, its
 * first block is the caller's and the others go to the stream's list; with
 * `kept` NULL (preallocation) all of them do. Caller holds `growth`. */
static cmr_status cmr_fixed_size_add_chunk(cmr_fixed_size_impl *impl, cmr_stream stream, cmr_block **kept) {
  cmr_status status = cmr_fixed_size_reserve_chunk_slot(impl);
  if (status != CMR_SUCCESS) return status;
  void *chunk;
  status = cmr_allocate(impl->upstream, impl->chunk_size, stream, &chunk);
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "fixed_size: a chunk of %zu blocks of %zu bytes from the upstream",
                             impl->blocks_per_chunk, impl->block_size);
  }
  if (kept != NULL) {
    status = cmr_fixed_size_new_block(impl, chunk, 0, kept);
    if (status != CMR_SUCCESS) {
      cmr_deallocate(impl->upstream, chunk, impl->chunk_size, stream);
      return status;
    }
  }
  impl->chunks[impl->chunk_count++] = chunk;
  cmr_fixed_size_give_blocks(impl, chunk, kept != NULL ? 1 : 0, stream);
  return CMR_SUCCESS;
}

/* A block for `stream` once its list and the others' had none: another
 * thread may have added a chunk while this one waited for the lock. */
static cmr_status cmr_fixed_size_grow(cmr_fixed_size_impl *impl, size_t alignment, cmr_stream stream,
                                      cmr_block **out) {
  pthread_mutex_lock(&impl->growth);
  cmr_status status = cmr_stream_lists_take(impl->free_blocks, stream, impl->block_size, alignment, out);
  if (status == CMR_SUCCESS && *out == NULL) status = cmr_fixed_size_add_chunk(impl, stream, out);
  pthread_mutex_unlock(&impl->growth);
  return status;
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

static void cmr_fixed_size_free_tables(cmr_fixed_size_impl *impl) {
  if (impl->handed_out != NULL) cmr_block_map_destroy(impl->handed_out);
  if (impl->free_blocks != NULL) cmr_stream_lists_destroy(impl->free_blocks);
  pthread_mutex_destroy(&impl->growth);
  free(impl->chunks);
  free(impl);
}

cmr_status cmr_fixed_size_impl_create(cmr_resource_ref upstream, size_t block_size, size_t blocks_to_preallocate,
                                      cmr_fixed_size_impl **out) {
  size_t rounded;
  cmr_status status = cmr_fixed_size_check_sizes(block_size, blocks_to_preallocate, &rounded);
  if (status != CMR_SUCCESS) return status;
  cmr_fixed_size_impl *impl = malloc(sizeof *impl);
  if (impl == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "fixed_size: no host memory for the resource");
  *impl = (cmr_fixed_size_impl){.upstream = upstream,
                                .block_size = rounded,
                                .blocks_per_chunk = blocks_to_preallocate,
                                .chunk_size = rounded * blocks_to_preallocate};
  pthread_mutex_init(&impl->growth, NULL);
  status = cmr_stream_lists_create("fixed_size", CMR_FIT_BEST, CMR_KEY_PER_STREAM, &impl->free_blocks);
  if (status == CMR_SUCCESS) status = cmr_block_map_create(&impl->handed_out);
  if (status == CMR_SUCCESS) status = cmr_fixed_size_add_chunk(impl, CMR_DEFAULT_STREAM, NULL);
  if (status != CMR_SUCCESS) {
    cmr_fixed_size_free_tables(impl);
    return status;
  }
  *out = impl;
  return CMR_SUCCESS;
}

static void cmr_fixed_size_drop_record(cmr_block *block, void *arg) {
  (void)arg; /* the memory goes back with its chunk */
  cmr_block_delete(block);
}

void cmr_fixed_size_impl_destroy(cmr_fixed_size_impl *impl) {
  /* The chunks go back on the default stream, so first the host waits for
   * the work ordered before each free; if that fails, for the whole device.
   * Blocks never freed go back too: their owner can no longer free them. */
  if (cmr_stream_lists_release_units(impl->free_blocks, cmr_fixed_size_drop_record, NULL) != CMR_SUCCESS) {
    cmr_backend_device_synchronize();
  }
  for (size_t i = 0; i < impl->chunk_count; ++i) {
    cmr_deallocate(impl->upstream, impl->chunks[i], impl->chunk_size, CMR_DEFAULT_STREAM);
  }
  cmr_fixed_size_free_tables(impl);
}

cmr_status cmr_fixed_size_impl_allocate(cmr_fixed_size_impl *impl, size_t bytes, size_t alignment,
                                        cmr_stream stream, void **out) {
  if (bytes > impl->block_size) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "fixed_size: %zu bytes do not fit in a block of %zu bytes", bytes,
                     impl->block_size);
  }
  cmr_block *block;
  cmr_status status = cmr_stream_lists_take(impl->free_blocks, stream, impl->block_size, alignment, &block);
  if (status == CMR_SUCCESS && block == NULL) status = cmr_fixed_size_grow(impl, alignment, stream, &block);
  if (status != CMR_SUCCESS) return status;
  cmr_block_map_insert(impl->handed_out, block);
  *out = block->address;
  return CMR_SUCCESS;
}

cmr_status cmr_fixed_size_impl_deallocate(cmr_fixed_size_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                          cmr_stream stream) {
  (void)alignment; /* every block is 256-aligned, the most the spec lets callers ask */
  if (bytes > impl->block_size) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "fixed_size: freeing %p as %zu bytes, more than a block of %zu",
                     ptr, bytes, impl->block_size);
  }
  cmr_block *block = cmr_block_map_remove(impl->handed_out, ptr);
  if (block == NULL) {
    return cmr_error(CMR_ERROR_UNKNOWN_POINTER, "fixed_size: %p is not a block this resource handed out", ptr);
  }
  cmr_status status = cmr_stream_lists_give(impl->free_blocks, stream, block);
  if (status != CMR_SUCCESS) cmr_block_map_insert(impl->handed_out, block); /* still the caller's to free */
  return status;
}

cmr_status cmr_fixed_size_impl_block_size(cmr_fixed_size_impl *impl, size_t *out) {
  *out = impl->block_size;
  return CMR_SUCCESS;
}
