/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream chunks of a suballocator (see chunks.h). */
#include <stdlib.h>

#include "backend.h"
#include "chunks.h"
#include "history.h"
#include "invariants.h"
#include "lock.h"

cmr_status cmr_chunks_init(cmr_chunks *chunks, const char *owner, cmr_resource_ref upstream, size_t maximum) {
  chunks->owner = owner;
  chunks->upstream = upstream;
  chunks->maximum = maximum;
  chunks->items = NULL;
  chunks->count = 0;
  chunks->capacity = 0;
  chunks->asking = 0;
  chunks->peak = 0;
  atomic_init(&chunks->bytes, 0);
  return cmr_mutex_init(&chunks->lock, owner);
}

void cmr_chunks_release_all(cmr_chunks *chunks) {
  /* Chunks were taken on many streams and their blocks freed on others:
   * waiting for the whole device is the one order that covers them all. It
   * fails only where there is no device, and then there is no work. */
  if (chunks->count > 0) (void)cmr_backend_device_synchronize();
  for (size_t i = 0; i < chunks->count; ++i) {
    cmr_chunk *chunk = &chunks->items[i];
    cmr_history_note(CMR_HISTORY_SEGMENT_FREE, chunks->upstream, CMR_DEFAULT_STREAM, chunk->address, chunk->size);
    (void)cmr_deallocate(chunks->upstream, chunk->address, chunk->size, CMR_DEFAULT_STREAM);
  }
  free(chunks->items);
  chunks->items = NULL;
  chunks->count = chunks->capacity = 0;
  atomic_store(&chunks->bytes, 0);
  pthread_mutex_destroy(&chunks->lock);
}

/* ---- invariants ------------------------------------------------------------------- */

enum { cmr_chunks_checked_whole = 1024 };

static bool cmr_chunks_overlap(const cmr_chunk *a, const cmr_chunk *b) {
  uintptr_t a_start = (uintptr_t)a->address, b_start = (uintptr_t)b->address;
  return a_start < b_start + b->size && b_start < a_start + a->size;
}

static bool cmr_chunks_sum_valid(const cmr_chunks *chunks, const char **why) {
  size_t sum = 0;
  for (size_t i = 0; i < chunks->count; ++i) sum += chunks->items[i].size;
  if (sum == atomic_load(&chunks->bytes)) return true;
  *why = "chunks: the byte total is not the sum of the chunks' sizes";
  return false;
}

/* The chunk at `index` has an address and a size, and overlaps none of
 * the chunks from `from` on. */
static bool cmr_chunk_apart(const cmr_chunks *chunks, size_t index, size_t from, const char **why) {
  const cmr_chunk *chunk = &chunks->items[index];
  if (chunk->address == NULL || chunk->size == 0) {
    *why = "chunks: a chunk has no address or no size";
    return false;
  }
  for (size_t i = from; i < chunks->count; ++i) {
    if (i != index && cmr_chunks_overlap(chunk, &chunks->items[i])) {
      *why = "chunks: two chunks overlap";
      return false;
    }
  }
  return true;
}

/* After the record at `index` changed (a chunk added there, or moved
 * there by a give-back; `index` may be count then). */
static bool cmr_chunks_changed_valid(const cmr_chunks *chunks, size_t index, const char **why) {
  if (chunks->count <= cmr_chunks_checked_whole) return cmr_chunks_valid(chunks, why);
  return cmr_chunks_sum_valid(chunks, why) && (index >= chunks->count || cmr_chunk_apart(chunks, index, 0, why));
}

bool cmr_chunks_valid(const cmr_chunks *chunks, const char **why) {
  if (chunks->count > chunks->capacity) {
    *why = "chunks: more records than room for them";
    return false;
  }
  if (atomic_load(&chunks->bytes) > chunks->maximum) {
    *why = "chunks: more bytes held than the maximum";
    return false;
  }
  if (!cmr_chunks_sum_valid(chunks, why)) return false;
  for (size_t i = 0; i < chunks->count; ++i) {
    if (!cmr_chunk_apart(chunks, i, i + 1, why)) return false;
  }
  return true;
}

bool cmr_chunks_find(cmr_chunks *chunks, const void *address, cmr_chunk *out) {
  cmr_mutex_lock(&chunks->lock);
  bool found = false;
  for (size_t i = 0; i < chunks->count && !found; ++i) {
    uintptr_t start = (uintptr_t)chunks->items[i].address;
    found = (uintptr_t)address >= start && (uintptr_t)address - start < chunks->items[i].size;
    if (found) *out = chunks->items[i];
  }
  cmr_mutex_unlock(&chunks->lock);
  return found;
}

