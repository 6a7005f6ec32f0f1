/* SPDX-License-Identifier: Apache-2.0 */
/* The per-device resource table: range checks, the lazy default, set / get /
 * reset for a device and for the current one, and concurrent use. */
#include <pthread.h>
#include <stdio.h>

#include "test_util.h"

static int device_count;
static int current;
static test_foreign foreign;

static void setup(void) {
  ck_assert_ok(cmr_device_count(&device_count));
  ck_assert_ok(cmr_current_device(&current));
  foreign = (test_foreign){0};
}

static cmr_resource_ref foreign_ref(void) { return test_foreign_ref(&foreign, &test_foreign_ops); }

static void assert_same_ref(cmr_resource_ref a, cmr_resource_ref b) {
  ck_assert_ptr_eq(a.self, b.self);
  ck_assert_ptr_eq(a.ops, b.ops);
}

CMR_TEST_OUT(type_name_of, const char *, NULL, cmr_ref_type_name, cmr_resource_ref)

START_TEST(devices_outside_the_range_are_unknown) {
  const int bad[] = {-1, device_count, device_count + 6, INT32_MIN};
  for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
    char expected[64];
    snprintf(expected, sizeof expected, "device %d is not in [0, %d)", bad[b], device_count);
    cmr_resource_ref ref = foreign_ref();
    ck_assert_status(cmr_get_per_device_resource_ref(bad[b], &ref), CMR_ERROR_UNKNOWN_DEVICE);
    char exact[128];
    snprintf(exact, sizeof exact, "cmr_get_per_device_resource_ref: %s", expected);
    ck_assert_str_eq(cmr_last_error_message(), exact);
    ck_assert_ptr_null(ref.ops);
    ck_assert_status(cmr_set_per_device_resource_ref(bad[b], foreign_ref()), CMR_ERROR_UNKNOWN_DEVICE);
    ck_assert_message_has(expected);
    ck_assert_status(cmr_reset_per_device_resource_ref(bad[b]), CMR_ERROR_UNKNOWN_DEVICE);
    ck_assert_message_has(expected);
  }
}
END_TEST

