/* SPDX-License-Identifier: Apache-2.0 */
/* The free-block index: size classes (two-level segregated fit) for good
 * fit, hashes of the blocks' start and end addresses for the neighbours a
 * returned block merges with, and, in a set kept by address, a treap by
 * address for first fit (with the largest size of each subtree).
 *
 * Changing a record's size or address changes its class, its end and its
 * place in the orders, so a record is always unlinked from every index
 * first, changed, and linked back: no index ever sees a half-changed record. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "free_blocks.h"
#include "invariants.h"

/* The steps every insert, merge and take goes through, inlined into them:
 * out of line, each was a call that saved registers around a few loads and
 * stores. */
#define CMR_INDEX_STEP static inline __attribute__((always_inline))

/* ---- records ---------------------------------------------------------------------- */

cmr_status cmr_block_new(char *address, size_t size, size_t span, cmr_block **out) {
  cmr_block *block = calloc(1, sizeof *block);
  if (block == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_block_new: no host memory for the record of a %zu-byte block", size);
  }
  block->address = address;
  block->size = size;
  block->span = span;
  block->largest = size;
  *out = block;
  return CMR_SUCCESS;
}

void cmr_block_delete(cmr_block *block) { free(block); }

/* ---- size classes ------------------------------------------------------------------ */

enum { cmr_class_count = cmr_class_levels * cmr_class_steps, cmr_granule_bits = 8 };

static unsigned cmr_class_of_granules(size_t granules) {
  if (granules < cmr_class_steps) return (unsigned)granules;
  unsigned top = 63u - (unsigned)__builtin_clzll((unsigned long long)granules); /* >= 4 */
  unsigned step = (unsigned)(granules >> (top - 4)) & (cmr_class_steps - 1);
  return (top - 3) * cmr_class_steps + step;
}

/* The fewest granules a block of class `class` has. */
static size_t cmr_class_floor(unsigned class) {
  unsigned level = class / cmr_class_steps, step = class % cmr_class_steps;
  return level == 0 ? step : (size_t)(cmr_class_steps + step) << (level - 1);
}

unsigned cmr_free_blocks_class(size_t size) { return cmr_class_of_granules(size >> cmr_granule_bits); }

static cmr_block **cmr_class_head(cmr_free_blocks *set, unsigned class) {
  return &set->classes[class / cmr_class_steps][class % cmr_class_steps];
}

static bool cmr_class_used(const cmr_free_blocks *set, unsigned class) {
  return (set->steps[class / cmr_class_steps] >> (class % cmr_class_steps)) & 1u;
}

/* Pushes `block` on its class's list (whose head is valid only while the
 * class's bit is set: an empty set needs no clearing of the heads). */
CMR_INDEX_STEP void cmr_class_link(cmr_free_blocks *set, cmr_block *block) {
  unsigned class = cmr_free_blocks_class(block->size);
  block->size_class = (uint16_t) class;
  cmr_block **head = cmr_class_head(set, class);
  cmr_block *next = cmr_class_used(set, class) ? *head : NULL;
  block->in_class[0] = NULL;
  block->in_class[1] = next;
  if (next != NULL) next->in_class[0] = block;
  *head = block;
  set->steps[class / cmr_class_steps] |= (uint16_t)(1u << (class % cmr_class_steps));
  set->levels |= UINT64_C(1) << (class / cmr_class_steps);
}

CMR_INDEX_STEP void cmr_class_unlink(cmr_free_blocks *set, cmr_block *block) {
  unsigned class = block->size_class;
  cmr_block *previous = block->in_class[0], *next = block->in_class[1];
  if (previous != NULL) {
    previous->in_class[1] = next;
  } else {
    *cmr_class_head(set, class) = next;
  }
  if (next != NULL) next->in_class[0] = previous;
  if (previous == NULL && next == NULL) {
    unsigned level = class / cmr_class_steps;
    set->steps[level] &= (uint16_t) ~(1u << (class % cmr_class_steps));
    if (set->steps[level] == 0) set->levels &= ~(UINT64_C(1) << level);
  }
}

/* The first non-empty class at or above `class` (< cmr_class_count), or
 * cmr_class_count: two bitmap scans. */
CMR_INDEX_STEP unsigned cmr_next_used(const cmr_free_blocks *set, unsigned class) {
  if (class >= cmr_class_count) return cmr_class_count;
  unsigned level = class / cmr_class_steps;
  unsigned steps = set->steps[level] & (0xFFFFu << (class % cmr_class_steps));
  if (steps == 0) {
    uint64_t levels = level + 1 < cmr_class_levels ? set->levels & (~UINT64_C(0) << (level + 1)) : 0;
    if (levels == 0) return cmr_class_count;
    level = (unsigned)__builtin_ctzll(levels);
    steps = set->steps[level];
  }
  return level * cmr_class_steps + (unsigned)__builtin_ctz(steps);
}

