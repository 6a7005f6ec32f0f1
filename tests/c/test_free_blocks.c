/* SPDX-License-Identifier: Apache-2.0 */
/* The free-block index: good and first fit, merging and its one exception
 * (the start of a unit), take at every alignment, absorb, pop and each, a
 * failed take, the index's own invariant check (on sets broken on purpose),
 * and a long random run, in sets kept by address and not, checked step by
 * step against a sorted array of free ranges and against that check.
 *
 * Addresses are made up (a base far from anything mapped plus an offset):
 * the index never touches the memory its blocks describe. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "free_blocks.h"
#include "test_util.h"

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)

/* Check records every passing ck_assert (a write per assertion in forking
 * mode), so the per-node checks below only call into Check on failure. */
#define require(condition, ...)                  \
  do {                                           \
    if (!(condition)) ck_abort_msg(__VA_ARGS__); \
  } while (0)

/* 1 GiB: aligned to every alignment the tests ask for. */
static const uintptr_t base = (uintptr_t)1 << 30;

static char *at(size_t offset) { return (char *)(base + offset); }
static size_t offset_of(const cmr_block *block) { return (size_t)((uintptr_t)block->address - base); }

static cmr_block *new_block(size_t offset, size_t size, size_t span) {
  cmr_block *block = NULL;
  cmr_status status = cmr_block_new(at(offset), size, span, &block);
  require(status == CMR_SUCCESS && block != NULL, "cmr_block_new: %s", cmr_last_error_message());
  return block;
}

static cmr_block *add(cmr_free_blocks *set, size_t offset, size_t size, size_t span) {
  return cmr_free_blocks_insert(set, new_block(offset, size, span));
}

/* A deterministic generator (xorshift64*), so a failing run can be rerun. */
static uint64_t random_state;

static uint64_t next_random(void) {
  random_state ^= random_state >> 12;
  random_state ^= random_state << 25;
  random_state ^= random_state >> 27;
  return random_state * 0x2545f4914f6cdd1dull;
}

/* Uniform enough in [0, bound). */
static size_t random_below(size_t bound) { return (size_t)(next_random() >> 11) % bound; }

/* 0 .. count - 1 in a random order (Fisher-Yates). */
static void shuffled_indices(size_t *order, size_t count) {
  for (size_t i = 0; i < count; i++) order[i] = i;
  for (size_t i = count; i > 1; i--) {
    size_t j = random_below(i);
    size_t swap = order[i - 1];
    order[i - 1] = order[j];
    order[j] = swap;
  }
}

/* ---- the invariants ---------------------------------------------------------------- */

typedef struct range {
  size_t offset;
  size_t size;
  size_t span;
} range;

/* Checks the address treap below `node`: every address strictly between
 * `low` and `high` (NULL: unbounded), no priority above its parent's,
 * `largest` the largest size below. Counts nodes and bytes. */
static void check_tree(const cmr_block *node, const cmr_block *low, const cmr_block *high, uint32_t parent_priority,
                       size_t *count, size_t *bytes) {
  if (node == NULL) return;
  require(low == NULL || low->address < node->address, "address order broken at %p", (void *)node->address);
  require(high == NULL || node->address < high->address, "address order broken at %p", (void *)node->address);
  require(node->priority <= parent_priority, "treap: priority above the parent's at %p", (void *)node->address);
  size_t largest = node->size;
  for (int side = 0; side < 2; side++) {
    const cmr_block *below = node->by_address[side];
    if (below != NULL && below->largest > largest) largest = below->largest;
  }
  require(node->largest == largest, "largest %zu at %p, should be %zu", node->largest, (void *)node->address, largest);
  ++*count;
  *bytes += node->size;
  check_tree(node->by_address[0], low, node, node->priority, count, bytes);
  check_tree(node->by_address[1], node, high, node->priority, count, bytes);
}

typedef struct finding {
  const char *address;
  cmr_block *found;
} finding;

static void find_one(const cmr_block *block, void *arg) {
  finding *f = arg;
  if (block->address == f->address) f->found = (cmr_block *)block;
}

/* The member at `address`, or NULL (a walk of the set). */
static cmr_block *find_by_address(const cmr_free_blocks *set, const char *address) {
  finding f = {address, NULL};
  cmr_free_blocks_each(set, find_one, &f);
  return f.found;
}

/* The index's own check of the whole set, and the treap checked here too. */
static void check_invariants(const cmr_free_blocks *set) {
  const char *why = NULL;
  require(cmr_free_blocks_valid(set, 0, true, &why), "the index's check fails: %s", why);
  if (!set->keeps_address_order) return;
  size_t count = 0, bytes = 0;
  check_tree(set->by_address, NULL, NULL, UINT32_MAX, &count, &bytes);
  require(count == set->count && bytes == set->bytes, "the treap holds %zu blocks, %zu bytes; the set %zu, %zu", count,
          bytes, set->count, set->bytes);
}

/* What each() visits, as ranges. */
typedef struct listing {
  range *ranges;
  size_t count;
  size_t capacity;
  const cmr_block *previous;
  bool by_address; /* each() must go in address order */
} listing;

static void list_one(const cmr_block *block, void *arg) {
  listing *list = arg;
  require(!list->by_address || list->previous == NULL || list->previous->address < block->address,
          "each() out of address order");
  list->previous = block;
  if (list->count == list->capacity) {
    list->capacity = list->capacity == 0 ? 64 : 2 * list->capacity;
    list->ranges = realloc(list->ranges, list->capacity * sizeof *list->ranges);
    ck_assert_ptr_nonnull(list->ranges);
  }
  list->ranges[list->count++] = (range){offset_of(block), block->size, block->span};
}

static int compare_ranges(const void *a, const void *b) {
  size_t x = ((const range *)a)->offset, y = ((const range *)b)->offset;
  return (x > y) - (x < y);
}

/* The set holds exactly `expected` (in address order) and is well formed. */
static void expect_ranges(const cmr_free_blocks *set, const range *expected, size_t count) {
  check_invariants(set);
  listing list = {.by_address = set->keeps_address_order};
  cmr_free_blocks_each(set, list_one, &list);
  if (list.count > 1) qsort(list.ranges, list.count, sizeof *list.ranges, compare_ranges);
  require(list.count == count, "the set holds %zu blocks, expected %zu", list.count, count);
  for (size_t i = 0; i < count; i++) {
    const range *got = &list.ranges[i];
    require(got->offset == expected[i].offset && got->size == expected[i].size && got->span == expected[i].span,
            "block %zu is (+%zu, %zu, span %zu), expected (+%zu, %zu, span %zu)", i, got->offset, got->size, got->span,
            expected[i].offset, expected[i].size, expected[i].span);
  }
  free(list.ranges);
}

#define EXPECT(set, ...)                                                     \
  do {                                                                       \
    const range expected_[] = {__VA_ARGS__};                                 \
    expect_ranges((set), expected_, sizeof expected_ / sizeof expected_[0]); \
  } while (0)

static void expect_empty(const cmr_free_blocks *set) { expect_ranges(set, NULL, 0); }

/* ---- records and needed() ------------------------------------------------------------ */

START_TEST(a_new_block_holds_its_fields) {
  cmr_block *block = new_block(4 * KIB, 8 * KIB, 64 * KIB);
  ck_assert_ptr_eq(block->address, at(4 * KIB));
  ck_assert_uint_eq(block->size, 8 * KIB);
  ck_assert_uint_eq(block->span, 64 * KIB);
  ck_assert_uint_eq(block->largest, 8 * KIB);
  ck_assert_ptr_null(block->in_class[0]);
  ck_assert_ptr_null(block->in_bucket[1]);
  ck_assert_ptr_null(block->by_address[1]);
  ck_assert_ptr_null(block->map_entry.next);
  cmr_block_delete(block);
}
END_TEST

