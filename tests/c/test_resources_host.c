/* SPDX-License-Identifier: Apache-2.0 */
/* Resource-specific behaviour the battery does not cover, for the resources
 * that need no GPU: the generated argument checks, from_ref, typed methods on
 * bad handles, the callback resource's contract, the system resource's
 * alignments, and what the host build answers for CUDA-only resources. */
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"

/* ---- callback ---------------------------------------------------------------- */

typedef struct callback_log {
  int allocations;
  int deallocations;
  size_t misalign;
  bool fail;
  void *last_freed;
} callback_log;

static void *logged_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  callback_log *log = arg;
  log->allocations++;
  if (log->fail) return NULL;
  char *block = aligned_alloc(256, (bytes + log->misalign + 255) / 256 * 256);
  return block != NULL ? block + log->misalign : NULL;
}

static void logged_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)bytes, (void)stream;
  callback_log *log = arg;
  log->deallocations++;
  log->last_freed = ptr;
  free((char *)ptr - log->misalign);
}

static cmr_callback_resource *logged_callback(callback_log *log) {
  cmr_callback_resource *handle = NULL;
  ck_assert_ok(cmr_callback_resource_create(logged_allocate, logged_deallocate, log, log, CMR_PROPERTY_HOST_ACCESSIBLE,
                                            &handle));
  return handle;
}

