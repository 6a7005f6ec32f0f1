/* SPDX-License-Identifier: Apache-2.0 */
/* The pluggable-allocator entry points (PyTorch's): they go through the
 * per-device table, and fail with NULL and a message. */
#include <cmr/cmr.h>
#include <cmr/pluggable.h>

#include <check.h>
#include <string.h>

#include "test_util.h"

static cmr_statistics_resource *counted;

/* The current device's resource counts what passes through it. */
static void setup(void) {
  cmr_resource_ref current;
  ck_assert_ok(cmr_get_current_device_resource_ref(&current));
  ck_assert_ok(cmr_statistics_resource_create(current, &counted));
  ck_assert_ok(cmr_set_current_device_resource_ref(cmr_statistics_resource_ref(counted)));
}

static void teardown(void) {
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  ck_assert_ok(cmr_statistics_resource_destroy(counted));
}

static size_t bytes_current(void) {
  size_t bytes = 0;
  ck_assert_ok(cmr_statistics_resource_bytes_current(counted, &bytes));
  return bytes;
}

START_TEST(allocations_go_to_the_devices_resource) {
  int device = 0;
  ck_assert_ok(cmr_current_device(&device));
  void *ptr = cmr_pluggable_allocate(4096, device, CMR_DEFAULT_STREAM);
  ck_assert_ptr_nonnull(ptr);
  ck_assert_uint_eq(bytes_current(), 4096);
  cmr_pluggable_deallocate(ptr, 4096, device, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(bytes_current(), 0);
  size_t total = 0;
  ck_assert_ok(cmr_statistics_resource_allocations_total(counted, &total));
  ck_assert_uint_eq(total, 1);
}
END_TEST

START_TEST(failures_are_null_with_a_message) {
  cmr_clear_last_error();
  ck_assert_ptr_null(cmr_pluggable_allocate((ssize_t)1 << 62, 0, CMR_DEFAULT_STREAM));
  ck_assert_message_has("cmr_pluggable_allocate(");
  ck_assert_message_has("out of memory");
  ck_assert_ptr_null(cmr_pluggable_allocate(-1, 0, CMR_DEFAULT_STREAM));
  ck_assert_message_has("size -1 is negative");
  ck_assert_ptr_null(cmr_pluggable_allocate(256, 1000, CMR_DEFAULT_STREAM));
  ck_assert_message_has("device 1000");
  ck_assert_ptr_null(cmr_pluggable_allocate(0, 0, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(bytes_current(), 0);
}
END_TEST

START_TEST(freeing_null_does_nothing) {
  cmr_pluggable_deallocate(NULL, 100, 0, CMR_DEFAULT_STREAM);
  cmr_pluggable_deallocate(NULL, -1, 1000, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(bytes_current(), 0);
}
END_TEST

static void pluggable_cases(Suite *suite) {
  cmr_test_case(suite, "entry_points", setup, teardown, allocations_go_to_the_devices_resource,
                failures_are_null_with_a_message, freeing_null_does_nothing);
}

int main(void) { return cmr_test_main_suite("pluggable", CMR_TEST_NEEDS_DEVICE, pluggable_cases); }