START_TEST(priorities_differ_from_record_to_record) {
  enum { RECORDS = 1000 };
  cmr_free_blocks set;
  cmr_free_blocks_init_by_address(&set);
  for (size_t i = 0; i < RECORDS; i++) add(&set, i * MIB, 256, 0);
  cmr_block *blocks[RECORDS];
  for (size_t i = 0; i < RECORDS; i++) blocks[i] = find_by_address(&set, at(i * MIB));
  /* Distinct, and not simply increasing with the address (that would make
   * each new record the root and the treap a list). */
  int rises = 0;
  for (int i = 0; i < RECORDS; i++) {
    for (int j = 0; j < i; j++) require(blocks[i]->priority != blocks[j]->priority, "records %d and %d", j, i);
    if (i > 0 && blocks[i]->priority > blocks[i - 1]->priority) rises++;
  }
  ck_assert_int_gt(rises, RECORDS / 4);
  ck_assert_int_lt(rises, 3 * RECORDS / 4);
  cmr_free_blocks_clear(&set);
}
END_TEST

START_TEST(needed_adds_the_worst_misalignment) {
  ck_assert_uint_eq(cmr_free_blocks_needed(256, 256), 256);
  ck_assert_uint_eq(cmr_free_blocks_needed(0, 256), 0);
  ck_assert_uint_eq(cmr_free_blocks_needed(1024, 512), 1024 + 256);
  ck_assert_uint_eq(cmr_free_blocks_needed(4096, 4096), 4096 + 4096 - 256);
  ck_assert_uint_eq(cmr_free_blocks_needed(256, MIB), MIB);
}
END_TEST

START_TEST(needed_saturates_on_overflow) {
  size_t slack = MIB - 256;
  ck_assert_uint_eq(cmr_free_blocks_needed(SIZE_MAX - slack - 256, MIB), SIZE_MAX - 256);
  ck_assert_uint_eq(cmr_free_blocks_needed(SIZE_MAX - slack + 1, MIB), SIZE_MAX);
  ck_assert_uint_eq(cmr_free_blocks_needed(SIZE_MAX, 512), SIZE_MAX);
  ck_assert_uint_eq(cmr_free_blocks_needed(SIZE_MAX, 256), SIZE_MAX);
  size_t half = SIZE_MAX / 2 + 1;
  ck_assert_uint_eq(cmr_free_blocks_needed(256, half), half);
  ck_assert_uint_eq(cmr_free_blocks_needed(half, half), SIZE_MAX - 255);
  ck_assert_uint_eq(cmr_free_blocks_needed(half + 256, half), SIZE_MAX);
}
END_TEST

/* ---- an empty set ---------------------------------------------------------------------- */

static void count_visit(const cmr_block *block, void *arg) {
  (void)block;
  ++*(int *)arg;
}

START_TEST(an_empty_set_finds_nothing) {
  cmr_free_blocks set;
  cmr_free_blocks_init_by_address(&set);
  ck_assert_uint_eq(set.count, 0);
  ck_assert_uint_eq(set.bytes, 0);
  ck_assert_ptr_null(cmr_free_blocks_best_fit(&set, 0));
  ck_assert_ptr_null(cmr_free_blocks_best_fit(&set, 256));
  ck_assert_ptr_null(cmr_free_blocks_first_fit(&set, 0));
  ck_assert_ptr_null(cmr_free_blocks_first_fit(&set, 256));
  ck_assert_ptr_null(cmr_free_blocks_pop(&set));
  int visits = 0;
  cmr_free_blocks_each(&set, count_visit, &visits);
  ck_assert_int_eq(visits, 0);
  cmr_free_blocks_clear(&set);
  expect_empty(&set);
}
END_TEST

/* ---- best and first fit ------------------------------------------------------------------ */

/* Five blocks apart from one another (no merging), sizes out of order, in a
 * set kept by address (first fit). */
static void add_five(cmr_free_blocks *set) {
  cmr_free_blocks_init_by_address(set);
  add(set, 48 * KIB, 8 * KIB, 0);
  add(set, 0, 1 * KIB, 0);
  add(set, 80 * KIB, 4 * KIB, 0);
  add(set, 32 * KIB, 2 * KIB, 0);
  add(set, 16 * KIB, 4 * KIB, 0);
  EXPECT(set, {0, 1 * KIB, 0}, {16 * KIB, 4 * KIB, 0}, {32 * KIB, 2 * KIB, 0}, {48 * KIB, 8 * KIB, 0},
         {80 * KIB, 4 * KIB, 0});
}

static void expect_fit(cmr_block *(*fit)(const cmr_free_blocks *, size_t), const cmr_free_blocks *set, size_t needed,
                       size_t offset) {
  cmr_block *found = fit(set, needed);
  ck_assert_msg(found != NULL, "nothing found for %zu bytes", needed);
  ck_assert_msg(found->address == at(offset), "%zu bytes: found +%zu, expected +%zu", needed, offset_of(found), offset);
  ck_assert_uint_ge(found->size, needed);
}

/* Sizes each in a class of their own: good fit is best fit. */
START_TEST(best_fit_takes_the_smallest_block_that_fits) {
  cmr_free_blocks set;
  add_five(&set);
  expect_fit(cmr_free_blocks_best_fit, &set, 0, 0);
  expect_fit(cmr_free_blocks_best_fit, &set, 256, 0);
  expect_fit(cmr_free_blocks_best_fit, &set, 1 * KIB, 0);
  expect_fit(cmr_free_blocks_best_fit, &set, 1 * KIB + 256, 32 * KIB);
  expect_fit(cmr_free_blocks_best_fit, &set, 2 * KIB, 32 * KIB);
  expect_fit(cmr_free_blocks_best_fit, &set, 2 * KIB + 256, 16 * KIB);
  /* Two blocks of 4 KiB: either. */
  ck_assert_uint_eq(cmr_free_blocks_best_fit(&set, 4 * KIB)->size, 4 * KIB);
  expect_fit(cmr_free_blocks_best_fit, &set, 4 * KIB + 256, 48 * KIB);
  expect_fit(cmr_free_blocks_best_fit, &set, 8 * KIB, 48 * KIB);
  ck_assert_ptr_null(cmr_free_blocks_best_fit(&set, 8 * KIB + 256));
  ck_assert_ptr_null(cmr_free_blocks_best_fit(&set, SIZE_MAX));
  /* Finding leaves the block in the set. */
  ck_assert_uint_eq(set.count, 5);
  ck_assert_uint_eq(set.bytes, 19 * KIB);
  cmr_free_blocks_clear(&set);
}
END_TEST

