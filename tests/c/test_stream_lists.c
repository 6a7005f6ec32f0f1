/* SPDX-License-Identifier: Apache-2.0 */
/* The stream lists directly (host build): per-thread keying of the default
 * stream, giving back whole units, reports. The pool's suite covers taking
 * across streams through a resource. Addresses are made up: the lists never
 * touch the memory they describe. */
#include <pthread.h>
#include <string.h>

#include "backend.h"
#include "block_map.h"
#include "stream_list.h"
#include "test_util.h"

enum { unit = 1 << 20 };

static char *const base = (char *)(uintptr_t)0x10000000;

static cmr_block *block_at(size_t offset, size_t size, size_t span) {
  cmr_block *block = NULL;
  ck_assert_ok(cmr_block_new(base + offset, size, span, &block));
  return block;
}

/* Stream lists with no handed-out map, for the test to destroy. */
static cmr_stream_lists *cmr_test_lists(cmr_fit fit, cmr_stream_keying keying) {
  cmr_stream_lists *lists = NULL;
  ck_assert_ok(cmr_stream_lists_create("test", fit, keying, NULL, &lists));
  return lists;
}

static cmr_backend_host_counts counts(void) {
  cmr_backend_host_counts now;
  cmr_backend_host_counts_read(&now);
  return now;
}

typedef struct thread_work {
  cmr_stream_lists *lists;
  size_t offset;
  cmr_block *taken;
} thread_work;

static void *give_then_take(void *arg) {
  thread_work *work = arg;
  ck_assert_ok(
      cmr_stream_lists_give(work->lists, CMR_DEFAULT_STREAM, block_at(work->offset, unit, unit), CMR_GIVEN_FREED));
  ck_assert_ok(cmr_stream_lists_take(work->lists, CMR_DEFAULT_STREAM, 4096, 256, CMR_TAKE_ANY, 0, NULL, &work->taken));
  return NULL;
}

START_TEST(default_stream_is_keyed_per_thread) {
  cmr_stream_lists *lists = cmr_test_lists(CMR_FIT_FIRST, CMR_KEY_DEFAULT_STREAM_PER_THREAD);
  thread_work work[2] = {{lists, 0, NULL}, {lists, 4 * (size_t)unit, NULL}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) ck_assert_int_eq(pthread_create(&threads[i], NULL, give_then_take, &work[i]), 0);
  for (int i = 0; i < 2; ++i) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  /* Each thread took from the block it gave, in a list of its own. */
  for (int i = 0; i < 2; ++i) {
    ck_assert_ptr_nonnull(work[i].taken);
    ck_assert_ptr_eq(work[i].taken->address, base + work[i].offset);
    cmr_block_delete(work[i].taken);
  }
  /* Their lists died with them; their blocks, idle, are in the shared list. */
  size_t blocks, bytes, list_count;
  cmr_stream_lists_totals(lists, &blocks, &bytes, &list_count);
  ck_assert_uint_eq(list_count, 1);
  ck_assert_uint_eq(blocks, 2);
  ck_assert_uint_eq(bytes, 2 * ((size_t)unit - 4096));
  cmr_stream_lists_destroy(lists);
}
END_TEST

START_TEST(per_stream_keying_shares_the_default_stream) {
  cmr_stream_lists *lists = cmr_test_lists(CMR_FIT_BEST, CMR_KEY_PER_STREAM);
  thread_work work[2] = {{lists, 0, NULL}, {lists, 4 * (size_t)unit, NULL}};
  for (int i = 0; i < 2; ++i) give_then_take(&work[i]);
  size_t blocks, bytes, list_count;
  cmr_stream_lists_totals(lists, &blocks, &bytes, &list_count);
  ck_assert_uint_eq(list_count, 1);
  for (int i = 0; i < 2; ++i) cmr_block_delete(work[i].taken);
  cmr_stream_lists_destroy(lists);
}
END_TEST

typedef struct released {
  int count;
  size_t bytes;
} released;

static void count_release(cmr_block *block, void *arg) {
  released *r = arg;
  r->count++;
  r->bytes += block->size;
  cmr_block_delete(block);
}

