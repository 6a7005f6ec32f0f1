/* SPDX-License-Identifier: Apache-2.0 */
/* Resource-specific behaviour of the CUDA leaf resources that the battery
 * does not cover: parameters and typed methods of cuda_async, views of one
 * pool, equality across types, checks on bad handles and arguments. */
#include <stdint.h>

#include "test_util.h"

static cmr_cuda_async_resource *make_async(cmr_optional_size initial, cmr_optional_size threshold,
                                           cmr_cuda_async_export_handle_type export_type) {
  cmr_cuda_async_resource *handle = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(initial, threshold, export_type, CMR_SIZE_DEFAULT, &handle));
  return handle;
}

START_TEST(cuda_async_parameters) {
  cmr_cuda_async_resource *handle = (cmr_cuda_async_resource *)&handle;
  ck_assert_status(cmr_cuda_async_resource_create(CMR_SIZE(0), CMR_SIZE(0), (cmr_cuda_async_export_handle_type)7,
                                                  CMR_SIZE(0), &handle),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("export_handle_type 7");
  ck_assert_ptr_null(handle);

  handle = make_async(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE);
  size_t threshold = 0;
  ck_assert_ok(cmr_cuda_async_resource_release_threshold(handle, &threshold));
  ck_assert_uint_eq(threshold, SIZE_MAX); /* keep everything */
  ck_assert_ok(cmr_cuda_async_resource_destroy(handle));

  handle = make_async(CMR_SIZE((size_t)64 << 20), CMR_SIZE((size_t)1 << 20), CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE);
  ck_assert_ok(cmr_cuda_async_resource_release_threshold(handle, &threshold));
  ck_assert_uint_eq(threshold, (size_t)1 << 20);
  void *pool = NULL;
  ck_assert_ok(cmr_cuda_async_resource_pool_handle(handle, &pool));
  ck_assert_ptr_nonnull(pool);
  ck_assert_status(cmr_cuda_async_resource_pool_handle(handle, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_cuda_async_resource_destroy(handle));
  ck_assert_status(cmr_cuda_async_resource_pool_handle(handle, &pool), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(cuda_async_exports_file_descriptors) {
  /* The H200 machine's pools support POSIX file descriptor handles (IPC). */
  cmr_cuda_async_resource *handle =
      make_async(CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  void *ptr = NULL;
  cmr_resource_ref ref = cmr_cuda_async_resource_ref(handle);
  ck_assert_ok(cmr_allocate(ref, 1 << 20, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, 1 << 20, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_cuda_async_resource_destroy(handle));
}
END_TEST

START_TEST(views_of_one_pool) {
  cmr_cuda_async_resource *owner = make_async(CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE);
  void *pool = NULL;
  ck_assert_ok(cmr_cuda_async_resource_pool_handle(owner, &pool));
  cmr_cuda_async_view_resource *a = NULL, *b = NULL;
  ck_assert_status(cmr_cuda_async_view_resource_create(NULL, &a), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("pool_handle is NULL");
  ck_assert_ok(cmr_cuda_async_view_resource_create(pool, &a));
  ck_assert_ok(cmr_cuda_async_view_resource_create(pool, &b));
  bool equal = false;
  ck_assert_ok(cmr_ref_equal(cmr_cuda_async_view_resource_ref(a), cmr_cuda_async_view_resource_ref(b), &equal));
  ck_assert(equal);
  void *seen = NULL;
  ck_assert_ok(cmr_cuda_async_view_resource_pool_handle(a, &seen));
  ck_assert_ptr_eq(seen, pool);
  /* Memory from one view is freed through the other. */
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_cuda_async_view_resource_ref(a), 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(cmr_cuda_async_view_resource_ref(b), ptr, 4096, CMR_DEFAULT_STREAM));
  cmr_test_destroy(a, b, owner);
}
END_TEST

START_TEST(equality_across_types) {
  cmr_cuda_resource *cuda_a = NULL, *cuda_b = NULL;
  cmr_managed_resource *managed = NULL;
  ck_assert_ok(cmr_cuda_resource_create(&cuda_a));
  ck_assert_ok(cmr_cuda_resource_create(&cuda_b));
  ck_assert_ok(cmr_managed_resource_create(&managed));
  bool equal = false;
  ck_assert_ok(cmr_ref_equal(cmr_cuda_resource_ref(cuda_a), cmr_cuda_resource_ref(cuda_b), &equal));
  ck_assert(equal);
  ck_assert_ok(cmr_ref_equal(cmr_cuda_resource_ref(cuda_a), cmr_managed_resource_ref(managed), &equal));
  ck_assert(!equal);
  cmr_cuda_async_resource *pool_a = make_async(CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE);
  cmr_cuda_async_resource *pool_b = make_async(CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE);
  ck_assert_ok(cmr_ref_equal(cmr_cuda_async_resource_ref(pool_a), cmr_cuda_async_resource_ref(pool_b), &equal));
  ck_assert(!equal); /* two pools: memory of one cannot go to the other */
  cmr_test_destroy(pool_a, pool_b, cuda_a, cuda_b, managed);
}
END_TEST

START_TEST(managed_and_pinned_memory_is_host_writable) {
  cmr_managed_resource *managed = NULL;
  cmr_pinned_host_resource *pinned = NULL;
  cmr_cuda_async_managed_resource *async_managed = NULL;
  ck_assert_ok(cmr_managed_resource_create(&managed));
  ck_assert_ok(cmr_pinned_host_resource_create(&pinned));
  ck_assert_ok(cmr_cuda_async_managed_resource_create(&async_managed));
  cmr_resource_ref refs[] = {cmr_managed_resource_ref(managed), cmr_pinned_host_resource_ref(pinned),
                             cmr_cuda_async_managed_resource_ref(async_managed)};
  for (unsigned i = 0; i < sizeof refs / sizeof *refs; ++i) {
    ck_assert_ok(cmr_ref_require_properties(refs[i], CMR_PROPERTY_HOST_ACCESSIBLE | CMR_PROPERTY_DEVICE_ACCESSIBLE));
    unsigned char *ptr = NULL;
    ck_assert_ok(cmr_allocate_sync(refs[i], 1 << 16, 256, (void **)&ptr));
    memset(ptr, 0x5a, 1 << 16);
    ck_assert_uint_eq(ptr[(1 << 16) - 1], 0x5a);
    ck_assert_ok(cmr_deallocate_sync(refs[i], ptr, 1 << 16, 256));
  }
  cmr_test_destroy(managed, pinned, async_managed);
}
END_TEST

START_TEST(device_only_memory_is_not_host_accessible) {
  cmr_cuda_resource *cuda = NULL;
  ck_assert_ok(cmr_cuda_resource_create(&cuda));
  ck_assert_status(cmr_ref_require_properties(cmr_cuda_resource_ref(cuda), CMR_PROPERTY_HOST_ACCESSIBLE),
                   CMR_ERROR_PROPERTY_MISSING);
  ck_assert_message_has("host_accessible");
  ck_assert_ok(cmr_cuda_resource_destroy(cuda));
}
END_TEST

static void resources_cases(Suite *suite) {
  cmr_test_case(suite, "cuda_async", NULL, NULL, cuda_async_parameters, cuda_async_exports_file_descriptors,
                views_of_one_pool);
  cmr_test_case(suite, "leaves", NULL, NULL, equality_across_types, managed_and_pinned_memory_is_host_writable,
                device_only_memory_is_not_host_accessible);
}

int main(void) { return cmr_test_main_suite("resources_gpu", CMR_TEST_NEEDS_DEVICE, resources_cases); }