/* 64 KiB .. 68 KiB is one class (1/16 of 64 KiB .. 128 KiB). */
START_TEST(good_fit_takes_the_first_class_that_surely_fits) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  ck_assert_uint_eq(cmr_free_blocks_class(64 * KIB), cmr_free_blocks_class(68 * KIB - 256));
  ck_assert_uint_eq(cmr_free_blocks_class(68 * KIB), cmr_free_blocks_class(64 * KIB) + 1);
  cmr_block *small = add(&set, 0, 66 * KIB, 0);
  cmr_block *larger = add(&set, 1 * MIB, 67 * KIB, 0);
  /* Nothing in a class above: a walk of the request's own class finds the
   * one that fits. */
  ck_assert_ptr_eq(cmr_free_blocks_best_fit(&set, 66 * KIB + 512), larger);
  cmr_block *either = cmr_free_blocks_best_fit(&set, 66 * KIB);
  ck_assert(either == small || either == larger);
  ck_assert_ptr_null(cmr_free_blocks_best_fit(&set, 67 * KIB + 256));
  /* A request at a class's floor: every block of that class fits. */
  ck_assert_uint_eq(cmr_free_blocks_class(cmr_free_blocks_best_fit(&set, 64 * KIB)->size),
                    cmr_free_blocks_class(64 * KIB));
  /* With a block in a class above, a fitting block among the first few of
   * the request's own class still comes first (it leaves less behind)... */
  cmr_block *big = add(&set, 2 * MIB, 100 * KIB, 0);
  ck_assert_ptr_eq(cmr_free_blocks_best_fit(&set, 66 * KIB + 512), larger);
  cmr_block *own = cmr_free_blocks_best_fit(&set, 64 * KIB + 256);
  ck_assert(own == small || own == larger);
  /* ... and when none of them fits, good fit takes the class above rather
   * than walk on: O(1), at the price of a larger block. */
  ck_assert_ptr_eq(cmr_free_blocks_best_fit(&set, 67 * KIB + 256), big);
  ck_assert_uint_eq(cmr_free_blocks_class(cmr_free_blocks_best_fit(&set, 64 * KIB)->size),
                    cmr_free_blocks_class(64 * KIB));
  ck_assert_ptr_eq(cmr_free_blocks_best_fit(&set, 68 * KIB), big);
  ck_assert_ptr_null(cmr_free_blocks_best_fit(&set, 100 * KIB + 256));
  ck_assert_uint_eq(cmr_free_blocks_largest(&set), 100 * KIB);
  cmr_free_blocks_clear(&set);
}
END_TEST

/* Classes grow with sizes: each level doubles, in 16 steps. */
START_TEST(classes_follow_sizes) {
  ck_assert_uint_eq(cmr_free_blocks_class(256), 1);
  ck_assert_uint_eq(cmr_free_blocks_class(15 * 256), 15);
  ck_assert_uint_eq(cmr_free_blocks_class(16 * 256), 16);
  ck_assert_uint_eq(cmr_free_blocks_class(32 * 256), 32);
  ck_assert_uint_eq(cmr_free_blocks_class(33 * 256), 32);
  ck_assert_uint_eq(cmr_free_blocks_class(34 * 256), 33);
  unsigned previous = 0;
  for (size_t size = 256; size < SIZE_MAX / 3; size += size / 7 / 256 * 256 + 256) {
    unsigned class = cmr_free_blocks_class(size);
    ck_assert_uint_ge(class, previous);
    ck_assert_uint_lt(class, cmr_class_levels * cmr_class_steps);
    previous = class;
  }
  ck_assert_uint_eq(cmr_free_blocks_class(SIZE_MAX - 255), cmr_class_levels * cmr_class_steps - 1);
}
END_TEST

START_TEST(first_fit_takes_the_lowest_block_that_fits) {
  cmr_free_blocks set;
  add_five(&set);
  expect_fit(cmr_free_blocks_first_fit, &set, 0, 0);
  expect_fit(cmr_free_blocks_first_fit, &set, 1 * KIB, 0);
  expect_fit(cmr_free_blocks_first_fit, &set, 1 * KIB + 256, 16 * KIB);
  expect_fit(cmr_free_blocks_first_fit, &set, 2 * KIB, 16 * KIB);
  expect_fit(cmr_free_blocks_first_fit, &set, 4 * KIB, 16 * KIB);
  expect_fit(cmr_free_blocks_first_fit, &set, 4 * KIB + 256, 48 * KIB);
  expect_fit(cmr_free_blocks_first_fit, &set, 8 * KIB, 48 * KIB);
  ck_assert_ptr_null(cmr_free_blocks_first_fit(&set, 8 * KIB + 256));
  ck_assert_ptr_null(cmr_free_blocks_first_fit(&set, SIZE_MAX));
  ck_assert_uint_eq(set.count, 5);
  cmr_free_blocks_clear(&set);
}
END_TEST

/* ---- merging --------------------------------------------------------------------------- */

START_TEST(a_block_merges_with_both_neighbours) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  cmr_block *head = add(&set, 0, 4 * KIB, 16 * KIB);
  add(&set, 8 * KIB, 4 * KIB, 0);
  EXPECT(&set, {0, 4 * KIB, 16 * KIB}, {8 * KIB, 4 * KIB, 0});
  /* The lowest record survives, with its span. */
  ck_assert_ptr_eq(add(&set, 4 * KIB, 4 * KIB, 0), head);
  EXPECT(&set, {0, 12 * KIB, 16 * KIB});
  ck_assert_ptr_eq(add(&set, 12 * KIB, 4 * KIB, 0), head);
  EXPECT(&set, {0, 16 * KIB, 16 * KIB});
  ck_assert_uint_eq(head->size, head->span);
  cmr_free_blocks_clear(&set);
}
END_TEST

START_TEST(a_block_merges_with_one_neighbour) {
  cmr_free_blocks set;
  cmr_free_blocks_init_by_address(&set);
  cmr_block *neighbour = add(&set, 16 * KIB, 4 * KIB, 0);
  add(&set, 64 * KIB, 4 * KIB, 64 * KIB);
  /* Right only: the neighbour grows down over the new block. */
  ck_assert_ptr_eq(add(&set, 12 * KIB, 4 * KIB, 0), neighbour);
  EXPECT(&set, {12 * KIB, 8 * KIB, 0}, {64 * KIB, 4 * KIB, 64 * KIB});
  /* Left only: the neighbour grows up. */
  ck_assert_ptr_eq(cmr_free_blocks_first_fit(&set, 0), neighbour);
  ck_assert_ptr_eq(add(&set, 20 * KIB, 8 * KIB, 0), neighbour);
  EXPECT(&set, {12 * KIB, 16 * KIB, 0}, {64 * KIB, 4 * KIB, 64 * KIB});
  /* A head merging on its right gives the merged block its span. */
  ck_assert_ptr_eq(add(&set, 8 * KIB, 4 * KIB, 32 * KIB), neighbour);
  EXPECT(&set, {8 * KIB, 20 * KIB, 32 * KIB}, {64 * KIB, 4 * KIB, 64 * KIB});
  /* Touching nothing: no merge. */
  add(&set, 32 * KIB, 4 * KIB, 0);
  EXPECT(&set, {8 * KIB, 20 * KIB, 32 * KIB}, {32 * KIB, 4 * KIB, 0}, {64 * KIB, 4 * KIB, 64 * KIB});
  ck_assert_uint_eq(set.bytes, 28 * KIB);
  cmr_free_blocks_clear(&set);
}
END_TEST

START_TEST(no_merge_across_the_start_of_a_unit) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  /* Two units side by side. */
  add(&set, 0, 4 * KIB, 4 * KIB);
  add(&set, 4 * KIB, 8 * KIB, 8 * KIB);
  EXPECT(&set, {0, 4 * KIB, 4 * KIB}, {4 * KIB, 8 * KIB, 8 * KIB});
  /* A piece before a head merges to its left only. */
  add(&set, 12 * KIB, 4 * KIB, 0);
  add(&set, 20 * KIB, 4 * KIB, 8 * KIB);
  add(&set, 16 * KIB, 4 * KIB, 0);
  EXPECT(&set, {0, 4 * KIB, 4 * KIB}, {4 * KIB, 16 * KIB, 8 * KIB}, {20 * KIB, 4 * KIB, 8 * KIB});
  /* A head between free neighbours merges to its right only. */
  add(&set, 28 * KIB, 4 * KIB, 0);
  add(&set, 24 * KIB, 4 * KIB, 8 * KIB);
  EXPECT(&set, {0, 4 * KIB, 4 * KIB}, {4 * KIB, 16 * KIB, 8 * KIB}, {20 * KIB, 4 * KIB, 8 * KIB},
         {24 * KIB, 8 * KIB, 8 * KIB});
  ck_assert_uint_eq(set.count, 4);
  ck_assert_uint_eq(set.bytes, 32 * KIB);
  cmr_free_blocks_clear(&set);
}
END_TEST

