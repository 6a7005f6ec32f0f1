/* SPDX-License-Identifier: Apache-2.0 */
/* The made streams' ids (see stream_ids.h): open addressing over a fixed
 * table, probed at most cmr_stream_id_probes slots from a handle's hash.
 * Writers (stream creation and destruction, rare) take a lock; a reader
 * loads a slot's handle with acquire order, and a slot's id is stored
 * before its handle is published, so a reader that sees the handle sees its
 * id. A removed stream's slot keeps a tombstone, so the probe of a handle
 * further along does not stop there; a later stream may reuse it. */
#include <pthread.h>
#include <stdatomic.h>

#include "lock.h"
#include "stream_ids.h"

enum { cmr_stream_id_slots = 1024, cmr_stream_id_probes = 16 };

#define CMR_EMPTY_SLOT ((uintptr_t)0)
#define CMR_TOMBSTONE ((uintptr_t)1) /* no stream handle is 1: they are aligned addresses */

typedef struct cmr_stream_id_slot {
  _Atomic uintptr_t handle;
  _Atomic uint64_t id;
} cmr_stream_id_slot;

static cmr_stream_id_slot cmr_stream_id_table[cmr_stream_id_slots];
static pthread_mutex_t cmr_stream_id_writers = PTHREAD_MUTEX_INITIALIZER;

static size_t cmr_stream_id_home(uintptr_t handle) {
  return (size_t)((handle >> 4) * UINT64_C(0x9e3779b97f4a7c15) >> 54) % cmr_stream_id_slots; /* 10 bits */
}

static cmr_stream_id_slot *cmr_stream_id_slot_at(size_t home, unsigned probe) {
  return &cmr_stream_id_table[(home + probe) % cmr_stream_id_slots];
}

/* The slot of `handle`'s neighbourhood that holds it, or NULL; the probe
 * stops at an empty slot, which no later one of the neighbourhood can
 * follow. Readers call it without the lock. */
static cmr_stream_id_slot *cmr_stream_id_slot_of(uintptr_t handle) {
  size_t home = cmr_stream_id_home(handle);
  for (unsigned probe = 0; probe < cmr_stream_id_probes; ++probe) {
    cmr_stream_id_slot *slot = cmr_stream_id_slot_at(home, probe);
    uintptr_t held = atomic_load_explicit(&slot->handle, memory_order_acquire);
    if (held == handle) return slot;
    if (held == CMR_EMPTY_SLOT) return NULL;
  }
  return NULL;
}

/* The first empty or tombstoned slot of `handle`'s neighbourhood, or NULL.
 * The writers' lock held. */
static cmr_stream_id_slot *cmr_stream_id_free_slot(uintptr_t handle) {
  size_t home = cmr_stream_id_home(handle);
  for (unsigned probe = 0; probe < cmr_stream_id_probes; ++probe) {
    cmr_stream_id_slot *slot = cmr_stream_id_slot_at(home, probe);
    uintptr_t held = atomic_load_explicit(&slot->handle, memory_order_relaxed);
    if (held == CMR_EMPTY_SLOT || held == CMR_TOMBSTONE) return slot;
  }
  return NULL;
}

/* A handle still here belongs to a stream destroyed behind cmr's back
 * (cudaStreamDestroy): its slot takes the new stream's id, so no lookup
 * finds the old one. */
void cmr_stream_ids_add(cmr_stream stream, uint64_t id) {
  uintptr_t handle = (uintptr_t)stream;
  cmr_mutex_lock(&cmr_stream_id_writers);
  cmr_stream_id_slot *slot = cmr_stream_id_slot_of(handle);
  if (slot != NULL) {
    atomic_store_explicit(&slot->id, id, memory_order_relaxed);
  } else if ((slot = cmr_stream_id_free_slot(handle)) != NULL) {
    atomic_store_explicit(&slot->id, id, memory_order_relaxed);
    atomic_store_explicit(&slot->handle, handle, memory_order_release);
  }
  cmr_mutex_unlock(&cmr_stream_id_writers);
}

void cmr_stream_ids_remove(cmr_stream stream) {
  cmr_mutex_lock(&cmr_stream_id_writers);
  cmr_stream_id_slot *slot = cmr_stream_id_slot_of((uintptr_t)stream);
  if (slot != NULL) atomic_store_explicit(&slot->handle, CMR_TOMBSTONE, memory_order_release);
  cmr_mutex_unlock(&cmr_stream_id_writers);
}

bool cmr_stream_ids_find(cmr_stream stream, uint64_t *id) {
  cmr_stream_id_slot *slot = cmr_stream_id_slot_of((uintptr_t)stream);
  if (slot != NULL) *id = atomic_load_explicit(&slot->id, memory_order_relaxed);
  return slot != NULL;
}
