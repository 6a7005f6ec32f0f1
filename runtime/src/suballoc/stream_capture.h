/* SPDX-License-Identifier: Apache-2.0 */
/* What the stream lists hand out on a capturing stream (stream_lists.h,
 * "Under stream capture"): graph memory (backend.h), one block record per
 * allocation, found by address when it is freed, in the capture or after. */
#ifndef CMR_STREAM_CAPTURE_H
#define CMR_STREAM_CAPTURE_H

#include <stdatomic.h>

#include "block_map.h"

typedef struct cmr_graph_blocks {
  cmr_block_map *map; /* each record's span: its address's offset into its graph allocation */
  _Atomic size_t count;
} cmr_graph_blocks;

cmr_status cmr_graph_blocks_init(cmr_graph_blocks *graph);
/* Deletes the records of allocations never freed; their memory stays the
 * graph's (the driver frees it with the graph's own memory). */
void cmr_graph_blocks_fini(cmr_graph_blocks *graph);

/* `size` bytes (a multiple of 256) at `alignment` for a request of `bytes`
 * on `stream`, from graph memory; its address in *out. */
cmr_status cmr_graph_blocks_allocate(cmr_graph_blocks *graph, const char *owner, size_t size, size_t alignment,
                                     size_t bytes, cmr_stream stream, void **out);
/* Frees `ptr` when it is one of them (*found), ordered on `stream`; a size
 * other than the request's is CMR_ERROR_INVALID_ARGUMENT and frees nothing. */
cmr_status cmr_graph_blocks_free(cmr_graph_blocks *graph, const char *owner, void *ptr, size_t bytes, cmr_stream stream,
                                 bool *found);

#endif /* CMR_STREAM_CAPTURE_H */
