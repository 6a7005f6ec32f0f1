/* SPDX-License-Identifier: Apache-2.0 */
/* The blocks a suballocator has handed out, found by address: a hash map in
 * independently locked shards, so threads freeing different pointers rarely
 * meet on a lock. A free of a pointer the map does not hold is how a
 * suballocator tells CMR_ERROR_UNKNOWN_POINTER. Thread-safe. */
#ifndef CMR_BLOCK_MAP_H
#define CMR_BLOCK_MAP_H

#include "free_blocks.h"

typedef struct cmr_block_map cmr_block_map;

cmr_status cmr_block_map_create(cmr_block_map **out);
/* Frees the map; blocks still in it are deleted (their memory is the caller's). */
void cmr_block_map_destroy(cmr_block_map *map);

/* Never fails: a shard that cannot grow its table keeps longer chains. */
void cmr_block_map_insert(cmr_block_map *map, cmr_block *block);
/* Removes and returns the block that starts at `address`, or NULL. */
cmr_block *cmr_block_map_remove(cmr_block_map *map, const void *address);
/* How many blocks are handed out, and their bytes. */
void cmr_block_map_totals(cmr_block_map *map, size_t *count, size_t *bytes);
/* Calls `visit` on each block, shard by shard under its lock (`visit`
 * must not call into the map). */
void cmr_block_map_each(cmr_block_map *map, void (*visit)(const cmr_block *block, void *arg), void *arg);

/* Invariants (invariants.h), shard by shard under its lock: each shard's
 * address map holds (address_map.h), every block is in the shard its
 * address picks, under its own address, 256-aligned with a nonzero size
 * that is a multiple of 256, and the shard's byte total is the sum of its
 * blocks' sizes. Each change checks its shard (its blocks while it holds
 * at most 1,024, its address map as address_map.h says). False, with the
 * broken invariant in *why, when one does not hold. */
bool cmr_block_map_valid(cmr_block_map *map, const char **why);

#endif /* CMR_BLOCK_MAP_H */