/* The head of the first non-empty class at or above `class`, or NULL. */
static cmr_block *cmr_first_from(const cmr_free_blocks *set, unsigned class) {
  unsigned used = cmr_next_used(set, class);
  return used < cmr_class_count ? set->classes[used / cmr_class_steps][used % cmr_class_steps] : NULL;
}

/* ---- boundaries: the blocks by start [0] and by end [1] address --------------------- */

enum { cmr_inline_bits = 3 }; /* 2^3 == cmr_inline_buckets */

static char *cmr_boundary(const cmr_block *block, int side) {
  return side == 0 ? block->address : block->address + block->size;
}

static cmr_block **cmr_buckets(const cmr_free_blocks *set) {
  return set->buckets != NULL ? set->buckets : (cmr_block **)set->inline_buckets;
}

/* The top bits of a multiplicative hash (addresses are 256-aligned: the low
 * bits carry nothing). */
static size_t cmr_bucket(unsigned bits, int side, const char *boundary) {
  uint64_t hash = ((uint64_t)(uintptr_t)boundary >> cmr_granule_bits) * UINT64_C(0x9E3779B97F4A7C15);
  return ((size_t)side << bits) + (size_t)(hash >> (64 - bits));
}

static void cmr_bucket_push(cmr_block **buckets, unsigned bits, cmr_block *block, int side) {
  cmr_block **slot = &buckets[cmr_bucket(bits, side, cmr_boundary(block, side))];
  block->in_bucket[side] = *slot;
  *slot = block;
}

static void cmr_boundaries_link(cmr_free_blocks *set, cmr_block *block) {
  cmr_block **buckets = cmr_buckets(set);
  cmr_bucket_push(buckets, set->bucket_bits, block, 0);
  cmr_bucket_push(buckets, set->bucket_bits, block, 1);
}

CMR_INDEX_STEP void cmr_bucket_unlink(cmr_free_blocks *set, cmr_block *block, int side) {
  cmr_block **link = &cmr_buckets(set)[cmr_bucket(set->bucket_bits, side, cmr_boundary(block, side))];
  while (*link != block) link = &(*link)->in_bucket[side];
  *link = block->in_bucket[side];
}

static void cmr_boundaries_unlink(cmr_free_blocks *set, cmr_block *block) {
  cmr_bucket_unlink(set, block, 0);
  cmr_bucket_unlink(set, block, 1);
}

/* The block whose start (side 0) or end (side 1) is `boundary`, or NULL. */
CMR_INDEX_STEP cmr_block *cmr_at_boundary(const cmr_free_blocks *set, int side, const char *boundary) {
  cmr_block *block = cmr_buckets(set)[cmr_bucket(set->bucket_bits, side, boundary)];
  while (block != NULL && cmr_boundary(block, side) != boundary) block = block->in_bucket[side];
  return block;
}

cmr_block *cmr_free_blocks_starting_at(const cmr_free_blocks *set, const void *address) {
  return cmr_at_boundary(set, 0, address);
}

/* Four times the buckets once there are more blocks than buckets. Without
 * host memory for the table the chains just get longer. */
static void cmr_boundaries_grow(cmr_free_blocks *set) {
  unsigned bits = set->bucket_bits + 2;
  size_t total = (size_t)2 << bits;
  cmr_block **grown = malloc(total * sizeof *grown);
  if (grown == NULL) return;
  for (size_t i = 0; i < total; i++) grown[i] = NULL;
  cmr_block **old = cmr_buckets(set);
  size_t old_total = (size_t)2 << set->bucket_bits;
  for (size_t i = 0; i < old_total; i++) {
    int side = i >= old_total / 2;
    for (cmr_block *block = old[i], *next; block != NULL; block = next) {
      next = block->in_bucket[side];
      cmr_bucket_push(grown, bits, block, side);
    }
  }
  free(set->buckets);
  set->buckets = grown;
  set->bucket_bits = bits;
}

/* An emptied set goes back to its inline buckets. */
static void cmr_boundaries_reset(cmr_free_blocks *set) {
  free(set->buckets);
  set->buckets = NULL;
  set->bucket_bits = cmr_inline_bits;
  for (int i = 0; i < 2 * cmr_inline_buckets; i++) set->inline_buckets[i] = NULL;
}