START_TEST(only_whole_units_are_released_after_waiting) {
  cmr_stream_lists *lists = cmr_test_lists(CMR_FIT_FIRST, CMR_KEY_PER_STREAM);
  cmr_stream a, b;
  ck_assert_ok(cmr_stream_create(&a));
  ck_assert_ok(cmr_stream_create(&b));
  /* a: one whole unit, and the tail of another (not its head). b: a whole
   * unit, given after a has taken from b's list (which shares it: b's
   * frees record an event from then on). */
  ck_assert_ok(cmr_stream_lists_give(lists, a, block_at(0, unit, unit), CMR_GIVEN_FREED));
  ck_assert_ok(cmr_stream_lists_give(lists, a, block_at(2 * (size_t)unit + 4096, unit - 4096, 0), CMR_GIVEN_FREED));
  ck_assert_ok(
      cmr_stream_lists_give(lists, b, block_at(8 * (size_t)unit, 2 * (size_t)unit, 2 * (size_t)unit), CMR_GIVEN_FREED));
  cmr_block *from_b = NULL;
  ck_assert_ok(cmr_stream_lists_take(lists, a, 2 * (size_t)unit, 256, CMR_TAKE_ANY, 0, NULL, &from_b));
  ck_assert_ptr_eq(from_b->address, base + 8 * (size_t)unit);
  from_b->size = unit, from_b->span = unit; /* give back half of it, as a whole unit of its own */
  ck_assert_ok(cmr_stream_lists_give(lists, b, from_b, CMR_GIVEN_FREED));
  cmr_backend_host_counts before = counts();
  released r = {0, 0};
  ck_assert_ok(cmr_stream_lists_release(lists, CMR_RELEASE_UNITS, count_release, &r));
  cmr_backend_host_counts after = counts();
  ck_assert_int_eq(r.count, 2);
  ck_assert_uint_eq(r.bytes, 2 * (size_t)unit);
  /* a's list was never shared (no event): a device synchronize; b's last
   * free recorded an event: the host waits on it. */
  ck_assert_uint_eq(after.device_synchronizes - before.device_synchronizes, 1);
  ck_assert_uint_eq(after.event_synchronizes - before.event_synchronizes, 1);
  size_t blocks, bytes, list_count;
  cmr_stream_lists_totals(lists, &blocks, &bytes, &list_count);
  ck_assert_uint_eq(blocks, 1);
  ck_assert_uint_eq(bytes, unit - 4096);
  cmr_stream_lists_destroy(lists);
  cmr_test_destroy(a, b);
}
END_TEST

/* A unit whose halves are in two streams' lists, and another whose halves
 * are in the default stream's and a third's: release gathers them, where
 * they merge, and gives both back whole; a piece of a third unit, alone,
 * stays, in the shared list (idle: the host waited for it). */
START_TEST(release_gathers_a_unit_over_several_lists) {
  cmr_stream_lists *lists = cmr_test_lists(CMR_FIT_BEST, CMR_KEY_PER_STREAM);
  cmr_stream a, b, c;
  ck_assert_ok(cmr_stream_create(&a));
  ck_assert_ok(cmr_stream_create(&b));
  ck_assert_ok(cmr_stream_create(&c));
  size_t half = unit / 2;
  ck_assert_ok(cmr_stream_lists_give(lists, a, block_at(0, half, unit), CMR_GIVEN_FREED));
  ck_assert_ok(cmr_stream_lists_give(lists, b, block_at(half, half, 0), CMR_GIVEN_FREED));
  ck_assert_ok(
      cmr_stream_lists_give(lists, CMR_DEFAULT_STREAM, block_at(4 * (size_t)unit, half, unit), CMR_GIVEN_IDLE));
  ck_assert_ok(cmr_stream_lists_give(lists, c, block_at(4 * (size_t)unit + half, half, 0), CMR_GIVEN_FREED));
  ck_assert_ok(cmr_stream_lists_give(lists, c, block_at(8 * (size_t)unit, half, unit), CMR_GIVEN_FREED));
  released r = {0, 0};
  ck_assert_ok(cmr_stream_lists_release(lists, CMR_RELEASE_UNITS, count_release, &r));
  ck_assert_int_eq(r.count, 2);
  ck_assert_uint_eq(r.bytes, 2 * (size_t)unit);
  size_t blocks, bytes, list_count;
  cmr_stream_lists_totals(lists, &blocks, &bytes, &list_count);
  ck_assert_uint_eq(blocks, 1);
  ck_assert_uint_eq(bytes, half);
  /* Where it stays every stream takes it without waiting. */
  cmr_backend_host_counts before = counts();
  cmr_block *taken = NULL;
  ck_assert_ok(cmr_stream_lists_take(lists, a, half, 256, CMR_TAKE_ANY, 0, NULL, &taken));
  ck_assert_ptr_eq(taken->address, base + 8 * (size_t)unit);
  cmr_backend_host_counts after = counts();
  ck_assert_uint_eq(after.stream_waits + after.device_synchronizes + after.event_synchronizes,
                    before.stream_waits + before.device_synchronizes + before.event_synchronizes);
  cmr_block_delete(taken);
  cmr_stream_lists_destroy(lists);
  cmr_test_destroy(a, b, c);
}
END_TEST

