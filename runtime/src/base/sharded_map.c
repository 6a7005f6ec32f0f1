/* SPDX-License-Identifier: Apache-2.0 */
/* The sharded address map (see sharded_map.h). */
#include <stdlib.h>
#include <string.h>

#include "sharded_map.h"

cmr_status cmr_sharded_map_create(const char *owner, cmr_sharded_map **out) {
  cmr_sharded_map *map = aligned_alloc(_Alignof(cmr_sharded_map), sizeof *map);
  if (map == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the resource", owner);
  memset(map, 0, sizeof *map); /* zero-filled is empty */
  *out = map;
  return CMR_SUCCESS;
}

cmr_status cmr_sharded_map_make_tables(cmr_sharded_map *map, const char *owner) {
  for (int i = 0; i < cmr_map_shard_count; ++i) {
    cmr_map_shard *shard = &map->shards[i];
    if (shard->entries.buckets != NULL) continue;
    cmr_status status = cmr_address_map_init(&shard->entries, owner);
    if (status != CMR_SUCCESS) return status;
  }
  return CMR_SUCCESS;
}

void cmr_sharded_map_destroy(cmr_sharded_map *map, void (*drop)(cmr_address_entry *entry)) {
  if (map == NULL) return;
  for (int i = 0; i < cmr_map_shard_count; ++i) {
    cmr_map_shard *shard = &map->shards[i];
    if (shard->entries.buckets != NULL) cmr_address_map_clear(&shard->entries, drop);
    for (cmr_address_entry *spare = shard->spares, *next; spare != NULL; spare = next) {
      next = spare->next;
      drop(spare);
    }
  }
  free(map);
}

void cmr_sharded_map_totals(cmr_sharded_map *map, size_t *count, size_t *bytes) {
  *count = 0;
  *bytes = 0;
  for (int i = 0; i < cmr_map_shard_count; ++i) {
    cmr_map_shard *shard = &map->shards[i];
    cmr_lock_acquire(&shard->lock);
    *count += shard->entries.count;
    *bytes += shard->bytes;
    cmr_lock_release(&shard->lock);
  }
}

void cmr_sharded_map_lock_all(cmr_sharded_map *map) {
  for (int s = 0; s < cmr_map_shard_count; ++s) cmr_lock_acquire(&map->shards[s].lock);
}

void cmr_sharded_map_unlock_all(cmr_sharded_map *map) {
  for (int s = 0; s < cmr_map_shard_count; ++s) cmr_lock_release(&map->shards[s].lock);
}