/* ---- the address treap (sets kept by address) ---------------------------------------- */

/* A block's treap priority: its address through a bijective mixer (murmur3's
 * 64-bit finalizer), as good as random for the treap's balance, the same
 * from run to run, and drawn from no shared counter nor thread-local state
 * (each was a cost on every split). */
static uint32_t cmr_priority_of(const char *address) {
  uint64_t x = (uint64_t)(uintptr_t)address >> cmr_granule_bits;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  x *= UINT64_C(0xc4ceb9fe1a85ec53);
  x ^= x >> 33;
  return (uint32_t)x;
}

static size_t cmr_largest(const cmr_block *block) { return block == NULL ? 0 : block->largest; }

/* Recomputes the largest size in a node's subtree after its children changed. */
static void cmr_refresh(cmr_block *block) {
  size_t largest = block->size;
  for (int side = 0; side < 2; side++) {
    size_t below = cmr_largest(block->by_address[side]);
    if (below > largest) largest = below;
  }
  block->largest = largest;
}

/* Makes `child` (which may be NULL) the child of `node` on `side`. */
static void cmr_adopt(cmr_block *node, int side, cmr_block *child) {
  node->by_address[side] = child;
  if (child != NULL) child->above = node;
}

/* Splits `tree` into the nodes below `key`'s address (*before) and the rest
 * (*after); the parent links of the two roots are the caller's to set. */
static void cmr_split(cmr_block *tree, const cmr_block *key, cmr_block **before, cmr_block **after) {
  if (tree == NULL) {
    *before = *after = NULL;
    return;
  }
  cmr_block *below;
  if (tree->address < key->address) {
    cmr_split(tree->by_address[1], key, &below, after);
    cmr_adopt(tree, 1, below);
    *before = tree;
  } else {
    cmr_split(tree->by_address[0], key, before, &below);
    cmr_adopt(tree, 0, below);
    *after = tree;
  }
  cmr_refresh(tree);
}

/* Joins two treaps, every node of `left` below every node of `right`; the
 * parent link of the root returned is the caller's to set. */
static cmr_block *cmr_join(cmr_block *left, cmr_block *right) {
  if (left == NULL) return right;
  if (right == NULL) return left;
  if (left->priority >= right->priority) {
    cmr_adopt(left, 1, cmr_join(left->by_address[1], right));
    cmr_refresh(left);
    return left;
  }
  cmr_adopt(right, 0, cmr_join(left, right->by_address[0]));
  cmr_refresh(right);
  return right;
}

/* Goes down to where `block` outranks the node (or to a leaf) and splits the
 * rest below it, so the path is walked once; the nodes above gain `block`,
 * so their largest is raised on the way down. */
static cmr_block *cmr_treap_insert(cmr_block *tree, cmr_block *block) {
  cmr_block **link = &tree, *parent = NULL;
  while (*link != NULL && block->priority <= (*link)->priority) {
    cmr_block *node = *link;
    if (node->largest < block->size) node->largest = block->size;
    parent = node;
    link = &node->by_address[node->address < block->address];
  }
  cmr_block *before, *after;
  cmr_split(*link, block, &before, &after);
  cmr_adopt(block, 0, before);
  cmr_adopt(block, 1, after);
  cmr_refresh(block);
  block->above = parent;
  *link = block;
  return tree;
}

/* Refreshes `largest` from `node` up to the root, only as far as it
 * changes: a node whose largest stays leaves every node above it as it
 * was. */
static void cmr_treap_refresh_up(cmr_block *node) {
  for (; node != NULL; node = node->above) {
    size_t before = node->largest;
    cmr_refresh(node);
    if (node->largest == before) return;
  }
}

/* Removes `block`, which must be in `tree`: its children's join takes its
 * place, and `largest` is refreshed above it. */
static cmr_block *cmr_treap_remove(cmr_block *tree, cmr_block *block) {
  cmr_block *parent = block->above;
  cmr_block *joined = cmr_join(block->by_address[0], block->by_address[1]);
  if (parent == NULL) {
    if (joined != NULL) joined->above = NULL;
    return joined;
  }
  cmr_adopt(parent, parent->by_address[1] == block, joined);
  cmr_treap_refresh_up(parent);
  return tree;
}

/* Refreshes `largest` from `block` up, its size having changed in place
 * from `was` bytes (its address too, past no other node's: its place stays).
 * A block that grew raises `largest` above it only as far as it is below
 * the new size (an ancestor's largest is never below a descendant's); one
 * that shrank has it recomputed as far as it changes. */