typedef struct visited {
  int count;
  uint64_t keys[4];
} visited;

static void note_visit(uint64_t key, const cmr_block *block, void *arg) {
  (void)block;
  visited *v = arg;
  if (v->count < 4) v->keys[v->count] = key;
  v->count++;
}

START_TEST(each_visits_every_free_block_with_its_list) {
  cmr_stream_lists *lists = cmr_test_lists(CMR_FIT_BEST, CMR_KEY_PER_STREAM);
  cmr_stream a;
  ck_assert_ok(cmr_stream_create(&a));
  ck_assert_ok(cmr_stream_lists_give(lists, CMR_DEFAULT_STREAM, block_at(0, 4096, 4096), CMR_GIVEN_FREED));
  ck_assert_ok(cmr_stream_lists_give(lists, a, block_at(8192, 4096, 4096), CMR_GIVEN_FREED));
  ck_assert_ok(cmr_stream_lists_give(lists, a, block_at(16384, 4096, 4096), CMR_GIVEN_FREED));
  visited v = {0, {0}};
  cmr_stream_lists_each(lists, note_visit, &v);
  ck_assert_int_eq(v.count, 3);
  uint64_t a_key = 0;
  ck_assert_ok(cmr_backend_stream_id(a, &a_key));
  ck_assert_uint_eq(v.keys[0], UINT64_C(1) << 62); /* the default stream's list, made first, has a fixed key */
  ck_assert_uint_eq(v.keys[1], a_key);
  ck_assert_uint_eq(v.keys[2], a_key);
  cmr_stream_lists_destroy(lists);
  ck_assert_ok(cmr_stream_destroy(a));
}
END_TEST

START_TEST(aligned_take_from_another_stream) {
  cmr_stream_lists *lists = cmr_test_lists(CMR_FIT_BEST, CMR_KEY_PER_STREAM);
  cmr_stream a, b;
  ck_assert_ok(cmr_stream_create(&a));
  ck_assert_ok(cmr_stream_create(&b));
  ck_assert_ok(cmr_stream_lists_give(lists, a, block_at(256, 3 * (size_t)unit, 3 * (size_t)unit), CMR_GIVEN_FREED));
  cmr_block *taken = NULL;
  ck_assert_ok(cmr_stream_lists_take(lists, b, unit, unit, CMR_TAKE_ANY, 0, NULL, &taken));
  ck_assert_ptr_nonnull(taken);
  ck_assert_uint_eq((uintptr_t)taken->address % unit, 0);
  ck_assert_uint_eq(taken->size, unit);
  /* Nothing fits a second aligned request from what is left. */
  cmr_block *none = (cmr_block *)1;
  ck_assert_ok(cmr_stream_lists_take(lists, a, 3 * (size_t)unit, 256, CMR_TAKE_ANY, 0, NULL, &none));
  ck_assert_ptr_null(none);
  cmr_block_delete(taken);
  cmr_stream_lists_destroy(lists);
  cmr_test_destroy(a, b);
}
END_TEST

/* ---- the invariant check: broken on purpose, it says what broke ---- */

typedef struct checked_lists {
  cmr_stream_lists *lists;
  cmr_block_map *map;
  cmr_stream a, b;
} checked_lists;

static checked_lists checked_lists_make(void) {
  checked_lists made = {0};
  ck_assert_ok(cmr_block_map_create(&made.map));
  ck_assert_ok(cmr_stream_lists_create("test", CMR_FIT_BEST, CMR_KEY_PER_STREAM, made.map, &made.lists));
  ck_assert_ok(cmr_stream_create(&made.a));
  ck_assert_ok(cmr_stream_create(&made.b));
  return made;
}

static void checked_lists_end(checked_lists *made) {
  cmr_stream_lists_destroy(made->lists);
  cmr_block_map_destroy(made->map);
  cmr_test_destroy(made->a, made->b);
}

