/* SPDX-License-Identifier: Apache-2.0 */
/* binning beyond the battery: which route serves a request (seen through
 * counting resources as bins and upstream), the bins the exponents make,
 * argument checks, add_bin's keep and add_bin_resource's replace semantics
 * and their refusals, and bins held past their owners' destroy. Threads at
 * once: suballocators.threads (test_suballocators.c). */
#include <stdint.h>

#include "test_counting.h"

#define BOTH_PROPERTIES (CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE)

static test_counting upstream, small_bin, large_bin;

static void setup(void) {
  test_counting_init(&upstream, BOTH_PROPERTIES);
  test_counting_init(&small_bin, BOTH_PROPERTIES);
  test_counting_init(&large_bin, BOTH_PROPERTIES);
}

static void teardown(void) {
  test_counting_destroy(&upstream);
  test_counting_destroy(&small_bin);
  test_counting_destroy(&large_bin);
}

static cmr_binning_resource *make(cmr_optional_int min_size_exponent, cmr_optional_int max_size_exponent) {
  cmr_binning_resource *handle = NULL;
  ck_assert_ok(
      cmr_binning_resource_create(test_counting_ref(&upstream), min_size_exponent, max_size_exponent, &handle));
  return handle;
}

static void *take(cmr_binning_resource *handle, size_t bytes) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_binning_resource_ref(handle), bytes, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_nonnull(ptr);
  return ptr;
}

static void give(cmr_binning_resource *handle, void *ptr, size_t bytes) {
  ck_assert_ok(cmr_deallocate(cmr_binning_resource_ref(handle), ptr, bytes, CMR_DEFAULT_STREAM));
}

static size_t bin_for(cmr_binning_resource *handle, size_t bytes) {
  size_t size = SIZE_MAX;
  ck_assert_ok(cmr_binning_resource_bin_size_for(handle, bytes, &size));
  return size;
}

CMR_TEST_OUT(bins_of, size_t, SIZE_MAX, cmr_binning_resource_bin_count, cmr_binning_resource *)

/* A binning resource with the counting bins at 1000 (so 1024) and 4096. */
static cmr_binning_resource *make_with_counting_bins(void) {
  cmr_binning_resource *handle = make(CMR_INT_DEFAULT, CMR_INT_DEFAULT);
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 1000, test_counting_ref(&small_bin)));
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 4096, test_counting_ref(&large_bin)));
  return handle;
}

/* ---- routing -------------------------------------------------------------------------- */

START_TEST(smallest_bin_that_fits_serves_and_frees_follow) {
  cmr_binning_resource *handle = make_with_counting_bins();
  ck_assert_uint_eq(bins_of(handle), 2);
  size_t sizes[] = {1, 1024, 1025, 4096, 4097, 100000};
  test_counting *served[] = {&small_bin, &small_bin, &large_bin, &large_bin, &upstream, &upstream};
  void *held[6];
  for (unsigned i = 0; i < 6; ++i) {
    size_t calls = atomic_load(&served[i]->allocations);
    held[i] = take(handle, sizes[i]);
    ck_assert_uint_eq(atomic_load(&served[i]->allocations), calls + 1);
    ck_assert_uint_eq(atomic_load(&served[i]->last_bytes), sizes[i]);
  }
  ck_assert_counts(&small_bin, 2, 1 + 1024);
  ck_assert_counts(&large_bin, 2, 1025 + 4096);
  ck_assert_counts(&upstream, 2, 4097 + 100000);
  for (unsigned i = 0; i < 6; ++i) give(handle, held[i], sizes[i]);
  ck_assert_counts(&small_bin, 2, 0);
  ck_assert_counts(&large_bin, 2, 0);
  ck_assert_counts(&upstream, 2, 0);
  ck_assert_uint_eq(bin_for(handle, 1), 1024);
  ck_assert_uint_eq(bin_for(handle, 1025), 4096);
  ck_assert_uint_eq(bin_for(handle, 4097), 0);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
}
END_TEST

