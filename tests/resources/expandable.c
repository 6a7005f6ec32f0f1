/* SPDX-License-Identifier: Apache-2.0 */
/* expandable beyond its expectations: growths that merge, release and
 * release_threshold measured in committed bytes, a second range, the
 * maximum, stream-ordered reuse and many threads. In the CUDA build every
 * case runs over the driver's virtual memory management, on a GPU (the
 * suite skips, 77, without one); in the host build over mmap. */
#include <pthread.h>

#include "test_util.h"

enum { granule = 2 << 20 };

static cmr_expandable_resource *make(size_t reservation, size_t maximum, size_t threshold) {
  cmr_expandable_resource *made = NULL;
  ck_assert_ok(cmr_expandable_resource_create(
      CMR_SIZE(reservation), CMR_SIZE(granule), maximum ? CMR_SIZE(maximum) : CMR_SIZE_DEFAULT,
      threshold ? CMR_SIZE(threshold) : CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, &made));
  return made;
}

CMR_TEST_OUT(committed, size_t, 0, cmr_expandable_resource_committed_size, cmr_expandable_resource *)
CMR_TEST_OUT(ranges, size_t, 0, cmr_expandable_resource_range_count, cmr_expandable_resource *)

/* A resource whose ranges reserve 4 granules, with `count` blocks of a
 * granule allocated from it, in order, into blocks[0] to blocks[count - 1]. */
static cmr_expandable_resource *make_with_granules(void *blocks[], int count) {
  cmr_expandable_resource *resource = make(4 * granule, 0, 0);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  for (int i = 0; i < count; ++i) ck_assert_ok(cmr_allocate(ref, granule, CMR_DEFAULT_STREAM, &blocks[i]));
  return resource;
}

/* Frees blocks[first] to blocks[last - 1], of a granule each. */
static void free_granules(cmr_resource_ref ref, void *blocks[], int first, int last) {
  for (int i = first; i < last; ++i) ck_assert_ok(cmr_deallocate(ref, blocks[i], granule, CMR_DEFAULT_STREAM));
}

