/* SPDX-License-Identifier: Apache-2.0 */
/* The handed-out blocks of a suballocator: an address map (address_map.h)
 * in each of 64 shards, each under its own lock and on its own cache line. */
#include <stddef.h>
#include <stdlib.h>

#include "block_map.h"
#include "invariants.h"
#include "lock.h"

enum { cmr_shard_bits = 6, cmr_shard_count = 1 << cmr_shard_bits };

typedef struct cmr_block_shard {
  _Alignas(64) cmr_lock lock;
  cmr_address_map blocks;
  size_t bytes;
} cmr_block_shard;

struct cmr_block_map {
  cmr_block_shard shards[cmr_shard_count];
};

/* The top bits of a multiplicative hash pick the shard (the map inside uses
 * lower ones); blocks are 256-aligned, so the low address bits carry nothing. */
static cmr_block_shard *cmr_shard_of(cmr_block_map *map, const void *address) {
  uint64_t hash = ((uint64_t)(uintptr_t)address >> 8) * UINT64_C(0x9E3779B97F4A7C15);
  return &map->shards[hash >> (64 - cmr_shard_bits)];
}

static cmr_block *cmr_block_of(cmr_address_entry *entry) {
  return entry == NULL ? NULL : (cmr_block *)((char *)entry - offsetof(cmr_block, map_entry));
}

static void cmr_block_drop(cmr_address_entry *entry) { cmr_block_delete(cmr_block_of(entry)); }

/* ---- invariants ------------------------------------------------------------------- */

enum { cmr_shard_checked_whole = 1024 };

typedef struct cmr_shard_check {
  cmr_block_map *map;
  cmr_block_shard *shard;
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
  } else if (cmr_shard_of(check->map, block->address) != check->shard) {
    check->why = "block map: a block is in another shard than its address picks";
  } else if (block->size == 0 || block->size % 256 != 0 || (uintptr_t)block->address % 256 != 0) {
    check->why = "block map: a block's address or size is not a nonzero multiple of 256";
  }
}

/* `shard` (its lock held), whole, or after a change: then its address map
 * has checked itself (address_map.h), and its blocks are checked while
 * there are at most 1,024. */
static bool cmr_shard_valid(cmr_block_map *map, cmr_block_shard *shard, bool whole, const char **why) {
  if (whole && !cmr_address_map_valid(&shard->blocks, why)) return false;
  if (!whole && shard->blocks.count > cmr_shard_checked_whole) return true;
  cmr_shard_check check = {map, shard, 0, NULL};
  cmr_address_map_each(&shard->blocks, cmr_check_block, &check);
  if (check.why == NULL && check.bytes != shard->bytes) {
    check.why = "block map: a shard's byte total is not the sum of its blocks' sizes";
  }
  if (check.why != NULL) *why = check.why;
  return check.why == NULL;
}

bool cmr_block_map_valid(cmr_block_map *map, const char **why) {
  bool valid = true;
  for (int i = 0; i < cmr_shard_count && valid; ++i) {
    cmr_block_shard *shard = &map->shards[i];
    cmr_lock_acquire(&shard->lock);
    valid = cmr_shard_valid(map, shard, true, why);
    cmr_lock_release(&shard->lock);
  }
  return valid;
}

/* ---- the map ---------------------------------------------------------------------- */

cmr_status cmr_block_map_create(cmr_block_map **out) {
  cmr_block_map *map = aligned_alloc(64, sizeof *map);
  if (map == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "no host memory for a block map");
  for (int i = 0; i < cmr_shard_count; ++i) {
    cmr_block_shard *shard = &map->shards[i];
    cmr_status status = cmr_address_map_init(&shard->blocks, "block map");
    if (status != CMR_SUCCESS) {
      while (i-- > 0) cmr_address_map_clear(&map->shards[i].blocks, cmr_block_drop); /* empty yet */
      free(map);
      return status;
    }
    shard->bytes = 0;
    cmr_lock_init(&shard->lock);
  }
  *out = map;
  return CMR_SUCCESS;
}

void cmr_block_map_destroy(cmr_block_map *map) {
  for (int i = 0; i < cmr_shard_count; ++i) {
    cmr_address_map_clear(&map->shards[i].blocks, cmr_block_drop);
  }
  free(map);
}

void cmr_block_map_insert(cmr_block_map *map, cmr_block *block) {
  cmr_block_shard *shard = cmr_shard_of(map, block->address);
  block->map_entry.address = block->address;
  cmr_lock_acquire(&shard->lock);
  cmr_address_map_insert(&shard->blocks, &block->map_entry);
  shard->bytes += block->size;
  CMR_CHECK(cmr_shard_valid(map, shard, false, &why));
  cmr_lock_release(&shard->lock);
}

cmr_block *cmr_block_map_remove(cmr_block_map *map, const void *address) {
  cmr_block_shard *shard = cmr_shard_of(map, address);
  cmr_lock_acquire(&shard->lock);
  cmr_block *block = cmr_block_of(cmr_address_map_remove(&shard->blocks, address));
  if (block != NULL) {
    block->map_entry.next = NULL;
    shard->bytes -= block->size;
  }
  CMR_CHECK(cmr_shard_valid(map, shard, false, &why));
  cmr_lock_release(&shard->lock);
  return block;
}

void cmr_block_map_totals(cmr_block_map *map, size_t *count, size_t *bytes) {
  *count = 0;
  *bytes = 0;
  for (int i = 0; i < cmr_shard_count; ++i) {
    cmr_block_shard *shard = &map->shards[i];
    cmr_lock_acquire(&shard->lock);
    *count += shard->blocks.count;
    *bytes += shard->bytes;
    cmr_lock_release(&shard->lock);
  }
}
