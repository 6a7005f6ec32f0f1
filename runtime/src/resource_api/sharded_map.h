/* SPDX-License-Identifier: Apache-2.0 */
/* Records found by address (and tag, address_map.h), spread over 64 shards,
 * each an address map under its own lock on its own cache line, so threads
 * working on different addresses rarely meet on a lock; the top bits of a
 * hash of the address pick the shard. What the suballocators handed out
 * (block_map.h) and what the leaves and the bindings handed out (ledger.h)
 * are kept in one.
 *
 * A zero-filled map is an empty one (a shard makes its table at its first
 * insert), so a map may live in static storage. Thread-safe through the
 * shards' locks: the caller locks the shard of an address, works on it with
 * the shard functions below, and releases its lock. */
#ifndef CMR_SHARDED_MAP_H
#define CMR_SHARDED_MAP_H

#include "address_map.h"
#include "lock.h"

enum { cmr_map_shard_bits = 6, cmr_map_shard_count = 1 << cmr_map_shard_bits, cmr_map_shard_spares = 4 };

typedef struct cmr_map_shard {
  _Alignas(64) cmr_lock lock;
  cmr_address_map entries; /* no table until the first insert */
  size_t bytes;            /* the map's user's total of its entries' sizes, if it keeps one */
  /* Records out of the map that its user keeps for reuse rather than free
   * (at most cmr_map_shard_spares, chained through `next`). */
  cmr_address_entry *spares;
  unsigned spare_count;
} cmr_map_shard;

typedef struct cmr_sharded_map {
  cmr_map_shard shards[cmr_map_shard_count];
} cmr_sharded_map;

/* An empty map of its own on the heap (CMR_ERROR_OUT_OF_MEMORY, naming `owner`). */
cmr_status cmr_sharded_map_create(const char *owner, cmr_sharded_map **out);
/* Gives every shard its table now, so that no insert can fail (CMR_ERROR_OUT_OF_MEMORY, naming `owner`). */
cmr_status cmr_sharded_map_make_tables(cmr_sharded_map *map, const char *owner);
/* Passes every entry still in the map, and every spare, to `drop`, then frees the map. */
void cmr_sharded_map_destroy(cmr_sharded_map *map, void (*drop)(cmr_address_entry *entry));

/* The shard that `address` belongs to. */
static inline cmr_map_shard *cmr_sharded_map_shard(cmr_sharded_map *map, const void *address) {
  /* Addresses handed out are 256-aligned: the low bits carry nothing. */
  uint64_t hash = ((uint64_t)(uintptr_t)address >> 8) * UINT64_C(0x9E3779B97F4A7C15);
  return &map->shards[hash >> (64 - cmr_map_shard_bits)];
}

/* The shard of `address`, its lock held (release it with cmr_lock_release). */
static inline cmr_map_shard *cmr_sharded_map_lock(cmr_sharded_map *map, const void *address) {
  cmr_map_shard *shard = cmr_sharded_map_shard(map, address);
  cmr_lock_acquire(&shard->lock);
  return shard;
}

/* In a locked shard: files `entry` under its key. Fails (CMR_ERROR_OUT_OF_MEMORY,
 * naming `owner`) only when the shard has no table yet and none can be made. */
static inline cmr_status cmr_map_shard_insert(cmr_map_shard *shard, cmr_address_entry *entry, const char *owner) {
  if (shard->entries.buckets == NULL) {
    cmr_status status = cmr_address_map_init(&shard->entries, owner);
    if (status != CMR_SUCCESS) return status;
  }
  cmr_address_map_insert(&shard->entries, entry);
  return CMR_SUCCESS;
}

/* In a locked shard: takes out and returns the entry of (`address`, `tag`),
 * or NULL (a shard without a table holds nothing). */
static inline cmr_address_entry *cmr_map_shard_remove(cmr_map_shard *shard, const void *address, const void *tag) {
  return shard->entries.buckets == NULL ? NULL : cmr_address_map_remove(&shard->entries, address, tag);
}

/* Every shard's lock, in shard order (the fork handlers hold a map over a
 * fork this way), and their release. */
void cmr_sharded_map_lock_all(cmr_sharded_map *map);
void cmr_sharded_map_unlock_all(cmr_sharded_map *map);

/* How many entries the map holds, and the total of its shards' `bytes`. */
void cmr_sharded_map_totals(cmr_sharded_map *map, size_t *count, size_t *bytes);

#endif /* CMR_SHARDED_MAP_H */