static void assert_broken(cmr_stream_lists *lists, const char *reason) {
  const char *why = NULL;
  ck_assert(!cmr_stream_lists_valid(lists, &why));
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, reason) != NULL, "why: \"%s\", expected \"%s\" in it", why, reason);
}

/* A block of 4096 bytes at `offset`, freed into `stream`'s list. */
static cmr_block *cmr_test_freed_into(checked_lists *made, cmr_stream stream, size_t offset) {
  cmr_block *block = block_at(offset, 4096, 4096);
  ck_assert_ok(cmr_stream_lists_give(made->lists, stream, block, CMR_GIVEN_FREED));
  return block;
}

static void assert_valid(cmr_stream_lists *lists) {
  const char *why = "(not set)";
  ck_assert_msg(cmr_stream_lists_valid(lists, &why), "why: %s", why);
}

START_TEST(lists_in_use_pass_their_check) {
  checked_lists made = checked_lists_make();
  ck_assert_ok(cmr_stream_lists_give(made.lists, made.a, block_at(0, unit, unit), CMR_GIVEN_IDLE));
  ck_assert_ok(cmr_stream_lists_give(made.lists, made.a, block_at(unit, 4096, 4096), CMR_GIVEN_FREED));
  ck_assert_ok(cmr_stream_lists_give(made.lists, made.b, block_at(2 * (size_t)unit, 4096, 4096), CMR_GIVEN_FREED));
  void *handed = NULL;
  cmr_block *taken = NULL;
  ck_assert_ok(
      cmr_stream_lists_take(made.lists, made.a, 4096, 256, CMR_TAKE_ANY | CMR_TAKE_HAND_OUT, 4000, &handed, &taken));
  ck_assert_ptr_eq(handed, base + unit);
  assert_valid(made.lists);
  ck_assert_ok(cmr_stream_lists_take_back(made.lists, made.a, handed, 4000));
  assert_valid(made.lists);
  checked_lists_end(&made);
}
END_TEST

START_TEST(a_recent_block_resized_is_found) {
  checked_lists made = checked_lists_make();
  cmr_block *block = cmr_test_freed_into(&made, made.a, 0);
  block->size += 256; /* the list's recent bytes no longer add up */
  assert_broken(made.lists, "recent bytes");
  block->size -= 256;
  assert_valid(made.lists);
  checked_lists_end(&made);
}
END_TEST

START_TEST(an_index_block_resized_is_found) {
  checked_lists made = checked_lists_make();
  cmr_block *block = block_at(0, unit, unit);
  ck_assert_ok(cmr_stream_lists_give(made.lists, made.a, block, CMR_GIVEN_IDLE));
  block->size = 1000; /* neither the index's bytes nor a multiple of 256 */
  assert_broken(made.lists, "count or bytes disagree");
  block->size = unit;
  checked_lists_end(&made);
}
END_TEST

START_TEST(blocks_of_two_lists_covering_the_same_bytes_are_found) {
  checked_lists made = checked_lists_make();
  cmr_block *first = cmr_test_freed_into(&made, made.a, 0);
  cmr_block *second = cmr_test_freed_into(&made, made.b, unit);
  assert_valid(made.lists);
  second->address = first->address + 256; /* one free range in two streams' lists */
  assert_broken(made.lists, "cover the same bytes");
  second->address = base + unit;
  checked_lists_end(&made);
}
END_TEST

START_TEST(a_hand_out_asking_more_than_its_block_is_found) {
  checked_lists made = checked_lists_make();
  cmr_block *block = cmr_test_freed_into(&made, made.a, 0);
  void *handed = NULL;
  cmr_block *taken = NULL;
  ck_assert_ok(
      cmr_stream_lists_take(made.lists, made.a, 4096, 256, CMR_TAKE_ANY | CMR_TAKE_HAND_OUT, 4096, &handed, &taken));
  ck_assert_ptr_eq(handed, block->address);
  block->requested = 4096 + 256;
  assert_broken(made.lists, "requested");
  block->requested = 4096;
  ck_assert_ok(cmr_stream_lists_take_back(made.lists, made.a, handed, 4096));
  checked_lists_end(&made);
}
END_TEST

/* ---- the lock order (stream_list.h) ---- */

static void assert_refused(cmr_list_lock_kind kind, const char *reason) {
  const char *why = NULL;
  ck_assert(!cmr_stream_list_may_lock(kind, &why));
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, reason) != NULL, "why: \"%s\", expected \"%s\" in it", why, reason);
}

