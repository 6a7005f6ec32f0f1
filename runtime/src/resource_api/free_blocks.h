/* SPDX-License-Identifier: Apache-2.0 */
/* The free-block index the suballocators share: a set of free address
 * ranges, indexed three ways so that the hot operations cost O(1):
 *  - by size class (two-level segregated fit, as TLSF): a power of two, then
 *    16 linear steps within it, with bitmaps to find the first non-empty
 *    class, for good fit;
 *  - by boundary (chained hashes of the blocks' start and end addresses), to
 *    find the free neighbours a returned block merges with;
 *  - by address (a treap, O(log n)), only in a set made with
 *    cmr_free_blocks_init_by_address: for first fit, and so that pop and
 *    each go in address order.
 *
 * Blocks are host-side records only; the memory they describe (often device
 * memory) is never read or written. Not thread-safe: the owner locks. */
#ifndef CMR_FREE_BLOCKS_H
#define CMR_FREE_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "address_map.h"

typedef struct cmr_block {
  char *address;
  size_t size;
  /* Nonzero when the block begins a unit that must never merge with what lies
   * before it (an upstream allocation, a superblock, a fixed-size block); the
   * value is the unit's size, so a free block with size == span is a whole
   * unit again and may be given back. */
  size_t span;
  /* The previous and next block of its size class. */
  struct cmr_block *in_class[2];
  /* The next block in its bucket of the start-address [0] and end-address
   * [1] hashes. */
  struct cmr_block *in_bucket[2];
  /* Links of the address treap (sets kept by address): its children, its
   * parent (NULL at the root), the largest size in this block's subtree
   * there (first fit), and its priority there (a hash of its address). */
  struct cmr_block *by_address[2];
  struct cmr_block *above;
  size_t largest;
  uint32_t priority;
  /* The class whose list it is on, while in a set. */
  uint16_t size_class;
  /* Its place in a cmr_block_map while the block is handed out, and the
   * size the caller asked for, which its free must repeat. */
  cmr_address_entry map_entry;
  size_t requested;
} cmr_block;

/* Size classes: blocks of fewer than 16 granules (256 B) each have a class
 * of their own size (level 0); above, level L >= 1 holds sizes of
 * [2^(L+3), 2^(L+4)) granules in 16 steps of equal width. 53 levels cover
 * every size_t. */
enum { cmr_class_levels = 53, cmr_class_steps = 16, cmr_inline_buckets = 8, cmr_spare_records = 8 };

typedef struct cmr_free_blocks {
  size_t count;
  size_t bytes;
  /* Bit L: level L has a non-empty class; bit S of steps[L]: class (L, S)
   * is not empty. A class's list is valid only while its bit is set. */
  uint64_t levels;
  uint16_t steps[cmr_class_levels];
  cmr_block *classes[cmr_class_levels][cmr_class_steps];
  /* 2^bucket_bits buckets by start address, then as many by end address:
   * the inline ones while `buckets` is NULL (a small or new set), else a
   * table grown with the set and freed when it empties. */
  cmr_block **buckets;
  unsigned bucket_bits;
  cmr_block *inline_buckets[2 * cmr_inline_buckets];
  /* Kept by address (the treap's root in `by_address`). */
  bool keeps_address_order;
  cmr_block *by_address;
  /* Records merged away, for the next takes to reuse rather than allocate
   * (chained through in_class[1]): at least cmr_spare_records, at most as
   * many as the bucket table has slots (2 << bucket_bits: it grows with
   * the most blocks the set has held at once, to 2 to 8 times that); freed
   * when the set empties. */
  cmr_block *spares;
  unsigned spare_count;
} cmr_free_blocks;

/* A new block record (CMR_ERROR_OUT_OF_MEMORY when the host has none); a set
 * only holds records made here. */
cmr_status cmr_block_new(char *address, size_t size, size_t span, cmr_block **out);
void cmr_block_delete(cmr_block *block);

/* An empty set (`set` new, or empty: a set holds memory only while it holds
 * blocks); ..._by_address keeps the address order too (first fit). */
