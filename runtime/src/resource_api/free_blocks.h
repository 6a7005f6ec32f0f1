/* SPDX-License-Identifier: Apache-2.0 */
/* The free-block index the suballocators share: a set of free address
 * ranges, ordered twice (by size for best fit, by address for first fit and
 * for finding the neighbours a returned block merges with), so that every
 * operation costs O(log n) in the number of free blocks, never O(n).
 *
 * Blocks are host-side records only; the memory they describe (often device
 * memory) is never read or written. Not thread-safe: the owner locks. */
#ifndef CMR_FREE_BLOCKS_H
#define CMR_FREE_BLOCKS_H

#include "address_map.h"

typedef struct cmr_block {
  char *address;
  size_t size;
  /* Nonzero when the block begins a unit that must never merge with what lies
   * before it (an upstream allocation, a superblock, a fixed-size block); the
   * value is the unit's size, so a free block with size == span is a whole
   * unit again and may be given back. */
  size_t span;
  /* Links of the two orders (treaps sharing one priority). */
  struct cmr_block *by_size[2];
  struct cmr_block *by_address[2];
  /* Largest size in this block's subtree of the address order (first fit). */
  size_t largest;
  uint32_t priority;
  /* Its place in a cmr_block_map while the block is handed out, and the
   * size the caller asked for, which its free must repeat. */
  cmr_address_entry map_entry;
  size_t requested;
} cmr_block;

typedef struct cmr_free_blocks {
  cmr_block *by_size;
  cmr_block *by_address;
  size_t count;
  size_t bytes;
} cmr_free_blocks;

/* A new block record (CMR_ERROR_OUT_OF_MEMORY when the host has none). It
 * also draws the record's priority, so a set only holds records made here. */
cmr_status cmr_block_new(char *address, size_t size, size_t span, cmr_block **out);
void cmr_block_delete(cmr_block *block);

void cmr_free_blocks_init(cmr_free_blocks *set);
/* Deletes every block record still in the set (the memory is the caller's). */
void cmr_free_blocks_clear(cmr_free_blocks *set);

/* Adds a free block (not in a set, overlapping no member; address and size
 * multiples of 256), merging it with free neighbours that touch it (never
 * across the start of a unit). Returns the record that now holds its bytes,
 * the lowest-addressed of those merged, with its span; records merged away
 * (`block` too, when it joined its left neighbour) are deleted. */
cmr_block *cmr_free_blocks_insert(cmr_free_blocks *set, cmr_block *block);
/* Takes a member out of the set; the record is the caller's again. */
void cmr_free_blocks_remove(cmr_free_blocks *set, cmr_block *block);

/* Bytes a free block must have to serve `size` bytes at `alignment` whatever
 * its address (alignment a power of two >= 256, blocks 256-aligned):
 * size + alignment - 256, or SIZE_MAX on overflow. */
static inline size_t cmr_free_blocks_needed(size_t size, size_t alignment) {
  /* A 256-aligned address is at most alignment - 256 bytes short of the next
   * multiple of the alignment. */
  size_t slack = alignment - 256;
  return size > SIZE_MAX - slack ? SIZE_MAX : size + slack;
}
/* The smallest block of at least `needed` bytes (lowest address among equals)
 * or NULL; it stays in the set. */
cmr_block *cmr_free_blocks_best_fit(const cmr_free_blocks *set, size_t needed);
/* The lowest-addressed block of at least `needed` bytes, or NULL. */
cmr_block *cmr_free_blocks_first_fit(const cmr_free_blocks *set, size_t needed);
/* The size of the set's largest block (0 when empty), in O(1). */
size_t cmr_free_blocks_largest(const cmr_free_blocks *set);

/* Takes `size` bytes (a nonzero multiple of 256) at `alignment` out of
 * `block` (a member of the set holding at least
 * cmr_free_blocks_needed(size, alignment) bytes): the bytes before the aligned
 * address and after the taken ones stay in the set as free blocks; *out is
 * the record of the taken bytes, not in the set. When the aligned address is
 * the block's own, *out is `block`, keeping its span; otherwise `block` stays
 * as the prefix, keeping its span, and *out is a new record with span 0. The
 * suffix always has span 0. Fails only for want of host memory for a record,
 * leaving the set as it was. */
cmr_status cmr_free_blocks_take(cmr_free_blocks *set, cmr_block *block, size_t size, size_t alignment,
                                cmr_block **out);

/* Moves every block of `from` into `into`, merging; `from` ends empty. */
void cmr_free_blocks_absorb(cmr_free_blocks *into, cmr_free_blocks *from);
/* Removes and returns the lowest-addressed block, or NULL when empty. */
cmr_block *cmr_free_blocks_pop(cmr_free_blocks *set);
/* Calls `visit` on each block in address order; `visit` must not change the
 * set. */
void cmr_free_blocks_each(const cmr_free_blocks *set, void (*visit)(const cmr_block *block, void *arg), void *arg);

#endif /* CMR_FREE_BLOCKS_H */
