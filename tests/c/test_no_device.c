/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA build on a machine without a driver or device: every call that
 * needs one fails with CMR_ERROR_NO_DEVICE and a message that names the cmr
 * function and the CUDA call. Skipped where there is a device (the other
 * suites cover it) and in the host build (which always has one). */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

/* The message says which CUDA error it was (35 here, 100 elsewhere). */
static void assert_cuda_said_no_device(void) {
  const char *message = cmr_last_error_message();
  ck_assert_msg(strstr(message, "cudaErrorInsufficientDriver") != NULL ||
                    strstr(message, "cudaErrorNoDevice") != NULL || strstr(message, "no CUDA device") != NULL,
                "message \"%s\" names no CUDA error", message);
}

START_TEST(device_queries_report_no_device) {
  int value = 7;
  ck_assert_status(cmr_device_count(&value), CMR_ERROR_NO_DEVICE);
  ck_assert_message_has("cmr_device_count: cudaGetDeviceCount: ");
  assert_cuda_said_no_device();
  ck_assert_int_eq(value, 0);
  ck_assert_status(cmr_current_device(&value), CMR_ERROR_NO_DEVICE);
  ck_assert_message_has("cmr_current_device: cudaGetDevice: ");
  ck_assert_status(cmr_set_current_device(0), CMR_ERROR_NO_DEVICE);
  ck_assert_message_has("cmr_set_current_device: ");
  size_t free_bytes = 1;
  size_t total_bytes = 1;
  ck_assert_status(cmr_device_memory_info(&free_bytes, &total_bytes), CMR_ERROR_NO_DEVICE);
  ck_assert_message_has("cmr_device_memory_info: cudaMemGetInfo: ");
  assert_cuda_said_no_device();
  ck_assert_status(cmr_percent_of_free_device_memory(50, &free_bytes), CMR_ERROR_NO_DEVICE);
  ck_assert_message_has("cmr_percent_of_free_device_memory: ");
}
END_TEST

START_TEST(streams_report_no_device) {
  cmr_stream stream = NULL;
  ck_assert_status(cmr_stream_create(&stream), CMR_ERROR_NO_DEVICE);
  ck_assert_message_has("cmr_stream_create: cudaStreamCreateWithFlags(flags 0): ");
  assert_cuda_said_no_device();
  /* Not asserted: cudaStreamSynchronize(NULL) succeeds without a driver. */
}
END_TEST

START_TEST(the_per_device_table_reports_no_device) {
  cmr_resource_ref ref = {0};
  ck_assert_status(cmr_get_per_device_resource_ref(0, &ref), CMR_ERROR_NO_DEVICE);
  ck_assert_message_has("cmr_get_per_device_resource_ref: cudaGetDeviceCount: ");
  ck_assert_ptr_null(ref.ops);
  ck_assert_status(cmr_get_current_device_resource_ref(&ref), CMR_ERROR_NO_DEVICE);
  ck_assert_message_has("cmr_get_current_device_resource_ref: ");
  ck_assert_status(cmr_reset_per_device_resource_ref(0), CMR_ERROR_NO_DEVICE);
}
END_TEST

START_TEST(the_build_says_it_has_cuda) { ck_assert(cmr_built_with_cuda()); }
END_TEST

static void no_device_cases(Suite *suite) {
  cmr_test_case(suite, "calls", NULL, NULL, device_queries_report_no_device, streams_report_no_device,
                the_per_device_table_reports_no_device, the_build_says_it_has_cuda);
}

int main(void) {
  if (!cmr_test_no_device()) {
    printf("skipped: this machine has a device\n");
    return 77;
  }
  return cmr_test_main_suite("no_device", CMR_TEST_ANY_MACHINE, no_device_cases);
}
