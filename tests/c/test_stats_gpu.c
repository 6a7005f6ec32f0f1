/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_ref_stats of cuda_async and its view: the driver pool's reserved and
 * used bytes, now and at their highs, and their reset. The pool of a new
 * cuda_async resource is its own, so its counters move with this test's
 * allocations alone. Needs a device with memory pools: the suite skips
 * (77) without a device. */
#include "test_util.h"

#define POOL_FIELDS \
  (CMR_STATS_BYTES_HELD | CMR_STATS_BYTES_HELD_PEAK | CMR_STATS_POOL_BYTES_USED | CMR_STATS_POOL_BYTES_USED_PEAK)

static cmr_stats stats_of(cmr_resource_ref ref) {
  cmr_stats stats = {.size = sizeof stats};
  ck_assert_ok(cmr_ref_stats(ref, &stats));
  ck_assert_uint_eq(stats.supported & POOL_FIELDS, POOL_FIELDS);
  return stats;
}

START_TEST(cuda_async_reads_its_pools_counters) {
  cmr_cuda_async_resource *async = NULL;
  /* A release threshold of all: the pool keeps what it reserved after the frees. */
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE(0), CMR_SIZE(SIZE_MAX), CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE,
                                              CMR_SIZE_DEFAULT, &async));
  cmr_resource_ref ref = cmr_cuda_async_resource_ref(async);
  cmr_stats empty = stats_of(ref);
  ck_assert_uint_eq(empty.pool_bytes_used, 0);
  void *a = NULL, *b = NULL;
  ck_assert_ok(cmr_allocate(ref, 8 << 20, CMR_DEFAULT_STREAM, &a));
  ck_assert_ok(cmr_allocate(ref, 8 << 20, CMR_DEFAULT_STREAM, &b));
  cmr_stats stats = stats_of(ref);
  ck_assert_uint_eq(stats.bytes_in_use, 16 << 20);
  ck_assert_uint_ge(stats.pool_bytes_used, 16 << 20);
  ck_assert_uint_ge(stats.bytes_held, stats.pool_bytes_used);
  ck_assert_uint_ge(stats.pool_bytes_used_peak, stats.pool_bytes_used);
  size_t used_two = stats.pool_bytes_used;
  ck_assert_ok(cmr_deallocate(ref, b, 8 << 20, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_stream_synchronize(CMR_DEFAULT_STREAM));
  stats = stats_of(ref);
  ck_assert_uint_lt(stats.pool_bytes_used, used_two);
  ck_assert_uint_eq(stats.pool_bytes_used_peak, used_two);
  ck_assert_uint_ge(stats.bytes_held_peak, used_two);
  ck_assert_ok(cmr_ref_reset_peak_stats(ref));
  stats = stats_of(ref);
  ck_assert_uint_eq(stats.pool_bytes_used_peak, stats.pool_bytes_used);
  ck_assert_uint_eq(stats.bytes_held_peak, stats.bytes_held);
  ck_assert_uint_eq(stats.bytes_in_use_peak, 8 << 20);
  ck_assert_ok(cmr_deallocate(ref, a, 8 << 20, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_cuda_async_resource_destroy(async));
}
END_TEST

START_TEST(a_view_reads_the_pool_it_names) {
  cmr_cuda_async_resource *async = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE(0), CMR_SIZE(SIZE_MAX), CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE,
                                              CMR_SIZE_DEFAULT, &async));
  void *pool = NULL;
  ck_assert_ok(cmr_cuda_async_resource_pool_handle(async, &pool));
  cmr_cuda_async_view_resource *view = NULL;
  ck_assert_ok(cmr_cuda_async_view_resource_create(pool, &view));
  void *a = NULL;
  ck_assert_ok(cmr_allocate(cmr_cuda_async_resource_ref(async), 4 << 20, CMR_DEFAULT_STREAM, &a));
  cmr_stats seen = stats_of(cmr_cuda_async_view_resource_ref(view));
  ck_assert_uint_eq(seen.bytes_in_use, 0); /* the view's own callers hold nothing */
  ck_assert_uint_ge(seen.pool_bytes_used, 4 << 20);
  ck_assert_uint_eq(seen.pool_bytes_used, stats_of(cmr_cuda_async_resource_ref(async)).pool_bytes_used);
  ck_assert_ok(cmr_deallocate(cmr_cuda_async_resource_ref(async), a, 4 << 20, CMR_DEFAULT_STREAM));
  cmr_test_destroy(view, async);
}
END_TEST

static void stats_gpu_cases(Suite *suite) {
  cmr_test_case(suite, "driver_pool", NULL, NULL, cuda_async_reads_its_pools_counters, a_view_reads_the_pool_it_names);
}

int main(void) { return cmr_test_main_suite("stats_gpu", CMR_TEST_NEEDS_DEVICE, stats_gpu_cases); }
