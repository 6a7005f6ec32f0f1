/* SPDX-License-Identifier: Apache-2.0 */
/* Graph memory handed out by the stream lists (stream_capture.h). */
#include "stream_capture.h"

#include "backend.h"
#include "log_write.h"

cmr_status cmr_graph_blocks_init(cmr_graph_blocks *graph) {
  atomic_init(&graph->count, 0);
  return cmr_block_map_create(&graph->map);
}

void cmr_graph_blocks_fini(cmr_graph_blocks *graph) {
  if (graph->map != NULL) cmr_block_map_destroy(graph->map);
  graph->map = NULL;
}

cmr_status cmr_graph_blocks_allocate(cmr_graph_blocks *graph, const char *owner, size_t size, size_t alignment,
                                     size_t bytes, cmr_stream stream, void **out) {
  *out = NULL;
  /* Graph memory is 256-aligned: a larger alignment is found inside a larger allocation. */
  size_t extra = alignment > CMR_DEFAULT_ALIGNMENT ? alignment - CMR_DEFAULT_ALIGNMENT : 0;
  if (size > SIZE_MAX - extra) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: %zu bytes at alignment %zu overflow", owner, size, alignment);
  }
  void *base = NULL;
  cmr_status status = cmr_backend_graph_alloc(size + extra, stream, &base);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s: allocating on a capturing stream", owner);
  char *address = (char *)(((uintptr_t)base + alignment - 1) & ~(uintptr_t)(alignment - 1));
  cmr_block *block = NULL;
  status = cmr_block_new(address, size, (size_t)(address - (char *)base), &block);
  if (status != CMR_SUCCESS) {
    (void)cmr_backend_graph_free(base, stream);
    return cmr_error_context(status, "%s", owner);
  }
  block->requested = bytes;
  cmr_block_map_insert(graph->map, block);
  atomic_fetch_add_explicit(&graph->count, 1, memory_order_relaxed);
  *out = address;
  return CMR_SUCCESS;
}

cmr_status cmr_graph_blocks_free(cmr_graph_blocks *graph, const char *owner, void *ptr, size_t bytes, cmr_stream stream,
                                 bool *found) {
  *found = false;
  if (atomic_load_explicit(&graph->count, memory_order_relaxed) == 0) return CMR_SUCCESS;
  cmr_block *block = cmr_block_map_remove(graph->map, ptr);
  if (block == NULL) return CMR_SUCCESS;
  *found = true;
  if (block->requested != bytes) {
    size_t requested = block->requested;
    cmr_block_map_insert(graph->map, block);
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %p was allocated with %zu bytes, not %zu: nothing was freed",
                     owner, ptr, requested, bytes);
  }
  cmr_status status = cmr_backend_graph_free(block->address - block->span, stream);
  if (status == CMR_ERROR_UNKNOWN_POINTER) {
    /* Memory this handed out, which the driver does not hold: its graph
     * kept it but never launched, so nothing was ever there. Forgotten, or
     * it would count as held for ever. */
    cmr_log(CMR_LOG_DEBUG, "%s: %p (%zu bytes), kept by a graph that never launched: nothing to free", owner, ptr,
            bytes);
    status = CMR_SUCCESS;
  }
  if (status != CMR_SUCCESS) { /* still allocated, as it was */
    cmr_block_map_insert(graph->map, block);
    return cmr_error_context(status, "%s", owner);
  }
  atomic_fetch_sub_explicit(&graph->count, 1, memory_order_relaxed);
  cmr_block_delete(block);
  return CMR_SUCCESS;
}
