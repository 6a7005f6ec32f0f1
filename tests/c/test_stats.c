/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_ref_stats and cmr_ref_reset_peak_stats on each resource family over
 * host memory (suballocators on the kit, an adaptor, a failure callback, a
 * leaf, a foreign resource), the versioned struct, and the out-of-memory
 * report: the message built from the stats, the count, the observer and its
 * rules (called once per failure, not from inside itself). */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static cmr_system_resource *host;

static void make_host(void) { host = cmr_test_system_resource(); }
static void drop_host(void) { ck_assert_ok(cmr_system_resource_destroy(host)); }

static cmr_stats stats_of(cmr_resource_ref ref) {
  cmr_stats stats = {.size = sizeof stats};
  ck_assert_ok(cmr_ref_stats(ref, &stats));
  ck_assert_uint_eq(stats.size, sizeof stats);
  return stats;
}

static cmr_pool_resource *new_pool(size_t initial, size_t maximum) {
  cmr_pool_resource *pool = NULL;
  ck_assert_ok(cmr_pool_resource_create(cmr_system_resource_ref(host), CMR_SIZE(initial), CMR_SIZE(maximum),
                                        CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &pool));
  return pool;
}

static cmr_statistics_resource *new_statistics_over(cmr_pool_resource *pool) {
  cmr_statistics_resource *counted = NULL;
  ck_assert_ok(cmr_statistics_resource_create(cmr_pool_resource_ref(pool), &counted));
  return counted;
}

#define KIT_FIELDS                                                                                           \
  (CMR_STATS_BYTES_IN_USE | CMR_STATS_BYTES_IN_USE_PEAK | CMR_STATS_BYTES_HELD | CMR_STATS_BYTES_HELD_PEAK | \
   CMR_STATS_ALLOCATIONS | CMR_STATS_DEALLOCATIONS | CMR_STATS_BYTES_FREE | CMR_STATS_FREE_BLOCKS |          \
   CMR_STATS_LARGEST_FREE_BLOCK | CMR_STATS_OUT_OF_MEMORY_COUNT | CMR_STATS_SEGMENTS | CMR_STATS_STREAM_LISTS)

