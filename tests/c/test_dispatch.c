/* SPDX-License-Identifier: Apache-2.0 */
/* The dispatch functions: every bad input, through a generated resource
 * (system) and through a foreign ops table, and the checks dispatch makes on
 * what a resource returns. */
#include <stdint.h>
#include <stdio.h>

#include "test_util.h"

/* The loop index of the "both resources" cases. */
enum { SUBJECT_SYSTEM, SUBJECT_FOREIGN, SUBJECT_COUNT };

static cmr_system_resource *system_resource;
static test_foreign foreign;

static void setup(void) {
  system_resource = cmr_test_system_resource();
  foreign = (test_foreign){.properties = CMR_PROPERTY_HOST_ACCESSIBLE};
}

static void teardown(void) { ck_assert_ok(cmr_system_resource_destroy(system_resource)); }

static cmr_resource_ref subject(int which) {
  return which == SUBJECT_SYSTEM ? cmr_system_resource_ref(system_resource)
                                 : test_foreign_ref(&foreign, &test_foreign_ops);
}

static cmr_resource_ref foreign_ref(void) { return test_foreign_ref(&foreign, &test_foreign_ops); }

static bool is_aligned(const void *ptr, size_t alignment) { return ((uintptr_t)ptr & (alignment - 1)) == 0; }

/* ---- valid use --------------------------------------------------------------------- */

START_TEST(allocate_and_deallocate_round_trip) {
  cmr_resource_ref ref = subject(_i);
  static const size_t alignments[] = {1, 8, 256, 512, 4096, 65536};
  for (size_t a = 0; a < sizeof alignments / sizeof *alignments; a++) {
    void *ptr = NULL;
    ck_assert_ok(cmr_allocate_aligned(ref, 1000, alignments[a], CMR_DEFAULT_STREAM, &ptr));
    ck_assert_ptr_nonnull(ptr);
    ck_assert_msg(is_aligned(ptr, alignments[a] < 256 ? 256 : alignments[a]), "%p for alignment %zu", ptr,
                  alignments[a]);
    memset(ptr, 0xab, 1000);
    ck_assert_ok(cmr_deallocate_aligned(ref, ptr, 1000, alignments[a], CMR_DEFAULT_STREAM));
  }
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1, CMR_DEFAULT_STREAM, &ptr));
  ck_assert(is_aligned(ptr, CMR_DEFAULT_ALIGNMENT));
  ck_assert_ok(cmr_deallocate(ref, ptr, 1, CMR_DEFAULT_STREAM));
}
END_TEST