static void cmr_treap_resized(cmr_block *block, size_t was) {
  if (block->size >= was) {
    for (cmr_block *node = block; node != NULL && node->largest < block->size; node = node->above) {
      node->largest = block->size;
    }
    return;
  }
  cmr_treap_refresh_up(block);
}

/* ---- the set's own bookkeeping ------------------------------------------------------ */

static void cmr_check(const cmr_free_blocks *set, size_t touched_size) {
  CMR_CHECK(cmr_free_blocks_valid, set, touched_size, set->count <= cmr_free_blocks_whole_check);
}

/* Puts a block into every index as it is, merging nothing. */
CMR_INDEX_STEP void cmr_link(cmr_free_blocks *set, cmr_block *block) {
  cmr_class_link(set, block);
  cmr_boundaries_link(set, block);
  if (set->keeps_address_order) {
    block->priority = cmr_priority_of(block->address);
    set->by_address = cmr_treap_insert(set->by_address, block);
  }
  set->count++;
  set->bytes += block->size;
  if (set->count > ((size_t)1 << set->bucket_bits) && set->bucket_bits < 48) cmr_boundaries_grow(set);
}

CMR_INDEX_STEP void cmr_unlink(cmr_free_blocks *set, cmr_block *block) {
  cmr_class_unlink(set, block);
  cmr_boundaries_unlink(set, block);
  if (set->keeps_address_order) set->by_address = cmr_treap_remove(set->by_address, block);
  set->count--;
  set->bytes -= block->size;
}

/* Gives a member a new range (one that crosses no other member), touching
 * only the indexes that change: its class, if it changes; the hash of each
 * end that moves; in a set kept by address, `largest` along its root path
 * (its place in the order stays, and so does its priority). */
CMR_INDEX_STEP void cmr_move(cmr_free_blocks *set, cmr_block *block, char *address, size_t size) {
  bool same_class = cmr_free_blocks_class(size) == block->size_class;
  bool same_start = address == block->address;
  bool same_end = address + size == block->address + block->size;
  if (!same_class) cmr_class_unlink(set, block);
  if (!same_start) cmr_bucket_unlink(set, block, 0);
  if (!same_end) cmr_bucket_unlink(set, block, 1);
  size_t was = block->size;
  set->bytes = set->bytes - was + size;
  block->address = address;
  block->size = size;
  if (!same_class) cmr_class_link(set, block);
  if (!same_start) cmr_bucket_push(cmr_buckets(set), set->bucket_bits, block, 0);
  if (!same_end) cmr_bucket_push(cmr_buckets(set), set->bucket_bits, block, 1);
  if (set->keeps_address_order) cmr_treap_resized(block, was);
}

/* A record merged away, kept for a take to reuse: up to cmr_spare_records,
 * or as many as the bucket table has slots, whichever is more. A set that
 * splits about as often as it merges (many blocks allocated, then freed,
 * in rounds) then reuses its records instead of asking malloc for one at
 * every split of the next round, and what it keeps stays in proportion to
 * its index at its largest, as the bucket table does (all of it is freed
 * when the set empties). */
CMR_INDEX_STEP void cmr_retire(cmr_free_blocks *set, cmr_block *block) {
  if (set->spare_count >= cmr_spare_records && set->spare_count >= ((size_t)2 << set->bucket_bits)) {
    cmr_block_delete(block);
    return;
  }
  block->in_class[1] = set->spares;
  set->spares = block;
  set->spare_count++;
}

/* The record of a new free piece (span 0): a spare, else a new one. */
CMR_INDEX_STEP cmr_status cmr_piece(cmr_free_blocks *set, char *address, size_t size, cmr_block **out) {
  cmr_block *block = set->spares;
  if (block == NULL) return cmr_block_new(address, size, 0, out);
  set->spares = block->in_class[1];
  set->spare_count--;
  block->address = address;
  block->size = size;
  block->span = 0;
  block->largest = size;
  block->requested = 0;
  *out = block;
  return CMR_SUCCESS;
}

static void cmr_free_spares(cmr_free_blocks *set) {
  while (set->spares != NULL) {
    cmr_block *spare = set->spares;
    set->spares = spare->in_class[1];
    cmr_block_delete(spare);
  }
  set->spare_count = 0;
}

/* An emptied set gives back the memory it held: its bucket table and its
 * spare records (so that init may follow). */
static void cmr_release_if_empty(cmr_free_blocks *set) {
  if (set->count != 0) return;
  if (set->buckets != NULL) cmr_boundaries_reset(set);
  cmr_free_spares(set);
}