bool cmr_chunks_hold(cmr_chunks *chunks, const void *address, size_t size, const char **why) {
  cmr_chunk chunk;
  bool inside =
      cmr_chunks_find(chunks, address, &chunk) && size <= chunk.size - ((uintptr_t)address - (uintptr_t)chunk.address);
  if (!inside) *why = "chunks: a block lies outside every chunk";
  return inside;
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

/* Asks the upstream for `size`, then halves of it down to `least`. The lock
 * is not held. */
static cmr_status cmr_chunks_ask(cmr_chunks *chunks, size_t least, size_t size, cmr_stream stream, cmr_chunk *out) {
  for (;;) {
    cmr_status status = cmr_allocate(chunks->upstream, size, stream, &out->address);
    if (status == CMR_SUCCESS) {
      out->size = size;
      out->stream = stream;
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
  size_t room = chunks->maximum - held - chunks->asking;
  cmr_status status = CMR_SUCCESS;
  if (least > room) {
    status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: %zu more bytes would pass the maximum of %zu (holding %zu)",
                       chunks->owner, least, chunks->maximum, held + chunks->asking);
  }
  /* The record's room first: a chunk is never taken without a place to remember it. */
  if (status == CMR_SUCCESS) status = cmr_chunks_reserve(chunks);
  size_t asked = preferred < room ? preferred : room;
  if (status == CMR_SUCCESS) chunks->asking += asked;
  cmr_mutex_unlock(&chunks->lock);
  if (status != CMR_SUCCESS) return status;
  status = cmr_chunks_ask(chunks, least, asked, stream, out);
  cmr_mutex_lock(&chunks->lock);
  chunks->asking -= asked;
  bool taken = status == CMR_SUCCESS;
  /* Another grower may have used the room meanwhile. */
  if (taken && chunks->count == chunks->capacity) status = cmr_chunks_reserve(chunks);
  if (status == CMR_SUCCESS) {
    chunks->items[chunks->count++] = *out;
    size_t now = atomic_fetch_add(&chunks->bytes, out->size) + out->size;
    if (now > chunks->peak) chunks->peak = now;
    CMR_CHECK(cmr_chunks_changed_valid, chunks, chunks->count - 1);
  }
  cmr_mutex_unlock(&chunks->lock);
  if (status == CMR_SUCCESS)
    cmr_history_note(CMR_HISTORY_SEGMENT_ALLOCATE, chunks->upstream, stream, out->address, out->size);
  if (taken && status != CMR_SUCCESS) {
    status = cmr_give_back(status, chunks->upstream, out->address, out->size, CMR_DEFAULT_ALIGNMENT, stream);
  }
  return status;
}

/* The record of `chunk` out of the list; false when it has none. Lock held. */
static bool cmr_chunks_forget(cmr_chunks *chunks, const cmr_chunk *chunk) {
  for (size_t i = chunks->count; i-- > 0;) { /* the newest last */
    if (chunks->items[i].address != chunk->address) continue;
    chunks->items[i] = chunks->items[--chunks->count];
    atomic_fetch_sub(&chunks->bytes, chunk->size);
    CMR_CHECK(cmr_chunks_changed_valid, chunks, i);
    return true;
  }
  return false;
}

cmr_status cmr_chunks_give_back(cmr_chunks *chunks, const cmr_chunk *chunk, cmr_stream stream) {
  cmr_mutex_lock(&chunks->lock);
  bool recorded = cmr_chunks_forget(chunks, chunk);
  cmr_mutex_unlock(&chunks->lock);
  cmr_history_note(CMR_HISTORY_SEGMENT_FREE, chunks->upstream, stream, chunk->address, chunk->size);
  cmr_status status = cmr_deallocate(chunks->upstream, chunk->address, chunk->size, stream);
  if (status == CMR_SUCCESS || !recorded) return status;
  /* Still the owner's: recorded again (its record's room is free) and
   * counted, so that the end hands it back. */
  cmr_mutex_lock(&chunks->lock);
  chunks->items[chunks->count++] = *chunk;
  atomic_fetch_add(&chunks->bytes, chunk->size);
  CMR_CHECK(cmr_chunks_changed_valid, chunks, chunks->count - 1);
  cmr_mutex_unlock(&chunks->lock);
  return cmr_error_context(status, "%s: giving %zu bytes at %p back to the upstream", chunks->owner, chunk->size,
                           chunk->address);
}

void cmr_chunks_stats(cmr_chunks *chunks, cmr_stats *out) {
  cmr_mutex_lock(&chunks->lock);
  out->bytes_held = atomic_load(&chunks->bytes);
  out->bytes_held_peak = chunks->peak;
  out->segments = chunks->count;
  cmr_mutex_unlock(&chunks->lock);
  out->supported |= CMR_STATS_BYTES_HELD | CMR_STATS_BYTES_HELD_PEAK | CMR_STATS_SEGMENTS;
}

void cmr_chunks_reset_peak(cmr_chunks *chunks) {
  cmr_mutex_lock(&chunks->lock);
  chunks->peak = atomic_load(&chunks->bytes);
  cmr_mutex_unlock(&chunks->lock);
}
