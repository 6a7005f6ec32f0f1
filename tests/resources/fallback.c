/* SPDX-License-Identifier: Apache-2.0 */
/* fallback beyond the battery and its expectations (which run it over one
 * resource twice): with a primary that runs out, what goes where, what comes
 * back to whom, what it refuses, its properties, its hold on both resources,
 * its stack text and its counts under threads. */
#include <pthread.h>

#include <cmr/stack.h>

#include "test_util.h"

static cmr_fallback_resource *make(test_foreign *primary, test_foreign *fallback) {
  cmr_fallback_resource *handle = NULL;
  ck_assert_ok(cmr_fallback_resource_create(test_foreign_ref(primary, &test_foreign_ops),
                                            test_foreign_ref(fallback, &test_foreign_ops), &handle));
  return handle;
}

static size_t counter(cmr_status (*getter)(cmr_fallback_resource *, size_t *), cmr_fallback_resource *handle) {
  size_t value = SIZE_MAX;
  ck_assert_ok(getter(handle, &value));
  return value;
}

/* The fallback's counters: allocations the fallback served, and the bytes of those still out. */
static void expect_fallback_counts(cmr_fallback_resource *handle, size_t allocations, size_t bytes) {
  ck_assert_uint_eq(counter(cmr_fallback_resource_fallback_allocations, handle), allocations);
  ck_assert_uint_eq(counter(cmr_fallback_resource_fallback_bytes, handle), bytes);
}

