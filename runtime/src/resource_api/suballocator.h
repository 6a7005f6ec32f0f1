/* What the stream-ordered suballocators (pool, fixed_size, arena) do alike
 * around their free lists: growing once when many threads miss at once, and
 * taking a freed block back with its checks. */
#ifndef CMR_SUBALLOCATOR_H
#define CMR_SUBALLOCATOR_H

#include <pthread.h>

#include "block_map.h"
#include "stream_lists.h"

/* A resource's growth step: new memory on `stream`, out of which it cuts
 * `size` bytes at `alignment` into *out before the rest joins the lists
 * (cmr_stream_lists_carve), so no other thread takes the caller's room. */
typedef cmr_status (*cmr_grow_function)(void *resource, size_t size, size_t alignment, cmr_stream stream,
                                        cmr_block **out);

/* `size` bytes at `alignment` for `stream`. When no list has a fit: under
 * `growth`, look again (another thread may just have grown the resource,
 * so threads that all miss at once grow it once), else `grow`. */
cmr_status cmr_suballocator_take_or_grow(cmr_stream_lists *lists, pthread_mutex_t *growth, size_t size,
                                         size_t alignment, cmr_stream stream, cmr_grow_function grow,
                                         void *resource, cmr_block **out);

/* Hands `block` out for a request of `bytes`: recorded in `handed_out`,
 * its address in *out. */
void cmr_suballocator_hand_out(cmr_block_map *handed_out, cmr_block *block, size_t bytes, void **out);

/* Takes back the block at `ptr`, freed on `stream` as `bytes` bytes, into
 * the lists. It must be one `owner` handed out (else
 * CMR_ERROR_UNKNOWN_POINTER) for a request of exactly `bytes` (else
 * CMR_ERROR_INVALID_ARGUMENT); on any failure the block stays handed out,
 * as it was. */
cmr_status cmr_suballocator_take_back(cmr_stream_lists *lists, cmr_block_map *handed_out, const char *owner,
                                      void *ptr, size_t bytes, cmr_stream stream);

#endif /* CMR_SUBALLOCATOR_H */
