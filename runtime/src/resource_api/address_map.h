/* SPDX-License-Identifier: Apache-2.0 */
/* A chained hash map from (address, tag) keys to records that embed a
 * cmr_address_entry as their first member (intrusive: no allocation per
 * record). The tag tells apart the records of one address that belong to
 * different owners (NULL where an address has one owner); the address alone
 * picks the bucket. The sharded map (sharded_map.h) keeps one per shard; the
 * adaptors that remember something per pointer (aligned, tracking) one
 * under their own lock. Not thread-safe. */
#ifndef CMR_ADDRESS_MAP_H
#define CMR_ADDRESS_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "invariants.h"

typedef struct cmr_address_entry {
  const void *address;
  const void *tag;                /* whose record, with the address the key */
  struct cmr_address_entry *next; /* in its bucket */
} cmr_address_entry;

typedef struct cmr_address_map {
  cmr_address_entry **buckets;
  size_t bucket_count; /* a power of two */
  size_t count;
} cmr_address_map;

/* CMR_ERROR_OUT_OF_MEMORY (with `owner` in the message) without host memory. */
cmr_status cmr_address_map_init(cmr_address_map *map, const char *owner);
/* Frees the table after passing each entry still in it to `drop`. */
void cmr_address_map_clear(cmr_address_map *map, void (*drop)(cmr_address_entry *entry));
/* Invariants (invariants.h): the table is a power of two of buckets, every
 * entry sits in the bucket its address hashes to, no key is in twice,
 * and `count` is the number of entries. `address_valid` checks what a
 * change at `address` touched (its bucket), and the whole map while it
 * holds at most 1,024 entries; `valid` the whole map. False, with the
 * broken invariant in *why, when one does not hold. */
bool cmr_address_map_valid(const cmr_address_map *map, const char **why);
bool cmr_address_map_address_valid(const cmr_address_map *map, const void *address, const char **why);

/* The bucket of `address`. Addresses handed out are at least 256-aligned:
 * the low bits carry nothing; a multiplicative hash spreads the rest. */
static inline size_t cmr_address_bucket(const void *address, size_t bucket_count) {
  return (size_t)((((uint64_t)(uintptr_t)address >> 8) * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (bucket_count - 1);
}

/* cmr_address_map_insert once the table must grow (out of line). */
void cmr_address_map_grow_and_insert(cmr_address_map *map, cmr_address_entry *entry);

/* Never fails: without host memory for a bigger table the chains get
 * longer. Inline (an insert that needs no growth makes no call). */
static inline void cmr_address_map_insert(cmr_address_map *map, cmr_address_entry *entry) {
  if (__builtin_expect(map->count >= map->bucket_count, 0)) {
    cmr_address_map_grow_and_insert(map, entry);
    return;
  }
  cmr_address_entry **head = &map->buckets[cmr_address_bucket(entry->address, map->bucket_count)];
  entry->next = *head;
  *head = entry;
  map->count++;
  CMR_CHECK(cmr_address_map_address_valid, map, entry->address);
}

/* The link that points at the entry of (`address`, `tag`): it holds NULL
 * when there is none. */
static inline cmr_address_entry **cmr_address_map_link(const cmr_address_map *map, const void *address,
                                                       const void *tag) {
  cmr_address_entry **link = &map->buckets[cmr_address_bucket(address, map->bucket_count)];
  while (*link != NULL && ((*link)->address != address || (*link)->tag != tag)) link = &(*link)->next;
  return link;
}

/* The entry of (`address`, `tag`), left in the map, or NULL. */
static inline cmr_address_entry *cmr_address_map_find(const cmr_address_map *map, const void *address,
                                                      const void *tag) {
  return *cmr_address_map_link(map, address, tag);
}

/* Removes and returns the entry of (`address`, `tag`), or NULL. */
static inline cmr_address_entry *cmr_address_map_remove(cmr_address_map *map, const void *address, const void *tag) {
  cmr_address_entry **link = cmr_address_map_link(map, address, tag);
  cmr_address_entry *entry = *link;
  if (entry != NULL) {
    *link = entry->next;
    map->count--;
  }
  CMR_CHECK(cmr_address_map_address_valid, map, address);
  return entry;
}

/* Calls `visit` on every entry, in no particular order. */
void cmr_address_map_each(const cmr_address_map *map, void (*visit)(cmr_address_entry *entry, void *arg), void *arg);

#endif /* CMR_ADDRESS_MAP_H */