static void cmr_init(cmr_free_blocks *set, bool by_address) {
  /* The class heads stay as they are: they are read only under a set bit. */
  set->count = 0;
  set->bytes = 0;
  set->levels = 0;
  memset(set->steps, 0, sizeof set->steps);
  set->buckets = NULL;
  cmr_boundaries_reset(set);
  set->keeps_address_order = by_address;
  set->by_address = NULL;
  set->spares = NULL;
  set->spare_count = 0;
}

void cmr_free_blocks_init(cmr_free_blocks *set) { cmr_init(set, false); }

void cmr_free_blocks_init_by_address(cmr_free_blocks *set) { cmr_init(set, true); }

void cmr_free_blocks_clear(cmr_free_blocks *set) {
  for (unsigned class = cmr_next_used(set, 0); class < cmr_class_count; class = cmr_next_used(set, class + 1)) {
    for (cmr_block *block = *cmr_class_head(set, class), *next; block != NULL; block = next) {
      next = block->in_class[1];
      cmr_block_delete(block);
    }
  }
  free(set->buckets);
  cmr_free_spares(set);
  cmr_init(set, set->keeps_address_order);
}

/* ---- adding and removing -------------------------------------------------------------- */

cmr_block *cmr_free_blocks_insert(cmr_free_blocks *set, cmr_block *block) {
  cmr_block *left = block->span == 0 ? cmr_at_boundary(set, 1, block->address) : NULL;
  cmr_block *right = cmr_at_boundary(set, 0, block->address + block->size);
  if (right != NULL && right->span != 0) right = NULL;
  /* A neighbour grows over the block in place (cheaper than relinking). */
  cmr_block *kept = left != NULL ? left : right != NULL ? right : block;
  if (left != NULL) {
    size_t size = left->size + block->size;
    if (right != NULL) {
      cmr_unlink(set, right);
      size += right->size;
      cmr_retire(set, right);
    }
    cmr_move(set, left, left->address, size);
  } else if (right != NULL) {
    cmr_move(set, right, block->address, block->size + right->size);
    right->span = block->span;
  } else {
    cmr_link(set, block);
  }
  if (kept != block) cmr_retire(set, block);
  cmr_check(set, kept->size);
  return kept;
}

void cmr_free_blocks_remove(cmr_free_blocks *set, cmr_block *block) {
  cmr_unlink(set, block);
  cmr_release_if_empty(set);
  cmr_check(set, block->size);
}

/* ---- finding -------------------------------------------------------------------------- */

/* How many blocks of the request's own class a good-fit take looks at first. */
enum { cmr_own_class_looks = 8 };

cmr_block *cmr_free_blocks_best_fit(const cmr_free_blocks *set, size_t needed) {
  size_t granules = (needed >> cmr_granule_bits) + ((needed & ((1u << cmr_granule_bits) - 1)) != 0);
  if (set->count == 0 || granules > (SIZE_MAX >> cmr_granule_bits)) return NULL;
  unsigned own = cmr_class_of_granules(granules);
  /* Every block of `own` fits when `needed` is its floor; else the next
   * class is the first whose every block does. */
  unsigned first = own + (cmr_class_floor(own) != granules);
  /* A block of the request's own class that fits leaves less behind than
   * any of the next: the first few are looked at before the next class
   * (bounded, so a take stays O(1); the replay's held/peak depends on it). */
  if (first != own && cmr_class_used(set, own)) {
    cmr_block *block = set->classes[own / cmr_class_steps][own % cmr_class_steps];
    for (unsigned looked = 0; block != NULL && looked < cmr_own_class_looks; ++looked, block = block->in_class[1]) {
      if (block->size >= needed) return block;
    }
  }
  cmr_block *found = first < cmr_class_count ? cmr_first_from(set, first) : NULL;
  if (found != NULL || first == own || !cmr_class_used(set, own)) return found;
  found = set->classes[own / cmr_class_steps][own % cmr_class_steps];
  while (found != NULL && found->size < needed) found = found->in_class[1];
  return found;
}

cmr_block *cmr_free_blocks_first_fit(const cmr_free_blocks *set, size_t needed) {
  CMR_INVARIANT(set->keeps_address_order || set->count == 0);
  /* `largest` says which subtree holds a fitting block; the left one first. */
  cmr_block *node = set->by_address;
  if (node == NULL || node->largest < needed) return NULL;
  /* The subtree at `node` always holds a fitting block. */
  for (;;) {
    cmr_block *left = node->by_address[0];
    if (left != NULL && left->largest >= needed) {
      node = left;
    } else if (node->size >= needed) {
      return node;
    } else {
      node = node->by_address[1];
    }
  }
}

