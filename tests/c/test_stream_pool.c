/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_stream_pool (cmr/stream_pool.h): RMM's cuda_stream_pool. Round robin,
 * indexing modulo the size, flags, the handle's misuse, and streams that
 * are cmr's own: usable by resources, gone with the pool. */
#include <pthread.h>
#include <stdlib.h>

#include "test_util.h"

START_TEST(default_size_is_16) {
  cmr_stream_pool *pool;
  ck_assert_ok(cmr_stream_pool_create(0, CMR_STREAM_FLAGS_SYNC_DEFAULT, &pool));
  size_t size = 0;
  ck_assert_ok(cmr_stream_pool_size(pool, &size));
  ck_assert_uint_eq(size, 16);
  ck_assert_ok(cmr_stream_pool_destroy(pool));
}
END_TEST

START_TEST(round_robin_and_modulo) {
  enum { size = 5 };
  cmr_stream_pool *pool;
  ck_assert_ok(cmr_stream_pool_create(size, CMR_STREAM_FLAGS_NON_BLOCKING, &pool));
  size_t reported = 0;
  ck_assert_ok(cmr_stream_pool_size(pool, &reported));
  ck_assert_uint_eq(reported, size);
  cmr_stream at[size];
  for (size_t i = 0; i < size; ++i) {
    ck_assert_ok(cmr_stream_pool_get_stream_at(pool, i, &at[i]));
    ck_assert_ptr_ne(at[i], CMR_DEFAULT_STREAM);
    for (size_t j = 0; j < i; ++j) ck_assert_ptr_ne(at[i], at[j]); /* distinct streams */
  }
  /* Round robin from the first, three times over. */
  for (size_t turn = 0; turn < 3 * size; ++turn) {
    cmr_stream next;
    ck_assert_ok(cmr_stream_pool_get_stream(pool, &next));
    ck_assert_ptr_eq(next, at[turn % size]);
  }
  /* Any index, modulo the size, as RMM's get_stream(index). */
  const size_t indexes[] = {5, 7, 12, 1000001, SIZE_MAX};
  for (size_t i = 0; i < sizeof indexes / sizeof indexes[0]; ++i) {
    cmr_stream stream;
    ck_assert_ok(cmr_stream_pool_get_stream_at(pool, indexes[i], &stream));
    ck_assert_ptr_eq(stream, at[indexes[i] % size]);
  }
  ck_assert_ok(cmr_stream_pool_destroy(pool));
}
END_TEST

