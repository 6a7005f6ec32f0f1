/* SPDX-License-Identifier: Apache-2.0 */
/* Status names and the thread-local message: its format, the context prefix
 * a caller adds in front of a callee's message, truncation and threads. */
#include <pthread.h>
#include <stdlib.h>

#include "test_util.h"

#define LAST_STATUS CMR_ERROR_IPC_GONE

START_TEST(every_status_has_its_own_name) {
  for (int a = CMR_SUCCESS; a <= LAST_STATUS; a++) {
    const char *name = cmr_status_string((cmr_status)a);
    ck_assert_ptr_nonnull(name);
    ck_assert_msg(strncmp(name, "CMR_", 4) == 0, "status %d is named \"%s\"", a, name);
    ck_assert_str_ne(name, "CMR_UNKNOWN_STATUS");
    for (int b = CMR_SUCCESS; b < a; b++) {
      ck_assert_str_ne(name, cmr_status_string((cmr_status)b));
    }
  }
}
END_TEST

START_TEST(names_match_the_enumerators) {
  ck_assert_str_eq(cmr_status_string(CMR_SUCCESS), "CMR_SUCCESS");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_OUT_OF_MEMORY), "CMR_ERROR_OUT_OF_MEMORY");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_DESTROYED_HANDLE), "CMR_ERROR_DESTROYED_HANDLE");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_INTERNAL), "CMR_ERROR_INTERNAL");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_IO), "CMR_ERROR_IO");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_REENTRANT_CALL), "CMR_ERROR_REENTRANT_CALL");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_FORKED), "CMR_ERROR_FORKED");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_STREAM_CAPTURE), "CMR_ERROR_STREAM_CAPTURE");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_IPC_SAME_PROCESS), "CMR_ERROR_IPC_SAME_PROCESS");
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_IPC_GONE), "CMR_ERROR_IPC_GONE");
}
END_TEST

START_TEST(unknown_statuses_have_one_name) {
  ck_assert_str_eq(cmr_status_string((cmr_status)(LAST_STATUS + 1)), "CMR_UNKNOWN_STATUS");
  ck_assert_str_eq(cmr_status_string((cmr_status)-1), "CMR_UNKNOWN_STATUS");
  ck_assert_str_eq(cmr_status_string((cmr_status)1000), "CMR_UNKNOWN_STATUS");
}
END_TEST

/* ---- the message --------------------------------------------------------------- */

static test_foreign foreign;

static void reset_foreign(void) { foreign = (test_foreign){0}; }

START_TEST(a_message_names_the_function_and_the_value) {
  void *ptr = NULL;
  ck_assert_status(
      cmr_allocate_aligned(test_foreign_ref(&foreign, &test_foreign_ops), 64, 48, CMR_DEFAULT_STREAM, &ptr),
      CMR_ERROR_BAD_ALIGNMENT);
  ck_assert_str_eq(cmr_last_error_message(), "cmr_allocate_aligned: alignment 48 is not a power of two");
}
END_TEST

START_TEST(clear_forgets_the_message) {
  ck_assert_status(cmr_ref_validate((cmr_resource_ref){0}), CMR_ERROR_INVALID_REF);
  cmr_clear_last_error();
  ck_assert_str_eq(cmr_last_error_message(), "");
}
END_TEST

START_TEST(a_successful_call_keeps_the_last_failure) {
  ck_assert_status(cmr_ref_validate((cmr_resource_ref){0}), CMR_ERROR_INVALID_REF);
  char before[1024];
  strcpy(before, cmr_last_error_message());
  ck_assert_int_eq(cmr_ref_validate(test_foreign_ref(&foreign, &test_foreign_ops)), CMR_SUCCESS);
  ck_assert_str_eq(cmr_last_error_message(), before);
}
END_TEST

