/* SPDX-License-Identifier: Apache-2.0 */
/* Devices, memory figures, build facts and streams. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "test_util.h"

static int device_count;

static void setup(void) { ck_assert_ok(cmr_device_count(&device_count)); }

START_TEST(there_is_at_least_one_device) {
  ck_assert_int_ge(device_count, 1);
  if (!cmr_built_with_cuda()) {
    ck_assert_int_eq(device_count, 1);
  }
  ck_assert_status(cmr_device_count(NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("cmr_device_count: ");
}
END_TEST

START_TEST(the_current_device_is_in_range) {
  int current = -1;
  ck_assert_ok(cmr_current_device(&current));
  ck_assert_int_ge(current, 0);
  ck_assert_int_lt(current, device_count);
  ck_assert_status(cmr_current_device(NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(setting_the_current_device) {
  int current = -1;
  ck_assert_ok(cmr_current_device(&current));
  for (int device = 0; device < device_count; device++) {
    ck_assert_ok(cmr_set_current_device(device));
    int now = -1;
    ck_assert_ok(cmr_current_device(&now));
    ck_assert_int_eq(now, device);
  }
  ck_assert_ok(cmr_set_current_device(current));
}
END_TEST

START_TEST(unknown_devices_are_refused) {
  const int bad[] = {-1, device_count, 1000};
  for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
    char expected[96];
    snprintf(expected, sizeof expected, "cmr_set_current_device: device %d is not in [0, %d)", bad[b], device_count);
    ck_assert_status(cmr_set_current_device(bad[b]), CMR_ERROR_UNKNOWN_DEVICE);
    ck_assert_str_eq(cmr_last_error_message(), expected);
  }
}
END_TEST

START_TEST(memory_info) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  ck_assert_ok(cmr_device_memory_info(&free_bytes, &total_bytes));
  ck_assert_uint_gt(total_bytes, 0);
  ck_assert_uint_gt(free_bytes, 0);
  ck_assert_uint_le(free_bytes, total_bytes);
  ck_assert_status(cmr_device_memory_info(NULL, &total_bytes), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("free_bytes");
  ck_assert_status(cmr_device_memory_info(&free_bytes, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("total_bytes");
  ck_assert_uint_eq(free_bytes, 0);
}
END_TEST

START_TEST(percent_of_free_memory) {
  size_t total_bytes = 0;
  size_t free_bytes = 0;
  ck_assert_ok(cmr_device_memory_info(&free_bytes, &total_bytes));
  static const int percents[] = {0, 1, 50, 99, 100};
  for (size_t p = 0; p < sizeof percents / sizeof *percents; p++) {
    size_t share = 1;
    ck_assert_ok(cmr_percent_of_free_device_memory(percents[p], &share));
    ck_assert_uint_eq(share % 256, 0);
    ck_assert_uint_le(share, total_bytes / 100 * (size_t)percents[p] + total_bytes % 100);
  }
  size_t none = 1;
  ck_assert_ok(cmr_percent_of_free_device_memory(0, &none));
  ck_assert_uint_eq(none, 0);
}
END_TEST

START_TEST(percent_outside_0_to_100_is_refused) {
  const int bad[] = {-1, 101, INT32_MIN, INT32_MAX};
  for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
    char expected[96];
    snprintf(expected, sizeof expected, "cmr_percent_of_free_device_memory: percent %d is not in [0, 100]", bad[b]);
    size_t share = 1;
    ck_assert_status(cmr_percent_of_free_device_memory(bad[b], &share), CMR_ERROR_INVALID_ARGUMENT);
    ck_assert_uint_eq(share, 0);
    ck_assert_str_eq(cmr_last_error_message(), expected);
  }
  ck_assert_status(cmr_percent_of_free_device_memory(50, NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(build_facts) {
  ck_assert_int_eq(cmr_built_with_cuda(), CMR_WITH_CUDA != 0);
  const char *version = cmr_version();
  ck_assert_ptr_nonnull(version);
  unsigned major = 0;
  unsigned minor = 0;
  unsigned patch = 0;
  char rest = 0;
  ck_assert_msg(sscanf(version, "%u.%u.%u%c", &major, &minor, &patch, &rest) == 3,
                "version \"%s\" is not MAJOR.MINOR.PATCH", version);
}
END_TEST

/* ---- streams ------------------------------------------------------------------------- */