/* ---- take ------------------------------------------------------------------------------- */

/* Takes `size` at `alignment` from a block of `block_size` at +`offset` (a
 * unit's head), checks the pieces, returns the taken one and expects the
 * unit whole again. */
static void take_and_return(size_t offset, size_t block_size, size_t size, size_t alignment) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  cmr_block *block = add(&set, offset, block_size, block_size);
  ck_assert_uint_ge(block->size, cmr_free_blocks_needed(size, alignment));
  cmr_block *taken = NULL;
  ck_assert_ok(cmr_free_blocks_take(&set, block, size, alignment, &taken));

  size_t aligned = (size_t)(((base + offset + alignment - 1) / alignment) * alignment - base);
  size_t prefix = aligned - offset;
  size_t suffix = block_size - prefix - size;
  ck_assert_ptr_eq(taken->address, at(aligned));
  ck_assert_uint_eq((uintptr_t)taken->address % alignment, 0);
  ck_assert_uint_eq(taken->size, size);
  ck_assert_ptr_null(find_by_address(&set, taken->address));
  range pieces[2];
  size_t count = 0;
  if (prefix != 0) {
    /* The block stays as the prefix and keeps the span; the taken piece is new. */
    pieces[count++] = (range){offset, prefix, block_size};
    ck_assert_ptr_ne(taken, block);
    ck_assert_uint_eq(taken->span, 0);
    ck_assert_ptr_eq(find_by_address(&set, at(offset)), block);
  } else {
    /* The taken piece has the span; the block, if not taken whole, is the suffix. */
    ck_assert_uint_eq(taken->span, block_size);
    ck_assert(suffix == 0 ? taken == block : find_by_address(&set, at(aligned + size)) == block);
  }
  if (suffix != 0) pieces[count++] = (range){aligned + size, suffix, 0};
  expect_ranges(&set, pieces, count);
  ck_assert_uint_eq(set.bytes, block_size - size);

  cmr_block *whole = cmr_free_blocks_insert(&set, taken);
  EXPECT(&set, {offset, block_size, block_size});
  ck_assert_uint_eq(whole->size, whole->span);
  cmr_free_blocks_clear(&set);
}

START_TEST(take_at_every_alignment) {
  for (size_t alignment = 256; alignment <= MIB; alignment *= 2) {
    for (size_t size = 256; size <= 4 * alignment; size += size < 4096 ? 256 : size) {
      /* Block starts from aligned to one granule short of the next multiple. */
      size_t starts[] = {0, 256, alignment / 2, alignment - 256, alignment + 256, 3 * alignment - 512};
      for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        if (starts[s] % 256 != 0) continue; /* alignment / 2 at 256 */
        size_t needed = cmr_free_blocks_needed(size, alignment);
        /* The tightest block, and ones with room after. */
        take_and_return(starts[s], needed, size, alignment);
        take_and_return(starts[s], needed + 256, size, alignment);
        take_and_return(starts[s], needed + 3 * alignment, size, alignment);
      }
    }
  }
}
END_TEST

START_TEST(take_all_of_a_block) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  add(&set, 0, 4 * KIB, 4 * KIB);
  cmr_block *block = add(&set, 64 * KIB, 8 * KIB, 0);
  cmr_block *taken = NULL;
  ck_assert_ok(cmr_free_blocks_take(&set, block, 8 * KIB, 64 * KIB, &taken));
  ck_assert_ptr_eq(taken, block);
  ck_assert_uint_eq(taken->size, 8 * KIB);
  EXPECT(&set, {0, 4 * KIB, 4 * KIB});
  cmr_block_delete(taken);
  cmr_free_blocks_clear(&set);
}
END_TEST

START_TEST(take_from_among_many_blocks) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  for (size_t i = 0; i < 64; i++) add(&set, i * 64 * KIB, (i % 7 + 1) * 8 * KIB, (i % 7 + 1) * 8 * KIB);
  /* 20 KiB aligned to 16 KiB needs 36 KiB - 256: a 40 KiB block (i = 4,
   * 11, ..., each aligned) gives it, leaving a 20 KiB suffix. */
  cmr_block *block = cmr_free_blocks_best_fit(&set, cmr_free_blocks_needed(20 * KIB, 16 * KIB));
  ck_assert_uint_eq(block->size, 40 * KIB);
  size_t offset = offset_of(block);
  cmr_block *taken = NULL;
  ck_assert_ok(cmr_free_blocks_take(&set, block, 20 * KIB, 16 * KIB, &taken));
  ck_assert_ptr_eq(taken->address, at(offset));
  ck_assert_uint_eq(taken->span, 40 * KIB);
  cmr_block *suffix = find_by_address(&set, at(offset + 20 * KIB));
  ck_assert_ptr_eq(suffix, block);
  ck_assert_uint_eq(suffix->span, 0);
  ck_assert_uint_eq(suffix->size, 20 * KIB);
  check_invariants(&set);
  size_t bytes = set.bytes;
  ck_assert_uint_eq(set.count, 64);
  /* The suffix grows back over the taken piece, and has its span again. */
  ck_assert_ptr_eq(cmr_free_blocks_insert(&set, taken), block);
  ck_assert_uint_eq(set.count, 64);
  ck_assert_uint_eq(set.bytes, bytes + 20 * KIB);
  ck_assert_uint_eq(block->size, 40 * KIB);
  ck_assert_uint_eq(block->span, 40 * KIB);
  check_invariants(&set);
  cmr_free_blocks_clear(&set);
}
END_TEST

/* A unit cut into many pieces at mixed alignments, given back in a random
 * order, is one block of size == span again. */
START_TEST(a_unit_is_whole_again_after_every_piece_returns) {
  enum { PIECES = 200 };
  random_state = 0x5eed;
  cmr_free_blocks set;
  cmr_free_blocks_init_by_address(&set);
  add(&set, 0, 64 * MIB, 64 * MIB);
  cmr_block *pieces[PIECES];
  for (int i = 0; i < PIECES; i++) {
    size_t size = 256 * (1 + random_below(64));
    size_t alignment = (size_t)256 << random_below(9);
    cmr_block *block = cmr_free_blocks_first_fit(&set, cmr_free_blocks_needed(size, alignment));
    ck_assert_ptr_nonnull(block);
    ck_assert_ok(cmr_free_blocks_take(&set, block, size, alignment, &pieces[i]));
  }
  check_invariants(&set);
  size_t order[PIECES];
  shuffled_indices(order, PIECES);
  for (int i = 0; i < PIECES; i++) {
    cmr_free_blocks_insert(&set, pieces[order[i]]);
    check_invariants(&set);
  }
  EXPECT(&set, {0, 64 * MIB, 64 * MIB});
  cmr_block *whole = cmr_free_blocks_pop(&set);
  ck_assert_ptr_eq(whole->address, at(0));
  ck_assert_uint_eq(whole->size, 64 * MIB);
  ck_assert_uint_eq(whole->span, 64 * MIB);
  cmr_block_delete(whole);
  expect_empty(&set);
}
END_TEST