START_TEST(a_pool_reports_its_use_its_chunks_and_its_free_memory) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *a = NULL, *b = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &a));
  ck_assert_ok(cmr_allocate(ref, 3000, CMR_DEFAULT_STREAM, &b));
  ck_assert_ok(cmr_deallocate(ref, a, 1000, CMR_DEFAULT_STREAM));
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.supported, KIT_FIELDS);
  ck_assert_uint_eq(stats.bytes_in_use, 3000);
  ck_assert_uint_eq(stats.bytes_in_use_peak, 4000);
  ck_assert_uint_eq(stats.bytes_held, 1 << 20);
  ck_assert_uint_eq(stats.bytes_held_peak, 1 << 20);
  ck_assert_uint_eq(stats.segments, 1);
  ck_assert_uint_eq(stats.allocations, 2);
  ck_assert_uint_eq(stats.deallocations, 1);
  /* 3000 bytes take a block of 3072; the 1024 freed before it stay apart. */
  ck_assert_uint_eq(stats.bytes_free, (1 << 20) - 3072);
  ck_assert_uint_eq(stats.free_blocks, 2);
  ck_assert_uint_eq(stats.largest_free_block, (1 << 20) - 4096);
  size_t largest = 0;
  ck_assert_ok(cmr_pool_resource_largest_free_block(pool, &largest));
  ck_assert_uint_eq(stats.largest_free_block, largest);
  ck_assert_uint_eq(stats.stream_lists, 1);
  ck_assert_uint_eq(stats.out_of_memory_count, 0);
  ck_assert_ok(cmr_ref_reset_peak_stats(ref));
  stats = stats_of(ref);
  ck_assert_uint_eq(stats.bytes_in_use_peak, 3000);
  ck_assert_ok(cmr_deallocate(ref, b, 3000, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(stats_of(ref).bytes_in_use, 0);
  ck_assert_uint_eq(stats_of(ref).bytes_in_use_peak, 3000);
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

START_TEST(a_pool_that_grows_keeps_its_peak_of_held_bytes) {
  cmr_pool_resource *pool = new_pool(1 << 20, 4 << 20);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *big = NULL;
  ck_assert_ok(cmr_allocate(ref, 2 << 20, CMR_DEFAULT_STREAM, &big));
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.segments, 2);
  size_t grown = stats.bytes_held;
  ck_assert_uint_gt(grown, 2 << 20);
  ck_assert_ok(cmr_deallocate(ref, big, 2 << 20, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_pool_resource_release(pool));
  stats = stats_of(ref);
  ck_assert_uint_eq(stats.bytes_held, 0);
  ck_assert_uint_eq(stats.segments, 0);
  ck_assert_uint_eq(stats.bytes_held_peak, grown);
  ck_assert_ok(cmr_ref_reset_peak_stats(ref));
  ck_assert_uint_eq(stats_of(ref).bytes_held_peak, 0);
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

START_TEST(fixed_size_counts_its_blocks) {
  cmr_fixed_size_resource *fixed = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(cmr_system_resource_ref(host), CMR_SIZE(1024), CMR_SIZE(4),
                                              CMR_FIXED_SIZE_CAPTURE_SERVE, &fixed));
  cmr_resource_ref ref = cmr_fixed_size_resource_ref(fixed);
  void *a = NULL;
  ck_assert_ok(cmr_allocate(ref, 100, CMR_DEFAULT_STREAM, &a));
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.supported, KIT_FIELDS);
  ck_assert_uint_eq(stats.bytes_in_use, 100);
  ck_assert_uint_eq(stats.bytes_held, 4096);
  ck_assert_uint_eq(stats.bytes_free, 3072);
  ck_assert_uint_eq(stats.largest_free_block, 1024);
  ck_assert_uint_eq(stats.free_blocks, 3);
  ck_assert_ok(cmr_deallocate(ref, a, 100, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_fixed_size_resource_destroy(fixed));
}
END_TEST

START_TEST(an_arena_counts_its_global_arena_as_free) {
  cmr_arena_resource *arena = NULL;
  ck_assert_ok(cmr_arena_resource_create(cmr_system_resource_ref(host), CMR_SIZE(4 << 20), false, "",
                                         CMR_ARENA_CAPTURE_SERVE, &arena));
  cmr_resource_ref ref = cmr_arena_resource_ref(arena);
  cmr_stats before = stats_of(ref);
  ck_assert_uint_eq(before.supported, KIT_FIELDS);
  ck_assert_uint_eq(before.bytes_held, 4 << 20);
  ck_assert_uint_eq(before.bytes_free, 4 << 20);
  ck_assert_uint_eq(before.largest_free_block, 4 << 20);
  void *a = NULL;
  ck_assert_ok(cmr_allocate(ref, 5000, CMR_DEFAULT_STREAM, &a));
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.bytes_in_use, 5000);
  ck_assert_uint_eq(stats.bytes_held, 4 << 20);
  ck_assert_uint_eq(stats.bytes_free, (4 << 20) - 5120);
  ck_assert_ok(cmr_deallocate(ref, a, 5000, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(stats_of(ref).bytes_free, 4 << 20);
  ck_assert_ok(cmr_arena_resource_destroy(arena));
}
END_TEST

START_TEST(an_adaptor_counts_its_own_calls_and_its_upstreams_memory) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_statistics_resource *counted = new_statistics_over(pool);
  cmr_resource_ref ref = cmr_statistics_resource_ref(counted);
  void *direct = NULL, *through = NULL;
  ck_assert_ok(cmr_allocate(cmr_pool_resource_ref(pool), 500, CMR_DEFAULT_STREAM, &direct));
  ck_assert_ok(cmr_allocate(ref, 700, CMR_DEFAULT_STREAM, &through));
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.bytes_in_use, 700); /* its own callers' */
  ck_assert_uint_eq(stats.allocations, 1);
  ck_assert_uint_eq(stats.bytes_held, 1 << 20); /* the pool's */
  ck_assert_uint_eq(stats.bytes_free, (1 << 20) - 512 - 768);
  ck_assert_uint_eq(stats.supported, KIT_FIELDS);
  ck_assert_uint_eq(stats_of(cmr_pool_resource_ref(pool)).bytes_in_use, 1200);
  ck_assert_ok(cmr_deallocate(ref, through, 700, CMR_DEFAULT_STREAM));
  /* Its reset resets the pool's peaks too. */
  ck_assert_ok(cmr_ref_reset_peak_stats(ref));
  ck_assert_uint_eq(stats_of(ref).bytes_in_use_peak, 0);
  ck_assert_uint_eq(stats_of(cmr_pool_resource_ref(pool)).bytes_in_use_peak, 500);
  ck_assert_ok(cmr_deallocate(cmr_pool_resource_ref(pool), direct, 500, CMR_DEFAULT_STREAM));
  cmr_test_destroy(counted, pool);
}
END_TEST

START_TEST(binning_counts_its_calls_and_reports_its_upstreams_memory) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_binning_resource *binning = NULL;
  ck_assert_ok(cmr_binning_resource_create(cmr_pool_resource_ref(pool), CMR_INT(10), CMR_INT(12), &binning));
  cmr_resource_ref ref = cmr_binning_resource_ref(binning);
  void *small = NULL;
  ck_assert_ok(cmr_allocate(ref, 600, CMR_DEFAULT_STREAM, &small));
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.bytes_in_use, 600);
  ck_assert_uint_eq(stats.allocations, 1);
  cmr_stats upstream = stats_of(cmr_pool_resource_ref(pool));
  ck_assert_uint_eq(stats.bytes_held, upstream.bytes_held);
  ck_assert_uint_eq(stats.largest_free_block, upstream.largest_free_block);
  ck_assert_uint_eq(stats.supported, KIT_FIELDS);
  ck_assert_ok(cmr_deallocate(ref, small, 600, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(stats_of(ref).deallocations, 1);
  cmr_test_destroy(binning, pool);
}
END_TEST

START_TEST(a_leaf_holds_what_it_handed_out) {
  cmr_resource_ref ref = cmr_system_resource_ref(host);
  void *a = NULL;
  ck_assert_ok(cmr_allocate(ref, 1234, CMR_DEFAULT_STREAM, &a));
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.supported, CMR_STATS_BYTES_IN_USE | CMR_STATS_BYTES_IN_USE_PEAK | CMR_STATS_BYTES_HELD |
                                         CMR_STATS_BYTES_HELD_PEAK | CMR_STATS_ALLOCATIONS | CMR_STATS_DEALLOCATIONS |
                                         CMR_STATS_OUT_OF_MEMORY_COUNT);
  ck_assert_uint_eq(stats.bytes_in_use, 1234);
  ck_assert_uint_eq(stats.bytes_held, 1234);
  ck_assert_uint_eq(stats.largest_free_block, 0);
  ck_assert_ok(cmr_deallocate(ref, a, 1234, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(stats_of(ref).bytes_held, 0);
  ck_assert_uint_eq(stats_of(ref).bytes_held_peak, 1234);
}
END_TEST

START_TEST(a_foreign_resource_answers_nothing_supported) {
  test_foreign foreign = {0};
  cmr_resource_ref ref = test_foreign_ref(&foreign, &test_foreign_ops);
  cmr_stats stats;
  memset(&stats, 0xa5, sizeof stats);
  stats.size = sizeof stats;
  ck_assert_ok(cmr_ref_stats(ref, &stats));
  cmr_stats zero = {.size = sizeof zero};
  ck_assert_mem_eq(&stats, &zero, sizeof stats);
  ck_assert_ok(cmr_ref_reset_peak_stats(ref));
}
END_TEST

START_TEST(an_older_smaller_struct_is_written_only_as_far_as_its_size) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *a = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &a));
  unsigned char buffer[sizeof(cmr_stats)];
  memset(buffer, 0x5a, sizeof buffer);
  cmr_stats *old = (cmr_stats *)(void *)buffer;
  old->size = offsetof(cmr_stats, bytes_held);
  ck_assert_ok(cmr_ref_stats(ref, old));
  ck_assert_uint_eq(old->size, offsetof(cmr_stats, bytes_held));
  ck_assert_uint_eq(old->bytes_in_use, 1000);
  ck_assert_uint_eq(old->bytes_in_use_peak, 1000);
  for (size_t i = offsetof(cmr_stats, bytes_held); i < sizeof buffer; ++i) ck_assert_uint_eq(buffer[i], 0x5a);
  ck_assert_ok(cmr_deallocate(ref, a, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

START_TEST(bad_arguments_are_refused) {
  cmr_resource_ref ref = cmr_system_resource_ref(host);
  ck_assert_status(cmr_ref_stats(ref, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("out is NULL");
  cmr_stats stats = {.size = 4};
  ck_assert_status(cmr_ref_stats(ref, &stats), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("out->size 4");
  stats.size = sizeof stats;
  cmr_resource_ref zeroed = {NULL, NULL};
  ck_assert_status(cmr_ref_stats(zeroed, &stats), CMR_ERROR_INVALID_REF);
  ck_assert_status(cmr_ref_reset_peak_stats(zeroed), CMR_ERROR_INVALID_REF);
  cmr_system_resource *gone = cmr_test_system_resource();
  cmr_resource_ref dead = cmr_system_resource_ref(gone);
  ck_assert_ok(cmr_system_resource_destroy(gone));
  ck_assert_status(cmr_ref_stats(dead, &stats), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

/* ---- out of memory ---------------------------------------------------------- */

typedef struct seen_oom {
  int calls;
  cmr_resource_ref ref;
  cmr_stats stats;
  size_t bytes;
  char message[1024];
  cmr_status nested_set;    /* what setting the observer from inside it answered */
  cmr_resource_ref nested;  /* allocated from inside the observer when set */
  cmr_status nested_status; /* what that allocation answered */
} seen_oom;

static void on_oom(cmr_resource_ref ref, const cmr_stats *stats, size_t bytes, size_t alignment, cmr_stream stream,
                   const char *message, void *user) {
  (void)alignment, (void)stream;
  seen_oom *seen = user;
  seen->calls++;
  seen->ref = ref;
  seen->stats = *stats;
  seen->bytes = bytes;
  snprintf(seen->message, sizeof seen->message, "%s", message);
  seen->nested_set = cmr_set_oom_observer(NULL, NULL);
  if (seen->nested.ops != NULL) {
    void *ptr = NULL;
    seen->nested_status = cmr_allocate(seen->nested, (size_t)1 << 40, CMR_DEFAULT_STREAM, &ptr);
  }
}

START_TEST(a_pool_out_of_memory_says_what_it_holds_and_tells_the_observer) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *a = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &a));
  seen_oom seen = {0};
  ck_assert_ok(cmr_set_oom_observer(on_oom, &seen));
  void *big = NULL;
  ck_assert_status(cmr_allocate(ref, 2 << 20, CMR_DEFAULT_STREAM, &big), CMR_ERROR_OUT_OF_MEMORY);
  const char *message = cmr_last_error_message();
  ck_assert_ptr_nonnull(strstr(message, "asked for 2097152 bytes at alignment 256 on stream (nil)"));
  ck_assert_ptr_nonnull(strstr(message, "it holds 1048576 bytes from its upstream (peak 1048576) in 1 segments"));
  ck_assert_ptr_nonnull(strstr(message, "1000 bytes in use by 1 allocations"));
  ck_assert_ptr_nonnull(strstr(message, "1047552 bytes free in 1 blocks, the largest 1047552"));
  ck_assert_ptr_nonnull(strstr(message, "free by stream:"));
  ck_assert_ptr_nonnull(strstr(message, "1047552 bytes in 1 blocks (largest 1047552)"));
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_ptr_eq(seen.ref.self, ref.self);
  ck_assert_uint_eq(seen.bytes, 2 << 20);
  ck_assert_uint_eq(seen.stats.bytes_held, 1 << 20);
  ck_assert_uint_eq(seen.stats.bytes_in_use, 1000);
  ck_assert_uint_eq(seen.stats.largest_free_block, (1 << 20) - 1024);
  ck_assert_str_eq(seen.message, message);
  ck_assert_int_eq(seen.nested_set, CMR_ERROR_REENTRANT_CALL);
  ck_assert_uint_eq(stats_of(ref).out_of_memory_count, 1);
  ck_assert_status(cmr_allocate(ref, 2 << 20, CMR_DEFAULT_STREAM, &big), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_uint_eq(stats_of(ref).out_of_memory_count, 2);
  ck_assert_int_eq(seen.calls, 2);
  ck_assert_ok(cmr_set_oom_observer(NULL, NULL));
  ck_assert_status(cmr_allocate(ref, 2 << 20, CMR_DEFAULT_STREAM, &big), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(seen.calls, 2);
  ck_assert_ok(cmr_deallocate(ref, a, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

START_TEST(an_adaptor_passing_a_failure_on_is_not_reported_again) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_statistics_resource *counted = new_statistics_over(pool);
  cmr_resource_ref ref = cmr_statistics_resource_ref(counted);
  seen_oom seen = {0};
  ck_assert_ok(cmr_set_oom_observer(on_oom, &seen));
  void *big = NULL;
  ck_assert_status(cmr_allocate(ref, 2 << 20, CMR_DEFAULT_STREAM, &big), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_ptr_eq(seen.ref.self, cmr_pool_resource_ref(pool).self); /* the one that ran out */
  /* The report is in the message once. */
  const char *message = cmr_last_error_message();
  const char *first = strstr(message, "free by stream:");
  ck_assert_ptr_nonnull(first);
  ck_assert_ptr_null(strstr(first + 1, "free by stream:"));
  /* Both count it. */
  ck_assert_uint_eq(stats_of(ref).out_of_memory_count, 1);
  ck_assert_uint_eq(stats_of(cmr_pool_resource_ref(pool)).out_of_memory_count, 1);
  ck_assert_ok(cmr_set_oom_observer(NULL, NULL));
  cmr_test_destroy(counted, pool);
}
END_TEST

START_TEST(an_out_of_memory_inside_the_observer_does_not_call_it_again) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  seen_oom seen = {.nested = ref};
  ck_assert_ok(cmr_set_oom_observer(on_oom, &seen));
  void *big = NULL;
  ck_assert_status(cmr_allocate(ref, 2 << 20, CMR_DEFAULT_STREAM, &big), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_int_eq(seen.nested_status, CMR_ERROR_OUT_OF_MEMORY);
  /* The caller reads its own failure's message, not the nested one's. */
  ck_assert_message_has("asked for 2097152 bytes");
  ck_assert_uint_eq(stats_of(ref).out_of_memory_count, 2);
  ck_assert_ok(cmr_set_oom_observer(NULL, NULL));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

START_TEST(a_foreign_resource_out_of_memory_reaches_the_observer) {
  test_foreign foreign = {.limit = 100};
  cmr_resource_ref ref = test_foreign_ref(&foreign, &test_foreign_ops);
  seen_oom seen = {0};
  ck_assert_ok(cmr_set_oom_observer(on_oom, &seen));
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_uint_eq(seen.stats.supported, 0);
  ck_assert_uint_eq(seen.bytes, 1000);
  ck_assert_ok(cmr_set_oom_observer(NULL, NULL));
}
END_TEST

START_TEST(a_failure_callback_counts_its_retries) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  int calls = 0;
  cmr_failure_callback_resource *retrying = NULL;
  ck_assert_ok(
      cmr_failure_callback_resource_create(cmr_pool_resource_ref(pool), cmr_test_retry_once, &calls, &retrying));
  cmr_resource_ref ref = cmr_failure_callback_resource_ref(retrying);
  void *big = NULL;
  ck_assert_status(cmr_allocate(ref, 2 << 20, CMR_DEFAULT_STREAM, &big), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(calls, 2);
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.failure_callback_retries, 1);
  ck_assert(stats.supported & CMR_STATS_FAILURE_CALLBACK_RETRIES);
  ck_assert_uint_eq(stats.out_of_memory_count, 1);
  ck_assert_uint_eq(stats_of(cmr_pool_resource_ref(pool)).out_of_memory_count, 2);
  cmr_test_destroy(retrying, pool);
}
END_TEST

/* ---- threads ------------------------------------------------------------------ */

enum { THREADS = 4, PAIRS = 2000 };

typedef struct worker {
  cmr_resource_ref ref;
  size_t bytes;
  int failures; /* calls that did not answer as expected */
} worker;

static void *allocate_and_free(void *arg) {
  worker *w = arg;
  for (int i = 0; i < PAIRS; ++i) {
    void *ptr = NULL;
    cmr_status status = cmr_allocate(w->ref, w->bytes, CMR_DEFAULT_STREAM, &ptr);
    if (status == CMR_SUCCESS) status = cmr_deallocate(w->ref, ptr, w->bytes, CMR_DEFAULT_STREAM);
    w->failures += status != CMR_SUCCESS;
  }
  return NULL;
}

START_TEST(counts_from_many_threads_add_up) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  pthread_t threads[THREADS];
  worker workers[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    workers[t] = (worker){ref, 1000 + (size_t)t, 0};
    ck_assert_int_eq(pthread_create(&threads[t], NULL, allocate_and_free, &workers[t]), 0);
  }
  for (int t = 0; t < THREADS; ++t) {
    ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
    ck_assert_int_eq(workers[t].failures, 0);
  }
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.allocations, THREADS * PAIRS);
  ck_assert_uint_eq(stats.deallocations, THREADS * PAIRS);
  ck_assert_uint_eq(stats.bytes_in_use, 0);
  ck_assert_uint_ge(stats.bytes_in_use_peak, 1003);
  ck_assert_uint_le(stats.bytes_in_use_peak, 1000 + 1001 + 1002 + 1003);
  ck_assert_uint_eq(stats.bytes_free, 1 << 20);
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

static void count_oom(cmr_resource_ref ref, const cmr_stats *stats, size_t bytes, size_t alignment, cmr_stream stream,
                      const char *message, void *user) {
  (void)ref, (void)stats, (void)bytes, (void)alignment, (void)stream, (void)message;
  __atomic_add_fetch((int *)user, 1, __ATOMIC_RELAXED);
}

START_TEST(the_observer_changes_while_other_threads_run_out) {
  cmr_pool_resource *pool = new_pool(1 << 20, 1 << 20);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  pthread_t threads[THREADS];
  worker workers[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    workers[t] = (worker){ref, 2 << 20, 0};
    ck_assert_int_eq(pthread_create(&threads[t], NULL, allocate_and_free, &workers[t]), 0);
  }
  int counts[2] = {0, 0};
  for (int i = 0; i < 200; ++i) ck_assert_ok(cmr_set_oom_observer(count_oom, &counts[i % 2]));
  ck_assert_ok(cmr_set_oom_observer(NULL, NULL));
  for (int t = 0; t < THREADS; ++t) {
    ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
    ck_assert_int_eq(workers[t].failures, PAIRS); /* every one out of memory */
  }
  /* Each failure was counted, and observed at most once. */
  ck_assert_uint_eq(stats_of(ref).out_of_memory_count, THREADS * PAIRS);
  ck_assert_int_le(counts[0] + counts[1], THREADS * PAIRS);
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

static void stats_cases(Suite *suite) {
  cmr_test_case(suite, "families", make_host, drop_host, a_pool_reports_its_use_its_chunks_and_its_free_memory,
                a_pool_that_grows_keeps_its_peak_of_held_bytes, fixed_size_counts_its_blocks,
                an_arena_counts_its_global_arena_as_free, an_adaptor_counts_its_own_calls_and_its_upstreams_memory,
                binning_counts_its_calls_and_reports_its_upstreams_memory, a_leaf_holds_what_it_handed_out,
                a_foreign_resource_answers_nothing_supported,
                an_older_smaller_struct_is_written_only_as_far_as_its_size, bad_arguments_are_refused,
                a_failure_callback_counts_its_retries);
  cmr_test_case(suite, "out_of_memory", make_host, drop_host,
                a_pool_out_of_memory_says_what_it_holds_and_tells_the_observer,
                an_adaptor_passing_a_failure_on_is_not_reported_again,
                an_out_of_memory_inside_the_observer_does_not_call_it_again,
                a_foreign_resource_out_of_memory_reaches_the_observer);
  cmr_test_case(suite, "threads", make_host, drop_host, counts_from_many_threads_add_up,
                the_observer_changes_while_other_threads_run_out);
}

int main(void) { return cmr_test_main_suite("stats", CMR_TEST_ANY_MACHINE, stats_cases); }
