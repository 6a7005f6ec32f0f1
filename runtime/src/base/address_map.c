/* SPDX-License-Identifier: Apache-2.0 */
/* The intrusive address map (see address_map.h). */
#include <stdlib.h>

#include "address_map.h"
#include "invariants.h"

enum { cmr_address_map_initial_buckets = 64 };

cmr_status cmr_address_map_init(cmr_address_map *map, const char *owner) {
  map->buckets = calloc(cmr_address_map_initial_buckets, sizeof *map->buckets);
  if (map->buckets == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the resource", owner);
  map->bucket_count = cmr_address_map_initial_buckets;
  map->count = 0;
  return CMR_SUCCESS;
}

void cmr_address_map_each(const cmr_address_map *map, void (*visit)(cmr_address_entry *entry, void *arg), void *arg) {
  for (size_t b = 0; b < map->bucket_count; ++b) {
    for (cmr_address_entry *entry = map->buckets[b], *next; entry != NULL; entry = next) {
      next = entry->next; /* `visit` may free the entry */
      visit(entry, arg);
    }
  }
}

void cmr_address_map_clear(cmr_address_map *map, void (*drop)(cmr_address_entry *entry)) {
  for (size_t b = 0; b < map->bucket_count; ++b) {
    for (cmr_address_entry *entry = map->buckets[b], *next; entry != NULL; entry = next) {
      next = entry->next;
      drop(entry);
    }
  }
  free(map->buckets);
  map->buckets = NULL;
  map->bucket_count = map->count = 0;
}

/* Doubles the table when chains average more than one entry. */
static void cmr_address_map_grow(cmr_address_map *map) {
  size_t count = map->bucket_count * 2;
  cmr_address_entry **buckets = calloc(count, sizeof *buckets);
  if (buckets == NULL) return;
  for (size_t b = 0; b < map->bucket_count; ++b) {
    for (cmr_address_entry *entry = map->buckets[b], *next; entry != NULL; entry = next) {
      next = entry->next;
      cmr_address_entry **head = &buckets[cmr_address_bucket(entry->address, count)];
      entry->next = *head;
      *head = entry;
    }
  }
  free(map->buckets);
  map->buckets = buckets;
  map->bucket_count = count;
}

void cmr_address_map_grow_and_insert(cmr_address_map *map, cmr_address_entry *entry) {
  cmr_address_map_grow(map);
  cmr_address_entry **head = &map->buckets[cmr_address_bucket(entry->address, map->bucket_count)];
  entry->next = *head;
  *head = entry;
  map->count++;
  CMR_CHECK(cmr_address_map_address_valid, map, entry->address);
}

/* ---- invariants ------------------------------------------------------------------- */

enum { cmr_address_map_checked_whole = 1024 };

/* Bucket `b`'s chain: every entry hashes there, no key twice; *entries
 * counts them. A chain longer than the map's count is a cycle, found
 * before the entries are compared (which would then never end). */
static bool cmr_bucket_valid(const cmr_address_map *map, size_t b, size_t *entries, const char **why) {
  size_t length = 0;
  for (const cmr_address_entry *entry = map->buckets[b]; entry != NULL; entry = entry->next) {
    if (++length > map->count) {
      *why = "address map: a bucket holds more entries than the map counts (or its chain loops)";
      return false;
    }
  }
  for (const cmr_address_entry *entry = map->buckets[b]; entry != NULL; entry = entry->next) {
    if (cmr_address_bucket(entry->address, map->bucket_count) != b) {
      *why = "address map: an entry is not in the bucket its address hashes to";
      return false;
    }
    for (const cmr_address_entry *other = entry->next; other != NULL; other = other->next) {
      if (other->address == entry->address && other->tag == entry->tag) {
        *why = "address map: an address is in the map twice with one tag";
        return false;
      }
    }
  }
  *entries += length;
  return true;
}

bool cmr_address_map_valid(const cmr_address_map *map, const char **why) {
  if (map->bucket_count == 0 || (map->bucket_count & (map->bucket_count - 1)) != 0) {
    *why = "address map: the bucket count is not a power of two";
    return false;
  }
  size_t entries = 0;
  for (size_t b = 0; b < map->bucket_count; ++b) {
    if (!cmr_bucket_valid(map, b, &entries, why)) return false;
  }
  if (entries != map->count) {
    *why = "address map: its count is not the number of entries";
    return false;
  }
  return true;
}

bool cmr_address_map_address_valid(const cmr_address_map *map, const void *address, const char **why) {
  if (map->count <= cmr_address_map_checked_whole) return cmr_address_map_valid(map, why);
  size_t entries = 0;
  return cmr_bucket_valid(map, cmr_address_bucket(address, map->bucket_count), &entries, why);
}