/* ---- a take without host memory ---------------------------------------------------------- */

/* The linker sends the runtime's calloc here (-Wl,--wrap=calloc): while
 * `calloc_passes` is not negative, that many calls succeed and the next one
 * fails. */
void *__real_calloc(size_t count, size_t size);
void *__wrap_calloc(size_t count, size_t size);

static int calloc_passes = -1;

void *__wrap_calloc(size_t count, size_t size) {
  if (calloc_passes >= 0 && calloc_passes-- == 0) return NULL;
  return __real_calloc(count, size);
}

/* A take that needs `records` new records, each failing in turn. */
static void take_fails_cleanly(size_t offset, size_t size, size_t alignment, int records) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  add(&set, 0, 4 * KIB, 4 * KIB);
  cmr_block *block = add(&set, offset, 64 * KIB, 64 * KIB);
  add(&set, 2 * MIB, 4 * KIB, 0);
  const range before[] = {{0, 4 * KIB, 4 * KIB}, {offset, 64 * KIB, 64 * KIB}, {2 * MIB, 4 * KIB, 0}};
  for (int failing = 0; failing < records; failing++) {
    cmr_block *taken = NULL;
    cmr_clear_last_error();
    calloc_passes = failing;
    cmr_status status = cmr_free_blocks_take(&set, block, size, alignment, &taken);
    calloc_passes = -1;
    ck_assert_int_eq(status, CMR_ERROR_OUT_OF_MEMORY);
    ck_assert_message_has("no host memory");
    ck_assert_ptr_null(taken);
    expect_ranges(&set, before, 3);
    ck_assert_uint_eq(block->size, 64 * KIB);
  }
  /* With memory it works, and needed no more records than that. */
  cmr_block *taken = NULL;
  calloc_passes = records;
  ck_assert_ok(cmr_free_blocks_take(&set, block, size, alignment, &taken));
  ck_assert_int_eq(calloc_passes, 0);
  calloc_passes = -1;
  /* Prefix and suffix add a block; one piece alone replaces the block. */
  ck_assert_uint_eq(set.count, records == 2 ? 4 : 3);
  cmr_free_blocks_insert(&set, taken);
  expect_ranges(&set, before, 3);
  cmr_free_blocks_clear(&set);
}

START_TEST(a_failed_take_leaves_the_set_as_it_was) {
  cmr_clear_last_error();
  /* Prefix and suffix: two records, the first or the second failing. */
  take_fails_cleanly(1 * MIB + 4 * KIB, 8 * KIB, 16 * KIB, 2);
  /* Prefix only: the tightest fit, one granule past an aligned address. */
  take_fails_cleanly(1 * MIB + 256, 48 * KIB + 256, 16 * KIB, 1);
  /* Suffix only. */
  take_fails_cleanly(1 * MIB, 8 * KIB, 16 * KIB, 1);
}
END_TEST

START_TEST(a_failed_block_new_says_why) {
  cmr_block *block = NULL;
  calloc_passes = 0;
  ck_assert_status(cmr_block_new(at(0), 4 * KIB, 0, &block), CMR_ERROR_OUT_OF_MEMORY);
  calloc_passes = -1;
  ck_assert_message_has("cmr_block_new");
  ck_assert_ptr_null(block);
}
END_TEST

/* ---- remove, absorb, pop, each, clear ------------------------------------------------------ */

START_TEST(remove_leaves_the_record_to_the_caller) {
  cmr_free_blocks set;
  add_five(&set);
  cmr_block *block = cmr_free_blocks_best_fit(&set, 2 * KIB);
  cmr_free_blocks_remove(&set, block);
  EXPECT(&set, {0, 1 * KIB, 0}, {16 * KIB, 4 * KIB, 0}, {48 * KIB, 8 * KIB, 0}, {80 * KIB, 4 * KIB, 0});
  ck_assert_uint_eq(set.bytes, 17 * KIB);
  expect_fit(cmr_free_blocks_best_fit, &set, 2 * KIB, 16 * KIB);
  ck_assert_ptr_eq(cmr_free_blocks_insert(&set, block), block);
  EXPECT(&set, {0, 1 * KIB, 0}, {16 * KIB, 4 * KIB, 0}, {32 * KIB, 2 * KIB, 0}, {48 * KIB, 8 * KIB, 0},
         {80 * KIB, 4 * KIB, 0});
  /* Down to nothing, root included. */
  while (set.count > 0) {
    cmr_block *root = set.by_address;
    cmr_free_blocks_remove(&set, root);
    cmr_block_delete(root);
    check_invariants(&set);
  }
  expect_empty(&set);
}
END_TEST

START_TEST(absorb_merges_across_two_sets) {
  cmr_free_blocks into;
  cmr_free_blocks from;
  cmr_free_blocks_init(&into);
  cmr_free_blocks_init(&from);
  add(&into, 0, 4 * KIB, 16 * KIB);
  add(&into, 8 * KIB, 4 * KIB, 0);
  add(&into, 64 * KIB, 4 * KIB, 0);
  add(&from, 4 * KIB, 4 * KIB, 0);
  add(&from, 12 * KIB, 4 * KIB, 0);
  add(&from, 16 * KIB, 4 * KIB, 4 * KIB);
  add(&from, 32 * KIB, 4 * KIB, 4 * KIB);
  add(&from, 60 * KIB, 4 * KIB, 0);
  cmr_free_blocks_absorb(&into, &from);
  EXPECT(&into, {0, 16 * KIB, 16 * KIB}, {16 * KIB, 4 * KIB, 4 * KIB}, {32 * KIB, 4 * KIB, 4 * KIB},
         {60 * KIB, 8 * KIB, 0});
  expect_empty(&from);
  ck_assert_uint_eq(from.levels, 0);
  ck_assert_ptr_null(from.buckets);
  /* Absorbing an empty set, or into one. */
  cmr_free_blocks_absorb(&into, &from);
  ck_assert_uint_eq(into.count, 4);
  cmr_free_blocks_absorb(&from, &into);
  EXPECT(&from, {0, 16 * KIB, 16 * KIB}, {16 * KIB, 4 * KIB, 4 * KIB}, {32 * KIB, 4 * KIB, 4 * KIB},
         {60 * KIB, 8 * KIB, 0});
  expect_empty(&into);
  cmr_free_blocks_clear(&from);
}
END_TEST

START_TEST(pop_and_each_go_in_address_order) {
  enum { BLOCKS = 500 };
  random_state = 0xabcdef;
  size_t order[BLOCKS];
  shuffled_indices(order, BLOCKS);
  cmr_free_blocks set;
  cmr_free_blocks_init_by_address(&set);
  for (size_t i = 0; i < BLOCKS; i++) add(&set, order[i] * 8 * KIB, 4 * KIB, 0);
  listing list = {0};
  cmr_free_blocks_each(&set, list_one, &list);
  ck_assert_uint_eq(list.count, BLOCKS);
  for (size_t i = 0; i < BLOCKS; i++) ck_assert_uint_eq(list.ranges[i].offset, i * 8 * KIB);
  free(list.ranges);
  for (size_t i = 0; i < BLOCKS; i++) {
    cmr_block *first = cmr_free_blocks_pop(&set);
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_eq(first->address, at(i * 8 * KIB));
    ck_assert_uint_eq(set.count, BLOCKS - i - 1);
    ck_assert_uint_eq(set.bytes, (BLOCKS - i - 1) * 4 * KIB);
    cmr_block_delete(first);
    if (i % 50 == 0) check_invariants(&set);
  }
  ck_assert_ptr_null(cmr_free_blocks_pop(&set));
  expect_empty(&set);
}
END_TEST

