/* SPDX-License-Identifier: Apache-2.0 */
/* The prefetch adaptor where no memory is managed (the host build, or a
 * device upstream): every call passes through unchanged, out of memory
 * included, and the retained upstream outlives its handle. */
#include <stdlib.h>

#include "test_adaptor.h"

static test_foreign foreign;
static cmr_prefetch_resource *adaptor;

static cmr_resource_ref adapted(void) { return cmr_prefetch_resource_ref(adaptor); }

static void setup(void) {
  foreign = (test_foreign){.properties = CMR_PROPERTY_HOST_ACCESSIBLE, .limit = 4096};
  ck_assert_ok(cmr_prefetch_resource_create(test_foreign_ref(&foreign, &test_foreign_ops), &adaptor));
}

static void teardown(void) { ck_assert_ok(cmr_prefetch_resource_destroy(adaptor)); }

/* The default stream: prefetch asks the driver whether the stream is
 * capturing, which a made-up stream would crash where there is a device. */
START_TEST(passes_everything_through) { test_adaptor_forwards(adapted(), &foreign, CMR_DEFAULT_STREAM); }
END_TEST

START_TEST(out_of_memory_passes_through) {
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(adapted(), 8192, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_str_eq(cmr_last_error_message(),
                   "cmr_allocate_aligned: resource foreign failed with CMR_ERROR_OUT_OF_MEMORY for 8192 bytes");
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(foreign.allocations, 1);
  ck_assert_int_eq(foreign.deallocations, 0);
}
END_TEST

/* max_alignment = "upstream". */
START_TEST(larger_alignments_go_to_the_upstream) { test_adaptor_passes_alignment_up(adapted(), &foreign); }
END_TEST

static cmr_status make_over(cmr_resource_ref upstream, cmr_resource_ref *out) {
  cmr_prefetch_resource *handle = NULL;
  cmr_status status = cmr_prefetch_resource_create(upstream, &handle);
  *out = cmr_prefetch_resource_ref(handle);
  return status;
}

START_TEST(keeps_its_upstream_alive) { ck_assert_ok(cmr_ref_release(test_adaptor_over_released_system(make_over))); }
END_TEST

START_TEST(bad_arguments) {
  cmr_prefetch_resource *none = (void *)1;
  ck_assert_status(cmr_prefetch_resource_create((cmr_resource_ref){0}, &none), CMR_ERROR_INVALID_REF);
  ck_assert_ptr_null(none);
  ck_assert_status(cmr_prefetch_resource_create(test_foreign_ref(&foreign, &test_foreign_ops), NULL),
                   CMR_ERROR_NULL_POINTER);
}
END_TEST

static void prefetch_cases(Suite *suite) {
  cmr_test_case(suite, "basics", setup, teardown, passes_everything_through, out_of_memory_passes_through,
                larger_alignments_go_to_the_upstream, bad_arguments);
  cmr_test_case(suite, "lifetime", NULL, NULL, keeps_its_upstream_alive);
}

/* The suite needs a device: the CUDA build asks the driver about every pointer. */
int main(void) { return cmr_test_main_suite("prefetch", CMR_TEST_NEEDS_DEVICE, prefetch_cases); }
