/* SPDX-License-Identifier: Apache-2.0 */
/* What cmr asks of the driver's pools, read back from the driver: the pools
 * it creates serve hardware decompression where the driver supports it and
 * export every kind of handle asked, and the default managed pool keeps its
 * memory across synchronizations (as RMM's pools). Needs a device with CUDA 13's managed pools (the H200): the
 * suite skips (77) without a device. */
#include <stdint.h>

#include "backend.h"
#include "test_util.h"

START_TEST(created_pools_serve_hardware_decompression) {
  bool supported = false;
  ck_assert_ok(cmr_backend_hw_decompress_supported(&supported));
  cmr_cuda_async_resource *async = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE,
                                              CMR_SIZE_DEFAULT, &async));
  cmr_resource_ref ref = cmr_cuda_async_resource_ref(async);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1 << 20, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
  bool capable = !supported;
  ck_assert_ok(cmr_backend_hw_decompress_capable(ptr, &capable));
  /* A driver older than CUDA 12.8 has no such pools: the memory is then not capable. */
  ck_assert_msg(capable == supported, "the driver %s hardware decompression but the pool's memory is%s capable",
                supported ? "supports" : "does not support", capable ? "" : " not");
  ck_assert_ok(cmr_deallocate(ref, ptr, 1 << 20, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_cuda_async_resource_destroy(async));
}
END_TEST

START_TEST(the_managed_pool_keeps_its_memory) {
  cmr_cuda_async_managed_resource *managed = NULL;
  ck_assert_ok(cmr_cuda_async_managed_resource_create(&managed)); /* CUDA 13 on a device with managed pools */
  void *pool = NULL;
  ck_assert_ok(cmr_cuda_async_managed_resource_pool_handle(managed, &pool));
  uint64_t threshold = 0;
  ck_assert_ok(cmr_backend_pool_release_threshold(pool, &threshold));
  ck_assert_uint_eq(threshold, UINT64_MAX);
  ck_assert_ok(cmr_cuda_async_managed_resource_destroy(managed));
}
END_TEST

START_TEST(a_threshold_set_on_the_managed_pool_stays) {
  cmr_cuda_async_managed_resource *managed = NULL;
  ck_assert_ok(cmr_cuda_async_managed_resource_create(&managed));
  void *pool = NULL;
  ck_assert_ok(cmr_cuda_async_managed_resource_pool_handle(managed, &pool));
  ck_assert_ok(cmr_cuda_async_managed_resource_destroy(managed));
  const uint64_t chosen = (uint64_t)1 << 30;
  ck_assert_ok(cmr_backend_pool_set_release_threshold(pool, chosen));
  ck_assert_ok(cmr_cuda_async_managed_resource_create(&managed));
  uint64_t threshold = 0;
  ck_assert_ok(cmr_backend_pool_release_threshold(pool, &threshold));
  ck_assert_uint_eq(threshold, chosen);
  ck_assert_ok(cmr_cuda_async_managed_resource_destroy(managed));
}
END_TEST

START_TEST(a_pool_exports_a_set_of_handle_kinds) {
  /* The H200 exports POSIX file descriptors and fabric handles (mask 9). */
  cmr_cuda_async_resource *async = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE(0), CMR_SIZE_DEFAULT,
                                              CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_AND_FABRIC,
                                              CMR_SIZE_DEFAULT, &async));
  cmr_resource_ref ref = cmr_cuda_async_resource_ref(async);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1 << 20, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, 1 << 20, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_cuda_async_resource_destroy(async));
}
END_TEST

static void pool_usage_cases(Suite *suite) {
  cmr_test_case(suite, "pools", NULL, NULL, created_pools_serve_hardware_decompression,
                the_managed_pool_keeps_its_memory, a_threshold_set_on_the_managed_pool_stays,
                a_pool_exports_a_set_of_handle_kinds);
}

int main(void) { return cmr_test_main_suite("pool_usage_gpu", CMR_TEST_NEEDS_DEVICE, pool_usage_cases); }