START_TEST(without_bins_the_upstream_serves_everything) {
  cmr_binning_resource *handle = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_uint_eq(bins_of(handle), 0);
  ck_assert_counts(&upstream, 0, 0);
  void *ptr = take(handle, 300);
  ck_assert_counts(&upstream, 1, 300);
  give(handle, ptr, 300);
  ck_assert_uint_eq(bin_for(handle, 1), 0);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
}
END_TEST

START_TEST(exponents_make_one_fixed_size_bin_per_power_of_two) {
  cmr_binning_resource *handle = make(CMR_INT(10), CMR_INT(12));
  ck_assert_uint_eq(bins_of(handle), 3);
  ck_assert_counts(&upstream, 3, 128 * (1024 + 2048 + 4096)); /* each preallocates 128 blocks */
  ck_assert_uint_eq(bin_for(handle, 1), 1024);
  ck_assert_uint_eq(bin_for(handle, 1024), 1024);
  ck_assert_uint_eq(bin_for(handle, 1025), 2048);
  ck_assert_uint_eq(bin_for(handle, 4096), 4096);
  ck_assert_uint_eq(bin_for(handle, 4097), 0);
  void *binned = take(handle, 3000), *direct = take(handle, 5000);
  ck_assert_counts(&upstream, 4, 128 * (1024 + 2048 + 4096) + 5000); /* only 5000 reached it */
  char foreign[1024];
  ck_assert_status(cmr_deallocate(cmr_binning_resource_ref(handle), foreign, 1000, CMR_DEFAULT_STREAM),
                   CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("binning: the bin of 1024 bytes: ");
  give(handle, binned, 3000);
  give(handle, direct, 5000);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
  ck_assert_counts(&upstream, 4, 0);
}
END_TEST

START_TEST(bad_exponents_are_refused_each_with_its_message) {
  cmr_resource_ref ref = test_counting_ref(&upstream);
  cmr_binning_resource *handle = (cmr_binning_resource *)&handle;
  struct {
    cmr_optional_int min, max;
    const char *message;
  } cases[] = {
      {CMR_INT(10), CMR_INT(-1), "min_size_exponent 10 and max_size_exponent -1: give both, or neither (-1)"},
      {CMR_INT(-1), CMR_INT(10), "min_size_exponent -1 and max_size_exponent 10: give both, or neither (-1)"},
      {CMR_INT(10), CMR_INT_DEFAULT, "give both, or neither"},
      {CMR_INT(7), CMR_INT(10), "min_size_exponent 7 is outside [8, 40]"},
      {CMR_INT(-2), CMR_INT(10), "min_size_exponent -2 is outside [8, 40]"},
      {CMR_INT(10), CMR_INT(41), "max_size_exponent 41 is outside [8, 40]"},
      {CMR_INT(12), CMR_INT(10), "min_size_exponent 12 is larger than max_size_exponent 10"},
      /* INT32_MIN is a value like any other, not the default. */
      {CMR_INT(10), CMR_INT(INT32_MIN), "max_size_exponent -2147483648 is outside [8, 40]"},
  };
  for (unsigned i = 0; i < sizeof cases / sizeof *cases; ++i) {
    ck_assert_status(cmr_binning_resource_create(ref, cases[i].min, cases[i].max, &handle), CMR_ERROR_INVALID_ARGUMENT);
    ck_assert_message_has(cases[i].message);
    ck_assert_ptr_null(handle);
  }
  ck_assert_status(cmr_binning_resource_create((cmr_resource_ref){0}, CMR_INT(-1), CMR_INT(-1), &handle),
                   CMR_ERROR_INVALID_REF);
  ck_assert_counts(&upstream, 0, 0);
}
END_TEST

START_TEST(a_failing_bin_fails_create_and_leaks_nothing) {
  atomic_store(&upstream.successes_left, 2);
  cmr_binning_resource *handle = (cmr_binning_resource *)&handle;
  ck_assert_status(cmr_binning_resource_create(test_counting_ref(&upstream), CMR_INT(8), CMR_INT(12), &handle),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("binning: making a bin of 1024 bytes");
  ck_assert_ptr_null(handle);
  ck_assert_counts(&upstream, 2, 0);
}
END_TEST

/* ---- adding bins ----------------------------------------------------------------------------- */

START_TEST(add_bin_rejects_bad_arguments) {
  cmr_binning_resource *handle = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_status(cmr_binning_resource_add_bin(handle, 0), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("allocation_size must not be 0");
  ck_assert_status(cmr_binning_resource_add_bin(handle, SIZE_MAX), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_message_has("overflows once rounded up to 256");
  ck_assert_status(cmr_binning_resource_add_bin_resource(handle, 0, test_counting_ref(&small_bin)),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_binning_resource_add_bin_resource(handle, 1024, (cmr_resource_ref){0}), CMR_ERROR_INVALID_REF);
  ck_assert_status(cmr_binning_resource_add_bin_resource(handle, SIZE_MAX - 1, test_counting_ref(&small_bin)),
                   CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_status(cmr_binning_resource_add_bin(NULL, 1024), CMR_ERROR_NULL_POINTER);
  ck_assert_uint_eq(bins_of(handle), 0);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
}
END_TEST

static unsigned properties_of(cmr_binning_resource *handle) {
  unsigned properties = 0;
  ck_assert_ok(cmr_ref_properties(cmr_binning_resource_ref(handle), &properties));
  return properties;
}

/* As RMM allows: a bin may reach less (or more) than the upstream, or
 * share nothing with it; the resource then has what they all share. */
START_TEST(the_resource_has_what_its_upstream_and_bins_share) {
  cmr_binning_resource *handle = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_uint_eq(properties_of(handle), BOTH_PROPERTIES);
  test_counting device_only, host_only;
  test_counting_init(&device_only, CMR_PROPERTY_DEVICE_ACCESSIBLE);
  test_counting_init(&host_only, CMR_PROPERTY_HOST_ACCESSIBLE);
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 1024, test_counting_ref(&device_only)));
  ck_assert_uint_eq(properties_of(handle), CMR_PROPERTY_DEVICE_ACCESSIBLE);
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 4096, test_counting_ref(&host_only)));
  ck_assert_uint_eq(properties_of(handle), 0);
  ck_assert_uint_eq(bins_of(handle), 2);
  ck_assert_ok(cmr_binning_resource_destroy(handle));

  cmr_binning_resource *device_upstream = NULL;
  ck_assert_ok(
      cmr_binning_resource_create(test_counting_ref(&device_only), CMR_INT(-1), CMR_INT(-1), &device_upstream));
  ck_assert_ok(cmr_binning_resource_add_bin_resource(device_upstream, 1024, test_counting_ref(&host_only)));
  ck_assert_uint_eq(bins_of(device_upstream), 1);
  ck_assert_uint_eq(properties_of(device_upstream), 0);
  ck_assert_status(
      cmr_ref_require_properties(cmr_binning_resource_ref(device_upstream), CMR_PROPERTY_DEVICE_ACCESSIBLE),
      CMR_ERROR_PROPERTY_MISSING);
  ck_assert_ok(cmr_binning_resource_destroy(device_upstream));
  test_counting_destroy(&device_only);
  test_counting_destroy(&host_only);
}
END_TEST

START_TEST(add_bin_keeps_a_bin_of_that_size) {
  cmr_binning_resource *handle = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 1024, test_counting_ref(&small_bin)));
  ck_assert_ok(cmr_binning_resource_add_bin(handle, 1000)); /* rounds to 1024: kept */
  ck_assert_uint_eq(bins_of(handle), 1);
  ck_assert_counts(&upstream, 0, 0); /* no fixed_size bin was made */
  give(handle, take(handle, 512), 512);
  ck_assert_counts(&small_bin, 1, 0);

  ck_assert_ok(cmr_binning_resource_add_bin(handle, 2048)); /* a new size: a fixed_size bin */
  ck_assert_uint_eq(bins_of(handle), 2);
  ck_assert_counts(&upstream, 1, 128 * 2048);
  give(handle, take(handle, 2000), 2000);
  ck_assert_counts(&upstream, 1, 128 * 2048); /* served by the bin's preallocation */
  ck_assert_ok(cmr_binning_resource_destroy(handle));
  ck_assert_counts(&upstream, 1, 0);
}
END_TEST