START_TEST(one_block_spans_two_growths) {
  cmr_expandable_resource *resource = make((size_t)64 << 20, 0, 0);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  void *first = NULL, *second = NULL, *both = NULL;
  ck_assert_ok(cmr_allocate(ref, granule, CMR_DEFAULT_STREAM, &first));  /* fills growth 1 */
  ck_assert_ok(cmr_allocate(ref, granule, CMR_DEFAULT_STREAM, &second)); /* growth 2 */
  ck_assert_ptr_eq((char *)first + granule, second);
  ck_assert_uint_eq(committed(resource), 2 * granule);
  ck_assert_ok(cmr_deallocate(ref, first, granule, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(ref, second, granule, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_allocate(ref, 2 * granule, CMR_DEFAULT_STREAM, &both));
  ck_assert_ptr_eq(both, first);
  ck_assert_uint_eq(committed(resource), 2 * granule);
  ck_assert_uint_eq(ranges(resource), 1);
  ck_assert_ok(cmr_deallocate(ref, both, 2 * granule, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_expandable_resource_destroy(resource));
}
END_TEST

START_TEST(release_decommits_and_growth_recommits) {
  cmr_expandable_resource *resource = make((size_t)64 << 20, 0, 0);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  void *kept = NULL, *large = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &kept));
  ck_assert_ok(cmr_allocate(ref, 3 * granule, CMR_DEFAULT_STREAM, &large));
  ck_assert_uint_eq(committed(resource), 4 * granule);
  ck_assert_ok(cmr_deallocate(ref, large, 3 * granule, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_expandable_resource_release(resource));
  ck_assert_uint_eq(committed(resource), granule);
  /* The hole is committed again, at the same addresses, next to the first granule. */
  void *again = NULL;
  ck_assert_ok(cmr_allocate(ref, 3 * granule, CMR_DEFAULT_STREAM, &again));
  ck_assert_ptr_eq(again, large);
  ck_assert_uint_eq(committed(resource), 4 * granule);
  ck_assert_uint_eq(ranges(resource), 1);
  ck_assert_ok(cmr_deallocate(ref, again, 3 * granule, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(ref, kept, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_expandable_resource_destroy(resource));
}
END_TEST

START_TEST(threshold_decommits_only_past_it) {
  cmr_expandable_resource *resource = make((size_t)64 << 20, 0, 2 * granule);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  void *a = NULL, *b = NULL;
  ck_assert_ok(cmr_allocate(ref, granule, CMR_DEFAULT_STREAM, &a));
  ck_assert_ok(cmr_allocate(ref, granule, CMR_DEFAULT_STREAM, &b));
  ck_assert_ok(cmr_deallocate(ref, b, granule, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(committed(resource), 2 * granule); /* at the threshold, not past it: kept */
  void *c = NULL;
  ck_assert_ok(cmr_allocate(ref, 2 * granule, CMR_DEFAULT_STREAM, &c)); /* past it now */
  ck_assert_uint_eq(committed(resource), 3 * granule);
  ck_assert_ok(cmr_deallocate(ref, c, 2 * granule, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(committed(resource), granule);
  ck_assert_ok(cmr_deallocate(ref, a, granule, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(committed(resource), granule);
  ck_assert_ok(cmr_expandable_resource_destroy(resource));
}
END_TEST

/* A granule with one half in each of two streams' lists is in neither
 * whole: past the threshold it stays committed until release. */
START_TEST(threshold_keeps_a_granule_split_over_two_streams) {
  cmr_expandable_resource *resource = make((size_t)64 << 20, 0, 1);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  cmr_stream other = cmr_test_stream();
  void *first = NULL, *second = NULL;
  ck_assert_ok(cmr_allocate(ref, granule / 2, other, &first));
  ck_assert_ok(cmr_allocate(ref, granule / 2, other, &second));
  ck_assert_uint_eq(committed(resource), granule);
  ck_assert_ok(cmr_deallocate(ref, first, granule / 2, other));
  ck_assert_ok(cmr_deallocate(ref, second, granule / 2, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(committed(resource), granule);
  ck_assert_ok(cmr_expandable_resource_release(resource));
  ck_assert_uint_eq(committed(resource), 0);
  cmr_test_destroy(resource, other);
}
END_TEST

START_TEST(second_range_only_when_the_first_is_full) {
  void *blocks[5] = {0};
  cmr_expandable_resource *resource = make_with_granules(blocks, 4);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  ck_assert_uint_eq(ranges(resource), 1);
  ck_assert_ok(cmr_allocate(ref, granule, CMR_DEFAULT_STREAM, &blocks[4]));
  ck_assert_uint_eq(ranges(resource), 2);
  size_t reserved = 0;
  ck_assert_ok(cmr_expandable_resource_reserved_size(resource, &reserved));
  ck_assert_uint_eq(reserved, 8 * granule);
  free_granules(ref, blocks, 0, 5);
  /* Ranges never merge: no block spans the end of the first. */
  size_t largest = 0;
  ck_assert_ok(cmr_expandable_resource_largest_free_block(resource, &largest));
  ck_assert_uint_eq(largest, 4 * granule);
  ck_assert_ok(cmr_expandable_resource_destroy(resource));
}
END_TEST

START_TEST(out_of_memory_at_the_maximum) {
  cmr_expandable_resource *resource = make((size_t)64 << 20, 2 * granule, 0);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  void *a = NULL, *b = NULL;
  ck_assert_ok(cmr_allocate(ref, 2 * granule, CMR_DEFAULT_STREAM, &a));
  ck_assert_status(cmr_allocate(ref, 256, CMR_DEFAULT_STREAM, &b), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("maximum");
  ck_assert_uint_eq(committed(resource), 2 * granule);
  ck_assert_ok(cmr_deallocate(ref, a, 2 * granule, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_allocate(ref, 256, CMR_DEFAULT_STREAM, &b));
  ck_assert_ok(cmr_deallocate(ref, b, 256, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_expandable_resource_destroy(resource));
}
END_TEST

/* The statistics call: committed granules are what it holds (with their
 * peak), each range a segment, and its lists' free memory. */
START_TEST(statistics_count_committed_granules) {
  void *blocks[5] = {0};
  cmr_expandable_resource *resource = make_with_granules(blocks, 5);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  free_granules(ref, blocks, 4, 5);
  ck_assert_ok(cmr_expandable_resource_release(resource));
  cmr_stats stats = {.size = sizeof stats};
  ck_assert_ok(cmr_ref_stats(ref, &stats));
  const unsigned want = CMR_STATS_BYTES_HELD | CMR_STATS_BYTES_HELD_PEAK | CMR_STATS_SEGMENTS | CMR_STATS_BYTES_FREE;
  ck_assert_uint_eq(stats.supported & want, want);
  ck_assert_uint_eq(stats.bytes_held, committed(resource));
  ck_assert_uint_eq(stats.bytes_held, 4 * granule); /* the fifth granule was decommitted */
  ck_assert_uint_eq(stats.bytes_held_peak, 5 * granule);
  ck_assert_uint_eq(stats.segments, ranges(resource));
  ck_assert_uint_eq(stats.segments, 2);
  ck_assert_uint_eq(stats.bytes_in_use, 4 * granule);
  ck_assert_ok(cmr_ref_reset_peak_stats(ref));
  ck_assert_ok(cmr_ref_stats(ref, &stats));
  ck_assert_uint_eq(stats.bytes_held_peak, 4 * granule);
  free_granules(ref, blocks, 0, 4);
  ck_assert_ok(cmr_expandable_resource_destroy(resource));
}
END_TEST

START_TEST(freed_memory_is_reused_on_its_stream) {
  cmr_expandable_resource *resource = make((size_t)64 << 20, 0, 0);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  void *on_a = NULL, *again = NULL, *on_b = NULL;
  ck_assert_ok(cmr_allocate(ref, 4096, a, &on_a));
  ck_assert_ok(cmr_deallocate(ref, on_a, 4096, a));
  ck_assert_ok(cmr_allocate(ref, 4096, a, &again));
  ck_assert_ptr_eq(again, on_a);
  /* b takes from a's list only what a's list can spare, after waiting: the block a holds is not b's. */
  ck_assert_ok(cmr_allocate(ref, 4096, b, &on_b));
  ck_assert_ptr_ne(on_b, again);
  ck_assert_ok(cmr_deallocate(ref, on_b, 4096, b));
  ck_assert_ok(cmr_deallocate(ref, again, 4096, a));
  cmr_test_destroy(resource, a, b);
}
END_TEST

/* Its parameters in a stack expression, written out again with the defaults. */
START_TEST(made_from_a_stack_expression) {
  cmr_resource_ref ref;
  cmr_stack *stack =
      cmr_test_stack("expandable(reservation_size=64MiB, granule_size=2MiB, release_threshold=2MiB)", &ref);
  ck_assert_str_eq(cmr_test_expression(stack),
                   "expandable(reservation_size=64MiB, granule_size=2MiB, maximum_size=unlimited, "
                   "release_threshold=2MiB, max_split_size=unlimited)");
  cmr_expandable_resource *resource = NULL;
  ck_assert_ok(cmr_expandable_resource_from_ref(ref, &resource));
  void *kept = NULL, *large = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &kept));
  ck_assert_ok(cmr_allocate(ref, 2 * granule, CMR_DEFAULT_STREAM, &large));
  ck_assert_uint_eq(committed(resource), 3 * granule);
  ck_assert_ok(cmr_deallocate(ref, large, 2 * granule, CMR_DEFAULT_STREAM)); /* past release_threshold */
  ck_assert_uint_eq(committed(resource), granule);
  ck_assert_ok(cmr_deallocate(ref, kept, 1000, CMR_DEFAULT_STREAM));
  cmr_test_destroy(resource, stack);
}
END_TEST

enum { threads = 4, rounds = 2000 };

static void *churn(void *arg) {
  cmr_resource_ref ref = *(cmr_resource_ref *)arg;
  void *held[8] = {0};
  size_t sizes[8] = {0};
  unsigned state = (unsigned)(uintptr_t)&held;
  for (int i = 0; i < rounds; ++i) {
    state = state * 1103515245u + 12345u;
    int slot = (int)(state >> 16) % 8;
    if (held[slot] != NULL && cmr_deallocate(ref, held[slot], sizes[slot], CMR_DEFAULT_STREAM) != CMR_SUCCESS) {
      return (void *)1;
    }
    sizes[slot] = 256 + (state >> 8) % (3 << 20);
    if (cmr_allocate(ref, sizes[slot], CMR_DEFAULT_STREAM, &held[slot]) != CMR_SUCCESS) return (void *)1;
  }
  for (int slot = 0; slot < 8; ++slot) {
    if (cmr_deallocate(ref, held[slot], sizes[slot], CMR_DEFAULT_STREAM) != CMR_SUCCESS) return (void *)1;
  }
  return NULL;
}

START_TEST(threads_allocate_and_free_at_once) {
  cmr_expandable_resource *resource = make((size_t)1 << 30, 0, 8 * granule);
  cmr_resource_ref ref = cmr_expandable_resource_ref(resource);
  pthread_t workers[threads];
  for (int i = 0; i < threads; ++i) ck_assert_int_eq(pthread_create(&workers[i], NULL, churn, &ref), 0);
  for (int i = 0; i < threads; ++i) {
    void *result = NULL;
    ck_assert_int_eq(pthread_join(workers[i], &result), 0);
    ck_assert_ptr_null(result);
  }
  size_t free_bytes = 0;
  ck_assert_ok(cmr_expandable_resource_free_size(resource, &free_bytes));
  ck_assert_uint_eq(free_bytes, committed(resource));
  ck_assert_ok(cmr_expandable_resource_release(resource));
  ck_assert_uint_eq(committed(resource), 0);
  ck_assert_ok(cmr_expandable_resource_destroy(resource));
}
END_TEST

static void expandable_cases(Suite *suite) {
  cmr_test_case(suite, "growth", NULL, NULL, one_block_spans_two_growths, release_decommits_and_growth_recommits,
                threshold_decommits_only_past_it, threshold_keeps_a_granule_split_over_two_streams,
                second_range_only_when_the_first_is_full, out_of_memory_at_the_maximum,
                statistics_count_committed_granules);
  cmr_test_case(suite, "streams", NULL, NULL, freed_memory_is_reused_on_its_stream);
  cmr_test_case(suite, "stack", NULL, NULL, made_from_a_stack_expression);
  TCase *threaded = cmr_test_case(suite, "threads", NULL, NULL, threads_allocate_and_free_at_once);
  tcase_set_timeout(threaded, 120);
}

int main(void) { return cmr_test_main_suite("expandable", CMR_TEST_NEEDS_DEVICE, expandable_cases); }
