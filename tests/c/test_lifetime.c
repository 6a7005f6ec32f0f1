/* SPDX-License-Identifier: Apache-2.0 */
/* Shared lifetimes: whatever stores a ref retains it, destroy drops only the
 * caller's share, and a handle used after its last release is reported. */
#include <pthread.h>

#include "test_util.h"

static test_foreign foreign;

static void reset_foreign(void) { foreign = (test_foreign){0}; }

static cmr_resource_ref counted_foreign(void) { return test_foreign_ref(&foreign, &test_foreign_counted_ops); }

/* ---- the ref's own retain / release ---------------------------------------------------- */

START_TEST(a_retained_resource_outlives_its_destroy) {
  cmr_system_resource *resource = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(resource);
  ck_assert_ok(cmr_ref_retain(ref));
  ck_assert_ok(cmr_system_resource_destroy(resource));
  ck_assert_ok(cmr_ref_validate(ref));
  cmr_test_use(ref, 64, 0x11);
  ck_assert_ok(cmr_ref_release(ref));
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(releasing_past_zero_is_reported_not_repeated) {
  cmr_system_resource *resource = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(resource);
  ck_assert_ok(cmr_system_resource_destroy(resource));
  ck_assert_status(cmr_ref_release(ref), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_retain(ref), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_system_resource_destroy(resource), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

/* A resource destroyed before many others came and went (their memory
 * freed: under valgrind or ASan nothing leaks) is still reported, through
 * its ref and its handle, without reading freed memory. */
START_TEST(a_resource_destroyed_long_ago_is_reported) {
  enum { MANY = 5000 };
  cmr_system_resource *first = cmr_test_system_resource();
  cmr_resource_ref first_ref = cmr_system_resource_ref(first);
  ck_assert_ok(cmr_system_resource_destroy(first));
  for (int i = 0; i < MANY; i++) {
    cmr_system_resource *resource = cmr_test_system_resource();
    ck_assert_ok(cmr_system_resource_destroy(resource));
  }
  ck_assert_status(cmr_ref_validate(first_ref), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_validate(cmr_system_resource_ref(first)), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_system_resource_destroy(first), CMR_ERROR_DESTROYED_HANDLE);
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(first_ref, 64, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

enum { THREADS = 8, ROUNDS = 20000 };

static void *retain_release_many(void *arg) {
  cmr_resource_ref ref = *(const cmr_resource_ref *)arg;
  for (int i = 0; i < ROUNDS; i++) {
    if (cmr_ref_retain(ref) != CMR_SUCCESS || cmr_ref_release(ref) != CMR_SUCCESS) {
      return (void *)1;
    }
  }
  return NULL;
}

START_TEST(counting_is_thread_safe) {
  cmr_system_resource *resource = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(resource);
  ck_assert_ptr_null(cmr_test_threads(THREADS, retain_release_many, &ref, 0).returned);
  /* Exactly the creator's share is left. */
  ck_assert_ok(cmr_ref_validate(ref));
  ck_assert_ok(cmr_system_resource_destroy(resource));
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

/* ---- device buffers ------------------------------------------------------------------------ */

START_TEST(a_buffer_keeps_its_resource_alive) {
  cmr_system_resource *resource = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(resource);
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(100, CMR_DEFAULT_STREAM, ref, &buffer));
  ck_assert_ok(cmr_system_resource_destroy(resource));
  ck_assert_ok(cmr_ref_validate(ref));
  ck_assert_ok(cmr_device_buffer_resize(buffer, 5000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(a_buffer_takes_and_drops_one_share) {
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(100, CMR_DEFAULT_STREAM, counted_foreign(), &buffer));
  ck_assert_int_eq(foreign.retains, 1);
  ck_assert_int_eq(foreign.releases, 0);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 1000, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(foreign.retains, 1);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_int_eq(foreign.releases, 1);
  ck_assert_int_eq(foreign.allocations, foreign.deallocations);
}
END_TEST

START_TEST(a_failed_buffer_takes_no_share) {
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  cmr_device_buffer *buffer = NULL;
  ck_assert_status(cmr_device_buffer_create(100, CMR_DEFAULT_STREAM, counted_foreign(), &buffer),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ptr_null(buffer);
  ck_assert_int_eq(foreign.retains, 0);
  ck_assert_int_eq(foreign.releases, 0);
}
END_TEST

START_TEST(a_destroyed_buffer_is_reported) {
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(100, CMR_DEFAULT_STREAM, counted_foreign(), &buffer));
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_status(cmr_device_buffer_destroy(buffer), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_message_has("cmr_device_buffer_destroy: ");
  ck_assert_int_eq(foreign.releases, 1);
  ck_assert_int_eq(foreign.deallocations, 1);
}
END_TEST

/* ---- the per-device table -------------------------------------------------------------------- */

START_TEST(the_table_keeps_its_resource_alive) {
  cmr_system_resource *resource = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(resource);
  ck_assert_ok(cmr_set_current_device_resource_ref(ref));
  ck_assert_ok(cmr_system_resource_destroy(resource));

  cmr_resource_ref stored = {0};
  ck_assert_ok(cmr_get_current_device_resource_ref(&stored));
  ck_assert_ptr_eq(stored.self, ref.self);
  ck_assert_ok(cmr_ref_validate(stored));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(stored, 64, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(stored, ptr, 64, CMR_DEFAULT_STREAM));

  ck_assert_ok(cmr_reset_current_device_resource_ref());
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(the_table_retains_what_it_stores_and_releases_what_it_replaces) {
  int device = 0;
  ck_assert_ok(cmr_current_device(&device));
  test_foreign second = {0};
  ck_assert_ok(cmr_set_per_device_resource_ref(device, counted_foreign()));
  ck_assert_int_eq(foreign.retains, 1);
  ck_assert_ok(cmr_set_per_device_resource_ref(device, counted_foreign()));
  ck_assert_int_eq(foreign.retains, 2);
  ck_assert_int_eq(foreign.releases, 1);
  ck_assert_ok(cmr_set_per_device_resource_ref(device, test_foreign_ref(&second, &test_foreign_counted_ops)));
  ck_assert_int_eq(foreign.releases, 2);
  ck_assert_int_eq(second.retains, 1);
  ck_assert_ok(cmr_reset_per_device_resource_ref(device));
  ck_assert_int_eq(second.releases, 1);
  ck_assert_ok(cmr_reset_per_device_resource_ref(device)); /* empty already: nothing to drop */
  ck_assert_int_eq(second.releases, 1);
}
END_TEST

START_TEST(a_buffer_outlives_the_table_entry_it_was_made_from) {
  cmr_system_resource *resource = cmr_test_system_resource();
  ck_assert_ok(cmr_set_current_device_resource_ref(cmr_system_resource_ref(resource)));
  ck_assert_ok(cmr_system_resource_destroy(resource));
  cmr_resource_ref stored = {0};
  ck_assert_ok(cmr_get_current_device_resource_ref(&stored));
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(256, CMR_DEFAULT_STREAM, stored, &buffer));
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  ck_assert_ok(cmr_ref_validate(stored));
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_status(cmr_ref_validate(stored), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

static void lifetime_cases(Suite *suite) {
  cmr_test_case(suite, "refs", NULL, NULL, a_retained_resource_outlives_its_destroy,
                releasing_past_zero_is_reported_not_repeated, a_resource_destroyed_long_ago_is_reported,
                counting_is_thread_safe);

  cmr_test_case(suite, "buffers", reset_foreign, NULL, a_buffer_keeps_its_resource_alive,
                a_buffer_takes_and_drops_one_share, a_failed_buffer_takes_no_share, a_destroyed_buffer_is_reported);

  cmr_test_case(suite, "per_device_table", reset_foreign, NULL, the_table_keeps_its_resource_alive,
                the_table_retains_what_it_stores_and_releases_what_it_replaces,
                a_buffer_outlives_the_table_entry_it_was_made_from);
}

int main(void) { return cmr_test_main_suite("lifetime", CMR_TEST_NEEDS_DEVICE, lifetime_cases); }
