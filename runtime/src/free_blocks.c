/* SPDX-License-Identifier: Apache-2.0 */
/* The free-block index: two treaps over the same records, one ordered by
 * (size, address) for best fit and one by address for first fit and for the
 * neighbours a returned block merges with. Both use the record's priority, so
 * a record sits at a similar depth in each; every operation walks a root path
 * of O(log n) expected length, and only clear and each visit every block.
 *
 * Changing a record's size or address changes its place in the orders, so a
 * record is always unlinked from both treaps first, changed, and linked back:
 * the orders and `largest` never see a half-changed record. */
#include <stdint.h>
#include <stdlib.h>

#include "free_blocks.h"

/* ---- records ---------------------------------------------------------------------- */

/* Priorities come from a counter through a bijective mixer (murmur3's
 * finalizer): deterministic from run to run, yet as good as random for the
 * treap's balance, and distinct for 2^32 records in a row of one thread.
 * Each thread counts on its own (a counter shared by every thread was one
 * cache line that every allocation of every thread wrote, which kept 16
 * threads from scaling), offset by the thread's number in the order threads
 * first made a record; equal priorities of different threads' records are
 * harmless. */
static _Atomic uint32_t cmr_block_threads;

typedef struct cmr_block_draws {
  uint32_t count;
  uint32_t offset;
  bool numbered;
} cmr_block_draws;

static _Thread_local cmr_block_draws cmr_thread_draws;

static uint32_t cmr_block_mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

cmr_status cmr_block_new(char *address, size_t size, size_t span, cmr_block **out) {
  cmr_block *block = calloc(1, sizeof *block);
  if (block == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_block_new: no host memory for the record of a %zu-byte block",
                     size);
  }
  block->address = address;
  block->size = size;
  block->span = span;
  block->largest = size;
  cmr_block_draws *draws = &cmr_thread_draws; /* one thread-local access (a call in a shared library) */
  if (!draws->numbered) {
    uint32_t thread = atomic_fetch_add_explicit(&cmr_block_threads, 1, memory_order_relaxed);
    draws->offset = thread * 0x9E3779B9u; /* thread 0 counts as the one shared counter did */
    draws->numbered = true;
  }
  block->priority = cmr_block_mix(draws->count++ ^ draws->offset);
  *out = block;
  return CMR_SUCCESS;
}

void cmr_block_delete(cmr_block *block) { free(block); }

/* ---- one treap, in either order ---------------------------------------------------- */

typedef enum { CMR_BY_SIZE, CMR_BY_ADDRESS } cmr_block_order;

static cmr_block **cmr_links(cmr_block *block, cmr_block_order order) {
  return order == CMR_BY_SIZE ? block->by_size : block->by_address;
}

/* Whether `a` comes before `b`. Keys are unique: no two free blocks share an
 * address. */
static bool cmr_before(const cmr_block *a, const cmr_block *b, cmr_block_order order) {
  if (order == CMR_BY_SIZE && a->size != b->size) return a->size < b->size;
  return a->address < b->address;
}

static size_t cmr_largest(const cmr_block *block) { return block == NULL ? 0 : block->largest; }

/* Recomputes what a node keeps about its subtree after its children changed. */
static void cmr_refresh(cmr_block *block, cmr_block_order order) {
  if (order != CMR_BY_ADDRESS) return;
  size_t largest = block->size;
  for (int side = 0; side < 2; side++) {
    size_t below = cmr_largest(block->by_address[side]);
    if (below > largest) largest = below;
  }
  block->largest = largest;
}

/* Splits `tree` into the nodes before `key` (*before) and the rest (*after). */
static void cmr_split(cmr_block *tree, const cmr_block *key, cmr_block_order order, cmr_block **before,
                      cmr_block **after) {
  if (tree == NULL) {
    *before = *after = NULL;
    return;
  }
  cmr_block **links = cmr_links(tree, order);
  if (cmr_before(tree, key, order)) {
    cmr_split(links[1], key, order, &links[1], after);
    *before = tree;
  } else {
    cmr_split(links[0], key, order, before, &links[0]);
    *after = tree;
  }
  cmr_refresh(tree, order);
}

/* Joins two treaps, every node of `left` coming before every node of `right`. */
static cmr_block *cmr_join(cmr_block *left, cmr_block *right, cmr_block_order order) {
  if (left == NULL) return right;
  if (right == NULL) return left;
  if (left->priority >= right->priority) {
    cmr_block **links = cmr_links(left, order);
    links[1] = cmr_join(links[1], right, order);
    cmr_refresh(left, order);
    return left;
  }
  cmr_block **links = cmr_links(right, order);
  links[0] = cmr_join(left, links[0], order);
  cmr_refresh(right, order);
  return right;
}

/* Goes down to where `block` outranks the node (or to a leaf) and splits the
 * rest below it, so the path is walked once. */
static cmr_block *cmr_treap_insert(cmr_block *tree, cmr_block *block, cmr_block_order order) {
  if (tree == NULL || block->priority > tree->priority) {
    cmr_block **links = cmr_links(block, order);
    cmr_split(tree, block, order, &links[0], &links[1]);
    cmr_refresh(block, order);
    return block;
  }
  cmr_block **links = cmr_links(tree, order);
  int side = cmr_before(tree, block, order);
  links[side] = cmr_treap_insert(links[side], block, order);
  cmr_refresh(tree, order);
  return tree;
}