START_TEST(callback_rejects_bad_arguments) {
  cmr_callback_resource *handle = (cmr_callback_resource *)&handle;
  ck_assert_status(cmr_callback_resource_create(NULL, logged_deallocate, NULL, NULL, 0, &handle),
                   CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("allocate is NULL");
  ck_assert_ptr_null(handle);
  ck_assert_status(cmr_callback_resource_create(logged_allocate, NULL, NULL, NULL, 0, &handle), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("deallocate is NULL");
  ck_assert_status(cmr_callback_resource_create(logged_allocate, logged_deallocate, NULL, NULL, 0x10u, &handle),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("0x10");
  ck_assert_status(cmr_callback_resource_create(logged_allocate, logged_deallocate, NULL, NULL, 0, NULL),
                   CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("out is NULL");
}
END_TEST

START_TEST(callback_null_is_out_of_memory) {
  callback_log log = {.fail = true};
  cmr_callback_resource *handle = logged_callback(&log);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(cmr_callback_resource_ref(handle), 4096, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("4096 bytes");
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(log.allocations, 1);
  ck_assert_ok(cmr_callback_resource_destroy(handle));
}
END_TEST

START_TEST(callback_misaligned_pointer_is_given_back) {
  callback_log log = {.misalign = 16};
  cmr_callback_resource *handle = logged_callback(&log);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(cmr_callback_resource_ref(handle), 1000, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(log.allocations, 1);
  ck_assert_int_eq(log.deallocations, 1); /* nothing leaked */
  ck_assert_uint_eq((uintptr_t)log.last_freed % 256, 16);
  ck_assert_ok(cmr_callback_resource_destroy(handle));
}
END_TEST

/* Each callback resource takes back only what it handed out, so even two
 * over the same functions and arguments are not interchangeable. */
START_TEST(callback_properties_and_identity) {
  callback_log log = {0};
  cmr_callback_resource *a = logged_callback(&log), *b = logged_callback(&log);
  unsigned properties = 0;
  bool equal = false;
  ck_assert_ok(cmr_ref_properties(cmr_callback_resource_ref(a), &properties));
  ck_assert_uint_eq(properties, CMR_PROPERTY_HOST_ACCESSIBLE);
  ck_assert_ok(cmr_ref_equal(cmr_callback_resource_ref(a), cmr_callback_resource_ref(a), &equal));
  ck_assert(equal);
  ck_assert_ok(cmr_ref_equal(cmr_callback_resource_ref(a), cmr_callback_resource_ref(b), &equal));
  ck_assert(!equal);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_callback_resource_ref(a), 1000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_int_eq(cmr_deallocate(cmr_callback_resource_ref(b), ptr, 1000, CMR_DEFAULT_STREAM),
                   CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_int_eq(log.deallocations, 0);
  ck_assert_ok(cmr_deallocate(cmr_callback_resource_ref(a), ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(log.deallocations, 1);
  cmr_test_destroy(a, b);
}
END_TEST

/* ---- generated handle functions ----------------------------------------------- */

START_TEST(from_ref_checks_the_type) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_callback_resource *callback = (cmr_callback_resource *)&callback;
  ck_assert_status(cmr_callback_resource_from_ref(cmr_system_resource_ref(system), &callback),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("\"system\" resource, not \"callback\"");
  ck_assert_ptr_null(callback);
  cmr_resource_ref zeroed = {0};
  ck_assert_status(cmr_callback_resource_from_ref(zeroed, &callback), CMR_ERROR_INVALID_REF);
  ck_assert_status(cmr_system_resource_from_ref(cmr_system_resource_ref(system), NULL), CMR_ERROR_NULL_POINTER);
  cmr_system_resource *back = NULL;
  ck_assert_ok(cmr_system_resource_from_ref(cmr_system_resource_ref(system), &back));
  /* A handle of its own, owning a share of its own: destroying it twice
   * never drops the creator's share. */
  ck_assert_ptr_ne(back, system);
  ck_assert_ok(cmr_system_resource_destroy(back));
  ck_assert_status(cmr_system_resource_destroy(back), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_ok(cmr_ref_validate(cmr_system_resource_ref(system)));
  ck_assert_ok(cmr_system_resource_destroy(system));
  ck_assert_status(cmr_system_resource_from_ref(cmr_system_resource_ref(system), &back), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(destroy_checks_the_handle) {
  ck_assert_ok(cmr_system_resource_destroy(NULL)); /* a no-op, as free(NULL) */
  cmr_system_resource *system = cmr_test_system_resource();
  ck_assert_ok(cmr_system_resource_destroy(system));
  ck_assert_status(cmr_system_resource_destroy(system), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_message_has("already destroyed");
  cmr_resource_ref none = cmr_system_resource_ref(NULL);
  ck_assert_ptr_null(none.ops);
}
END_TEST

/* ---- system ---------------------------------------------------------------------- */

START_TEST(system_honours_large_alignments) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(system);
  for (size_t alignment = 256; alignment <= ((size_t)1 << 21); alignment <<= 1) {
    void *ptr = NULL;
    ck_assert_ok(cmr_allocate_aligned(ref, 3 * alignment + 1, alignment, CMR_DEFAULT_STREAM, &ptr));
    ck_assert_uint_eq((uintptr_t)ptr % alignment, 0);
    ck_assert_ok(cmr_deallocate_aligned(ref, ptr, 3 * alignment + 1, alignment, CMR_DEFAULT_STREAM));
  }
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

START_TEST(system_properties) {
  cmr_system_resource *system = cmr_test_system_resource();
  unsigned properties = 0;
  ck_assert_ok(cmr_ref_properties(cmr_system_resource_ref(system), &properties));
  ck_assert(properties & CMR_PROPERTY_HOST_ACCESSIBLE);
  /* The host build's device is the host; a CUDA build without a driver has
   * no device that could reach the memory. */
  if (!cmr_built_with_cuda()) ck_assert(properties & CMR_PROPERTY_DEVICE_ACCESSIBLE);
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

/* ---- CUDA-only resources in the host build ------------------------------------------ */

START_TEST(cuda_resources_are_unavailable_in_the_host_build) {
  cmr_cuda_resource *cuda = (cmr_cuda_resource *)&cuda;
  ck_assert_status(cmr_cuda_resource_create(&cuda), CMR_ERROR_UNSUPPORTED);
  ck_assert_message_has("CMR_WITH_CUDA=OFF");
  ck_assert_ptr_null(cuda);
  cmr_managed_resource *managed;
  ck_assert_status(cmr_managed_resource_create(&managed), CMR_ERROR_UNSUPPORTED);
  cmr_pinned_host_resource *pinned;
  ck_assert_status(cmr_pinned_host_resource_create(&pinned), CMR_ERROR_UNSUPPORTED);
  cmr_cuda_async_resource *async;
  ck_assert_status(cmr_cuda_async_resource_create(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                                  CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE, CMR_SIZE_DEFAULT, &async),
                   CMR_ERROR_UNSUPPORTED);
  cmr_cuda_async_view_resource *view;
  ck_assert_status(cmr_cuda_async_view_resource_create(&view, &view), CMR_ERROR_UNSUPPORTED);
  cmr_cuda_async_managed_resource *async_managed;
  ck_assert_status(cmr_cuda_async_managed_resource_create(&async_managed), CMR_ERROR_UNSUPPORTED);
  void *pool = NULL;
  ck_assert_status(cmr_cuda_async_resource_pool_handle((cmr_cuda_async_resource *)&pool, &pool), CMR_ERROR_UNSUPPORTED);
  ck_assert_ok(cmr_cuda_resource_destroy(NULL)); /* a no-op in every build */
  ck_assert_ptr_null(cmr_cuda_resource_ref(NULL).ops);
}
END_TEST

static void resources_cases(Suite *suite) {
  cmr_test_case(suite, "callback", NULL, NULL, callback_rejects_bad_arguments, callback_null_is_out_of_memory,
                callback_misaligned_pointer_is_given_back, callback_properties_and_identity);
  cmr_test_case(suite, "handles", NULL, NULL, from_ref_checks_the_type, destroy_checks_the_handle);
  cmr_test_case(suite, "system", NULL, NULL, system_honours_large_alignments, system_properties);
  if (!cmr_built_with_cuda()) {
    cmr_test_case(suite, "unavailable", NULL, NULL, cuda_resources_are_unavailable_in_the_host_build);
  }
}

int main(void) { return cmr_test_main_suite("resources_host", CMR_TEST_ANY_MACHINE, resources_cases); }
