/* The handed-out blocks of a suballocator: chained hash tables in 64 shards,
 * each under its own lock and on its own cache line. */
#include <pthread.h>
#include <stdlib.h>

#include "block_map.h"

enum { cmr_shard_bits = 6, cmr_shard_count = 1 << cmr_shard_bits, cmr_initial_buckets = 64 };

typedef struct cmr_block_shard {
  _Alignas(64) pthread_mutex_t lock;
  cmr_block **buckets;
  size_t bucket_count; /* a power of two */
  size_t count;
  size_t bytes;
} cmr_block_shard;

struct cmr_block_map {
  cmr_block_shard shards[cmr_shard_count];
};

/* Blocks are 256-aligned, so the low bits carry nothing; a multiplicative
 * hash spreads the rest. The top bits pick the shard, the low ones a bucket. */
static uint64_t cmr_block_hash(const void *address) {
  return ((uint64_t)(uintptr_t)address >> 8) * UINT64_C(0x9E3779B97F4A7C15);
}

static cmr_block_shard *cmr_shard_of(cmr_block_map *map, uint64_t hash) {
  return &map->shards[hash >> (64 - cmr_shard_bits)];
}

cmr_status cmr_block_map_create(cmr_block_map **out) {
  cmr_block_map *map = aligned_alloc(64, sizeof *map);
  if (map == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "no host memory for a block map");
  for (int i = 0; i < cmr_shard_count; ++i) {
    cmr_block_shard *shard = &map->shards[i];
    shard->buckets = calloc(cmr_initial_buckets, sizeof *shard->buckets);
    if (shard->buckets == NULL) {
      while (i-- > 0) free(map->shards[i].buckets);
      free(map);
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "no host memory for a block map");
    }
    shard->bucket_count = cmr_initial_buckets;
    shard->count = 0;
    shard->bytes = 0;
    pthread_mutex_init(&shard->lock, NULL);
  }
  *out = map;
  return CMR_SUCCESS;
}

void cmr_block_map_destroy(cmr_block_map *map) {
  for (int i = 0; i < cmr_shard_count; ++i) {
    cmr_block_shard *shard = &map->shards[i];
    for (size_t b = 0; b < shard->bucket_count; ++b) {
      for (cmr_block *block = shard->buckets[b], *next; block != NULL; block = next) {
        next = block->map_next;
        cmr_block_delete(block);
      }
    }
    free(shard->buckets);
    pthread_mutex_destroy(&shard->lock);
  }
  free(map);
}

/* Doubles the table when chains average more than one block; without host
 * memory for a bigger table the chains just get longer. */
static void cmr_shard_grow(cmr_block_shard *shard) {
  size_t count = shard->bucket_count * 2;
  cmr_block **buckets = calloc(count, sizeof *buckets);
  if (buckets == NULL) return;
  for (size_t b = 0; b < shard->bucket_count; ++b) {
    for (cmr_block *block = shard->buckets[b], *next; block != NULL; block = next) {
      next = block->map_next;
      cmr_block **head = &buckets[cmr_block_hash(block->address) & (count - 1)];
      block->map_next = *head;
      *head = block;
    }
  }
  free(shard->buckets);
  shard->buckets = buckets;
  shard->bucket_count = count;
}

void cmr_block_map_insert(cmr_block_map *map, cmr_block *block) {
  uint64_t hash = cmr_block_hash(block->address);
  cmr_block_shard *shard = cmr_shard_of(map, hash);
  pthread_mutex_lock(&shard->lock);
  if (shard->count >= shard->bucket_count) cmr_shard_grow(shard);
  cmr_block **head = &shard->buckets[hash & (shard->bucket_count - 1)];
  block->map_next = *head;
  *head = block;
  shard->count++;
  shard->bytes += block->size;
  pthread_mutex_unlock(&shard->lock);
}

cmr_block *cmr_block_map_remove(cmr_block_map *map, const void *address) {
  uint64_t hash = cmr_block_hash(address);
  cmr_block_shard *shard = cmr_shard_of(map, hash);
  pthread_mutex_lock(&shard->lock);
  cmr_block **link = &shard->buckets[hash & (shard->bucket_count - 1)];
  while (*link != NULL && (*link)->address != address) link = &(*link)->map_next;
  cmr_block *block = *link;
  if (block != NULL) {
    *link = block->map_next;
    block->map_next = NULL;
    shard->count--;
    shard->bytes -= block->size;
  }
  pthread_mutex_unlock(&shard->lock);
  return block;
}

void cmr_block_map_totals(cmr_block_map *map, size_t *count, size_t *bytes) {
  *count = 0;
  *bytes = 0;
  for (int i = 0; i < cmr_shard_count; ++i) {
    cmr_block_shard *shard = &map->shards[i];
    pthread_mutex_lock(&shard->lock);
    *count += shard->count;
    *bytes += shard->bytes;
    pthread_mutex_unlock(&shard->lock);
  }
}