void cmr_free_blocks_init(cmr_free_blocks *set);
void cmr_free_blocks_init_by_address(cmr_free_blocks *set);
/* Deletes every block record still in the set (the memory is the caller's)
 * and empties it, keeping its kind. */
void cmr_free_blocks_clear(cmr_free_blocks *set);

/* Adds a free block (not in a set, overlapping no member; address and size
 * multiples of 256), merging it with free neighbours that touch it (never
 * across the start of a unit). Returns the record that now holds its bytes,
 * with the span of the lowest-addressed of those merged: the left
 * neighbour, else the right one, else `block`. Records merged away (`block`
 * too, when it joined a neighbour) are no longer the caller's. */
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
/* The size class of a block of `size` bytes (level * cmr_class_steps + step):
 * classes in increasing order hold increasing sizes. */
unsigned cmr_free_blocks_class(size_t size);
/* Good fit, in O(1): a block of the first non-empty class whose every block
 * holds `needed` bytes; failing that, one that does of the class `needed`
 * falls in (a walk of that class); else NULL. It stays in the set. Its size
 * is within a class (1/16 of a power of two) of the best fit's, unless the
 * best fits lie in the class of `needed` itself. */
cmr_block *cmr_free_blocks_best_fit(const cmr_free_blocks *set, size_t needed);
/* The lowest-addressed block of at least `needed` bytes, or NULL (a set kept
 * by address only; O(log n)). */
cmr_block *cmr_free_blocks_first_fit(const cmr_free_blocks *set, size_t needed);
/* The size of the set's largest block (0 when empty): O(1) in a set kept by
 * address, else a walk of the largest non-empty class. */
size_t cmr_free_blocks_largest(const cmr_free_blocks *set);

/* Takes `size` bytes (a nonzero multiple of 256) at `alignment` out of
 * `block` (a member of the set holding at least
 * cmr_free_blocks_needed(size, alignment) bytes): the bytes before the aligned
 * address and after the taken ones stay in the set as free blocks; *out is
 * the record of the taken bytes, not in the set. Taken whole, *out is
 * `block`. Otherwise *out is another record and `block` stays in the set,
 * resized in place: as the prefix, keeping its span (*out has span 0), or,
 * without a prefix, as the suffix, giving its span to *out. A suffix always
 * has span 0. Fails only for want of host memory for a record, leaving the
 * set as it was. */
cmr_status cmr_free_blocks_take(cmr_free_blocks *set, cmr_block *block, size_t size, size_t alignment, cmr_block **out);

/* The member that starts at `address`, or NULL: O(1), by the boundary hash. */
cmr_block *cmr_free_blocks_starting_at(const cmr_free_blocks *set, const void *address);

/* Moves every block of `from` into `into`, merging; `from` ends empty. */
void cmr_free_blocks_absorb(cmr_free_blocks *into, cmr_free_blocks *from);
/* Removes and returns a block, or NULL when empty: in a set kept by address
 * the lowest-addressed, else one of the smallest class. */
cmr_block *cmr_free_blocks_pop(cmr_free_blocks *set);
/* Calls `visit` on each block: in address order in a set kept by address,
 * else class by class. `visit` must not change the set. */
void cmr_free_blocks_each(const cmr_free_blocks *set, void (*visit)(const cmr_block *block, void *arg), void *arg);

/* The set's invariant check (invariants.h; the index runs it after each
 * change in a checking build): false, with the broken invariant in *why,
 * unless the class of `touched_size` (if not 0) agrees with its level's
 * bit and starts (its first 16 blocks) as a well-linked list of blocks of
 * that class. With `whole`, also every level and class, the counts and
 * bytes, both boundary hashes, the address order (no overlap, no two blocks
 * that should have merged) and, in a set kept by address, the treap. The
 * index asks for `whole` while the set holds at most
 * cmr_free_blocks_whole_check blocks: more made the checking builds' suites
 * several times slower (the arena's, 0.4 s, took 22 s at 1,024). */
enum { cmr_free_blocks_whole_check = 32 };
bool cmr_free_blocks_valid(const cmr_free_blocks *set, size_t touched_size, bool whole, const char **why);

#endif /* CMR_FREE_BLOCKS_H */
