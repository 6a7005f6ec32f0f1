/* SPDX-License-Identifier: Apache-2.0 */
/* The leaf resources' ledger (see ledger.h). */
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

/* One handed-out pointer. */
typedef struct cmr_ledger_entry {
  cmr_address_entry key; /* first: its address is the pointer */
  size_t bytes;
  const void *tag; /* whom it belongs to, among those sharing the ledger */
} cmr_ledger_entry;

/* The top bits of a multiplicative hash pick the shard (the map inside uses
 * lower ones); pointers are 256-aligned, so the low address bits carry nothing. */
static cmr_ledger_shard *cmr_ledger_shard_of(cmr_ledger *ledger, const void *ptr) {
  uint64_t hash = ((uint64_t)(uintptr_t)ptr >> 8) * UINT64_C(0x9E3779B97F4A7C15);
  return &ledger->shards[hash >> (64 - cmr_ledger_shard_bits)];
}

cmr_status cmr_ledger_create(const char *owner, cmr_ledger **out) {
  cmr_ledger *ledger = aligned_alloc(_Alignof(cmr_ledger), sizeof *ledger);
  if (ledger == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the resource", owner);
  memset(ledger, 0, sizeof *ledger); /* zero-filled is empty */
  *out = ledger;
  return CMR_SUCCESS;
}

static void cmr_ledger_drop(cmr_address_entry *entry) { free(entry); }

void cmr_ledger_destroy(cmr_ledger *ledger) {
  if (ledger == NULL) return;
  for (int i = 0; i < cmr_ledger_shard_count; ++i) {
    if (ledger->shards[i].entries.buckets != NULL) cmr_address_map_clear(&ledger->shards[i].entries, cmr_ledger_drop);
  }
  free(ledger);
}

static cmr_status cmr_ledger_record(cmr_ledger *ledger, const char *owner, cmr_ledger_entry *entry, void *ptr) {
  entry->key.address = ptr;
  cmr_ledger_shard *shard = cmr_ledger_shard_of(ledger, ptr);
  cmr_lock_acquire(&shard->lock);
  cmr_status status = CMR_SUCCESS;
  if (shard->entries.buckets == NULL) status = cmr_address_map_init(&shard->entries, owner);
  if (status == CMR_SUCCESS) cmr_address_map_insert(&shard->entries, &entry->key);
  cmr_lock_release(&shard->lock);
  return status;
}

/* Shards without a table hold nothing, so they are never written here. */
static void cmr_ledger_put_back(cmr_ledger *ledger, cmr_ledger_entry *entry) {
  cmr_ledger_shard *shard = cmr_ledger_shard_of(ledger, entry->key.address);
  cmr_lock_acquire(&shard->lock);
  cmr_address_map_insert(&shard->entries, &entry->key);
  cmr_lock_release(&shard->lock);
}

/* The entry of `ptr`, taken out if it has `tag` and `bytes`; else NULL, and
 * *recorded_bytes is what a known pointer was allocated with (0 if unknown). */
static cmr_ledger_entry *cmr_ledger_take(cmr_ledger *ledger, const void *tag, const void *ptr, size_t bytes,
                                         size_t *recorded_bytes) {
  cmr_ledger_shard *shard = cmr_ledger_shard_of(ledger, ptr);
  cmr_ledger_entry *entry = NULL;
  *recorded_bytes = 0;
  cmr_lock_acquire(&shard->lock);
  if (shard->entries.buckets != NULL) {
    entry = (cmr_ledger_entry *)cmr_address_map_remove(&shard->entries, ptr);
    if (entry != NULL && (entry->tag != tag || entry->bytes != bytes)) {
      if (entry->tag == tag) *recorded_bytes = entry->bytes;
      cmr_address_map_insert(&shard->entries, &entry->key);
      entry = NULL;
    }
  }
  cmr_lock_release(&shard->lock);
  return entry;
}

cmr_status cmr_ledger_allocate(cmr_ledger *ledger, const char *owner, const void *tag, const cmr_ledger_memory *memory,
                               void *impl, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  cmr_ledger_entry *entry = malloc(sizeof *entry);
  if (entry == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory to record an allocation of %zu bytes", owner, bytes);
  }
  *entry = (cmr_ledger_entry){.bytes = bytes, .tag = tag};
  cmr_status status = memory->obtain(impl, bytes, alignment, stream, out);
  if (status == CMR_SUCCESS) {
    status = cmr_ledger_record(ledger, owner, entry, *out);
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
  size_t recorded_bytes;
  cmr_ledger_entry *entry = cmr_ledger_take(ledger, tag, ptr, bytes, &recorded_bytes);
  if (entry == NULL && recorded_bytes != 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %p was allocated with %zu bytes, not %zu: nothing was freed",
                     owner, ptr, recorded_bytes, bytes);
  }
  if (entry == NULL) {
    return cmr_error(CMR_ERROR_UNKNOWN_POINTER, "%s: %p was not allocated by this resource, or is already free", owner,
                     ptr);
  }
  cmr_status status = memory->release(impl, ptr, bytes, alignment, stream);
  if (status != CMR_SUCCESS) {
    cmr_ledger_put_back(ledger, entry); /* still allocated: it can be freed again */
    return status;
  }
  free(entry);
  return CMR_SUCCESS;
}