/* Removes `block`, which must be in `tree`. */
static cmr_block *cmr_treap_remove(cmr_block *tree, cmr_block *block, cmr_block_order order) {
  cmr_block **links = cmr_links(tree, order);
  if (tree == block) return cmr_join(links[0], links[1], order);
  int side = cmr_before(tree, block, order);
  links[side] = cmr_treap_remove(links[side], block, order);
  cmr_refresh(tree, order);
  return tree;
}

/* ---- the set's own bookkeeping ------------------------------------------------------ */

/* Puts a block into both orders as it is, merging nothing. */
static void cmr_link(cmr_free_blocks *set, cmr_block *block) {
  set->by_size = cmr_treap_insert(set->by_size, block, CMR_BY_SIZE);
  set->by_address = cmr_treap_insert(set->by_address, block, CMR_BY_ADDRESS);
  set->count++;
  set->bytes += block->size;
}

static void cmr_unlink(cmr_free_blocks *set, cmr_block *block) {
  set->by_size = cmr_treap_remove(set->by_size, block, CMR_BY_SIZE);
  set->by_address = cmr_treap_remove(set->by_address, block, CMR_BY_ADDRESS);
  set->count--;
  set->bytes -= block->size;
}

/* The free block nearest `address` on the given side (0: the last one below
 * it, 1: the first one above it), or NULL. */
static cmr_block *cmr_neighbour(const cmr_free_blocks *set, const char *address, int side) {
  cmr_block *found = NULL;
  for (cmr_block *node = set->by_address; node != NULL;) {
    bool beyond = side == 0 ? node->address < address : node->address > address;
    if (beyond) found = node;
    /* Past the address on our side: look for a nearer one towards it. */
    node = node->by_address[beyond ? !side : side];
  }
  return found;
}

void cmr_free_blocks_init(cmr_free_blocks *set) { *set = (cmr_free_blocks){0}; }

static void cmr_delete_tree(cmr_block *tree) {
  if (tree == NULL) return;
  cmr_delete_tree(tree->by_address[0]);
  cmr_delete_tree(tree->by_address[1]);
  cmr_block_delete(tree);
}

void cmr_free_blocks_clear(cmr_free_blocks *set) {
  cmr_delete_tree(set->by_address);
  cmr_free_blocks_init(set);
}

/* ---- adding and removing -------------------------------------------------------------- */

cmr_block *cmr_free_blocks_insert(cmr_free_blocks *set, cmr_block *block) {
  cmr_block *left = cmr_neighbour(set, block->address, 0);
  cmr_block *right = cmr_neighbour(set, block->address, 1);
  cmr_block *kept = block;
  if (left != NULL && block->span == 0 && left->address + left->size == block->address) {
    cmr_unlink(set, left);
    left->size += block->size;
    cmr_block_delete(block);
    kept = left;
  }
  if (right != NULL && right->span == 0 && kept->address + kept->size == right->address) {
    cmr_unlink(set, right);
    kept->size += right->size;
    cmr_block_delete(right);
  }
  cmr_link(set, kept);
  return kept;
}

void cmr_free_blocks_remove(cmr_free_blocks *set, cmr_block *block) { cmr_unlink(set, block); }

/* ---- finding -------------------------------------------------------------------------- */

cmr_block *cmr_free_blocks_best_fit(const cmr_free_blocks *set, size_t needed) {
  /* The first block in (size, address) order whose size is at least needed. */
  cmr_block *found = NULL;
  for (cmr_block *node = set->by_size; node != NULL;) {
    if (node->size >= needed) {
      found = node;
      node = node->by_size[0];
    } else {
      node = node->by_size[1];
    }
  }
  return found;
}

cmr_block *cmr_free_blocks_first_fit(const cmr_free_blocks *set, size_t needed) {
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
  if (prefix != 0) status = cmr_block_new(block->address + prefix, size, 0, &taken);
  if (status == CMR_SUCCESS && suffix != 0) {
    status = cmr_block_new(block->address + prefix + size, suffix, 0, &rest);
    if (status != CMR_SUCCESS && taken != block) cmr_block_delete(taken);
  }
  if (status != CMR_SUCCESS) return status;

  /* The prefix stays in `block` and keeps its span; a taken piece that starts
   * the block is `block` itself and keeps it. Neither free piece can merge
   * with anything: the set held no mergeable neighbour of `block`. */
  cmr_unlink(set, block);
  if (prefix != 0) {
    block->size = prefix;
    cmr_link(set, block);
  } else {
    block->size = size;
  }
  if (rest != NULL) cmr_link(set, rest);
  taken->largest = taken->size;
  *out = taken;
  return CMR_SUCCESS;
}

/* ---- the whole set ------------------------------------------------------------------------ */

cmr_block *cmr_free_blocks_pop(cmr_free_blocks *set) {
  cmr_block *first = set->by_address;
  if (first == NULL) return NULL;
  while (first->by_address[0] != NULL) first = first->by_address[0];
  cmr_unlink(set, first);
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
  cmr_visit_tree(set->by_address, visit, arg);
}

size_t cmr_free_blocks_largest(const cmr_free_blocks *set) {
  return set->by_address != NULL ? set->by_address->largest : 0;
}