START_TEST(null_out_parameters) {
  ck_assert_status(cmr_get_per_device_resource_ref(current, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_get_current_device_resource_ref(NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(the_default_is_the_plain_resource_of_the_build) {
  cmr_resource_ref ref = {0};
  ck_assert_ok(cmr_get_current_device_resource_ref(&ref));
  ck_assert_ok(cmr_ref_validate(ref));
  ck_assert_str_eq(type_name_of(ref), cmr_built_with_cuda() ? "cuda" : "system");
  /* Made once, then the same every time. */
  cmr_resource_ref again = {0};
  ck_assert_ok(cmr_get_current_device_resource_ref(&again));
  assert_same_ref(ref, again);
  ck_assert_ok(cmr_get_per_device_resource_ref(current, &again));
  assert_same_ref(ref, again);
}
END_TEST

START_TEST(every_device_gets_a_default) {
  for (int device = 0; device < device_count; device++) {
    cmr_resource_ref ref = {0};
    ck_assert_ok(cmr_get_per_device_resource_ref(device, &ref));
    ck_assert_ok(cmr_ref_validate(ref));
  }
  int after = -1;
  ck_assert_ok(cmr_current_device(&after));
  ck_assert_int_eq(after, current);
}
END_TEST

START_TEST(set_get_reset) {
  ck_assert_ok(cmr_set_per_device_resource_ref(current, foreign_ref()));
  cmr_resource_ref got = {0};
  ck_assert_ok(cmr_get_per_device_resource_ref(current, &got));
  assert_same_ref(got, foreign_ref());
  ck_assert_ok(cmr_get_current_device_resource_ref(&got));
  assert_same_ref(got, foreign_ref());

  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(got, 32, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_int_eq(foreign.allocations, 1);
  ck_assert_ok(cmr_deallocate(got, ptr, 32, CMR_DEFAULT_STREAM));

  ck_assert_ok(cmr_reset_per_device_resource_ref(current));
  ck_assert_ok(cmr_get_per_device_resource_ref(current, &got));
  ck_assert_str_eq(type_name_of(got), cmr_built_with_cuda() ? "cuda" : "system");
}
END_TEST

START_TEST(current_device_variants) {
  cmr_system_resource *resource = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(resource);
  ck_assert_ok(cmr_set_current_device_resource_ref(ref));
  cmr_resource_ref got = {0};
  ck_assert_ok(cmr_get_per_device_resource_ref(current, &got));
  assert_same_ref(got, ref);
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  ck_assert_ok(cmr_get_per_device_resource_ref(current, &got));
  ck_assert_ptr_ne(got.self, ref.self);
  ck_assert_ok(cmr_system_resource_destroy(resource));
}
END_TEST

START_TEST(bad_refs_are_refused_and_leave_the_entry) {
  ck_assert_ok(cmr_set_current_device_resource_ref(foreign_ref()));
  ck_assert_status(cmr_set_current_device_resource_ref((cmr_resource_ref){0}), CMR_ERROR_INVALID_REF);
  ck_assert_message_has("cmr_set_current_device_resource_ref: ");
  ck_assert_status(cmr_set_per_device_resource_ref(current, (cmr_resource_ref){0}), CMR_ERROR_INVALID_REF);
  ck_assert_message_has("cmr_set_per_device_resource_ref: ");

  cmr_system_resource *gone = cmr_test_system_resource();
  ck_assert_ok(cmr_system_resource_destroy(gone));
  ck_assert_status(cmr_set_per_device_resource_ref(current, cmr_system_resource_ref(gone)), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_message_has("already destroyed");

  cmr_resource_ref got = {0};
  ck_assert_ok(cmr_get_current_device_resource_ref(&got));
  assert_same_ref(got, foreign_ref());
  ck_assert_ok(cmr_reset_current_device_resource_ref());
}
END_TEST

/* ---- threads ------------------------------------------------------------------------------ */

enum { THREADS = 8, ROUNDS = 2000 };

static cmr_system_resource *thread_resources[THREADS];

/* Each thread stores its own resource and uses whatever it reads back: one of
 * the threads' resources. Their handles stay alive until every thread is
 * done, so every ref read stays valid although the entry keeps changing (a
 * reset here would let a thread read a default that the next set destroys:
 * the documented limit of a ref that is not retained). */
static bool is_thread_resource(cmr_resource_ref ref) {
  for (int t = 0; t < THREADS; t++) {
    if (ref.self == cmr_system_resource_ref(thread_resources[t]).self) {
      return true;
    }
  }
  return false;
}

static void *set_and_get(void *arg) {
  int index = (int)(intptr_t)arg;
  cmr_resource_ref own = cmr_system_resource_ref(thread_resources[index]);
  for (int round = 0; round < ROUNDS; round++) {
    cmr_resource_ref got = {0};
    void *ptr = NULL;
    if (cmr_set_current_device_resource_ref(own) != CMR_SUCCESS ||
        cmr_get_current_device_resource_ref(&got) != CMR_SUCCESS ||
        cmr_allocate(got, 64, CMR_DEFAULT_STREAM, &ptr) != CMR_SUCCESS ||
        cmr_deallocate(got, ptr, 64, CMR_DEFAULT_STREAM) != CMR_SUCCESS || !is_thread_resource(got)) {
      return (void *)1;
    }
  }
  return NULL;
}

START_TEST(threads_set_and_get_concurrently) {
  for (int t = 0; t < THREADS; t++) {
    thread_resources[t] = cmr_test_system_resource();
  }
  cmr_test_threads_result failed = cmr_test_numbered_threads(THREADS, set_and_get);
  ck_assert_msg(failed.index < 0, "thread %d failed: %s", failed.index, cmr_last_error_message());
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  for (int t = 0; t < THREADS; t++) {
    cmr_resource_ref ref = cmr_system_resource_ref(thread_resources[t]);
    ck_assert_ok(cmr_system_resource_destroy(thread_resources[t]));
    /* The table let go of every one of them. */
    ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
  }
}
END_TEST

/* Every change of an entry counts once (set, reset, a default made); a get
 * of a made entry, a refused set and a refused get count nothing. */
START_TEST(changes_are_counted) {
  cmr_resource_ref got = {0};
  ck_assert_ok(cmr_get_per_device_resource_ref(current, &got)); /* made, if it was not */
  size_t before = cmr_per_device_resource_changes();
  ck_assert_ok(cmr_get_per_device_resource_ref(current, &got));
  ck_assert_ok(cmr_get_current_device_resource_ref(&got));
  ck_assert_uint_eq(cmr_per_device_resource_changes(), before);
  ck_assert_ok(cmr_set_per_device_resource_ref(current, foreign_ref()));
  ck_assert_uint_eq(cmr_per_device_resource_changes(), before + 1);
  ck_assert_status(cmr_set_per_device_resource_ref(current, (cmr_resource_ref){0}), CMR_ERROR_INVALID_REF);
  ck_assert_status(cmr_get_per_device_resource_ref(device_count, &got), CMR_ERROR_UNKNOWN_DEVICE);
  ck_assert_uint_eq(cmr_per_device_resource_changes(), before + 1);
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  ck_assert_uint_eq(cmr_per_device_resource_changes(), before + 2);
  ck_assert_ok(cmr_get_current_device_resource_ref(&got)); /* the default made again */
  ck_assert_uint_eq(cmr_per_device_resource_changes(), before + 3);
  ck_assert_ok(cmr_get_current_device_resource_ref(&got));
  ck_assert_uint_eq(cmr_per_device_resource_changes(), before + 3);
}
END_TEST

static void per_device_cases(Suite *suite) {
  cmr_test_case(suite, "table", setup, NULL, devices_outside_the_range_are_unknown, null_out_parameters,
                the_default_is_the_plain_resource_of_the_build, every_device_gets_a_default, set_get_reset,
                current_device_variants, bad_refs_are_refused_and_leave_the_entry, changes_are_counted);

  cmr_test_case(suite, "threads", setup, NULL, threads_set_and_get_concurrently);
}

int main(void) { return cmr_test_main_suite("per_device", CMR_TEST_NEEDS_DEVICE, per_device_cases); }