START_TEST(bad_arguments) {
  cmr_stream_pool *pool = (cmr_stream_pool *)1;
  ck_assert_status(cmr_stream_pool_create(4, 2, &pool), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_stream_pool_create: flags 2");
  ck_assert_ptr_null(pool);
  ck_assert_status(cmr_stream_pool_create(SIZE_MAX, 0, &pool), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_status(cmr_stream_pool_create(4, 0, NULL), CMR_ERROR_NULL_POINTER);
  cmr_stream stream = (cmr_stream)1;
  ck_assert_status(cmr_stream_create_with_flags(3, &stream), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_stream_create_with_flags: flags 3");
  ck_assert_ptr_null(stream);
  ck_assert_status(cmr_stream_create_with_flags(0, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_stream_pool_create(2, 0, &pool));
  size_t size;
  ck_assert_status(cmr_stream_pool_get_stream(pool, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_stream_pool_get_stream_at(pool, 0, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_stream_pool_size(pool, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_stream_pool_get_stream(NULL, &stream), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_stream_pool_size(NULL, &size), CMR_ERROR_NULL_POINTER);
  /* Not a pool: garbage, and another kind of handle. */
  int local = 0;
  ck_assert_status(cmr_stream_pool_get_stream((cmr_stream_pool *)&local, &stream), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_stream_pool_destroy((cmr_stream_pool *)(uintptr_t)0x5a5a5a5a5a5aull),
                   CMR_ERROR_DESTROYED_HANDLE);
  cmr_stack *stack;
  ck_assert_ok(cmr_stack_parse("system", &stack));
  ck_assert_status(cmr_stream_pool_size((const cmr_stream_pool *)stack, &size), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_stream_pool_destroy((cmr_stream_pool *)stack), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ok(cmr_stack_destroy(stack));
  ck_assert_ok(cmr_stream_pool_size(pool, &size)); /* the pool is untouched */
  ck_assert_uint_eq(size, 2);
  ck_assert_ok(cmr_stream_pool_destroy(pool));
  ck_assert_ok(cmr_stream_pool_destroy(NULL));
}
END_TEST

START_TEST(destroyed_twice_and_used_after) {
  cmr_stream_pool *pool;
  ck_assert_ok(cmr_stream_pool_create(3, 0, &pool));
  ck_assert_ok(cmr_stream_pool_destroy(pool));
  ck_assert_status(cmr_stream_pool_destroy(pool), CMR_ERROR_DESTROYED_HANDLE);
  cmr_stream stream;
  size_t size;
  ck_assert_status(cmr_stream_pool_get_stream(pool, &stream), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_stream_pool_get_stream_at(pool, 1, &stream), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_stream_pool_size(pool, &size), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

/* The streams are cmr's: a pool resource orders memory on them, and they
 * end with the pool. */
START_TEST(streams_serve_allocations_and_end_with_the_pool) {
  cmr_stream_pool *streams;
  ck_assert_ok(cmr_stream_pool_create(4, CMR_STREAM_FLAGS_NON_BLOCKING, &streams));
  cmr_stack *stack;
  ck_assert_ok(cmr_stack_parse("pool(system, initial_pool_size=1MiB)", &stack));
  cmr_resource_ref mr;
  ck_assert_ok(cmr_stack_ref(stack, &mr));
  void *blocks[8];
  cmr_stream used[8];
  for (size_t i = 0; i < 8; ++i) {
    ck_assert_ok(cmr_stream_pool_get_stream(streams, &used[i]));
    ck_assert_ok(cmr_allocate(mr, 4096, used[i], &blocks[i]));
    memset(blocks[i], (int)i, 4096);
  }
  for (size_t i = 0; i < 8; ++i) {
    ck_assert_ok(cmr_deallocate(mr, blocks[i], 4096, used[i]));
    ck_assert_ok(cmr_stream_synchronize(used[i]));
  }
  cmr_test_destroy(stack, streams);
  /* Destroyed with the pool: cmr_stream_destroy no longer knows them. */
  ck_assert_status(cmr_stream_destroy(used[0]), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("not a live stream");
}
END_TEST

START_TEST(a_stream_destroyed_behind_the_pool_is_reported) {
  cmr_stream_pool *pool;
  ck_assert_ok(cmr_stream_pool_create(2, 0, &pool));
  cmr_stream stream;
  ck_assert_ok(cmr_stream_pool_get_stream_at(pool, 1, &stream));
  ck_assert_ok(cmr_stream_destroy(stream)); /* misuse: the pool owns it */
  ck_assert_status(cmr_stream_pool_destroy(pool), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_stream_pool_destroy(pool), CMR_ERROR_DESTROYED_HANDLE); /* gone all the same */
}
END_TEST

START_TEST(made_with_flags) {
  cmr_stream stream;
  ck_assert_ok(cmr_stream_create_with_flags(CMR_STREAM_FLAGS_NON_BLOCKING, &stream));
  ck_assert_ptr_ne(stream, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_stream_synchronize(stream));
  ck_assert_ok(cmr_stream_destroy(stream));
  ck_assert_ok(cmr_stream_create_with_flags(CMR_STREAM_FLAGS_SYNC_DEFAULT, &stream));
  ck_assert_ok(cmr_stream_destroy(stream));
}
END_TEST

enum { pool_threads = 4, takes_per_thread = 1000, threaded_size = 8 };
static cmr_stream_pool *shared_pool;

static void *take_streams(void *arg) {
  size_t *counts = arg; /* per index, filled by this thread */
  cmr_stream at[threaded_size];
  for (size_t i = 0; i < threaded_size; ++i) (void)cmr_stream_pool_get_stream_at(shared_pool, i, &at[i]);
  for (int n = 0; n < takes_per_thread; ++n) {
    cmr_stream stream = NULL;
    if (cmr_stream_pool_get_stream(shared_pool, &stream) != CMR_SUCCESS) continue;
    for (size_t i = 0; i < threaded_size; ++i) counts[i] += stream == at[i];
  }
  return NULL;
}

/* Concurrent takers share the turns exactly: each stream is handed out as
 * often as every other. */
START_TEST(round_robin_across_threads) {
  ck_assert_ok(cmr_stream_pool_create(threaded_size, 0, &shared_pool));
  size_t counts[pool_threads][threaded_size] = {{0}};
  ck_assert_ptr_null(cmr_test_threads(pool_threads, take_streams, counts, sizeof counts[0]).returned);
  for (size_t i = 0; i < threaded_size; ++i) {
    size_t total = 0;
    for (int t = 0; t < pool_threads; ++t) total += counts[t][i];
    ck_assert_uint_eq(total, pool_threads * takes_per_thread / threaded_size);
  }
  ck_assert_ok(cmr_stream_pool_destroy(shared_pool));
}
END_TEST

static void stream_pool_cases(Suite *suite) {
  cmr_test_case(suite, "stream_pool", NULL, NULL, default_size_is_16, round_robin_and_modulo, bad_arguments,
                destroyed_twice_and_used_after, streams_serve_allocations_and_end_with_the_pool,
                a_stream_destroyed_behind_the_pool_is_reported, made_with_flags, round_robin_across_threads);
}

int main(void) { return cmr_test_main_suite("stream_pool", CMR_TEST_NEEDS_DEVICE, stream_pool_cases); }