size_t cmr_free_blocks_largest(const cmr_free_blocks *set) {
  if (set->keeps_address_order) return cmr_largest(set->by_address);
  if (set->levels == 0) return 0;
  unsigned level = 63u - (unsigned)__builtin_clzll(set->levels);
  unsigned step = 31u - (unsigned)__builtin_clz(set->steps[level]);
  size_t largest = 0;
  for (const cmr_block *block = set->classes[level][step]; block != NULL; block = block->in_class[1]) {
    if (block->size > largest) largest = block->size;
  }
  return largest;
}

/* ---- taking -------------------------------------------------------------------------- */

cmr_status cmr_free_blocks_take(cmr_free_blocks *set, cmr_block *block, size_t size, size_t alignment,
                                cmr_block **out) {
  uintptr_t start = (uintptr_t)block->address;
  /* Offsets from the block's start keep the pointer arithmetic on `address`. */
  size_t prefix = (size_t)(((start + alignment - 1) & ~(uintptr_t)(alignment - 1)) - start);
  size_t suffix = block->size - prefix - size;

  /* Every record is made before the set changes, so a failure leaves it whole. */
  cmr_block *taken = block;
  cmr_block *rest = NULL;
  cmr_status status = CMR_SUCCESS;
  if (prefix != 0 || suffix != 0) status = cmr_piece(set, block->address + prefix, size, &taken);
  if (status == CMR_SUCCESS && prefix != 0 && suffix != 0) {
    status = cmr_piece(set, block->address + prefix + size, suffix, &rest);
    if (status != CMR_SUCCESS) cmr_block_delete(taken);
  }
  if (status != CMR_SUCCESS) return status;

  /* `block` stays as the prefix, keeping its span, or as the suffix, giving
   * its span to the taken piece; taken whole, it leaves. Neither free piece
   * can merge with anything: the set held no mergeable neighbour of `block`. */
  size_t was = block->size;
  if (prefix == 0 && suffix == 0) {
    cmr_unlink(set, block);
    cmr_release_if_empty(set);
  } else if (prefix == 0) {
    taken->span = block->span;
    block->span = 0;
    cmr_move(set, block, block->address + size, suffix);
  } else {
    cmr_move(set, block, block->address, prefix);
    if (rest != NULL) cmr_link(set, rest);
  }
  taken->largest = taken->size;
  cmr_check(set, was);
  if (prefix != 0) cmr_check(set, prefix);
  if (suffix != 0) cmr_check(set, suffix);
  *out = taken;
  return CMR_SUCCESS;
}

/* ---- the whole set ------------------------------------------------------------------------ */

cmr_block *cmr_free_blocks_pop(cmr_free_blocks *set) {
  cmr_block *first = NULL;
  if (set->keeps_address_order) {
    first = set->by_address;
    while (first != NULL && first->by_address[0] != NULL) first = first->by_address[0];
  } else if (set->count != 0) {
    first = cmr_first_from(set, 0);
  }
  if (first != NULL) cmr_free_blocks_remove(set, first);
  return first;
}

void cmr_free_blocks_absorb(cmr_free_blocks *into, cmr_free_blocks *from) {
  for (cmr_block *block; (block = cmr_free_blocks_pop(from)) != NULL;) cmr_free_blocks_insert(into, block);
}

static void cmr_visit_tree(const cmr_block *tree, void (*visit)(const cmr_block *block, void *arg), void *arg) {
  if (tree == NULL) return;
  cmr_visit_tree(tree->by_address[0], visit, arg);
  visit(tree, arg);
  cmr_visit_tree(tree->by_address[1], visit, arg);
}

void cmr_free_blocks_each(const cmr_free_blocks *set, void (*visit)(const cmr_block *block, void *arg), void *arg) {
  if (set->keeps_address_order) {
    cmr_visit_tree(set->by_address, visit, arg);
    return;
  }
  for (unsigned class = cmr_next_used(set, 0); class < cmr_class_count; class = cmr_next_used(set, class + 1)) {
    for (const cmr_block *block = set->classes[class / cmr_class_steps][class % cmr_class_steps]; block != NULL;
         block = block->in_class[1]) {
      visit(block, arg);
    }
  }
}

/* ---- the invariant check ------------------------------------------------------------------ */

static bool cmr_broken(const char **why, const char *reason) {
  *why = reason;
  return false;
}

/* Up to `limit` blocks of `class`: linked both ways, sized for the class;
 * counted into *count and *bytes. */
