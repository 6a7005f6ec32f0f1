/* The suballocators' shared steps (see suballocator.h). */
#include "suballocator.h"

cmr_status cmr_suballocator_take_or_grow(cmr_stream_lists *lists, pthread_mutex_t *growth, size_t size,
                                         size_t alignment, cmr_stream stream, cmr_grow_function grow,
                                         void *resource, cmr_block **out) {
  cmr_status status = cmr_stream_lists_take(lists, stream, size, alignment, out);
  if (status != CMR_SUCCESS || *out != NULL) return status;
  pthread_mutex_lock(growth);
  status = cmr_stream_lists_take(lists, stream, size, alignment, out);
  if (status == CMR_SUCCESS && *out == NULL) status = grow(resource, size, alignment, stream, out);
  pthread_mutex_unlock(growth);
  return status;
}

void cmr_suballocator_hand_out(cmr_block_map *handed_out, cmr_block *block, size_t bytes, void **out) {
  block->requested = bytes;
  *out = block->address; /* read first: once in the map, another thread may free it */
  cmr_block_map_insert(handed_out, block);
}

cmr_status cmr_suballocator_take_back(cmr_stream_lists *lists, cmr_block_map *handed_out, const char *owner,
                                      void *ptr, size_t bytes, cmr_stream stream) {
  cmr_block *block = cmr_block_map_remove(handed_out, ptr);
  if (block == NULL) {
    return cmr_error(CMR_ERROR_UNKNOWN_POINTER, "%s: %p was not allocated by this resource, or is already free",
                     owner, ptr);
  }
  size_t requested = block->requested; /* read first: once back in the map, another thread may free it */
  if (requested != bytes) {
    cmr_block_map_insert(handed_out, block);
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %p was allocated with %zu bytes, not %zu: nothing was freed",
                     owner, ptr, requested, bytes);
  }
  cmr_status status = cmr_stream_lists_give(lists, stream, block);
  if (status != CMR_SUCCESS) cmr_block_map_insert(handed_out, block);
  return status;
}