static void assert_allowed(cmr_list_lock_kind kind) {
  const char *why = NULL;
  ck_assert_msg(cmr_stream_list_may_lock(kind, &why), "why: %s", why);
}

/* What a checking build asks at every lock: nothing is refused with no
 * lock held; under one list's lock (the warm path's), neither the registry
 * nor a second list's lock nor the unit lock; under the registry, more
 * list locks but not the registry again, nor the unit lock. */
START_TEST(the_lock_order_check_refuses_what_could_deadlock) {
  assert_allowed(CMR_UNIT_LOCK);
  assert_allowed(CMR_REGISTRY_LOCK);
  assert_allowed(CMR_LIST_LOCK);
  cmr_stream_list_locked(CMR_LIST_LOCK, 1);
  assert_refused(CMR_REGISTRY_LOCK, "the registry taken while a list's lock is held");
  assert_refused(CMR_LIST_LOCK, "a second list's lock taken without the registry");
  assert_refused(CMR_UNIT_LOCK, "the unit lock taken while a stream-list lock is held");
  cmr_stream_list_locked(CMR_LIST_LOCK, -1);
  cmr_stream_list_locked(CMR_UNIT_LOCK, 1);
  assert_allowed(CMR_REGISTRY_LOCK);
  cmr_stream_list_locked(CMR_REGISTRY_LOCK, 1);
  assert_allowed(CMR_LIST_LOCK);
  cmr_stream_list_locked(CMR_LIST_LOCK, 2);
  assert_allowed(CMR_LIST_LOCK);
  assert_refused(CMR_REGISTRY_LOCK, "the registry taken twice");
  assert_refused(CMR_UNIT_LOCK, "the unit lock taken while");
  cmr_stream_list_locked(CMR_LIST_LOCK, -2);
  cmr_stream_list_locked(CMR_REGISTRY_LOCK, -1);
  cmr_stream_list_locked(CMR_UNIT_LOCK, -1);
  assert_allowed(CMR_UNIT_LOCK);
}
END_TEST

typedef struct seen_locked {
  int released;
  bool registry_refused;
  bool unit_refused;
} seen_locked;

static void note_locks_held(cmr_block *block, void *arg) {
  seen_locked *seen = arg;
  const char *why = NULL;
  seen->released++;
  seen->registry_refused = !cmr_stream_list_may_lock(CMR_REGISTRY_LOCK, &why);
  seen->unit_refused = !cmr_stream_list_may_lock(CMR_UNIT_LOCK, &why);
  cmr_block_delete(block);
}

/* The lists count the locks they take in a checking build (a release
 * callback runs under the registry and every list's lock, where the
 * registry is refused), and not otherwise. */
START_TEST(the_lock_order_is_counted_in_a_checking_build) {
  cmr_stream_lists *lists = cmr_test_lists(CMR_FIT_BEST, CMR_KEY_PER_STREAM);
  cmr_stream a;
  ck_assert_ok(cmr_stream_create(&a));
  ck_assert_ok(cmr_stream_lists_give(lists, a, block_at(0, unit, unit), CMR_GIVEN_FREED));
  seen_locked seen = {0, false, false};
  ck_assert_ok(cmr_stream_lists_release(lists, CMR_RELEASE_UNITS, note_locks_held, &seen));
  ck_assert_int_eq(seen.released, 1);
  ck_assert_int_eq(seen.registry_refused, CMR_CHECK_INVARIANTS);
  ck_assert_int_eq(seen.unit_refused, CMR_CHECK_INVARIANTS);
  assert_allowed(CMR_REGISTRY_LOCK); /* all let go again */
  cmr_stream_lists_destroy(lists);
  ck_assert_ok(cmr_stream_destroy(a));
}
END_TEST

int main(void) {
  return cmr_test_main("stream_lists", default_stream_is_keyed_per_thread, per_stream_keying_shares_the_default_stream,
                       only_whole_units_are_released_after_waiting, release_gathers_a_unit_over_several_lists,
                       each_visits_every_free_block_with_its_list, aligned_take_from_another_stream,
                       lists_in_use_pass_their_check, a_recent_block_resized_is_found, an_index_block_resized_is_found,
                       blocks_of_two_lists_covering_the_same_bytes_are_found,
                       a_hand_out_asking_more_than_its_block_is_found, the_lock_order_check_refuses_what_could_deadlock,
                       the_lock_order_is_counted_in_a_checking_build);
}
