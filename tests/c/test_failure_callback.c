/* SPDX-License-Identifier: Apache-2.0 */
/* The failure_callback adaptor over the counting foreign resource: when the
 * callback runs (out of memory only), with which bytes and how often, retries
 * until the upstream succeeds, giving up with the upstream's message, and the
 * retained upstream. */
#include <stdio.h>
#include <stdlib.h>

#include "test_adaptor.h"

/* What the callback saw, and what it does: on its `raise_at`-th call it lifts
 * the upstream's limit; it answers `retry` (always true once it has raised). */
typedef struct observer {
  int calls;
  size_t bytes[8];
  int raise_at;
  bool retry;
  bool clobber_message; /* make a cmr call that fails before answering */
} observer;

static test_foreign foreign;
static observer seen;
static cmr_failure_callback_resource *adaptor;

static bool on_failure(size_t bytes, void *arg) {
  observer *o = arg;
  if (o->calls < (int)(sizeof o->bytes / sizeof o->bytes[0])) o->bytes[o->calls] = bytes;
  o->calls++;
  if (o->clobber_message) {
    void *ptr;
    cmr_allocate((cmr_resource_ref){0}, 1, CMR_DEFAULT_STREAM, &ptr); /* records its own message */
  }
  if (o->raise_at != 0 && o->calls == o->raise_at) {
    foreign.limit = 0;
    return true;
  }
  return o->retry;
}

static cmr_resource_ref adapted(void) { return cmr_failure_callback_resource_ref(adaptor); }

static void setup(void) {
  foreign = (test_foreign){.properties = CMR_PROPERTY_HOST_ACCESSIBLE, .limit = 1024};
  seen = (observer){0};
  ck_assert_ok(
      cmr_failure_callback_resource_create(test_foreign_ref(&foreign, &test_foreign_ops), on_failure, &seen, &adaptor));
}

static void teardown(void) { ck_assert_ok(cmr_failure_callback_resource_destroy(adaptor)); }

START_TEST(success_calls_nothing) {
  foreign.limit = 0; /* room for the forwarding check's 3000 bytes */
  test_adaptor_forwards(adapted(), &foreign, test_adaptor_recorded_stream);
  ck_assert_int_eq(seen.calls, 0);
}
END_TEST

