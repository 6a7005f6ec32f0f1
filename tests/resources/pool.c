/* SPDX-License-Identifier: Apache-2.0 */
/* pool's release policies, measured in what it holds from its upstream:
 * set_release_threshold gives a whole free chunk back on the free that
 * leaves it whole, once the pool holds more than the threshold, and not
 * before; set_max_split_size keeps large free blocks for large requests. */
#include "test_util.h"

typedef struct counted_pool {
  cmr_statistics_resource *upstream;
  cmr_pool_resource *pool;
  cmr_resource_ref ref;
} counted_pool;

static counted_pool make_pool(size_t initial) {
  counted_pool made = {0};
  cmr_system_resource *system = cmr_test_system_resource();
  ck_assert_ok(cmr_statistics_resource_create(cmr_system_resource_ref(system), &made.upstream));
  ck_assert_ok(cmr_system_resource_destroy(system));
  ck_assert_ok(cmr_pool_resource_create(cmr_statistics_resource_ref(made.upstream), CMR_SIZE(initial), CMR_SIZE_DEFAULT,
                                        CMR_SIZE(1 << 20), CMR_POOL_CAPTURE_SERVE, &made.pool));
  made.ref = cmr_pool_resource_ref(made.pool);
  return made;
}

static void destroy_pool(counted_pool *made) {
  ck_assert_ok(cmr_pool_resource_destroy(made->pool));
  ck_assert_ok(cmr_statistics_resource_destroy(made->upstream));
}

static size_t held(const counted_pool *made) {
  size_t bytes = 0;
  ck_assert_ok(cmr_pool_resource_pool_size(made->pool, &bytes));
  return bytes;
}

static size_t upstream_bytes(const counted_pool *made) {
  size_t bytes = 0;
  ck_assert_ok(cmr_statistics_resource_bytes_current(made->upstream, &bytes));
  return bytes;
}

START_TEST(threshold_gives_whole_chunks_back_past_it) {
  counted_pool made = make_pool(0);
  ck_assert_ok(cmr_pool_resource_set_release_threshold(made.pool, 1 << 20));
  void *a = NULL, *b = NULL;
  ck_assert_ok(cmr_allocate(made.ref, 1 << 20, CMR_DEFAULT_STREAM, &a));
  ck_assert_ok(cmr_allocate(made.ref, 1 << 20, CMR_DEFAULT_STREAM, &b));
  ck_assert_uint_eq(held(&made), 2 << 20);
  ck_assert_ok(cmr_deallocate(made.ref, b, 1 << 20, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(held(&made), 1 << 20);
  ck_assert_uint_eq(upstream_bytes(&made), 1 << 20);
  ck_assert_ok(cmr_deallocate(made.ref, a, 1 << 20, CMR_DEFAULT_STREAM)); /* at the threshold: kept */
  ck_assert_uint_eq(upstream_bytes(&made), 1 << 20);
  destroy_pool(&made);
}
END_TEST

START_TEST(default_threshold_keeps_everything) {
  counted_pool made = make_pool(0);
  void *a = NULL, *b = NULL;
  ck_assert_ok(cmr_allocate(made.ref, 1 << 20, CMR_DEFAULT_STREAM, &a));
  ck_assert_ok(cmr_allocate(made.ref, 1 << 20, CMR_DEFAULT_STREAM, &b));
  ck_assert_ok(cmr_deallocate(made.ref, b, 1 << 20, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(made.ref, a, 1 << 20, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(upstream_bytes(&made), 2 << 20);
  destroy_pool(&made);
}
END_TEST

START_TEST(chunks_in_another_streams_list_stay) {
  counted_pool made = make_pool(1 << 20);
  ck_assert_ok(cmr_pool_resource_set_release_threshold(made.pool, 0));
  cmr_stream other = cmr_test_stream();
  void *b = NULL, *c = NULL;
  ck_assert_ok(cmr_allocate(made.ref, 1 << 19, other, &b));
  ck_assert_ok(cmr_allocate(made.ref, 1 << 19, other, &c));
  ck_assert_uint_eq(held(&made), 1 << 20); /* both halves of the first chunk */
  ck_assert_ok(cmr_deallocate(made.ref, b, 1 << 19, other));
  ck_assert_ok(cmr_deallocate(made.ref, c, 1 << 19, CMR_DEFAULT_STREAM));
  /* Each half waits in its stream's list: no list holds the whole chunk. */
  ck_assert_uint_eq(upstream_bytes(&made), 1 << 20);
  ck_assert_ok(cmr_pool_resource_release(made.pool));
  ck_assert_uint_eq(upstream_bytes(&made), 0);
  void *d = NULL;
  ck_assert_ok(cmr_allocate(made.ref, 1 << 20, other, &d));
  ck_assert_ok(cmr_deallocate(made.ref, d, 1 << 20, other)); /* whole in its stream's list: back at once */
  ck_assert_uint_eq(upstream_bytes(&made), 0);
  destroy_pool(&made);
  ck_assert_ok(cmr_stream_destroy(other));
}
END_TEST

START_TEST(large_blocks_serve_large_requests_only) {
  counted_pool made = make_pool(0);
  ck_assert_ok(cmr_pool_resource_set_max_split_size(made.pool, 1 << 20));
  void *large = NULL, *small = NULL, *again = NULL;
  ck_assert_ok(cmr_allocate(made.ref, 2 << 20, CMR_DEFAULT_STREAM, &large));
  ck_assert_ok(cmr_deallocate(made.ref, large, 2 << 20, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_allocate(made.ref, 1000, CMR_DEFAULT_STREAM, &small));
  ck_assert_uint_eq(held(&made), 3 << 20); /* a chunk of its own */
  ck_assert_ok(cmr_allocate(made.ref, 1500000, CMR_DEFAULT_STREAM, &again));
  ck_assert_ptr_eq(again, large); /* whole */
  ck_assert_uint_eq(held(&made), 3 << 20);
  ck_assert_status(cmr_pool_resource_set_max_split_size(made.pool, 100), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ok(cmr_deallocate(made.ref, again, 1500000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(made.ref, small, 1000, CMR_DEFAULT_STREAM));
  destroy_pool(&made);
}
END_TEST

static void pool_cases(Suite *suite) {
  cmr_test_case(suite, "release_threshold", NULL, NULL, threshold_gives_whole_chunks_back_past_it,
                default_threshold_keeps_everything, chunks_in_another_streams_list_stay);
  cmr_test_case(suite, "max_split_size", NULL, NULL, large_blocks_serve_large_requests_only);
}

/* Streams of the CUDA build need a device (its suites are labelled gpu). */
int main(void) { return cmr_test_main_suite("pool", CMR_TEST_NEEDS_DEVICE, pool_cases); }