START_TEST(test_out_of_memory_goes_to_the_fallback_and_frees_go_back) {
  test_foreign primary = {.limit = 4096, .properties = CMR_PROPERTY_HOST_ACCESSIBLE};
  test_foreign fallback = {.properties = CMR_PROPERTY_HOST_ACCESSIBLE};
  cmr_fallback_resource *handle = make(&primary, &fallback);
  cmr_resource_ref ref = cmr_fallback_resource_ref(handle);
  void *first = NULL, *second = NULL;
  ck_assert_ok(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &first));
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &second));
  ck_assert_int_eq(primary.allocations, 2); /* asked twice, refused once */
  ck_assert_uint_eq(primary.outstanding, 4096);
  ck_assert_int_eq(fallback.allocations, 1);
  ck_assert_uint_eq(fallback.outstanding, 1000);
  expect_fallback_counts(handle, 1, 1000);

  ck_assert_ok(cmr_deallocate(ref, second, 1000, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(fallback.deallocations, 1);
  ck_assert_ptr_eq(fallback.last_freed, second);
  ck_assert_int_eq(primary.deallocations, 0);
  expect_fallback_counts(handle, 1, 0);
  ck_assert_ok(cmr_deallocate(ref, first, 4096, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(primary.deallocations, 1);
  ck_assert_ptr_eq(primary.last_freed, first);
  ck_assert_int_eq(fallback.deallocations, 1);

  /* Room again in the primary: the next one is the primary's. */
  ck_assert_ok(cmr_allocate(ref, 2048, CMR_DEFAULT_STREAM, &first));
  ck_assert_uint_eq(primary.outstanding, 2048);
  ck_assert_int_eq(fallback.allocations, 1);
  ck_assert_ok(cmr_deallocate(ref, first, 2048, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_fallback_resource_destroy(handle));
}
END_TEST

START_TEST(test_another_failure_is_returned_without_the_fallback) {
  test_foreign primary = {.fail_with = CMR_ERROR_CUDA};
  test_foreign fallback = {0};
  cmr_fallback_resource *handle = make(&primary, &fallback);
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(cmr_fallback_resource_ref(handle), 1000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_CUDA);
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(fallback.allocations, 0);
  ck_assert_uint_eq(counter(cmr_fallback_resource_fallback_allocations, handle), 0);
  ck_assert_ok(cmr_fallback_resource_destroy(handle));
}
END_TEST

START_TEST(test_both_out_of_memory_fails_with_the_fallbacks_refusal) {
  test_foreign primary = {.limit = 256};
  test_foreign fallback = {.limit = 512};
  cmr_fallback_resource *handle = make(&primary, &fallback);
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(cmr_fallback_resource_ref(handle), 1000, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(primary.allocations, 1);
  ck_assert_int_eq(fallback.allocations, 1);
  expect_fallback_counts(handle, 0, 0);
  ck_assert_ok(cmr_fallback_resource_destroy(handle));
}
END_TEST

START_TEST(test_refuses_what_it_did_not_hand_out_and_a_wrong_size) {
  test_foreign primary = {.limit = 4096};
  test_foreign fallback = {0};
  cmr_fallback_resource *handle = make(&primary, &fallback);
  cmr_resource_ref ref = cmr_fallback_resource_ref(handle);
  void *from_primary = NULL, *from_fallback = NULL;
  ck_assert_ok(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &from_primary));
  ck_assert_ok(cmr_allocate(ref, 1024, CMR_DEFAULT_STREAM, &from_fallback));
  static _Alignas(256) char foreign_block[256];
  ck_assert_status(cmr_deallocate(ref, foreign_block, 256, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("not allocated by this resource");
  ck_assert_status(cmr_deallocate(ref, from_fallback, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("allocated with 1024 bytes, not 1000");
  ck_assert_status(cmr_deallocate(ref, from_primary, 4000, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(primary.deallocations, 0);
  ck_assert_int_eq(fallback.deallocations, 0);
  /* Still allocated, each still its resource's. */
  ck_assert_ok(cmr_deallocate(ref, from_fallback, 1024, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(ref, from_primary, 4096, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(primary.deallocations, 1);
  ck_assert_int_eq(fallback.deallocations, 1);
  ck_assert_status(cmr_deallocate(ref, from_primary, 4096, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_ok(cmr_fallback_resource_destroy(handle));
}
END_TEST

START_TEST(test_properties_are_what_both_have) {
  test_foreign primary = {.properties = CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE};
  test_foreign fallback = {.properties = CMR_PROPERTY_HOST_ACCESSIBLE};
  cmr_fallback_resource *handle = make(&primary, &fallback);
  unsigned properties = 0;
  ck_assert_ok(cmr_ref_properties(cmr_fallback_resource_ref(handle), &properties));
  ck_assert_uint_eq(properties, CMR_PROPERTY_HOST_ACCESSIBLE);
  ck_assert_status(cmr_ref_require_properties(cmr_fallback_resource_ref(handle), CMR_PROPERTY_DEVICE_ACCESSIBLE),
                   CMR_ERROR_PROPERTY_MISSING);
  ck_assert_ok(cmr_fallback_resource_destroy(handle));
}
END_TEST

/* Both resources are held for the adaptor's life, whoever else lets go. */
START_TEST(test_holds_both_resources_while_it_lives) {
  test_foreign primary = {0};
  test_foreign fallback = {.limit = 0};
  cmr_fallback_resource *handle = NULL;
  ck_assert_ok(cmr_fallback_resource_create(test_foreign_ref(&primary, &test_foreign_counted_ops),
                                            test_foreign_ref(&fallback, &test_foreign_counted_ops), &handle));
  ck_assert_int_eq(primary.retains, 1);
  ck_assert_int_eq(fallback.retains, 1);
  ck_assert_int_eq(fallback.releases, 0);
  ck_assert_ok(cmr_fallback_resource_destroy(handle));
  ck_assert_int_eq(primary.releases, 1);
  ck_assert_int_eq(fallback.releases, 1);

  /* A cmr fallback resource outlives the caller's share of it. */
  cmr_limiting_resource *small = NULL;
  cmr_statistics_resource *counted = NULL;
  cmr_system_resource *system = cmr_test_system_resource();
  ck_assert_ok(cmr_limiting_resource_create(cmr_system_resource_ref(system), 256, CMR_SIZE_DEFAULT, &small));
  ck_assert_ok(cmr_statistics_resource_create(cmr_system_resource_ref(system), &counted));
  ck_assert_ok(
      cmr_fallback_resource_create(cmr_limiting_resource_ref(small), cmr_statistics_resource_ref(counted), &handle));
  cmr_test_destroy(counted, small, system);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_fallback_resource_ref(handle), 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_uint_eq(counter(cmr_fallback_resource_fallback_bytes, handle), 4096);
  ck_assert_ok(cmr_deallocate(cmr_fallback_resource_ref(handle), ptr, 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_fallback_resource_destroy(handle));
}
END_TEST

/* Destroyed with a block outstanding: the record goes, the memory stays the
 * fallback's, which still takes it back. */
START_TEST(test_destroyed_with_blocks_out_leaves_them_to_their_resource) {
  test_foreign primary = {.limit = 256};
  test_foreign fallback = {0};
  cmr_fallback_resource *handle = make(&primary, &fallback);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_fallback_resource_ref(handle), 1000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_fallback_resource_destroy(handle));
  ck_assert_uint_eq(fallback.outstanding, 1000);
  ck_assert_ok(cmr_deallocate(test_foreign_ref(&fallback, &test_foreign_ops), ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(fallback.outstanding, 0);
}
END_TEST

/* The fallback is a child of the adaptor for the cycle check: a binning
 * resource cannot take as a bin an adaptor that falls back to it. */
START_TEST(test_a_cycle_through_the_fallback_is_refused) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_binning_resource *binning = NULL;
  ck_assert_ok(
      cmr_binning_resource_create(cmr_system_resource_ref(system), CMR_INT_DEFAULT, CMR_INT_DEFAULT, &binning));
  cmr_fallback_resource *handle = NULL;
  ck_assert_ok(
      cmr_fallback_resource_create(cmr_system_resource_ref(system), cmr_binning_resource_ref(binning), &handle));
  ck_assert_status(cmr_binning_resource_add_bin_resource(binning, 1024, cmr_fallback_resource_ref(handle)),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("would then allocate from itself");
  cmr_test_destroy(handle, binning, system);
}
END_TEST

START_TEST(test_written_as_text_with_the_fallback_second) {
  cmr_resource_ref top;
  cmr_stack *stack = cmr_test_stack("fallback(limiting(system, allocation_limit=4096), statistics(system))", &top);
  ck_assert_str_eq(cmr_test_expression(stack),
                   "fallback(limiting(system, allocation_limit=4096, allocation_alignment=256), statistics(system))");
  cmr_fallback_resource *handle = NULL;
  ck_assert_ok(cmr_fallback_resource_from_ref(top, &handle));
  void *a = NULL, *b = NULL;
  ck_assert_ok(cmr_allocate(top, 4096, CMR_DEFAULT_STREAM, &a));
  ck_assert_ok(cmr_allocate(top, 4096, CMR_DEFAULT_STREAM, &b));
  ck_assert_uint_eq(counter(cmr_fallback_resource_fallback_allocations, handle), 1);
  ck_assert_ok(cmr_deallocate(top, a, 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(top, b, 4096, CMR_DEFAULT_STREAM));
  cmr_test_destroy(handle, stack);

  /* Named, in either order; a third resource has no parameter to go to. */
  ck_assert_ok(cmr_stack_destroy(cmr_test_stack("fallback(fallback=system, upstream=system)", NULL)));
  ck_assert_status(cmr_stack_parse("fallback(system, system, system)", &stack), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("fallback: upstream is given twice");
  ck_assert_status(cmr_stack_parse("fallback(system)", &stack), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("fallback needs fallback=...");
}
END_TEST

/* ---- threads: every block goes back to the resource that served it ---------------- */

enum { thread_count = 4, rounds = 500, block = 4096 };

typedef struct worker {
  cmr_resource_ref ref;
  bool ok;
} worker;

static void *churn(void *arg) {
  worker *w = arg;
  void *held[8] = {0};
  w->ok = true;
  for (int i = 0; i < rounds && w->ok; ++i) {
    for (int j = 0; j < 8 && w->ok; ++j)
      w->ok = cmr_allocate(w->ref, block, CMR_DEFAULT_STREAM, &held[j]) == CMR_SUCCESS;
    for (int j = 0; j < 8; ++j) {
      if (held[j] != NULL && cmr_deallocate(w->ref, held[j], block, CMR_DEFAULT_STREAM) != CMR_SUCCESS) w->ok = false;
      held[j] = NULL;
    }
  }
  return NULL;
}

START_TEST(test_threads_free_into_whichever_served) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_limiting_resource *primary = NULL;
  cmr_statistics_resource *fallback = NULL;
  /* Room for half of what the threads hold at once. */
  ck_assert_ok(cmr_limiting_resource_create(cmr_system_resource_ref(system), thread_count * 4 * block, CMR_SIZE_DEFAULT,
                                            &primary));
  ck_assert_ok(cmr_statistics_resource_create(cmr_system_resource_ref(system), &fallback));
  cmr_fallback_resource *handle = NULL;
  ck_assert_ok(
      cmr_fallback_resource_create(cmr_limiting_resource_ref(primary), cmr_statistics_resource_ref(fallback), &handle));
  pthread_t threads[thread_count];
  worker workers[thread_count];
  for (int t = 0; t < thread_count; ++t) {
    workers[t] = (worker){cmr_fallback_resource_ref(handle), false};
    ck_assert_int_eq(pthread_create(&threads[t], NULL, churn, &workers[t]), 0);
  }
  for (int t = 0; t < thread_count; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < thread_count; ++t) ck_assert_msg(workers[t].ok, "thread %d failed", t);
  size_t value = SIZE_MAX;
  ck_assert_ok(cmr_limiting_resource_allocated_bytes(primary, &value));
  ck_assert_uint_eq(value, 0);
  ck_assert_ok(cmr_statistics_resource_bytes_current(fallback, &value));
  ck_assert_uint_eq(value, 0);
  size_t served = 0;
  ck_assert_ok(cmr_statistics_resource_allocations_total(fallback, &served));
  expect_fallback_counts(handle, served, 0);
  cmr_test_destroy(handle, fallback, primary, system);
}
END_TEST

static void fallback_cases(Suite *suite) {
  cmr_test_case(suite, "routing", NULL, NULL, test_out_of_memory_goes_to_the_fallback_and_frees_go_back,
                test_another_failure_is_returned_without_the_fallback,
                test_both_out_of_memory_fails_with_the_fallbacks_refusal,
                test_refuses_what_it_did_not_hand_out_and_a_wrong_size);
  cmr_test_case(suite, "resource", NULL, NULL, test_properties_are_what_both_have,
                test_holds_both_resources_while_it_lives, test_destroyed_with_blocks_out_leaves_them_to_their_resource,
                test_a_cycle_through_the_fallback_is_refused, test_written_as_text_with_the_fallback_second);
  cmr_test_case(suite, "threads", NULL, NULL, test_threads_free_into_whichever_served);
}

int main(void) { return cmr_test_main_suite("fallback", CMR_TEST_ANY_MACHINE, fallback_cases); }
