/* SPDX-License-Identifier: Apache-2.0 */
/* The pluggable-allocator entry points (PyTorch's): they go through the
 * per-device table, and fail with NULL and a message. */
#include <cmr/cmr.h>
#include <cmr/pluggable.h>

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* The entry is read without the table's lock on every call: threads
 * allocate and free through the entry points while the entry changes under
 * them, to two resources in turn and now and then to a third whose only
 * share is the table's, so that it goes while calls may be taking it.
 * Every call gets a live resource (one of them, all over the same system
 * resource, so a free through another than its allocation's is sound);
 * TSan runs this suite too. */
enum { racing_threads = 4, racing_pairs = 20000, replacements = 20000 };
static atomic_int racing_failures;

static void *allocate_and_free(void *unused) {
  (void)unused;
  for (int i = 0; i < racing_pairs; ++i) {
    void *ptr = cmr_pluggable_allocate(64, 0, CMR_DEFAULT_STREAM);
    if (ptr == NULL) {
      atomic_fetch_add(&racing_failures, 1);
      continue;
    }
    cmr_pluggable_deallocate(ptr, 64, 0, CMR_DEFAULT_STREAM);
  }
  return NULL;
}

START_TEST(an_entry_that_changes_under_the_calls_is_always_alive) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref base = cmr_system_resource_ref(system);
  cmr_statistics_resource *turns[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i) ck_assert_ok(cmr_statistics_resource_create(base, &turns[i]));
  ck_assert_ok(cmr_set_per_device_resource_ref(0, cmr_statistics_resource_ref(turns[0])));
  atomic_store(&racing_failures, 0);
  pthread_t threads[racing_threads];
  for (int i = 0; i < racing_threads; ++i)
    ck_assert_int_eq(pthread_create(&threads[i], NULL, allocate_and_free, NULL), 0);
  for (int i = 0; i < replacements; ++i) {
    if (i % 16 == 15) { /* a resource the table alone holds, gone at the next replacement */
      cmr_statistics_resource *brief = NULL;
      ck_assert_ok(cmr_statistics_resource_create(base, &brief));
      ck_assert_ok(cmr_set_per_device_resource_ref(0, cmr_statistics_resource_ref(brief)));
      ck_assert_ok(cmr_statistics_resource_destroy(brief));
    } else {
      ck_assert_ok(cmr_set_per_device_resource_ref(0, cmr_statistics_resource_ref(turns[i % 2])));
    }
  }
  for (int i = 0; i < racing_threads; ++i) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  ck_assert_int_eq(atomic_load(&racing_failures), 0);
  ck_assert_ok(cmr_reset_per_device_resource_ref(0));
  cmr_test_destroy(turns[0], turns[1], system);
}
END_TEST

static void pluggable_cases(Suite *suite) {
  cmr_test_case(suite, "entry_points", setup, teardown, allocations_go_to_the_devices_resource,
                failures_are_null_with_a_message, freeing_null_does_nothing);
  TCase *racing = cmr_test_case(suite, "racing", NULL, NULL, an_entry_that_changes_under_the_calls_is_always_alive);
  tcase_set_timeout(racing, 300);
}

int main(void) { return cmr_test_main_suite("pluggable", CMR_TEST_NEEDS_DEVICE, pluggable_cases); }