START_TEST(a_silent_resource_failure_still_gets_a_message) {
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(test_foreign_ref(&foreign, &test_foreign_ops), 1024, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_str_eq(cmr_last_error_message(),
                   "cmr_allocate: resource foreign failed with CMR_ERROR_OUT_OF_MEMORY for 1024 bytes");
}
END_TEST

START_TEST(a_caller_prefixes_its_context) {
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  cmr_device_buffer *buffer = NULL;
  ck_assert_status(
      cmr_device_buffer_create(1024, CMR_DEFAULT_STREAM, test_foreign_ref(&foreign, &test_foreign_ops), &buffer),
      CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_str_eq(cmr_last_error_message(),
                   "cmr_device_buffer_create(1024 bytes): cmr_allocate: resource foreign failed "
                   "with CMR_ERROR_OUT_OF_MEMORY for 1024 bytes");
}
END_TEST

/* A type name longer than the message buffer: the message is cut, stays
 * terminated, and a context prefix still lands in front. */
START_TEST(long_messages_are_truncated_safely) {
  static char long_name[3000];
  memset(long_name, 'x', sizeof long_name - 1);
  static cmr_resource_ops long_ops;
  long_ops = test_foreign_ops;
  long_ops.type_name = long_name;
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;

  void *ptr = NULL;
  ck_assert_status(cmr_allocate(test_foreign_ref(&foreign, &long_ops), 8, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_OUT_OF_MEMORY);
  size_t length = strlen(cmr_last_error_message());
  ck_assert_uint_gt(length, 900);
  ck_assert_uint_lt(length, 1024);

  cmr_device_buffer *buffer = NULL;
  ck_assert_status(cmr_device_buffer_create(8, CMR_DEFAULT_STREAM, test_foreign_ref(&foreign, &long_ops), &buffer),
                   CMR_ERROR_OUT_OF_MEMORY);
  const char *message = cmr_last_error_message();
  static const char start[] = "cmr_device_buffer_create(8 bytes): cmr_allocate: resource xxx";
  ck_assert_uint_lt(strlen(message), 1024);
  ck_assert_msg(strncmp(message, start, strlen(start)) == 0, "message starts \"%.80s\"", message);
}
END_TEST

/* ---- threads ------------------------------------------------------------------------ */

static void *fail_on_another_thread(void *result) {
  char *seen = result;
  strcpy(seen, cmr_last_error_message()); /* must start empty */
  strcat(seen, "|");
  void *ptr = NULL;
  cmr_allocate_aligned(test_foreign_ref(&foreign, &test_foreign_ops), 8, 3, CMR_DEFAULT_STREAM, &ptr);
  strcat(seen, cmr_last_error_message());
  return NULL;
}

START_TEST(messages_are_per_thread) {
  void *ptr = NULL;
  ck_assert_status(cmr_allocate_aligned(test_foreign_ref(&foreign, &test_foreign_ops), 8, 48, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_BAD_ALIGNMENT);
  static char seen[2100];
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, fail_on_another_thread, seen), 0);
  ck_assert_int_eq(pthread_join(thread, NULL), 0);
  ck_assert_str_eq(seen, "|cmr_allocate_aligned: alignment 3 is not a power of two");
  ck_assert_str_eq(cmr_last_error_message(), "cmr_allocate_aligned: alignment 48 is not a power of two");
}
END_TEST

static void errors_cases(Suite *suite) {
  cmr_test_case(suite, "status_names", NULL, NULL, every_status_has_its_own_name, names_match_the_enumerators,
                unknown_statuses_have_one_name);

  cmr_test_case(suite, "messages", reset_foreign, NULL, a_message_names_the_function_and_the_value,
                clear_forgets_the_message, a_successful_call_keeps_the_last_failure,
                a_silent_resource_failure_still_gets_a_message, a_caller_prefixes_its_context,
                long_messages_are_truncated_safely, messages_are_per_thread);
}

int main(void) { return cmr_test_main_suite("errors", CMR_TEST_ANY_MACHINE, errors_cases); }
