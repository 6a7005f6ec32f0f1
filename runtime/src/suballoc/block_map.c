/* SPDX-License-Identifier: Apache-2.0 */
/* The handed-out blocks of a suballocator: a sharded map (sharded_map.h)
 * of their records, each shard's `bytes` the sum of its blocks' sizes. */
#include <stddef.h>
#include <stdlib.h>

#include "block_map.h"
#include "invariants.h"
#include "sharded_map.h"

struct cmr_block_map {
  cmr_sharded_map blocks;
};

static cmr_block *cmr_block_of(cmr_address_entry *entry) {
  return entry == NULL ? NULL : (cmr_block *)((char *)entry - offsetof(cmr_block, map_entry));
}

static void cmr_block_drop(cmr_address_entry *entry) { cmr_block_delete(cmr_block_of(entry)); }

/* ---- invariants ------------------------------------------------------------------- */

enum { cmr_shard_checked_whole = 1024 };

typedef struct cmr_shard_check {
  cmr_block_map *map;
  cmr_map_shard *shard;
  size_t bytes;
  const char *why; /* the first broken invariant, or NULL */
} cmr_shard_check;

static void cmr_check_block(cmr_address_entry *entry, void *arg) {
  cmr_shard_check *check = arg;
  const cmr_block *block = cmr_block_of(entry);
  check->bytes += block->size;
  if (check->why != NULL) return;
  if (entry->address != block->address) {
    check->why = "block map: a block is filed under another address than its own";
  } else if (cmr_sharded_map_shard(&check->map->blocks, block->address) != check->shard) {
    check->why = "block map: a block is in another shard than its address picks";
  } else if (block->size == 0 || block->size % 256 != 0 || (uintptr_t)block->address % 256 != 0) {
    check->why = "block map: a block's address or size is not a nonzero multiple of 256";
  }
}

/* `shard` (its lock held), whole, or after a change: then its address map
 * has checked itself (address_map.h), and its blocks are checked while
 * there are at most 1,024. */
static bool cmr_shard_valid(cmr_block_map *map, cmr_map_shard *shard, bool whole, const char **why) {
  if (whole && !cmr_address_map_valid(&shard->entries, why)) return false;
  if (!whole && shard->entries.count > cmr_shard_checked_whole) return true;
  cmr_shard_check check = {map, shard, 0, NULL};
  cmr_address_map_each(&shard->entries, cmr_check_block, &check);
  if (check.why == NULL && check.bytes != shard->bytes) {
    check.why = "block map: a shard's byte total is not the sum of its blocks' sizes";
  }
  if (check.why != NULL) *why = check.why;
  return check.why == NULL;
}

bool cmr_block_map_valid(cmr_block_map *map, const char **why) {
  bool valid = true;
  for (int i = 0; i < cmr_map_shard_count && valid; ++i) {
    cmr_map_shard *shard = &map->blocks.shards[i];
    cmr_lock_acquire(&shard->lock);
    valid = cmr_shard_valid(map, shard, true, why);
    cmr_lock_release(&shard->lock);
  }
  return valid;
}

/* ---- the map ---------------------------------------------------------------------- */

cmr_status cmr_block_map_create(cmr_block_map **out) {
  cmr_sharded_map *blocks = NULL;
  cmr_status status = cmr_sharded_map_create("block map", &blocks);
  if (status == CMR_SUCCESS) status = cmr_sharded_map_make_tables(blocks, "block map");
  if (status != CMR_SUCCESS) {
    cmr_sharded_map_destroy(blocks, cmr_block_drop); /* empty yet */
    return status;
  }
  *out = (cmr_block_map *)blocks; /* its first and only member */
  return CMR_SUCCESS;
}

void cmr_block_map_destroy(cmr_block_map *map) { cmr_sharded_map_destroy(&map->blocks, cmr_block_drop); }

/* Every shard has its table (cmr_block_map_create), so the insert cannot fail. */
void cmr_block_map_insert(cmr_block_map *map, cmr_block *block) {
  block->map_entry = (cmr_address_entry){.address = block->address};
  cmr_map_shard *shard = cmr_sharded_map_lock(&map->blocks, block->address);
  cmr_address_map_insert(&shard->entries, &block->map_entry); /* the shard has its table */
  shard->bytes += block->size;
  CMR_CHECK(cmr_shard_valid, map, shard, false);
  cmr_lock_release(&shard->lock);
}

cmr_block *cmr_block_map_remove(cmr_block_map *map, const void *address) {
  cmr_map_shard *shard = cmr_sharded_map_lock(&map->blocks, address);
  cmr_block *block = cmr_block_of(cmr_map_shard_remove(shard, address, NULL));
  if (block != NULL) {
    block->map_entry.next = NULL;
    shard->bytes -= block->size;
  }
  CMR_CHECK(cmr_shard_valid, map, shard, false);
  cmr_lock_release(&shard->lock);
  return block;
}

void cmr_block_map_totals(cmr_block_map *map, size_t *count, size_t *bytes) {
  cmr_sharded_map_totals(&map->blocks, count, bytes);
}

typedef struct cmr_block_visit {
  void (*visit)(const cmr_block *block, void *arg);
  void *arg;
} cmr_block_visit;

static void cmr_visit_entry(cmr_address_entry *entry, void *arg) {
  cmr_block_visit *each = arg;
  each->visit(cmr_block_of(entry), each->arg);
}

void cmr_block_map_each(cmr_block_map *map, void (*visit)(const cmr_block *block, void *arg), void *arg) {
  cmr_block_visit each = {visit, arg};
  for (int i = 0; i < cmr_map_shard_count; ++i) {
    cmr_map_shard *shard = &map->blocks.shards[i];
    cmr_lock_acquire(&shard->lock);
    cmr_address_map_each(&shard->entries, cmr_visit_entry, &each);
    cmr_lock_release(&shard->lock);
  }
}
