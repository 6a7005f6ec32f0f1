/* SPDX-License-Identifier: Apache-2.0 */
/* A suballocator's segments, for snapshots (cmr/history.h): each chunk it
 * holds from its upstream and each block, handed out or free, that it knows
 * of. A resource's `segments` walk (its class's op, hooks = ["segments"] in
 * its spec) fills a sink; the kit's walk (cmr_segments_walk) serves every
 * resource built on chunks, stream lists and a block map. */
#ifndef CMR_SEGMENTS_H
#define CMR_SEGMENTS_H

#include <stdbool.h>

#include "block_map.h"
#include "chunks.h"
#include "stream_lists.h"

/* A free block's key when no stream's list holds it (the arena's global arena). */
#define CMR_SEGMENTS_NO_STREAM UINT64_MAX

typedef struct cmr_segment_chunk {
  uintptr_t address;
  size_t size;
  uint64_t stream; /* the stream it was taken on, as an integer */
} cmr_segment_chunk;

typedef struct cmr_segment_block {
  uintptr_t address;
  size_t size;
  size_t requested;    /* the bytes asked for (a handed-out block); 0 for a free one */
  uint64_t stream_key; /* a free block's list (cmr_backend_stream_id's key), or CMR_SEGMENTS_NO_STREAM */
  bool allocated;
} cmr_segment_block;

/* What a walk fills. Zeroed is empty; cmr_segments_sink_clear frees it. */
typedef struct cmr_segment_sink {
  cmr_segment_chunk *chunks;
  size_t chunk_count, chunk_capacity;
  cmr_segment_block *blocks;
  size_t block_count, block_capacity;
  cmr_status status; /* CMR_ERROR_OUT_OF_MEMORY once a record could not be kept */
} cmr_segment_sink;

void cmr_segments_add_chunk(cmr_segment_sink *sink, const cmr_chunk *chunk);
void cmr_segments_add_block(cmr_segment_sink *sink, const cmr_block *block, bool allocated, uint64_t stream_key);
/* Empties the sink, freeing its records. */
void cmr_segments_sink_clear(cmr_segment_sink *sink);
/* Sorts the chunks and the blocks by address. */
void cmr_segments_sort(cmr_segment_sink *sink);

/* The kit's walk: the chunks, every list's free blocks, the blocks lists
 * remember handing out, and those in `handed_out`. Each part is read under
 * its own locks. */
void cmr_segments_walk(cmr_segment_sink *sink, cmr_chunks *chunks, cmr_stream_lists *lists, cmr_block_map *handed_out);

#endif /* CMR_SEGMENTS_H */