START_TEST(streams_are_distinct_and_synchronize) {
  cmr_stream a = NULL;
  cmr_stream b = NULL;
  ck_assert_ok(cmr_stream_create(&a));
  ck_assert_ok(cmr_stream_create(&b));
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_ne(a, b);
  ck_assert_ok(cmr_stream_synchronize(a));
  ck_assert_ok(cmr_stream_synchronize(CMR_DEFAULT_STREAM));
  cmr_test_destroy(a, b);
}
END_TEST

START_TEST(streams_refuse_bad_input) {
  ck_assert_status(cmr_stream_create(NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("cmr_stream_create: ");
  ck_assert_status(cmr_stream_destroy(CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("default stream");
}
END_TEST

START_TEST(destroying_a_stream_twice_is_refused) {
  cmr_stream stream = cmr_test_stream();
  ck_assert_ok(cmr_stream_destroy(stream));
  ck_assert_status(cmr_stream_destroy(stream), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_stream_destroy: ");
  ck_assert_message_has("not a live stream of cmr_stream_create");
  if (!cmr_built_with_cuda()) {
    ck_assert_status(cmr_stream_synchronize(stream), CMR_ERROR_INVALID_ARGUMENT);
    ck_assert_message_has("was destroyed");
  }
}
END_TEST

/* However many streams come and go, a host stream destroyed long ago stays
 * refused: its token is never given out again, so it is never live again. */
START_TEST(a_stream_destroyed_long_ago_stays_refused) {
  cmr_stream old = cmr_test_stream();
  ck_assert_ok(cmr_stream_destroy(old));
  for (int i = 0; i < 5000; ++i) {
    cmr_stream stream = cmr_test_stream();
    if (!cmr_built_with_cuda()) ck_assert_ptr_ne(stream, old);
    ck_assert_ok(cmr_stream_destroy(stream));
  }
  if (!cmr_built_with_cuda()) {
    ck_assert_status(cmr_stream_destroy(old), CMR_ERROR_INVALID_ARGUMENT);
    ck_assert_status(cmr_stream_synchronize(old), CMR_ERROR_INVALID_ARGUMENT);
  }
}
END_TEST

/* Streams cmr did not make are not cmr's to destroy, live ones included. */
START_TEST(destroying_a_foreign_stream_is_refused) {
  const uintptr_t foreign[] = {1, 2, 0x5000, 0x7f0000001230};
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; ++i) {
    ck_assert_status(cmr_stream_destroy((cmr_stream)foreign[i]), CMR_ERROR_INVALID_ARGUMENT);
    ck_assert_message_has("made elsewhere");
  }
  cmr_stream live = cmr_test_stream();
  ck_assert_status(cmr_stream_destroy((cmr_stream)((uintptr_t)live + 16)), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ok(cmr_stream_synchronize(live));
  ck_assert_ok(cmr_stream_destroy(live));
}
END_TEST

static void *destroy_racing(void *stream) {
  return (void *)(uintptr_t)(cmr_stream_destroy((cmr_stream)stream) == CMR_SUCCESS);
}

/* Of two threads destroying one stream at once, exactly one does. */
START_TEST(racing_destroys_destroy_once) {
  for (int round = 0; round < 200; ++round) {
    cmr_stream stream = cmr_test_stream();
    pthread_t threads[2];
    for (int i = 0; i < 2; ++i) ck_assert_int_eq(pthread_create(&threads[i], NULL, destroy_racing, stream), 0);
    uintptr_t successes = 0;
    for (int i = 0; i < 2; ++i) {
      void *succeeded = NULL;
      ck_assert_int_eq(pthread_join(threads[i], &succeeded), 0);
      successes += (uintptr_t)succeeded;
    }
    ck_assert_uint_eq(successes, 1);
  }
}
END_TEST

static void devices_cases(Suite *suite) {
  cmr_test_case(suite, "devices", setup, NULL, there_is_at_least_one_device, the_current_device_is_in_range,
                setting_the_current_device, unknown_devices_are_refused, memory_info, percent_of_free_memory,
                percent_outside_0_to_100_is_refused, build_facts);

  cmr_test_case(suite, "streams", NULL, NULL, streams_are_distinct_and_synchronize, streams_refuse_bad_input,
                destroying_a_stream_twice_is_refused, a_stream_destroyed_long_ago_stays_refused,
                destroying_a_foreign_stream_is_refused, racing_destroys_destroy_once);
}

int main(void) { return cmr_test_main_suite("devices", CMR_TEST_NEEDS_DEVICE, devices_cases); }