START_TEST(add_bin_resource_replaces_a_bin_of_that_size) {
  cmr_binning_resource *handle = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_ok(cmr_binning_resource_add_bin(handle, 1024));
  ck_assert_counts(&upstream, 1, 128 * 1024);
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 1000, test_counting_ref(&small_bin)));
  ck_assert_uint_eq(bins_of(handle), 1);
  ck_assert_counts(&upstream, 1, 0); /* the fixed_size bin was released, its chunk returned */
  give(handle, take(handle, 700), 700);
  ck_assert_counts(&small_bin, 1, 0);
  /* Putting the same resource there again changes nothing. */
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 1024, test_counting_ref(&small_bin)));
  give(handle, take(handle, 700), 700);
  ck_assert_counts(&small_bin, 2, 0);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
}
END_TEST

START_TEST(replacing_a_bin_with_allocations_out_is_refused) {
  cmr_binning_resource *handle = make_with_counting_bins();
  void *first = take(handle, 100), *second = take(handle, 200);
  ck_assert_status(cmr_binning_resource_add_bin_resource(handle, 1024, test_counting_ref(&upstream)),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("the bin of 1024 bytes has 2 allocation(s) outstanding");
  give(handle, first, 100);
  ck_assert_status(cmr_binning_resource_add_bin_resource(handle, 1024, test_counting_ref(&upstream)),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("has 1 allocation(s) outstanding");
  give(handle, second, 200); /* still freed to the bin it came from */
  ck_assert_counts(&small_bin, 2, 0);
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 1024, test_counting_ref(&upstream)));
  give(handle, take(handle, 100), 100);
  ck_assert_counts(&upstream, 1, 0);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
}
END_TEST