START_TEST(small_alignments_reach_the_resource_as_the_default) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_aligned(foreign_ref(), 10, 8, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_uint_eq(foreign.last_alignment, CMR_DEFAULT_ALIGNMENT);
  ck_assert_uint_eq(foreign.last_bytes, 10);
  ck_assert_ok(cmr_deallocate_aligned(foreign_ref(), ptr, 10, 8, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(foreign.last_alignment, CMR_DEFAULT_ALIGNMENT);
  ck_assert_ptr_eq(foreign.last_freed, ptr);
}
END_TEST

START_TEST(large_alignments_reach_the_resource_unchanged) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_aligned(foreign_ref(), 10, 8192, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_uint_eq(foreign.last_alignment, 8192);
  ck_assert(is_aligned(ptr, 8192));
  ck_assert_ok(cmr_deallocate_aligned(foreign_ref(), ptr, 10, 8192, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(foreign.last_alignment, 8192);
}
END_TEST

START_TEST(the_stream_reaches_the_resource) {
  cmr_stream stream = NULL;
  ck_assert_ok(cmr_stream_create(&stream));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(foreign_ref(), 10, stream, &ptr));
  ck_assert_ptr_eq(foreign.last_stream, stream);
  foreign.last_stream = NULL;
  ck_assert_ok(cmr_deallocate(foreign_ref(), ptr, 10, stream));
  ck_assert_ptr_eq(foreign.last_stream, stream);
  ck_assert_ok(cmr_stream_destroy(stream));
}
END_TEST

/* ---- NULL out-parameters ------------------------------------------------------------- */

START_TEST(null_out_parameters) {
  cmr_resource_ref ref = subject(_i);
  ck_assert_status(cmr_allocate(ref, 16, CMR_DEFAULT_STREAM, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("cmr_allocate");
  ck_assert_status(cmr_allocate_aligned(ref, 16, 256, CMR_DEFAULT_STREAM, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_allocate_sync(ref, 16, 256, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_ref_equal(ref, ref, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_ref_properties(ref, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_ref_type_name(ref, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_int_eq(foreign.allocations, 0);
}
END_TEST

/* ---- refs that are not live -------------------------------------------------------------- */

/* Every entry point that takes a ref answers `expected` for `ref`, sets its
 * out-parameter to the empty value and names itself. */
static void assert_every_call_rejects(cmr_resource_ref ref, cmr_status expected) {
  void *ptr = (void *)&ptr;
  ck_assert_status(cmr_allocate(ref, 16, CMR_DEFAULT_STREAM, &ptr), expected);
  ck_assert_ptr_null(ptr);
  ck_assert_message_has("cmr_allocate: ");
  ptr = (void *)&ptr;
  ck_assert_status(cmr_allocate_aligned(ref, 16, 512, CMR_DEFAULT_STREAM, &ptr), expected);
  ck_assert_ptr_null(ptr);
  ck_assert_message_has("cmr_allocate_aligned: ");
  ptr = (void *)&ptr;
  ck_assert_status(cmr_allocate_sync(ref, 16, 512, &ptr), expected);
  ck_assert_ptr_null(ptr);
  ck_assert_status(cmr_allocate(ref, 0, CMR_DEFAULT_STREAM, &ptr), expected);
  ck_assert_status(cmr_deallocate(ref, &ptr, 16, CMR_DEFAULT_STREAM), expected);
  ck_assert_message_has("cmr_deallocate: ");
  ck_assert_status(cmr_deallocate(ref, NULL, 16, CMR_DEFAULT_STREAM), expected);
  ck_assert_status(cmr_deallocate_aligned(ref, &ptr, 16, 512, CMR_DEFAULT_STREAM), expected);
  ck_assert_status(cmr_deallocate_sync(ref, &ptr, 16, 512), expected);
  ck_assert_message_has("cmr_deallocate_sync: ");

  bool equal = true;
  ck_assert_status(cmr_ref_equal(ref, foreign_ref(), &equal), expected);
  ck_assert(!equal);
  equal = true;
  ck_assert_status(cmr_ref_equal(foreign_ref(), ref, &equal), expected);
  ck_assert(!equal);
  unsigned properties = 7;
  ck_assert_status(cmr_ref_properties(ref, &properties), expected);
  ck_assert_uint_eq(properties, 0);
  ck_assert_status(cmr_ref_require_properties(ref, 0), expected);
  ck_assert_message_has("cmr_ref_require_properties: ");
  const char *name = "x";
  ck_assert_status(cmr_ref_type_name(ref, &name), expected);
  ck_assert_ptr_null(name);
  ck_assert_status(cmr_ref_retain(ref), expected);
  ck_assert_message_has("cmr_ref_retain: ");
  ck_assert_status(cmr_ref_release(ref), expected);
  ck_assert_message_has("cmr_ref_release: ");
  ck_assert_status(cmr_ref_validate(ref), expected);
  ck_assert_message_has("cmr_ref_validate: ");
}

START_TEST(a_zeroed_ref_is_invalid) {
  assert_every_call_rejects((cmr_resource_ref){0}, CMR_ERROR_INVALID_REF);
  ck_assert_message_has("no ops table");
  assert_every_call_rejects((cmr_resource_ref){.self = &foreign}, CMR_ERROR_INVALID_REF);
  ck_assert_int_eq(foreign.allocations + foreign.deallocations, 0);
}
END_TEST

START_TEST(the_ref_of_a_null_handle_is_invalid) {
  assert_every_call_rejects(cmr_system_resource_ref(NULL), CMR_ERROR_INVALID_REF);
}
END_TEST

START_TEST(a_counted_ref_with_a_null_self_is_invalid) {
  cmr_resource_ref ref = cmr_system_resource_ref(system_resource);
  ref.self = NULL;
  assert_every_call_rejects(ref, CMR_ERROR_INVALID_REF);
  ck_assert_message_has("NULL handle");
}
END_TEST

START_TEST(an_ops_table_without_allocate_or_deallocate_is_invalid) {
  cmr_resource_ops no_allocate = test_foreign_ops;
  no_allocate.allocate = NULL;
  assert_every_call_rejects(test_foreign_ref(&foreign, &no_allocate), CMR_ERROR_INVALID_REF);
  ck_assert_message_has("no allocate function");
  cmr_resource_ops no_deallocate = test_foreign_ops;
  no_deallocate.deallocate = NULL;
  assert_every_call_rejects(test_foreign_ref(&foreign, &no_deallocate), CMR_ERROR_INVALID_REF);
  ck_assert_message_has("no deallocate function");
}
END_TEST

START_TEST(a_destroyed_handle_is_reported) {
  cmr_system_resource *gone = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(gone);
  ck_assert_ok(cmr_ref_validate(ref));
  ck_assert_ok(cmr_system_resource_destroy(gone));
  assert_every_call_rejects(ref, CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_message_has("was already destroyed");
  ck_assert_status(cmr_system_resource_destroy(gone), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_message_has("cmr_system_resource_destroy: ");
}
END_TEST

/* ---- alignment ---------------------------------------------------------------------------- */

START_TEST(zero_and_non_power_of_two_alignments) {
  cmr_resource_ref ref = subject(_i);
  static const size_t bad[] = {0, 3, 48, 257, 1000, SIZE_MAX};
  for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
    char expected[128];
    snprintf(expected, sizeof expected, "alignment %zu is not a power of two", bad[b]);
    void *ptr = (void *)&ptr;
    ck_assert_status(cmr_allocate_aligned(ref, 64, bad[b], CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_BAD_ALIGNMENT);
    ck_assert_ptr_null(ptr);
    ck_assert_message_has(expected);
    ck_assert_status(cmr_allocate_aligned(ref, 0, bad[b], CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_BAD_ALIGNMENT);
    ck_assert_status(cmr_allocate_sync(ref, 64, bad[b], &ptr), CMR_ERROR_BAD_ALIGNMENT);
    ck_assert_message_has("cmr_allocate_sync: ");
    ck_assert_status(cmr_deallocate_aligned(ref, &ptr, 64, bad[b], CMR_DEFAULT_STREAM), CMR_ERROR_BAD_ALIGNMENT);
    ck_assert_message_has(expected);
    ck_assert_status(cmr_deallocate_aligned(ref, NULL, 64, bad[b], CMR_DEFAULT_STREAM), CMR_ERROR_BAD_ALIGNMENT);
    ck_assert_status(cmr_deallocate_sync(ref, &ptr, 64, bad[b]), CMR_ERROR_BAD_ALIGNMENT);
  }
  ck_assert_int_eq(foreign.allocations + foreign.deallocations, 0);
}
END_TEST

START_TEST(the_exact_alignment_message) {
  void *ptr = NULL;
  ck_assert_status(cmr_allocate_aligned(subject(_i), 64, 48, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_BAD_ALIGNMENT);
  ck_assert_str_eq(cmr_last_error_message(), "cmr_allocate_aligned: alignment 48 is not a power of two");
}
END_TEST

/* ---- sizes --------------------------------------------------------------------------------- */

START_TEST(sizes_that_overflow_once_aligned) {
  cmr_resource_ref ref = subject(_i);
  void *ptr = (void *)&ptr;
  ck_assert_status(cmr_allocate(ref, SIZE_MAX, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_ptr_null(ptr);
  char expected[64];
  snprintf(expected, sizeof expected, "%zu bytes", (size_t)SIZE_MAX);
  ck_assert_message_has(expected);
  ck_assert_status(cmr_allocate_aligned(ref, SIZE_MAX - 100, 4096, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_message_has("alignment 4096");
  ck_assert_status(cmr_allocate_aligned(ref, SIZE_MAX - 254, 1, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_SIZE_OVERFLOW); /* rounded to 256, not to 1 */
  ck_assert_status(cmr_allocate_sync(ref, SIZE_MAX, 256, &ptr), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_status(cmr_deallocate(ref, &ptr, SIZE_MAX, CMR_DEFAULT_STREAM), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_status(cmr_deallocate_sync(ref, &ptr, SIZE_MAX - 100, 4096), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_int_eq(foreign.allocations + foreign.deallocations, 0);
}
END_TEST

START_TEST(the_largest_size_that_rounds_reaches_the_resource) {
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(foreign_ref(), SIZE_MAX - 255, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(foreign.allocations, 1);
  ck_assert_uint_eq(foreign.last_bytes, SIZE_MAX - 255);
}
END_TEST

START_TEST(zero_bytes_allocate_nothing) {
  cmr_resource_ref ref = subject(_i);
  void *ptr = (void *)&ptr;
  ck_assert_ok(cmr_allocate(ref, 0, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_null(ptr);
  ptr = (void *)&ptr;
  ck_assert_ok(cmr_allocate_aligned(ref, 0, 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_null(ptr);
  ptr = (void *)&ptr;
  ck_assert_ok(cmr_allocate_sync(ref, 0, 256, &ptr));
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(foreign.allocations, 0);
}
END_TEST

START_TEST(freeing_null_does_nothing) {
  cmr_resource_ref ref = subject(_i);
  ck_assert_ok(cmr_deallocate(ref, NULL, 16, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(ref, NULL, 0, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate_aligned(ref, NULL, 16, 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate_sync(ref, NULL, 16, 256));
  ck_assert_int_eq(foreign.deallocations, 0);
}
END_TEST

START_TEST(freeing_a_pointer_of_zero_bytes_is_an_error) {
  cmr_resource_ref ref = subject(_i);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 16, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_status(cmr_deallocate(ref, ptr, 0, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("0 bytes");
  ck_assert_status(cmr_deallocate_sync(ref, ptr, 0, 256), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(foreign.deallocations, 0);
  ck_assert_ok(cmr_deallocate(ref, ptr, 16, CMR_DEFAULT_STREAM));
}
END_TEST

/* ---- what a resource returns --------------------------------------------------------------- */

START_TEST(a_misaligned_pointer_is_given_back) {
  foreign.misalign = 16;
  void *ptr = (void *)&ptr;
  ck_assert_status(cmr_allocate(foreign_ref(), 100, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_ptr_null(ptr);
  ck_assert_message_has("resource foreign returned a pointer aligned to only 16 bytes");
  ck_assert_int_eq(foreign.allocations, 1);
  ck_assert_int_eq(foreign.deallocations, 1);
  ck_assert_uint_eq(foreign.last_bytes, 100);
  ck_assert_uint_eq(foreign.last_alignment, 256);
  ck_assert_uint_eq((uintptr_t)foreign.last_freed & 255, 16);
}
END_TEST

START_TEST(a_pointer_aligned_below_the_request_is_given_back) {
  foreign.misalign = 1024; /* aligned to 1024, asked for 4096 */
  void *ptr = NULL;
  ck_assert_status(cmr_allocate_aligned(foreign_ref(), 100, 4096, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_message_has("aligned to only 1024 bytes");
  ck_assert_int_eq(foreign.deallocations, 1);
}
END_TEST

START_TEST(a_misaligned_pointer_from_allocate_sync_is_given_back_sync) {
  foreign.misalign = 32;
  void *ptr = NULL;
  ck_assert_status(cmr_allocate_sync(test_foreign_ref(&foreign, &test_foreign_sync_ops), 100, 256, &ptr),
                   CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(foreign.sync_allocations, 1);
  ck_assert_int_eq(foreign.sync_deallocations, 1);
  ck_assert_message_has("aligned to only 32 bytes");
}
END_TEST

START_TEST(a_null_pointer_for_bytes_is_an_internal_error) {
  foreign.return_null = true;
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(foreign_ref(), 100, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_INTERNAL);
  ck_assert_message_has("returned NULL for 100 bytes");
}
END_TEST

START_TEST(a_resource_failure_is_passed_on) {
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  void *ptr = (void *)&ptr;
  ck_assert_status(cmr_allocate(foreign_ref(), 100, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ptr_null(ptr);
  ck_assert_message_has("foreign");
  ck_assert_status(cmr_allocate_sync(foreign_ref(), 100, 256, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("cmr_allocate_sync: ");
}
END_TEST

/* ---- properties, equality, names ---------------------------------------------------------- */

START_TEST(properties_are_read_through_the_ref) {
  unsigned properties = 0;
  ck_assert_ok(cmr_ref_properties(foreign_ref(), &properties));
  ck_assert_uint_eq(properties, CMR_PROPERTY_HOST_ACCESSIBLE);
  ck_assert_ok(cmr_ref_properties(cmr_system_resource_ref(system_resource), &properties));
  ck_assert(properties & CMR_PROPERTY_HOST_ACCESSIBLE);
  if (!cmr_built_with_cuda()) {
    ck_assert_uint_eq(properties, CMR_PROPERTY_HOST_ACCESSIBLE | CMR_PROPERTY_DEVICE_ACCESSIBLE);
  }
  cmr_resource_ops no_properties = test_foreign_ops;
  no_properties.properties = NULL;
  ck_assert_ok(cmr_ref_properties(test_foreign_ref(&foreign, &no_properties), &properties));
  ck_assert_uint_eq(properties, 0);
}
END_TEST

START_TEST(require_properties_names_the_missing_ones) {
  foreign.properties = 0;
  ck_assert_ok(cmr_ref_require_properties(foreign_ref(), 0));
  ck_assert_status(cmr_ref_require_properties(foreign_ref(), CMR_PROPERTY_DEVICE_ACCESSIBLE),
                   CMR_ERROR_PROPERTY_MISSING);
  ck_assert_message_has("device_accessible");
  ck_assert_message_has("foreign");
  ck_assert_msg(strstr(cmr_last_error_message(), "host_accessible") == NULL, "%s", cmr_last_error_message());
  ck_assert_status(
      cmr_ref_require_properties(foreign_ref(), CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE),
      CMR_ERROR_PROPERTY_MISSING);
  ck_assert_message_has("device_accessible");
  ck_assert_message_has("host_accessible");

  foreign.properties = CMR_PROPERTY_HOST_ACCESSIBLE;
  ck_assert_ok(cmr_ref_require_properties(foreign_ref(), CMR_PROPERTY_HOST_ACCESSIBLE));
  ck_assert_status(
      cmr_ref_require_properties(foreign_ref(), CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE),
      CMR_ERROR_PROPERTY_MISSING);
  ck_assert_msg(strstr(cmr_last_error_message(), "host_accessible") == NULL, "%s", cmr_last_error_message());
  ck_assert_ok(cmr_ref_require_properties(cmr_system_resource_ref(system_resource), CMR_PROPERTY_HOST_ACCESSIBLE));
}
END_TEST

START_TEST(require_properties_rejects_unknown_bits) {
  ck_assert_status(cmr_ref_require_properties(subject(_i), 0x4), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("0x4");
}
END_TEST

START_TEST(ref_equal) {
  bool equal = false;
  cmr_resource_ref system_ref = cmr_system_resource_ref(system_resource);
  ck_assert_ok(cmr_ref_equal(system_ref, system_ref, &equal));
  ck_assert(equal);
  ck_assert_ok(cmr_ref_equal(foreign_ref(), foreign_ref(), &equal));
  ck_assert(equal);
  ck_assert_ok(cmr_ref_equal(system_ref, foreign_ref(), &equal));
  ck_assert(!equal);
  ck_assert_ok(cmr_ref_equal(foreign_ref(), system_ref, &equal));
  ck_assert(!equal);

  /* System resources are interchangeable (equality by type). */
  cmr_system_resource *other_system = cmr_test_system_resource();
  ck_assert_ok(cmr_ref_equal(system_ref, cmr_system_resource_ref(other_system), &equal));
  ck_assert(equal);
  ck_assert_ok(cmr_system_resource_destroy(other_system));

  /* Different ops tables: the resource's is_equal decides. */
  ck_assert_ok(cmr_ref_equal(foreign_ref(), test_foreign_ref(&foreign, &test_foreign_sync_ops), &equal));
  ck_assert(equal);
  test_foreign other = {0};
  ck_assert_ok(cmr_ref_equal(foreign_ref(), test_foreign_ref(&other, &test_foreign_ops), &equal));
  ck_assert(!equal);

  /* Without is_equal only the identical ref is equal. */
  cmr_resource_ops no_is_equal = test_foreign_ops;
  no_is_equal.is_equal = NULL;
  cmr_resource_ref plain = test_foreign_ref(&foreign, &no_is_equal);
  ck_assert_ok(cmr_ref_equal(plain, plain, &equal));
  ck_assert(equal);
  ck_assert_ok(cmr_ref_equal(plain, foreign_ref(), &equal));
  ck_assert(!equal);
}
END_TEST

START_TEST(type_names) {
  const char *name = NULL;
  ck_assert_ok(cmr_ref_type_name(cmr_system_resource_ref(system_resource), &name));
  ck_assert_str_eq(name, "system");
  ck_assert_ok(cmr_ref_type_name(foreign_ref(), &name));
  ck_assert_str_eq(name, "foreign");
  cmr_resource_ops unnamed = test_foreign_ops;
  unnamed.type_name = NULL;
  ck_assert_ok(cmr_ref_type_name(test_foreign_ref(&foreign, &unnamed), &name));
  ck_assert_ptr_nonnull(name);
}
END_TEST

/* ---- the synchronous pair ----------------------------------------------------------------- */

START_TEST(sync_pair_round_trip) {
  cmr_resource_ref ref = subject(_i);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_sync(ref, 3000, 1024, &ptr));
  ck_assert_ptr_nonnull(ptr);
  ck_assert(is_aligned(ptr, 1024));
  memset(ptr, 1, 3000);
  ck_assert_ok(cmr_deallocate_sync(ref, ptr, 3000, 1024));
}
END_TEST

START_TEST(sync_pair_uses_the_resource_sync_functions) {
  cmr_resource_ref ref = test_foreign_ref(&foreign, &test_foreign_sync_ops);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_sync(ref, 64, 8, &ptr));
  ck_assert_int_eq(foreign.sync_allocations, 1);
  ck_assert_uint_eq(foreign.last_alignment, 256);
  ck_assert_ok(cmr_deallocate_sync(ref, ptr, 64, 8));
  ck_assert_int_eq(foreign.sync_deallocations, 1);
  ck_assert_ptr_eq(foreign.last_freed, ptr);
}
END_TEST

START_TEST(sync_pair_falls_back_to_the_default_stream) {
  foreign.last_stream = (cmr_stream)&foreign;
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_sync(foreign_ref(), 64, 256, &ptr));
  ck_assert_int_eq(foreign.allocations, 1);
  ck_assert_int_eq(foreign.sync_allocations, 0);
  ck_assert_ptr_eq(foreign.last_stream, CMR_DEFAULT_STREAM);
  foreign.last_stream = (cmr_stream)&foreign;
  ck_assert_ok(cmr_deallocate_sync(foreign_ref(), ptr, 64, 256));
  ck_assert_int_eq(foreign.deallocations, 1);
  ck_assert_ptr_eq(foreign.last_stream, CMR_DEFAULT_STREAM);
}
END_TEST

/* ---- retain / release / validate ------------------------------------------------------------ */

START_TEST(retain_and_release_reach_the_resource) {
  cmr_resource_ref counted = test_foreign_ref(&foreign, &test_foreign_counted_ops);
  ck_assert_ok(cmr_ref_retain(counted));
  ck_assert_ok(cmr_ref_retain(counted));
  ck_assert_ok(cmr_ref_release(counted));
  ck_assert_int_eq(foreign.retains, 2);
  ck_assert_int_eq(foreign.releases, 1);
  /* Without retain/release they are no-ops that still succeed. */
  ck_assert_ok(cmr_ref_retain(foreign_ref()));
  ck_assert_ok(cmr_ref_release(foreign_ref()));
  ck_assert_ok(cmr_ref_validate(foreign_ref()));
  ck_assert_ok(cmr_ref_validate(cmr_system_resource_ref(system_resource)));
}
END_TEST

static void dispatch_cases(Suite *suite) {
  struct {
    const char *name;
    const TTest *test;
    bool both; /* run for the system and the foreign resource */
  } cases[] = {
      {"round_trip", allocate_and_deallocate_round_trip, true},
      {"alignment", small_alignments_reach_the_resource_as_the_default, false},
      {"alignment", large_alignments_reach_the_resource_unchanged, false},
      {"stream", the_stream_reaches_the_resource, false},
      {"null_out", null_out_parameters, true},
      {"dead_refs", a_zeroed_ref_is_invalid, false},
      {"dead_refs", the_ref_of_a_null_handle_is_invalid, false},
      {"dead_refs", a_counted_ref_with_a_null_self_is_invalid, false},
      {"dead_refs", an_ops_table_without_allocate_or_deallocate_is_invalid, false},
      {"dead_refs", a_destroyed_handle_is_reported, false},
      {"bad_alignment", zero_and_non_power_of_two_alignments, true},
      {"bad_alignment", the_exact_alignment_message, true},
      {"sizes", sizes_that_overflow_once_aligned, true},
      {"sizes", the_largest_size_that_rounds_reaches_the_resource, false},
      {"sizes", zero_bytes_allocate_nothing, true},
      {"sizes", freeing_null_does_nothing, true},
      {"sizes", freeing_a_pointer_of_zero_bytes_is_an_error, true},
      {"returned", a_misaligned_pointer_is_given_back, false},
      {"returned", a_pointer_aligned_below_the_request_is_given_back, false},
      {"returned", a_misaligned_pointer_from_allocate_sync_is_given_back_sync, false},
      {"returned", a_null_pointer_for_bytes_is_an_internal_error, false},
      {"returned", a_resource_failure_is_passed_on, false},
      {"queries", properties_are_read_through_the_ref, false},
      {"queries", require_properties_names_the_missing_ones, false},
      {"queries", require_properties_rejects_unknown_bits, true},
      {"queries", ref_equal, false},
      {"queries", type_names, false},
      {"sync", sync_pair_round_trip, true},
      {"sync", sync_pair_uses_the_resource_sync_functions, false},
      {"sync", sync_pair_falls_back_to_the_default_stream, false},
      {"lifetime", retain_and_release_reach_the_resource, false},
  };
  TCase *tcase = NULL;
  const char *current = NULL;
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    if (current == NULL || strcmp(current, cases[c].name) != 0) {
      current = cases[c].name;
      tcase = tcase_create(current);
      tcase_add_checked_fixture(tcase, setup, teardown);
      suite_add_tcase(suite, tcase);
    }
    tcase_add_loop_test(tcase, cases[c].test, 0, cases[c].both ? SUBJECT_COUNT : 1);
  }
}

int main(void) { return cmr_test_main_suite("dispatch", CMR_TEST_NEEDS_DEVICE, dispatch_cases); }
