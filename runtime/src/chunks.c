/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream chunks of a suballocator (see chunks.h). */
#include <stdlib.h>

#include "backend.h"
#include "chunks.h"
#include "lock.h"

void cmr_chunks_init(cmr_chunks *chunks, const char *owner, cmr_resource_ref upstream, size_t maximum) {
  chunks->owner = owner;
  chunks->upstream = upstream;
  chunks->maximum = maximum;
  pthread_mutex_init(&chunks->lock, NULL);
  chunks->items = NULL;
  chunks->count = 0;
  chunks->capacity = 0;
  atomic_init(&chunks->bytes, 0);
}

void cmr_chunks_release_all(cmr_chunks *chunks) {
  /* Chunks were taken on many streams and their blocks freed on others:
   * waiting for the whole device is the one order that covers them all. It
   * fails only where there is no device, and then there is no work. */
  if (chunks->count > 0) (void)cmr_backend_device_synchronize();
  for (size_t i = 0; i < chunks->count; ++i) {
    cmr_chunk *chunk = &chunks->items[i];
    (void)cmr_deallocate(chunks->upstream, chunk->address, chunk->size, CMR_DEFAULT_STREAM);
  }
  free(chunks->items);
  chunks->items = NULL;
  chunks->count = chunks->capacity = 0;
  atomic_store(&chunks->bytes, 0);
  pthread_mutex_destroy(&chunks->lock);
}

/* Room for one more record, made before the upstream is asked so that a
 * chunk is never taken without a place to remember it. Lock held. */
static cmr_status cmr_chunks_reserve(cmr_chunks *chunks) {
  if (chunks->count < chunks->capacity) return CMR_SUCCESS;
  size_t capacity = chunks->capacity ? chunks->capacity * 2 : 16;
  cmr_chunk *items = realloc(chunks->items, capacity * sizeof *items);
  if (items == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory to record a chunk", chunks->owner);
  chunks->items = items;
  chunks->capacity = capacity;
  return CMR_SUCCESS;
}

static size_t cmr_half_down_to(size_t size, size_t least) {
  size_t half = size / 2 / 256 * 256;
  return half > least ? half : least;
}

/* Asks the upstream for `size`, then halves of it down to `least`. Lock held. */
static cmr_status cmr_chunks_ask(cmr_chunks *chunks, size_t least, size_t size, cmr_stream stream, cmr_chunk *out) {
  for (;;) {
    cmr_status status = cmr_allocate(chunks->upstream, size, stream, &out->address);
    if (status == CMR_SUCCESS) {
      out->size = size;
      return CMR_SUCCESS;
    }
    cmr_log(CMR_LOG_DEBUG, "%s: the upstream refused %zu bytes (holding %zu): %s: %s", chunks->owner, size,
            atomic_load(&chunks->bytes), cmr_status_string(status), cmr_last_error_message());
    if (status != CMR_ERROR_OUT_OF_MEMORY || size == least) {
      return cmr_error_context(status, "%s: growing by %zu bytes (holding %zu)", chunks->owner, size,
                               atomic_load(&chunks->bytes));
    }
    size = cmr_half_down_to(size, least);
  }
}

cmr_status cmr_chunks_grow(cmr_chunks *chunks, size_t least, size_t preferred, cmr_stream stream, cmr_chunk *out) {
  cmr_mutex_lock(&chunks->lock);
  size_t held = atomic_load(&chunks->bytes);
  size_t room = chunks->maximum - held;
  cmr_status status = CMR_SUCCESS;
  if (least > room) {
    status = cmr_error(CMR_ERROR_OUT_OF_MEMORY,
                       "%s: %zu more bytes would pass the maximum of %zu (holding %zu)", chunks->owner, least,
                       chunks->maximum, held);
  }
  if (status == CMR_SUCCESS) status = cmr_chunks_reserve(chunks);
  if (status == CMR_SUCCESS) status = cmr_chunks_ask(chunks, least, preferred < room ? preferred : room, stream, out);
  if (status == CMR_SUCCESS) {
    chunks->items[chunks->count++] = *out;
    atomic_store(&chunks->bytes, held + out->size);
  }
  pthread_mutex_unlock(&chunks->lock);
  return status;
}

void cmr_chunks_give_back(cmr_chunks *chunks, const cmr_chunk *chunk, cmr_stream stream) {
  cmr_mutex_lock(&chunks->lock);
  for (size_t i = chunks->count; i-- > 0;) { /* the newest last */
    if (chunks->items[i].address != chunk->address) continue;
    chunks->items[i] = chunks->items[--chunks->count];
    atomic_fetch_sub(&chunks->bytes, chunk->size);
    break;
  }
  pthread_mutex_unlock(&chunks->lock);
  (void)cmr_deallocate(chunks->upstream, chunk->address, chunk->size, stream);
}

size_t cmr_chunks_bytes(cmr_chunks *chunks) { return atomic_load(&chunks->bytes); }
