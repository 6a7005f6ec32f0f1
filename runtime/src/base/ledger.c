/* SPDX-License-Identifier: Apache-2.0 */
/* The leaf resources' ledger (see ledger.h). */
#include <stdlib.h>

#include "fork.h"
#include "ledger.h"

cmr_status cmr_ledger_create(const char *owner, cmr_ledger **out) {
  cmr_sharded_map *records = NULL;
  cmr_status status = cmr_sharded_map_create(owner, &records);
  if (status == CMR_SUCCESS) *out = (cmr_ledger *)records; /* its first and only member */
  return status;
}

static void cmr_ledger_drop(cmr_address_entry *entry) { free(entry); }

void cmr_ledger_destroy(cmr_ledger *ledger) {
  if (ledger != NULL) cmr_sharded_map_destroy(&ledger->records, cmr_ledger_drop);
}

/* The two steps below, inline in the leaves' allocate and deallocate, their
 * every call. */
static inline __attribute__((always_inline)) cmr_status cmr_record(cmr_ledger *ledger, const char *owner,
                                                                   cmr_ledger_entry *entry, void *ptr,
                                                                   const void *tag) {
  entry->key = (cmr_address_entry){.address = ptr, .tag = tag};
  cmr_map_shard *shard = cmr_sharded_map_lock(&ledger->records, ptr);
  cmr_status status = cmr_map_shard_insert(shard, &entry->key, owner);
  cmr_lock_release(&shard->lock);
  return status;
}

void cmr_ledger_put_back(cmr_ledger *ledger, cmr_ledger_entry *entry) {
  cmr_map_shard *shard = cmr_sharded_map_lock(&ledger->records, entry->key.address);
  cmr_address_map_insert(&shard->entries, &entry->key);
  cmr_lock_release(&shard->lock);
}

static inline __attribute__((always_inline)) cmr_status cmr_take(cmr_ledger *ledger, const void *tag, const void *ptr,
                                                                 size_t bytes, cmr_ledger_entry **out,
                                                                 size_t *recorded) {
  cmr_map_shard *shard = cmr_sharded_map_lock(&ledger->records, ptr);
  cmr_ledger_entry *entry = (cmr_ledger_entry *)cmr_map_shard_remove(shard, ptr, tag);
  cmr_status status = entry == NULL ? CMR_ERROR_UNKNOWN_POINTER : CMR_SUCCESS;
  if (entry != NULL && entry->bytes != bytes) {
    *recorded = entry->bytes;
    cmr_address_map_insert(&shard->entries, &entry->key);
    status = CMR_ERROR_INVALID_ARGUMENT;
  }
  cmr_lock_release(&shard->lock);
  *out = status == CMR_SUCCESS ? entry : NULL;
  return status;
}

cmr_status cmr_ledger_add(cmr_ledger *ledger, const char *owner, void *ptr, const void *tag, size_t bytes) {
  cmr_map_shard *shard = cmr_sharded_map_lock(&ledger->records, ptr);
  cmr_ledger_entry *entry = (cmr_ledger_entry *)shard->spares;
  if (entry != NULL) {
    shard->spares = entry->key.next;
    shard->spare_count--;
    entry->key = (cmr_address_entry){.address = ptr, .tag = tag};
    entry->bytes = bytes;
    cmr_address_map_insert(&shard->entries, &entry->key); /* a shard with spares has its table */
  }
  cmr_lock_release(&shard->lock);
  if (entry != NULL) return CMR_SUCCESS;
  entry = malloc(sizeof *entry);
  if (entry == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory to cmr_record an allocation of %zu bytes", owner,
                     bytes);
  }
  entry->bytes = bytes;
  cmr_status status = cmr_record(ledger, owner, entry, ptr, tag);
  if (status != CMR_SUCCESS) free(entry);
  return status;
}