START_TEST(clear_empties_a_set_for_reuse) {
  cmr_free_blocks set;
  add_five(&set);
  cmr_free_blocks_clear(&set);
  expect_empty(&set);
  add(&set, 0, 4 * KIB, 0);
  EXPECT(&set, {0, 4 * KIB, 0});
  cmr_free_blocks_clear(&set);
}
END_TEST

/* ---- the index's own check -------------------------------------------------------------- */

/* The check on a set broken on purpose: false, and a reason naming it. */
static void expect_broken(const cmr_free_blocks *set, const char *reason) {
  const char *why = NULL;
  ck_assert_msg(!cmr_free_blocks_valid(set, 0, true, &why), "the check missed: %s", reason);
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, reason) != NULL, "the check says \"%s\", expected \"%s\"", why, reason);
}

static void expect_valid(const cmr_free_blocks *set) {
  const char *why = NULL;
  ck_assert_msg(cmr_free_blocks_valid(set, 0, true, &why), "the check fails: %s", why);
}

START_TEST(the_check_finds_a_broken_class) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  cmr_block *a = add(&set, 0, 64 * KIB, 64 * KIB);
  cmr_block *b = add(&set, 1 * MIB, 66 * KIB, 0);
  add(&set, 2 * MIB, 4 * KIB, 0);
  expect_valid(&set);
  /* A size its class does not say. */
  a->size += 64 * KIB;
  expect_broken(&set, "in a class its size does not say");
  a->size -= 64 * KIB;
  /* A broken back link (a and b share a class). */
  ck_assert_ptr_eq(b->in_class[1], a);
  a->in_class[0] = NULL;
  expect_broken(&set, "back link");
  a->in_class[0] = b;
  /* Bitmaps that disagree with the lists. */
  set.steps[0] |= 1;
  expect_broken(&set, "level bitmap disagrees");
  set.levels |= 1;
  set.classes[0][0] = NULL;
  expect_broken(&set, "bit is set but its list is empty");
  set.steps[0] &= (uint16_t)~1u;
  set.levels &= ~(uint64_t)1;
  /* Totals that disagree with the blocks. */
  set.count++;
  expect_broken(&set, "number of blocks");
  set.count--;
  set.bytes += 256;
  expect_broken(&set, "number of bytes");
  set.bytes -= 256;
  /* The touched class alone is checked too. */
  const char *why = NULL;
  a->size += 64 * KIB;
  ck_assert(!cmr_free_blocks_valid(&set, 64 * KIB, false, &why));
  ck_assert_ptr_nonnull(strstr(why, "does not say"));
  a->size -= 64 * KIB;
  ck_assert(cmr_free_blocks_valid(&set, 64 * KIB, false, &why));
  expect_valid(&set);
  cmr_free_blocks_clear(&set);
}
END_TEST

START_TEST(the_check_finds_a_broken_address_order) {
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  cmr_block *a = add(&set, 0, 64 * KIB, 0);
  cmr_block *b = add(&set, 64 * KIB, 64 * KIB, 64 * KIB); /* a unit's head: no merge */
  cmr_block *c = add(&set, 1 * MIB, 64 * KIB, 0);
  expect_valid(&set);
  /* Touching, and not a unit's head: they should have merged. */
  b->span = 0;
  expect_broken(&set, "not merged");
  b->span = 64 * KIB;
  /* Overlapping (the size still in its class, the bytes kept right). */
  a->size += 2 * KIB;
  set.bytes += 2 * KIB;
  expect_broken(&set, "overlap");
  a->size -= 2 * KIB;
  set.bytes -= 2 * KIB;
  /* Moved behind the hash's back. */
  c->address += 256;
  expect_broken(&set, "not found by its start address");
  c->address -= 256;
  expect_valid(&set);
  cmr_free_blocks_clear(&set);
}
END_TEST

START_TEST(the_check_finds_a_broken_treap) {
  cmr_free_blocks set;
  cmr_free_blocks_init_by_address(&set);
  for (size_t i = 0; i < 16; i++) add(&set, i * MIB, (i + 1) * 4 * KIB, 0);
  expect_valid(&set);
  cmr_block *root = set.by_address;
  size_t largest = root->largest;
  root->largest = 1;
  expect_broken(&set, "largest size is wrong");
  root->largest = largest;
  cmr_block *child = root->by_address[0] != NULL ? root->by_address[0] : root->by_address[1];
  uint32_t priority = child->priority;
  child->priority = root->priority + 1;
  if (child->priority > root->priority) expect_broken(&set, "priority above its parent's");
  child->priority = priority;
  cmr_block *swap = root->by_address[0];
  root->by_address[0] = root->by_address[1];
  root->by_address[1] = swap;
  expect_broken(&set, "out of order");
  root->by_address[1] = root->by_address[0];
  root->by_address[0] = swap;
  expect_valid(&set);
  cmr_free_blocks_clear(&set);
}
END_TEST

/* The boundary hashes grow past their inline buckets and give their table
 * back once the set empties; pop on a set not kept by address goes from the
 * smallest class up. */
START_TEST(boundaries_grow_and_shrink) {
  enum { BLOCKS = 300 };
  cmr_free_blocks set;
  cmr_free_blocks_init(&set);
  ck_assert_ptr_null(set.buckets);
  for (size_t i = 0; i < BLOCKS; i++) add(&set, i * 64 * KIB, 256 * (1 + (i * 37) % 200), 0);
  ck_assert_ptr_nonnull(set.buckets);
  ck_assert_uint_ge((size_t)1 << set.bucket_bits, BLOCKS / 4);
  check_invariants(&set);
  unsigned previous = 0;
  for (size_t i = 0; i < BLOCKS; i++) {
    cmr_block *block = cmr_free_blocks_pop(&set);
    ck_assert_ptr_nonnull(block);
    ck_assert_uint_ge(cmr_free_blocks_class(block->size), previous);
    previous = cmr_free_blocks_class(block->size);
    cmr_block_delete(block);
  }
  ck_assert_ptr_null(cmr_free_blocks_pop(&set));
  ck_assert_ptr_null(set.buckets);
  expect_empty(&set);
}
END_TEST

/* ---- random operations against a model ------------------------------------------------------- */

/* The model: free ranges in a sorted array, merged by the same rule, and
 * best / first fit by linear search. */
enum { MODEL_CAPACITY = 4096, UNITS = 6, HANDED_CAPACITY = 300 };

typedef struct model {
  range free[MODEL_CAPACITY];
  size_t count;
} model;

/* The index of the first range at or above `offset`. */
static size_t model_find(const model *m, size_t offset) {
  size_t i = 0;
  while (i < m->count && m->free[i].offset < offset) i++;
  return i;
}

static void model_erase(model *m, size_t i) {
  memmove(&m->free[i], &m->free[i + 1], (m->count - i - 1) * sizeof m->free[0]);
  m->count--;
}

static void model_place(model *m, size_t i, range r) {
  require(m->count < MODEL_CAPACITY, "the model is full");
  memmove(&m->free[i + 1], &m->free[i], (m->count - i) * sizeof m->free[0]);
  m->free[i] = r;
  m->count++;
}

/* Returns the range that now holds r's bytes. */
static range model_insert(model *m, range r) {
  size_t i = model_find(m, r.offset);
  if (i < m->count && m->free[i].span == 0 && r.offset + r.size == m->free[i].offset) {
    r.size += m->free[i].size;
    model_erase(m, i);
  }
  if (i > 0 && r.span == 0 && m->free[i - 1].offset + m->free[i - 1].size == r.offset) {
    m->free[i - 1].size += r.size;
    return m->free[i - 1];
  }
  model_place(m, i, r);
  return r;
}

