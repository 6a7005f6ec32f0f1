/* SPDX-License-Identifier: Apache-2.0 */
/* The suballocators' shared steps (see suballocator.h). */
#include "suballocator.h"

void cmr_suballocator_hand_out(cmr_block_map *handed_out, cmr_block *block, size_t bytes, void **out) {
  block->requested = bytes;
  *out = block->address; /* read first: once in the map, another thread may free it */
  cmr_block_map_insert(handed_out, block);
}

cmr_status cmr_suballocator_find(cmr_stream_lists *lists, cmr_block_map *handed_out, cmr_upstream_lock *growth,
                                 size_t size, size_t alignment, size_t bytes, cmr_stream stream, cmr_grow_function grow,
                                 void *resource, cmr_block *block, void **out) {
  cmr_status status = CMR_SUCCESS;
  if (block == NULL) {
    status = cmr_upstream_lock_acquire(growth);
    if (status != CMR_SUCCESS) return status;
    status = cmr_stream_lists_take(lists, stream, size, alignment, CMR_TAKE_ANY, 0, NULL, &block);
    if (status == CMR_SUCCESS && block == NULL) status = grow(resource, size, alignment, stream, &block);
    cmr_upstream_lock_release(growth);
  }
  if (status == CMR_SUCCESS) cmr_suballocator_hand_out(handed_out, block, bytes, out);
  return status;
}

cmr_status cmr_suballocator_lists_create(const char *owner, cmr_fit fit, cmr_stream_keying keying,
                                         cmr_block_map **handed_out, cmr_stream_lists **lists) {
  *lists = NULL;
  cmr_status status = cmr_block_map_create(handed_out);
  if (status != CMR_SUCCESS) {
    *handed_out = NULL;
    return status;
  }
  status = cmr_stream_lists_create(owner, fit, keying, *handed_out, lists);
  if (status != CMR_SUCCESS) {
    cmr_block_map_destroy(*handed_out);
    *handed_out = NULL;
    *lists = NULL;
  }
  return status;
}

void cmr_suballocator_lists_destroy(cmr_stream_lists *lists, cmr_block_map *handed_out) {
  if (lists != NULL) cmr_stream_lists_destroy(lists);
  if (handed_out != NULL) cmr_block_map_destroy(handed_out);
}

/* The retry of cmr_suballocator_find_or_reclaim (suballocator.h). */
static cmr_status cmr_suballocator_reclaim(cmr_stream_lists *lists, cmr_block_map *handed_out, const char *owner,
                                           size_t size, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  cmr_kept_message reason; /* the growth's, past the calls below */
  cmr_keep_message(&reason);
  cmr_block *block = NULL;
  cmr_status status = cmr_stream_lists_reclaim(lists, stream, size, alignment, &block);
  if (status == CMR_SUCCESS && block == NULL) {
    status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no free block of %zu bytes at alignment %zu (%s)", owner, size,
                       alignment, reason.text);
  }
  if (status == CMR_SUCCESS) cmr_suballocator_hand_out(handed_out, block, bytes, out);
  return status;
}

cmr_status cmr_suballocator_find_or_reclaim(cmr_stream_lists *lists, cmr_block_map *handed_out,
                                            cmr_upstream_lock *growth, const char *owner, size_t size, size_t alignment,
                                            size_t bytes, cmr_stream stream, cmr_grow_function grow, void *resource,
                                            cmr_block *block, void **out) {
  cmr_status status =
      cmr_suballocator_find(lists, handed_out, growth, size, alignment, bytes, stream, grow, resource, block, out);
  if (status != CMR_ERROR_OUT_OF_MEMORY) return status;
  return cmr_suballocator_reclaim(lists, handed_out, owner, size, bytes, alignment, stream, out);
}
