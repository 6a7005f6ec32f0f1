/* SPDX-License-Identifier: Apache-2.0 */
/* Segments of a suballocator, for snapshots (see segments.h). */
#include <stdlib.h>

#include "lock.h"
#include "segments.h"

/* Room for one more of `size` bytes in *items (doubling); false, with the
 * sink's status set, when there is no host memory. */
static bool cmr_segments_room(cmr_segment_sink *sink, void **items, size_t count, size_t *capacity, size_t size) {
  if (count < *capacity) return true;
  size_t grown = *capacity ? *capacity * 2 : 64;
  void *more = realloc(*items, grown * size);
  if (more == NULL) {
    sink->status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "snapshot: no host memory for %zu segment records", grown);
    return false;
  }
  *items = more;
  *capacity = grown;
  return true;
}

void cmr_segments_add_chunk(cmr_segment_sink *sink, const cmr_chunk *chunk) {
  if (!cmr_segments_room(sink, (void **)&sink->chunks, sink->chunk_count, &sink->chunk_capacity, sizeof *sink->chunks))
    return;
  sink->chunks[sink->chunk_count++] =
      (cmr_segment_chunk){(uintptr_t)chunk->address, chunk->size, (uint64_t)(uintptr_t)chunk->stream};
}

void cmr_segments_add_block(cmr_segment_sink *sink, const cmr_block *block, bool allocated, uint64_t stream_key) {
  if (!cmr_segments_room(sink, (void **)&sink->blocks, sink->block_count, &sink->block_capacity, sizeof *sink->blocks))
    return;
  sink->blocks[sink->block_count++] = (cmr_segment_block){(uintptr_t)block->address, block->size,
                                                          allocated ? block->requested : 0, stream_key, allocated};
}

void cmr_segments_sink_clear(cmr_segment_sink *sink) {
  free(sink->chunks);
  free(sink->blocks);
  *sink = (cmr_segment_sink){0};
}

static int cmr_chunk_order(const void *a, const void *b) {
  uintptr_t x = ((const cmr_segment_chunk *)a)->address, y = ((const cmr_segment_chunk *)b)->address;
  return x < y ? -1 : x > y;
}

static int cmr_block_order(const void *a, const void *b) {
  uintptr_t x = ((const cmr_segment_block *)a)->address, y = ((const cmr_segment_block *)b)->address;
  return x < y ? -1 : x > y;
}

void cmr_segments_sort(cmr_segment_sink *sink) {
  if (sink->chunk_count > 1) qsort(sink->chunks, sink->chunk_count, sizeof *sink->chunks, cmr_chunk_order);
  if (sink->block_count > 1) qsort(sink->blocks, sink->block_count, sizeof *sink->blocks, cmr_block_order);
}

static void cmr_segments_free_block(uint64_t key, const cmr_block *block, void *arg) {
  cmr_segments_add_block(arg, block, false, key);
}

static void cmr_segments_listed_hand_out(uint64_t key, const cmr_block *block, void *arg) {
  (void)key; /* a handed-out block is the caller's, whatever stream it was taken on */
  cmr_segments_add_block(arg, block, true, CMR_SEGMENTS_NO_STREAM);
}

static void cmr_segments_mapped_hand_out(const cmr_block *block, void *arg) {
  cmr_segments_add_block(arg, block, true, CMR_SEGMENTS_NO_STREAM);
}

void cmr_segments_walk(cmr_segment_sink *sink, cmr_chunks *chunks, cmr_stream_lists *lists, cmr_block_map *handed_out) {
  cmr_mutex_lock(&chunks->lock);
  for (size_t i = 0; i < chunks->count; ++i) cmr_segments_add_chunk(sink, &chunks->items[i]);
  cmr_mutex_unlock(&chunks->lock);
  cmr_stream_lists_each(lists, cmr_segments_free_block, sink);
  cmr_stream_lists_each_handed(lists, cmr_segments_listed_hand_out, sink);
  cmr_block_map_each(handed_out, cmr_segments_mapped_hand_out, sink);
}