START_TEST(giving_up_fails_with_the_upstream_message) {
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(adapted(), 2048, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ptr_null(ptr);
  ck_assert_str_eq(cmr_last_error_message(),
                   "failure_callback: the callback gave up on 2048 bytes: cmr_allocate_aligned: resource foreign "
                   "failed with CMR_ERROR_OUT_OF_MEMORY for 2048 bytes");
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_uint_eq(seen.bytes[0], 2048);
  ck_assert_int_eq(foreign.allocations, 1);
}
END_TEST

START_TEST(retries_until_the_upstream_succeeds) {
  seen.retry = true;
  seen.raise_at = 3;
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(adapted(), 5000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_nonnull(ptr);
  ck_assert_int_eq(seen.calls, 3);
  for (int i = 0; i < 3; ++i) ck_assert_uint_eq(seen.bytes[i], 5000);
  ck_assert_int_eq(foreign.allocations, 4); /* three refused, the fourth served */
  ck_assert_uint_eq(foreign.outstanding, 5000);
  ck_assert_ok(cmr_deallocate(adapted(), ptr, 5000, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(foreign.outstanding, 0);
}
END_TEST

START_TEST(a_retry_can_still_give_up) {
  /* setup's observer: it never retries and never raises the limit. */
  void *held = NULL;
  ck_assert_ok(cmr_allocate(adapted(), 1000, CMR_DEFAULT_STREAM, &held));
  /* Only 24 bytes left under the limit: 100 fails, the callback is asked once. */
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(adapted(), 100, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_uint_eq(seen.bytes[0], 100);
  ck_assert_ok(cmr_deallocate(adapted(), held, 1000, CMR_DEFAULT_STREAM));
  /* Now it fits: no call. */
  ck_assert_ok(cmr_allocate(adapted(), 100, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_ok(cmr_deallocate(adapted(), ptr, 100, CMR_DEFAULT_STREAM));
}
END_TEST

START_TEST(other_failures_are_not_retried) {
  foreign.fail_with = CMR_ERROR_CUDA;
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(adapted(), 64, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_CUDA);
  ck_assert_message_has("resource foreign failed with CMR_ERROR_CUDA for 64 bytes");
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(seen.calls, 0);
  ck_assert_int_eq(foreign.allocations, 1);
}
END_TEST

START_TEST(the_callback_cannot_replace_the_message) {
  seen.clobber_message = true;
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(adapted(), 4096, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_str_eq(cmr_last_error_message(),
                   "failure_callback: the callback gave up on 4096 bytes: cmr_allocate_aligned: resource foreign "
                   "failed with CMR_ERROR_OUT_OF_MEMORY for 4096 bytes");
}
END_TEST

/* max_alignment = "upstream". */
START_TEST(larger_alignments_go_to_the_upstream) {
  test_adaptor_passes_alignment_up(adapted(), &foreign);
  ck_assert_int_eq(seen.calls, 0);
}
END_TEST

START_TEST(bad_arguments) {
  cmr_failure_callback_resource *none = (void *)1;
  ck_assert_status(
      cmr_failure_callback_resource_create(test_foreign_ref(&foreign, &test_foreign_ops), NULL, &seen, &none),
      CMR_ERROR_NULL_POINTER);
  ck_assert_str_eq(cmr_last_error_message(), "cmr_failure_callback_resource_create: callback is NULL");
  ck_assert_ptr_null(none);
  ck_assert_status(cmr_failure_callback_resource_create((cmr_resource_ref){0}, on_failure, &seen, &none),
                   CMR_ERROR_INVALID_REF);
  ck_assert_status(
      cmr_failure_callback_resource_create(test_foreign_ref(&foreign, &test_foreign_ops), on_failure, &seen, NULL),
      CMR_ERROR_NULL_POINTER);
}
END_TEST

/* A system upstream, whose handle is destroyed at once: the adaptor's share
 * keeps it working. Out of memory for real reaches the callback. */
static observer over_system_seen;

static cmr_status make_over(cmr_resource_ref upstream, cmr_resource_ref *out) {
  cmr_failure_callback_resource *handle = NULL;
  cmr_status status = cmr_failure_callback_resource_create(upstream, on_failure, &over_system_seen, &handle);
  *out = cmr_failure_callback_resource_ref(handle);
  return status;
}

/* Out of memory for real (of the system resource) reaches the callback too. */
START_TEST(keeps_its_upstream_alive) {
  cmr_resource_ref ref = test_adaptor_over_released_system(make_over);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(ref, (size_t)1 << 62, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("failure_callback: the callback gave up on 4611686018427387904 bytes: ");
  ck_assert_message_has("system: posix_memalign");
  ck_assert_int_eq(over_system_seen.calls, 1);
  ck_assert_uint_eq(over_system_seen.bytes[0], (size_t)1 << 62);
  ck_assert_ok(cmr_ref_release(ref));
}
END_TEST

/* A function cannot be written in a stack expression. */
START_TEST(cannot_be_made_from_an_expression) {
  cmr_test_stack_refused("failure_callback(system)", CMR_ERROR_INVALID_ARGUMENT,
                         "failure_callback cannot be made from an expression: callback cannot be written in one");
}
END_TEST

static void failure_callback_cases(Suite *suite) {
  cmr_test_case(suite, "basics", setup, teardown, success_calls_nothing, giving_up_fails_with_the_upstream_message,
                retries_until_the_upstream_succeeds, a_retry_can_still_give_up, other_failures_are_not_retried,
                the_callback_cannot_replace_the_message, larger_alignments_go_to_the_upstream, bad_arguments);
  cmr_test_case(suite, "lifetime", NULL, NULL, keeps_its_upstream_alive, cannot_be_made_from_an_expression);
}

/* The suite needs a device: the CUDA build's system resource synchronizes streams. */
int main(void) { return cmr_test_main_suite("failure_callback", CMR_TEST_NEEDS_DEVICE, failure_callback_cases); }