static bool cmr_class_valid(const cmr_free_blocks *set, unsigned class, size_t limit, size_t *count, size_t *bytes,
                            const char **why) {
  if (!cmr_class_used(set, class)) return true;
  const cmr_block *previous = NULL;
  size_t seen = 0;
  for (const cmr_block *block = set->classes[class / cmr_class_steps][class % cmr_class_steps];
       block != NULL && seen < limit; block = block->in_class[1], seen++) {
    if (seen >= set->count) return cmr_broken(why, "a class list holds more blocks than the set (a cycle?)");
    if (block->in_class[0] != previous) return cmr_broken(why, "a class list's back link is wrong");
    if (block->size == 0 || block->size % 256 != 0 || (uintptr_t)block->address % 256 != 0) {
      return cmr_broken(why, "a block's size or address is not a multiple of 256");
    }
    if (cmr_free_blocks_class(block->size) != class || block->size_class != class) {
      return cmr_broken(why, "a block is in a class its size does not say");
    }
    *count += 1;
    *bytes += block->size;
    previous = block;
  }
  if (seen == 0) return cmr_broken(why, "a class's bit is set but its list is empty");
  return true;
}

/* Every bucket entry hashes there, and each hash holds `count` blocks. */
static bool cmr_buckets_valid(const cmr_free_blocks *set, const char **why) {
  cmr_block *const *buckets = cmr_buckets(set);
  size_t per_side = (size_t)1 << set->bucket_bits;
  for (int side = 0; side < 2; side++) {
    size_t entries = 0;
    for (size_t i = 0; i < per_side; i++) {
      for (const cmr_block *block = buckets[((size_t)side << set->bucket_bits) + i]; block != NULL;
           block = block->in_bucket[side]) {
        if (++entries > set->count) return cmr_broken(why, "a boundary hash holds more blocks than the set");
        if (cmr_bucket(set->bucket_bits, side, cmr_boundary(block, side)) != ((size_t)side << set->bucket_bits) + i) {
          return cmr_broken(why, "a block is in the wrong bucket of a boundary hash");
        }
      }
    }
    if (entries != set->count) return cmr_broken(why, "a boundary hash holds fewer blocks than the set");
  }
  return true;
}

static int cmr_by_address(const void *a, const void *b) {
  const cmr_block *x = *(const cmr_block *const *)a, *y = *(const cmr_block *const *)b;
  return (x->address > y->address) - (x->address < y->address);
}

/* Up to `capacity` blocks of the treap below `node`, in address order. */
static void cmr_collect_tree(const cmr_block *node, const cmr_block **blocks, size_t capacity, size_t *n) {
  if (node == NULL || *n == capacity) return;
  cmr_collect_tree(node->by_address[0], blocks, capacity, n);
  if (*n < capacity) blocks[(*n)++] = node;
  cmr_collect_tree(node->by_address[1], blocks, capacity, n);
}

/* In address order (the treap's, or sorted): no overlap, no two touching
 * blocks that should have merged; then each block found at its start and
 * its end. */
static bool cmr_order_valid(const cmr_free_blocks *set, const char **why) {
  /* On the stack for the checks after each change (no allocator call on
   * every change of a checking build); allocated for a larger set. */
  const cmr_block *small[cmr_free_blocks_whole_check];
  const cmr_block **blocks = set->count <= cmr_free_blocks_whole_check ? small : malloc(set->count * sizeof *blocks);
  if (blocks == NULL) return true; /* nothing to check it with: not a broken set */
  size_t n = 0;
  if (set->keeps_address_order) {
    cmr_collect_tree(set->by_address, blocks, set->count, &n); /* the treap's own order is checked apart */
  } else {
    for (unsigned class = cmr_next_used(set, 0); class < cmr_class_count; class = cmr_next_used(set, class + 1)) {
      for (const cmr_block *block = set->classes[class / cmr_class_steps][class % cmr_class_steps]; block != NULL;
           block = block->in_class[1]) {
        blocks[n++] = block;
      }
    }
    qsort(blocks, n, sizeof *blocks, cmr_by_address);
  }
  const char *reason = NULL;
  for (size_t i = 1; i < n && reason == NULL; i++) {
    const char *end = blocks[i - 1]->address + blocks[i - 1]->size;
    if (end > blocks[i]->address) reason = "two free blocks overlap";
    if (end == blocks[i]->address && blocks[i]->span == 0) reason = "two touching free blocks were not merged";
  }
  for (size_t i = 0; i < n && reason == NULL; i++) {
    if (cmr_at_boundary(set, 0, blocks[i]->address) != blocks[i]) {
      reason = "a block is not found by its start address";
    } else if (cmr_at_boundary(set, 1, blocks[i]->address + blocks[i]->size) != blocks[i]) {
      reason = "a block is not found by its end address";
    }
  }
  if (blocks != small) free(blocks);
  return reason == NULL || cmr_broken(why, reason);
}