static const range *model_fit(const model *m, size_t needed, bool best) {
  const range *found = NULL;
  for (size_t i = 0; i < m->count; i++) {
    if (m->free[i].size < needed) continue;
    if (!best) return &m->free[i];
    if (found == NULL || m->free[i].size < found->size) found = &m->free[i];
  }
  return found;
}

typedef struct world {
  cmr_free_blocks set;
  model model;
  range units[UNITS];
  bool released[UNITS];
  cmr_block *handed[HANDED_CAPACITY];
  size_t handed_count;
} world;

static void check_world(const world *w) { expect_ranges(&w->set, w->model.free, w->model.count); }

/* Good fit's promise against the best fit `want`: a block of the same
 * class, unless every better one is in the class of `needed` itself (which
 * good fit walks only when no class above has a block). */
static void check_good_fit(const cmr_block *got, const range *want, size_t needed) {
  require((got == NULL) == (want == NULL), "good fit of %zu: found %s, the best fit %s", needed, got ? "one" : "none",
          want ? "one" : "none");
  if (got == NULL) return;
  require(got->size >= needed, "good fit of %zu: a block of %zu", needed, got->size);
  unsigned best_class = cmr_free_blocks_class(want->size);
  require(
      cmr_free_blocks_class(got->size) == best_class || best_class == cmr_free_blocks_class((needed + 255) / 256 * 256),
      "good fit of %zu: %zu bytes, the best fit %zu", needed, got->size, want->size);
}

static void check_fit(const world *w, size_t needed, bool best) {
  if (!best && !w->set.keeps_address_order) return;
  cmr_block *got = best ? cmr_free_blocks_best_fit(&w->set, needed) : cmr_free_blocks_first_fit(&w->set, needed);
  const range *want = model_fit(&w->model, needed, best);
  if (best) {
    check_good_fit(got, want, needed);
    return;
  }
  require((got == NULL) == (want == NULL), "first fit of %zu: found %s, the model %s", needed, got ? "one" : "none",
          want ? "one" : "none");
  require(got == NULL || offset_of(got) == want->offset, "first fit of %zu: +%zu, the model +%zu", needed,
          offset_of(got), want->offset);
}

static size_t random_size(void) {
  /* Mostly small, now and then large. */
  return random_below(8) == 0 ? 256 * (1 + random_below(8192)) : 256 * (1 + random_below(32));
}

static void step_take(world *w) {
  if (w->handed_count == HANDED_CAPACITY) return;
  size_t size = random_size();
  size_t alignment = (size_t)256 << random_below(13);
  size_t needed = cmr_free_blocks_needed(size, alignment);
  bool best = random_below(2) == 0 || !w->set.keeps_address_order;
  check_fit(w, needed, best);
  cmr_block *block = best ? cmr_free_blocks_best_fit(&w->set, needed) : cmr_free_blocks_first_fit(&w->set, needed);
  if (block == NULL) return;
  size_t i = model_find(&w->model, offset_of(block));
  range whole = w->model.free[i];
  cmr_block *taken = NULL;
  cmr_status status = cmr_free_blocks_take(&w->set, block, size, alignment, &taken);
  require(status == CMR_SUCCESS, "take: %s", cmr_last_error_message());
  size_t aligned = (size_t)(((base + whole.offset + alignment - 1) / alignment) * alignment - base);
  require(taken->address == at(aligned) && taken->size == size, "took (+%zu, %zu), expected (+%zu, %zu)",
          offset_of(taken), taken->size, aligned, size);
  require(taken->span == (aligned == whole.offset ? whole.span : 0), "taken span %zu", taken->span);
  model_erase(&w->model, i);
  size_t end = whole.offset + whole.size;
  if (aligned + size < end) model_place(&w->model, i, (range){aligned + size, end - aligned - size, 0});
  if (aligned > whole.offset) model_place(&w->model, i, (range){whole.offset, aligned - whole.offset, whole.span});
  w->handed[w->handed_count++] = taken;
}

static cmr_block *take_handed(world *w) {
  size_t i = random_below(w->handed_count);
  cmr_block *block = w->handed[i];
  w->handed[i] = w->handed[--w->handed_count];
  return block;
}

static void step_give_back(world *w) {
  if (w->handed_count == 0) return;
  cmr_block *block = take_handed(w);
  range want = model_insert(&w->model, (range){offset_of(block), block->size, block->span});
  cmr_block *kept = cmr_free_blocks_insert(&w->set, block);
  require(offset_of(kept) == want.offset && kept->size == want.size && kept->span == want.span,
          "insert kept (+%zu, %zu, span %zu), the model (+%zu, %zu, span %zu)", offset_of(kept), kept->size, kept->span,
          want.offset, want.size, want.span);
}

/* A caller (an arena, say) takes a free block out whole; it comes back later. */
static void step_remove(world *w) {
  if (w->model.count == 0 || w->handed_count == HANDED_CAPACITY) return;
  size_t i = random_below(w->model.count);
  cmr_block *block = find_by_address(&w->set, at(w->model.free[i].offset));
  require(block != NULL, "the model's block +%zu is not in the set", w->model.free[i].offset);
  cmr_free_blocks_remove(&w->set, block);
  model_erase(&w->model, i);
  w->handed[w->handed_count++] = block;
}

/* A whole unit goes back upstream; a released unit comes back. */
static void step_release_or_regain(world *w) {
  size_t u = random_below(UNITS);
  if (w->released[u]) {
    cmr_free_blocks_insert(&w->set, new_block(w->units[u].offset, w->units[u].size, w->units[u].span));
    model_insert(&w->model, w->units[u]);
    w->released[u] = false;
    return;
  }
  cmr_block *block = find_by_address(&w->set, at(w->units[u].offset));
  if (block == NULL || block->size != block->span) return;
  cmr_free_blocks_remove(&w->set, block);
  cmr_block_delete(block);
  model_erase(&w->model, model_find(&w->model, w->units[u].offset));
  w->released[u] = true;
}

/* Some handed-out pieces return through a second set. */
static void step_absorb(world *w) {
  cmr_free_blocks other;
  if (w->set.keeps_address_order) {
    cmr_free_blocks_init(&other);
  } else {
    cmr_free_blocks_init_by_address(&other);
  }
  for (size_t n = random_below(8); n > 0 && w->handed_count > 0; n--) {
    cmr_block *block = take_handed(w);
    model_insert(&w->model, (range){offset_of(block), block->size, block->span});
    cmr_free_blocks_insert(&other, block);
  }
  check_invariants(&other);
  cmr_free_blocks_absorb(&w->set, &other);
  expect_empty(&other);
}