START_TEST(a_new_bin_must_not_take_sizes_with_allocations_out) {
  cmr_binning_resource *handle = make_with_counting_bins();
  void *binned = take(handle, 3000), *direct = take(handle, 10000);
  ck_assert_status(cmr_binning_resource_add_bin(handle, 2048), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("a bin of 2048 bytes would take sizes from the bin of 4096 bytes, which has 1 allocation(s)");
  ck_assert_status(cmr_binning_resource_add_bin_resource(handle, 16384, test_counting_ref(&small_bin)),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("a bin of 16384 bytes would take sizes from the upstream, which has 1 allocation(s)");
  ck_assert_uint_eq(bins_of(handle), 2);
  /* Below every busy route a bin may be added: 1024's bin has nothing out. */
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 512, test_counting_ref(&large_bin)));
  give(handle, binned, 3000);
  give(handle, direct, 10000);
  ck_assert_ok(cmr_binning_resource_add_bin(handle, 2048));
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 16384, test_counting_ref(&small_bin)));
  ck_assert_uint_eq(bins_of(handle), 5);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
}
END_TEST

START_TEST(bins_are_held_past_their_owners_destroy) {
  cmr_fixed_size_resource *bin = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(test_counting_ref(&upstream), CMR_SIZE(4096), CMR_SIZE(4),
                                              CMR_FIXED_SIZE_CAPTURE_SERVE, &bin));
  cmr_binning_resource *handle = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 4096, cmr_fixed_size_resource_ref(bin)));
  ck_assert_ok(cmr_fixed_size_resource_destroy(bin)); /* the binning resource's share keeps it */
  void *ptr = take(handle, 4000);
  ck_assert_counts(&upstream, 1, 4 * 4096);
  give(handle, ptr, 4000);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
  ck_assert_counts(&upstream, 1, 0); /* the last share went with it */

  test_foreign foreign = {.properties = BOTH_PROPERTIES};
  handle = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_ok(
      cmr_binning_resource_add_bin_resource(handle, 256, test_foreign_ref(&foreign, &test_foreign_counted_ops)));
  ck_assert_int_eq(foreign.retains, 1);
  ck_assert_int_eq(foreign.releases, 0);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
  ck_assert_int_eq(foreign.releases, 1);
}
END_TEST

