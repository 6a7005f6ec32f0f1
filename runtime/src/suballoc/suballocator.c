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
    status = cmr_stream_lists_take(lists, stream, size, alignment, &block);
    if (status == CMR_SUCCESS && block == NULL) status = grow(resource, size, alignment, stream, &block);
    cmr_upstream_lock_release(growth);
  }
  if (status == CMR_SUCCESS) cmr_suballocator_hand_out(handed_out, block, bytes, out);
  return status;
}