void cmr_ledger_discard(cmr_ledger *ledger, cmr_ledger_entry *entry) {
  cmr_map_shard *shard = cmr_sharded_map_lock(&ledger->records, entry->key.address);
  bool kept = shard->spare_count < cmr_map_shard_spares;
  if (kept) {
    entry->key.next = shard->spares;
    shard->spares = &entry->key;
    shard->spare_count++;
  }
  cmr_lock_release(&shard->lock);
  if (!kept) free(entry);
}

cmr_status cmr_ledger_take(cmr_ledger *ledger, const void *tag, const void *ptr, size_t bytes, cmr_ledger_entry **out,
                           size_t *recorded) {
  return cmr_take(ledger, tag, ptr, bytes, out, recorded);
}

cmr_status cmr_ledger_allocate(cmr_ledger *ledger, const char *owner, const void *tag, const cmr_ledger_memory *memory,
                               void *impl, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  cmr_ledger_entry *entry = malloc(sizeof *entry);
  if (entry == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory to cmr_record an allocation of %zu bytes", owner,
                     bytes);
  }
  entry->bytes = bytes;
  cmr_status status = memory->obtain(impl, bytes, alignment, stream, out);
  if (status == CMR_SUCCESS) {
    status = cmr_record(ledger, owner, entry, *out, tag);
    if (status != CMR_SUCCESS) {
      memory->release(impl, *out, bytes, alignment, stream);
      *out = NULL;
    }
  }
  if (status != CMR_SUCCESS) free(entry);
  return status;
}

cmr_status cmr_ledger_deallocate(cmr_ledger *ledger, const char *owner, const void *tag,
                                 const cmr_ledger_memory *memory, void *impl, void *ptr, size_t bytes, size_t alignment,
                                 cmr_stream stream) {
  cmr_ledger_entry *entry;
  size_t recorded;
  cmr_status status = cmr_take(ledger, tag, ptr, bytes, &entry, &recorded);
  if (status == CMR_ERROR_INVALID_ARGUMENT) {
    return cmr_error(status, "%s: %p was allocated with %zu bytes, not %zu: nothing was freed", owner, ptr, recorded,
                     bytes);
  }
  if (status != CMR_SUCCESS) {
    return cmr_error(status, "%s: %p was not allocated by this resource, or is already free", owner, ptr);
  }
  status = memory->release(impl, ptr, bytes, alignment, stream);
  if (status != CMR_SUCCESS) {
    cmr_ledger_put_back(ledger, entry); /* still allocated: it can be freed again */
    return status;
  }
  free(entry);
  return CMR_SUCCESS;
}

/* ---- shared ledgers and fork (fork.h) ------------------------------------------- */

/* Added to by constructors, at load; read by the fork handlers. */
static cmr_shared_ledgers *_Atomic cmr_shared;

void cmr_ledgers_share(cmr_shared_ledgers *shared) {
  shared->next = atomic_load_explicit(&cmr_shared, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&cmr_shared, &shared->next, shared, memory_order_release,
                                                memory_order_relaxed)) {
  }
}

static void cmr_ledgers_fork_take(void) {
  for (cmr_shared_ledgers *shared = atomic_load_explicit(&cmr_shared, memory_order_acquire); shared != NULL;
       shared = shared->next) {
    for (size_t i = 0; i < shared->count; ++i) {
      cmr_sharded_map_lock_all(&shared->first[i].records);
    }
  }
}

static void cmr_ledgers_fork_give(void) {
  for (cmr_shared_ledgers *shared = atomic_load_explicit(&cmr_shared, memory_order_acquire); shared != NULL;
       shared = shared->next) {
    for (size_t i = 0; i < shared->count; ++i) {
      cmr_sharded_map_unlock_all(&shared->first[i].records);
    }
  }
}

CMR_FORK_PART(CMR_FORK_LEDGERS, NULL, cmr_ledgers_fork_take, cmr_ledgers_fork_give, NULL)