static void random_run(uint64_t seed, int steps, bool by_address) {
  random_state = seed;
  world *w = calloc(1, sizeof *w);
  ck_assert_ptr_nonnull(w);
  if (by_address) {
    cmr_free_blocks_init_by_address(&w->set);
  } else {
    cmr_free_blocks_init(&w->set);
  }
  /* Units side by side, so merging must stop at every head. */
  size_t offset = 0;
  for (int u = 0; u < UNITS; u++) {
    size_t size = 256 * (16 + random_below(16384));
    w->units[u] = (range){offset, size, size};
    offset += size;
    cmr_free_blocks_insert(&w->set, new_block(w->units[u].offset, size, size));
    model_insert(&w->model, w->units[u]);
  }
  check_world(w);
  for (int step = 0; step < steps; step++) {
    size_t dice = random_below(100);
    if (dice < 40) {
      step_take(w);
    } else if (dice < 75) {
      step_give_back(w);
    } else if (dice < 85) {
      step_remove(w);
    } else if (dice < 93) {
      step_release_or_regain(w);
    } else {
      step_absorb(w);
    }
    check_world(w);
    check_fit(w, random_size(), true);
    check_fit(w, random_size(), false);
  }
  /* Everything back: each unit is one block of size == span. */
  while (w->handed_count > 0) step_give_back(w);
  for (int u = 0; u < UNITS; u++) {
    if (w->released[u]) {
      cmr_free_blocks_insert(&w->set, new_block(w->units[u].offset, w->units[u].size, w->units[u].span));
      model_insert(&w->model, w->units[u]);
    }
  }
  expect_ranges(&w->set, w->units, UNITS);
  cmr_free_blocks_clear(&w->set);
  free(w);
}

START_TEST(random_operations_match_the_model) {
  static const uint64_t seeds[] = {1, 0x9e3779b97f4a7c15ull, 0xdeadbeefcafef00dull, 42};
  random_run(seeds[_i / 2], 3000, _i % 2 == 0);
}
END_TEST

/* ---- many blocks -------------------------------------------------------------------------------- */

static size_t start_of(size_t i) { return i * MIB + (i % 16) * 256; }

static size_t depth(const cmr_block *node) {
  if (node == NULL) return 0;
  size_t left = depth(node->by_address[0]);
  size_t right = depth(node->by_address[1]);
  return 1 + (left > right ? left : right);
}

static int compare_sizes(const void *a, const void *b) {
  size_t x = *(const size_t *)a;
  size_t y = *(const size_t *)b;
  return (x > y) - (x < y);
}

/* 100,000 free blocks: lookups, takes and returns stay cheap enough that a
 * hundred thousand of each finish well inside the suite's timeout, and every
 * answer is checked against sorted sizes (good fit against the best) and
 * running maxima in address order (first fit). */
START_TEST(a_hundred_thousand_blocks) {
  enum { BLOCKS = 100000, LOOKUPS = 100000 };
  random_state = 0x100000;
  size_t *sizes = malloc(BLOCKS * sizeof *sizes);
  size_t *sorted = malloc(BLOCKS * sizeof *sorted);
  size_t *running_max = malloc(BLOCKS * sizeof *running_max);
  ck_assert(sizes && sorted && running_max);
  cmr_free_blocks set;
  cmr_free_blocks_init_by_address(&set);
  /* Block i at +i MiB plus a few granules (so takes have prefixes); sizes
   * stay below 1 MiB - 4 KiB, so none touch. */
  for (size_t i = 0; i < BLOCKS; i++) {
    sizes[i] = 256 * (1 + random_below(4000));
    running_max[i] = i == 0 || sizes[i] > running_max[i - 1] ? sizes[i] : running_max[i - 1];
  }
  for (size_t n = 0; n < BLOCKS; n++) {
    /* In a scattered order: i = n * 7919 mod BLOCKS visits every index. */
    size_t i = (n * 7919) % BLOCKS;
    add(&set, start_of(i), sizes[i], sizes[i]);
  }
  memcpy(sorted, sizes, BLOCKS * sizeof *sizes);
  qsort(sorted, BLOCKS, sizeof *sorted, compare_sizes);
  ck_assert_uint_eq(set.count, BLOCKS);
  check_invariants(&set);
  /* Balanced: a treap of 100,000 is some 50 deep; a list would be 100,000. */
  ck_assert_uint_lt(depth(set.by_address), 100);

  for (int n = 0; n < LOOKUPS; n++) {
    size_t needed = 256 * (1 + random_below(4001));
    cmr_block *best = cmr_free_blocks_best_fit(&set, needed);
    cmr_block *first = cmr_free_blocks_first_fit(&set, needed);
    /* The smallest sorted size >= needed, and the first index whose running
     * maximum reaches needed. */
    size_t low = 0, high = BLOCKS;
    while (low < high) {
      size_t mid = (low + high) / 2;
      if (sorted[mid] < needed)
        low = mid + 1;
      else
        high = mid;
    }
    check_good_fit(best, low == BLOCKS ? NULL : &(range){0, sorted[low], 0}, needed);
    low = 0, high = BLOCKS;
    while (low < high) {
      size_t mid = (low + high) / 2;
      if (running_max[mid] < needed)
        low = mid + 1;
      else
        high = mid;
    }
    require((first == NULL) == (low == BLOCKS), "first fit of %zu", needed);
    require(first == NULL || first->address == at(start_of(low)), "first fit of %zu: +%zu, expected +%zu", needed,
            offset_of(first), start_of(low));
  }

  /* Take from and give back to the big set. */
  for (int n = 0; n < LOOKUPS; n++) {
    size_t size = 256 * (1 + random_below(64));
    size_t alignment = (size_t)256 << random_below(5);
    cmr_block *block = cmr_free_blocks_best_fit(&set, cmr_free_blocks_needed(size, alignment));
    require(block != NULL, "no block for %zu at %zu", size, alignment);
    cmr_block *taken = NULL;
    cmr_status status = cmr_free_blocks_take(&set, block, size, alignment, &taken);
    require(status == CMR_SUCCESS, "take: %s", cmr_last_error_message());
    cmr_free_blocks_insert(&set, taken);
  }
  ck_assert_uint_eq(set.count, BLOCKS);
  check_invariants(&set);
  cmr_free_blocks_clear(&set);
  free(sizes);
  free(sorted);
  free(running_max);
}
END_TEST

static void free_blocks_cases(Suite *suite) {
  cmr_test_case(suite, "basics", NULL, NULL, a_new_block_holds_its_fields, priorities_differ_from_record_to_record,
                needed_adds_the_worst_misalignment, needed_saturates_on_overflow, an_empty_set_finds_nothing);
  cmr_test_case(suite, "fit", NULL, NULL, best_fit_takes_the_smallest_block_that_fits,
                good_fit_takes_the_first_class_that_surely_fits, classes_follow_sizes,
                first_fit_takes_the_lowest_block_that_fits);
  cmr_test_case(suite, "merge", NULL, NULL, a_block_merges_with_both_neighbours, a_block_merges_with_one_neighbour,
                no_merge_across_the_start_of_a_unit);
  cmr_test_case(suite, "take", NULL, NULL, take_at_every_alignment, take_all_of_a_block, take_from_among_many_blocks,
                a_unit_is_whole_again_after_every_piece_returns, a_failed_take_leaves_the_set_as_it_was,
                a_failed_block_new_says_why);
  cmr_test_case(suite, "whole_set", NULL, NULL, remove_leaves_the_record_to_the_caller, absorb_merges_across_two_sets,
                pop_and_each_go_in_address_order, clear_empties_a_set_for_reuse);
  cmr_test_case(suite, "check", NULL, NULL, the_check_finds_a_broken_class, the_check_finds_a_broken_address_order,
                the_check_finds_a_broken_treap, boundaries_grow_and_shrink);

  TCase *stress = cmr_test_case(suite, "stress", NULL, NULL, a_hundred_thousand_blocks);
  /* Sized for work, not time: the 60 s ctest gives every suite, also when the
   * binary is run by hand (Check's own default is 4 s) under a sanitizer. */
  tcase_set_timeout(stress, 60);
  tcase_add_loop_test(stress, random_operations_match_the_model, 0, 8);
}

int main(void) { return cmr_test_main_suite("free_blocks", CMR_TEST_ANY_MACHINE, free_blocks_cases); }