/* The treap below `node`: addresses within (low, high), priorities no
 * higher than the parent's, `largest` and the parent links right; counts
 * the nodes. */
static bool cmr_treap_valid(const cmr_block *node, const char *low, const char *high, uint32_t parent, size_t *count,
                            const char **why) {
  if (node == NULL) return true;
  if ((low != NULL && node->address <= low) || (high != NULL && node->address >= high)) {
    return cmr_broken(why, "the address treap is out of order");
  }
  if (node->priority > parent) return cmr_broken(why, "the address treap has a priority above its parent's");
  size_t largest = node->size;
  for (int side = 0; side < 2; side++) {
    if (cmr_largest(node->by_address[side]) > largest) largest = cmr_largest(node->by_address[side]);
  }
  if (node->largest != largest) return cmr_broken(why, "a treap node's largest size is wrong");
  for (int side = 0; side < 2; side++) {
    if (node->by_address[side] != NULL && node->by_address[side]->above != node) {
      return cmr_broken(why, "a treap node's parent link is wrong");
    }
  }
  ++*count;
  return cmr_treap_valid(node->by_address[0], low, node->address, node->priority, count, why) &&
         cmr_treap_valid(node->by_address[1], node->address, high, node->priority, count, why);
}

/* Bit `level` of the level bitmap is set just when that level has a class. */
static bool cmr_level_valid(const cmr_free_blocks *set, unsigned level, const char **why) {
  if (((set->levels >> level) & 1u) != (set->steps[level] != 0)) {
    return cmr_broken(why, "the level bitmap disagrees with a level's step bitmap");
  }
  return true;
}

bool cmr_free_blocks_valid(const cmr_free_blocks *set, size_t touched_size, bool whole, const char **why) {
  if ((set->levels >> cmr_class_levels) != 0) return cmr_broken(why, "the level bitmap has a bit past the last level");
  for (unsigned level = 0; whole && level < cmr_class_levels; level++) {
    if (!cmr_level_valid(set, level, why)) return false;
  }
  if (touched_size != 0 && !cmr_level_valid(set, cmr_free_blocks_class(touched_size) / cmr_class_steps, why)) {
    return false;
  }
  if (!set->keeps_address_order && set->by_address != NULL) return cmr_broken(why, "an unordered set has a treap");
  /* The spares are counted on a whole check of a few of them only: there
   * may be thousands, and the checks run after every change. */
  size_t spares = set->spare_count;
  if (whole && set->spare_count <= cmr_free_blocks_whole_check) {
    spares = 0;
    for (const cmr_block *spare = set->spares; spare != NULL && spares <= set->spare_count;
         spare = spare->in_class[1]) {
      spares++;
    }
  }
  if (spares != set->spare_count || (set->spares == NULL) != (spares == 0)) {
    return cmr_broken(why, "the spare records disagree with their count");
  }
  if (set->count == 0 && (spares != 0 || set->buckets != NULL)) return cmr_broken(why, "an empty set holds memory");
  size_t count = 0, bytes = 0;
  if (touched_size != 0 &&
      !cmr_class_valid(set, cmr_free_blocks_class(touched_size), whole ? SIZE_MAX : 16, &count, &bytes, why)) {
    return false;
  }
  if (!whole) return true;
  count = bytes = 0;
  for (unsigned class = cmr_next_used(set, 0); class < cmr_class_count; class = cmr_next_used(set, class + 1)) {
    if (!cmr_class_valid(set, class, SIZE_MAX, &count, &bytes, why)) return false;
  }
  if (count != set->count) return cmr_broken(why, "the classes hold another number of blocks than the count");
  if (bytes != set->bytes) return cmr_broken(why, "the classes hold another number of bytes than the total");
  if (set->keeps_address_order) {
    size_t nodes = 0;
    if (set->by_address != NULL && set->by_address->above != NULL) {
      return cmr_broken(why, "the treap's root has a parent");
    }
    if (!cmr_treap_valid(set->by_address, NULL, NULL, UINT32_MAX, &nodes, why)) return false;
    if (nodes != set->count) return cmr_broken(why, "the address treap holds another number of blocks than the count");
  }
  return cmr_order_valid(set, why) && cmr_buckets_valid(set, why);
}