START_TEST(replaced_bins_are_released) {
  test_foreign first = {.properties = BOTH_PROPERTIES}, second = {.properties = BOTH_PROPERTIES};
  cmr_binning_resource *handle = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 256, test_foreign_ref(&first, &test_foreign_counted_ops)));
  ck_assert_ok(
      cmr_binning_resource_add_bin_resource(handle, 256, test_foreign_ref(&second, &test_foreign_counted_ops)));
  ck_assert_int_eq(first.releases, 1);
  ck_assert_int_eq(second.retains, 1);
  ck_assert_ok(cmr_binning_resource_destroy(handle));
  ck_assert_int_eq(second.releases, 1);
  ck_assert_int_eq(first.retains, 1);
}
END_TEST
CMR_TEST_OUT(largest_free_block, size_t, SIZE_MAX, cmr_binning_resource_largest_free_block, cmr_binning_resource *)

/* Fixed-size bins have their preallocated blocks; a pool bin has what was
 * freed into it, up to the bin's size; the upstream counts for nothing. */
START_TEST(largest_free_block_is_what_a_bin_serves_now) {
  cmr_binning_resource *none = make(CMR_INT(-1), CMR_INT(-1));
  ck_assert_uint_eq(largest_free_block(none), 0);
  ck_assert_ok(cmr_binning_resource_destroy(none));
  cmr_binning_resource *handle = make(CMR_INT(8), CMR_INT(10));
  ck_assert_uint_eq(largest_free_block(handle), 1024);
  cmr_pool_resource *pool = cmr_test_pool(test_counting_ref(&upstream), 0);
  ck_assert_ok(cmr_binning_resource_add_bin_resource(handle, 64 * 1024, cmr_pool_resource_ref(pool)));
  ck_assert_uint_eq(largest_free_block(handle), 1024); /* the pool holds nothing yet */
  void *ptr = take(handle, 60000);
  give(handle, ptr, 60000);
  ck_assert_uint_eq(largest_free_block(handle), 60160); /* the pool's chunk, 60000 rounded up to 256 */
  ck_assert_ok(cmr_pool_resource_release(pool));
  ck_assert_uint_eq(largest_free_block(handle), 1024);
  cmr_test_destroy(pool, handle);
}
END_TEST

static void binning_cases(Suite *suite) {
  cmr_test_case(suite, "routing", setup, teardown, largest_free_block_is_what_a_bin_serves_now,
                smallest_bin_that_fits_serves_and_frees_follow, without_bins_the_upstream_serves_everything,
                exponents_make_one_fixed_size_bin_per_power_of_two, bad_exponents_are_refused_each_with_its_message,
                a_failing_bin_fails_create_and_leaks_nothing);
  cmr_test_case(suite, "adding", setup, teardown, add_bin_rejects_bad_arguments,
                the_resource_has_what_its_upstream_and_bins_share, add_bin_keeps_a_bin_of_that_size,
                add_bin_resource_replaces_a_bin_of_that_size, replacing_a_bin_with_allocations_out_is_refused,
                a_new_bin_must_not_take_sizes_with_allocations_out, bins_are_held_past_their_owners_destroy,
                replaced_bins_are_released);
}

int main(void) { return cmr_test_main_suite("binning", CMR_TEST_NEEDS_DEVICE, binning_cases); }
