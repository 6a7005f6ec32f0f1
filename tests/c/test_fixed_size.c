/* SPDX-License-Identifier: Apache-2.0 */
/* fixed_size beyond the battery: block size rounding, preallocation and
 * growth in chunks (seen through a counting upstream), requests that do not
 * fit, foreign pointers, everything back upstream at destroy, and the
 * stream-ordered reuse of blocks (with the host backend's event counts). */
#include <stdint.h>

#include "backend.h"
#include "test_counting.h"

#define BOTH_PROPERTIES (CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE)

static test_counting upstream;

static void setup(void) { test_counting_init(&upstream, BOTH_PROPERTIES); }

static void teardown(void) { test_counting_destroy(&upstream); }

static cmr_fixed_size_resource *make(cmr_optional_size block_size, cmr_optional_size blocks) {
  cmr_fixed_size_resource *handle = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(test_counting_ref(&upstream), block_size, blocks,
                                              CMR_FIXED_SIZE_CAPTURE_SERVE, &handle));
  return handle;
}

static void *take(cmr_fixed_size_resource *handle, size_t bytes, cmr_stream stream) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_fixed_size_resource_ref(handle), bytes, stream, &ptr));
  ck_assert_ptr_nonnull(ptr);
  return ptr;
}

static void give(cmr_fixed_size_resource *handle, void *ptr, size_t bytes, cmr_stream stream) {
  ck_assert_ok(cmr_deallocate(cmr_fixed_size_resource_ref(handle), ptr, bytes, stream));
}

START_TEST(largest_free_block_says_whether_a_block_is_free) {
  cmr_fixed_size_resource *handle = make(CMR_SIZE(1000), CMR_SIZE(2));
  size_t largest = SIZE_MAX;
  ck_assert_ok(cmr_fixed_size_resource_largest_free_block(handle, &largest));
  ck_assert_uint_eq(largest, 1024);
  void *a = take(handle, 1000, CMR_DEFAULT_STREAM);
  void *b = take(handle, 1000, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_fixed_size_resource_largest_free_block(handle, &largest));
  ck_assert_uint_eq(largest, 0); /* the next block needs the upstream */
  give(handle, a, 1000, CMR_DEFAULT_STREAM);
  give(handle, b, 1000, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_fixed_size_resource_largest_free_block(handle, &largest));
  ck_assert_uint_eq(largest, 1024); /* blocks never merge */
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
}
END_TEST

CMR_TEST_OUT(upstream_bytes_of, size_t, SIZE_MAX, cmr_fixed_size_resource_upstream_bytes, cmr_fixed_size_resource *)

/* ---- sizes and arguments ------------------------------------------------------------ */

START_TEST(block_size_is_rounded_up_to_256) {
  size_t asked[] = {1, 255, 256, 1000, 1024, 65537};
  size_t rounded[] = {256, 256, 256, 1024, 1024, 65792};
  for (unsigned i = 0; i < sizeof asked / sizeof *asked; ++i) {
    cmr_fixed_size_resource *handle = make(CMR_SIZE(asked[i]), CMR_SIZE(2));
    size_t block_size = 0;
    ck_assert_ok(cmr_fixed_size_resource_block_size(handle, &block_size));
    ck_assert_uint_eq(block_size, rounded[i]);
    ck_assert_uint_eq(atomic_load(&upstream.last_bytes), 2 * rounded[i]);
    give(handle, take(handle, rounded[i], CMR_DEFAULT_STREAM), rounded[i], CMR_DEFAULT_STREAM);
    ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
  }
}
END_TEST

START_TEST(defaults_are_one_mebibyte_and_128_blocks) {
  cmr_fixed_size_resource *handle = make(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT);
  size_t block_size = 0;
  ck_assert_ok(cmr_fixed_size_resource_block_size(handle, &block_size));
  ck_assert_uint_eq(block_size, 1 << 20);
  ck_assert_counts(&upstream, 1, (size_t)128 << 20);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
}
END_TEST

START_TEST(bad_arguments_are_refused) {
  cmr_resource_ref ref = test_counting_ref(&upstream);
  cmr_fixed_size_resource *handle = (cmr_fixed_size_resource *)&handle;
  ck_assert_status(cmr_fixed_size_resource_create(ref, CMR_SIZE(0), CMR_SIZE(4), CMR_FIXED_SIZE_CAPTURE_SERVE, &handle),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("block_size must not be 0");
  ck_assert_ptr_null(handle);
  ck_assert_status(
      cmr_fixed_size_resource_create(ref, CMR_SIZE(256), CMR_SIZE(0), CMR_FIXED_SIZE_CAPTURE_SERVE, &handle),
      CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("blocks_to_preallocate must not be 0");
  ck_assert_status(
      cmr_fixed_size_resource_create(ref, CMR_SIZE(SIZE_MAX - 1), CMR_SIZE(1), CMR_FIXED_SIZE_CAPTURE_SERVE, &handle),
      CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_message_has("overflows once rounded up to 256");
  /* SIZE_MAX is a block size like any other (it once meant the default). */
  ck_assert_status(
      cmr_fixed_size_resource_create(ref, CMR_SIZE(SIZE_MAX), CMR_SIZE_DEFAULT, CMR_FIXED_SIZE_CAPTURE_SERVE, &handle),
      CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_message_has("block_size 18446744073709551615 overflows once rounded up to 256");
  ck_assert_ptr_null(handle);
  ck_assert_status(cmr_fixed_size_resource_create(ref, CMR_SIZE((size_t)1 << 40), CMR_SIZE((size_t)1 << 30),
                                                  CMR_FIXED_SIZE_CAPTURE_SERVE, &handle),
                   CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_message_has("a chunk of 1073741824 blocks of 1099511627776 bytes overflows");
  cmr_resource_ref zeroed = {0};
  ck_assert_status(
      cmr_fixed_size_resource_create(zeroed, CMR_SIZE(256), CMR_SIZE(1), CMR_FIXED_SIZE_CAPTURE_SERVE, &handle),
      CMR_ERROR_INVALID_REF);
  ck_assert_status(cmr_fixed_size_resource_create(ref, CMR_SIZE(256), CMR_SIZE(1), CMR_FIXED_SIZE_CAPTURE_SERVE, NULL),
                   CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_fixed_size_resource_block_size(NULL, &(size_t){0}), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_fixed_size_resource_upstream_bytes(NULL, &(size_t){0}), CMR_ERROR_NULL_POINTER);
  ck_assert_counts(&upstream, 0, 0);
}
END_TEST

/* ---- chunks from the upstream ------------------------------------------------------------ */

START_TEST(preallocates_then_grows_in_chunks) {
  enum { blocks = 8 };
  cmr_fixed_size_resource *handle = make(CMR_SIZE(4096), CMR_SIZE(blocks));
  ck_assert_counts(&upstream, 1, blocks * 4096);
  void *held[2 * blocks + 1];
  size_t sizes[2 * blocks + 1];
  for (unsigned i = 0; i <= 2 * blocks; ++i) sizes[i] = i < blocks ? 1 + i * 500 : i == blocks ? 4096 : 100;
  for (unsigned i = 0; i < blocks; ++i) held[i] = take(handle, sizes[i], CMR_DEFAULT_STREAM);
  ck_assert_counts(&upstream, 1, blocks * 4096); /* the first chunk served them all */
  held[blocks] = take(handle, 4096, CMR_DEFAULT_STREAM);
  ck_assert_counts(&upstream, 2, 2 * blocks * 4096);
  for (unsigned i = blocks + 1; i < 2 * blocks; ++i) held[i] = take(handle, 100, CMR_DEFAULT_STREAM);
  ck_assert_counts(&upstream, 2, 2 * blocks * 4096);
  held[2 * blocks] = take(handle, 100, CMR_DEFAULT_STREAM);
  ck_assert_counts(&upstream, 3, 3 * blocks * 4096);
  ck_assert_uint_eq(upstream_bytes_of(handle), 3 * blocks * 4096);
  for (unsigned i = 0; i <= 2 * blocks; ++i) {
    for (unsigned j = 0; j < i; ++j) ck_assert_ptr_ne(held[i], held[j]);
  }
  for (unsigned i = 0; i <= 2 * blocks; ++i) give(handle, held[i], sizes[i], CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
  ck_assert_counts(&upstream, 3, 0);
  ck_assert_uint_eq(atomic_load(&upstream.deallocations), 3);
}
END_TEST

START_TEST(destroy_returns_every_chunk_even_with_blocks_out) {
  cmr_stream a = cmr_test_stream();
  cmr_fixed_size_resource *handle = make(CMR_SIZE(1024), CMR_SIZE(2));
  take(handle, 1024, a);
  void *freed = take(handle, 1024, CMR_DEFAULT_STREAM);
  take(handle, 10, a); /* a second chunk */
  give(handle, freed, 1024, CMR_DEFAULT_STREAM);
  ck_assert_counts(&upstream, 2, 4096);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
  ck_assert_counts(&upstream, 2, 0);
  ck_assert_ok(cmr_stream_destroy(a));
}
END_TEST

START_TEST(upstream_failure_is_out_of_memory_with_context) {
  atomic_store(&upstream.successes_left, 0);
  cmr_fixed_size_resource *handle = NULL;
  ck_assert_status(cmr_fixed_size_resource_create(test_counting_ref(&upstream), CMR_SIZE(512), CMR_SIZE(4),
                                                  CMR_FIXED_SIZE_CAPTURE_SERVE, &handle),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("fixed_size: growing by 512 bytes (holding 0)"); /* after 2048 and 1024 */
  ck_assert_ptr_null(handle);

  atomic_store(&upstream.successes_left, 1);
  handle = make(CMR_SIZE(512), CMR_SIZE(1));
  void *first = take(handle, 512, CMR_DEFAULT_STREAM);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(cmr_fixed_size_resource_ref(handle), 512, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("fixed_size: growing by 512 bytes (holding 512)");
  ck_assert_ptr_null(ptr);
  atomic_store(&upstream.successes_left, SIZE_MAX); /* the resource recovers */
  give(handle, take(handle, 512, CMR_DEFAULT_STREAM), 512, CMR_DEFAULT_STREAM);
  give(handle, first, 512, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
  ck_assert_counts(&upstream, 2, 0);
}
END_TEST

/* An upstream with room for 8 + 2 blocks of 1 KiB: the second chunk is
 * halved twice, then even one block does not fit. */
START_TEST(grows_by_smaller_chunks_when_the_upstream_is_short) {
  test_foreign short_upstream = {.properties = BOTH_PROPERTIES, .limit = 8192 + 3000};
  cmr_fixed_size_resource *handle = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(test_foreign_ref(&short_upstream, &test_foreign_ops), CMR_SIZE(1024),
                                              CMR_SIZE(8), CMR_FIXED_SIZE_CAPTURE_SERVE, &handle));
  ck_assert_uint_eq(short_upstream.outstanding, 8192);
  void *held[10];
  for (unsigned i = 0; i < 10; ++i) held[i] = take(handle, 1024, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(short_upstream.outstanding, 8192 + 2048);
  ck_assert_uint_eq(upstream_bytes_of(handle), 8192 + 2048);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(cmr_fixed_size_resource_ref(handle), 1024, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("fixed_size: growing by 1024 bytes (holding 10240)");
  for (unsigned i = 0; i < 10; ++i) give(handle, held[i], 1024, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
  ck_assert_uint_eq(short_upstream.outstanding, 0);
  ck_assert_int_eq(short_upstream.deallocations, 2);
}
END_TEST

/* ---- misuse -------------------------------------------------------------------------------- */

START_TEST(request_larger_than_a_block_is_out_of_memory) {
  cmr_fixed_size_resource *handle = make(CMR_SIZE(4096), CMR_SIZE(2));
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(cmr_fixed_size_resource_ref(handle), 4097, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("4097 bytes do not fit in a block of 4096 bytes");
  ck_assert_ptr_null(ptr);
  ck_assert_counts(&upstream, 1, 8192); /* no growth for a request no block can serve */
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
}
END_TEST

START_TEST(alignments_above_256_are_refused) {
  cmr_fixed_size_resource *handle = make(CMR_SIZE(4096), CMR_SIZE(2));
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate_aligned(cmr_fixed_size_resource_ref(handle), 100, 512, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_ptr_null(ptr);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
}
END_TEST

START_TEST(foreign_and_freed_pointers_are_unknown) {
  cmr_fixed_size_resource *handle = make(CMR_SIZE(1024), CMR_SIZE(4));
  cmr_resource_ref ref = cmr_fixed_size_resource_ref(handle);
  char *ptr = take(handle, 1024, CMR_DEFAULT_STREAM);
  char local[1024];
  ck_assert_status(cmr_deallocate(ref, local, sizeof local, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("was not allocated by this resource");
  ck_assert_status(cmr_deallocate(ref, ptr + 256, 256, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  give(handle, ptr, 1024, CMR_DEFAULT_STREAM);
  ck_assert_status(cmr_deallocate(ref, ptr, 1024, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
}
END_TEST

/* A free must name the size asked for, even one the block would hold. */
START_TEST(freeing_another_size_changes_nothing) {
  cmr_fixed_size_resource *handle = make(CMR_SIZE(1024), CMR_SIZE(1));
  cmr_resource_ref ref = cmr_fixed_size_resource_ref(handle);
  void *ptr = take(handle, 1000, CMR_DEFAULT_STREAM);
  ck_assert_status(cmr_deallocate(ref, ptr, 1025, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("was allocated with 1000 bytes, not 1025");
  ck_assert_status(cmr_deallocate(ref, ptr, 1024, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_deallocate(ref, ptr, 999, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  give(handle, ptr, 1000, CMR_DEFAULT_STREAM); /* still handed out, so this works */
  ck_assert_ptr_eq(take(handle, 1, CMR_DEFAULT_STREAM), ptr);
  ck_assert_counts(&upstream, 1, 1024);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
}
END_TEST

/* ---- stream order ------------------------------------------------------------------------ */

START_TEST(freed_block_is_reused_on_its_stream) {
  enum { blocks = 4 };
  cmr_fixed_size_resource *handle = make(CMR_SIZE(512), CMR_SIZE(blocks));
  void *held[blocks];
  for (unsigned i = 0; i < blocks; ++i) held[i] = take(handle, 512, CMR_DEFAULT_STREAM);
  give(handle, held[2], 512, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(take(handle, 300, CMR_DEFAULT_STREAM), held[2]);
  ck_assert_counts(&upstream, 1, blocks * 512);
  for (unsigned i = 0; i < blocks; ++i) give(handle, held[i], i == 2 ? 300 : 512, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
}
END_TEST

#if !CMR_WITH_CUDA
static cmr_backend_host_counts counts_now(void) {
  cmr_backend_host_counts counts;
  cmr_backend_host_counts_read(&counts);
  return counts;
}

/* One block in all, so every take must be that block: freed on stream a,
 * then wanted by stream b, which has to wait for a first. */
START_TEST(block_freed_on_one_stream_reaches_another_after_a_wait) {
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  cmr_fixed_size_resource *handle = make(CMR_SIZE(256), CMR_SIZE(1));
  void *ptr = take(handle, 256, a);
  give(handle, ptr, 256, a);

  cmr_backend_host_counts before = counts_now();
  ck_assert_ptr_eq(take(handle, 256, a), ptr);
  give(handle, ptr, 256, a);
  cmr_backend_host_counts after = counts_now();
  ck_assert_uint_eq(after.stream_waits, before.stream_waits); /* reuse on its own stream: no wait */
  ck_assert_uint_eq(after.device_synchronizes, before.device_synchronizes);

  /* a's list was its own alone: b's first take synchronizes the device... */
  before = after;
  ck_assert_ptr_eq(take(handle, 256, b), ptr);
  after = counts_now();
  ck_assert_uint_eq(after.stream_waits, before.stream_waits);
  ck_assert_uint_eq(after.device_synchronizes, before.device_synchronizes + 1);
  give(handle, ptr, 256, b);
  ck_assert_ptr_eq(take(handle, 256, a), ptr);
  give(handle, ptr, 256, a);

  /* ...and shares it: a's frees now record an event, which b waits on. */
  before = counts_now();
  ck_assert_ptr_eq(take(handle, 256, b), ptr);
  after = counts_now();
  ck_assert_uint_eq(after.stream_waits, before.stream_waits + 1);
  ck_assert_uint_eq(after.device_synchronizes, before.device_synchronizes);

  give(handle, ptr, 256, b);
  ck_assert_counts(&upstream, 1, 256); /* never grew */
  cmr_test_destroy(handle, a, b);
}
END_TEST
#endif

START_TEST(blocks_of_a_destroyed_stream_stay_usable) {
  cmr_stream a = cmr_test_stream();
  cmr_fixed_size_resource *handle = make(CMR_SIZE(256), CMR_SIZE(2));
  void *first = take(handle, 256, a), *second = take(handle, 256, a);
  give(handle, first, 256, a);
  give(handle, second, 256, a);
  ck_assert_ok(cmr_stream_destroy(a));
  void *again[2] = {take(handle, 256, CMR_DEFAULT_STREAM), take(handle, 256, CMR_DEFAULT_STREAM)};
  ck_assert_counts(&upstream, 1, 512); /* both came from the dead stream's list */
  ck_assert(again[0] == first || again[0] == second);
  ck_assert(again[1] == first || again[1] == second);
  give(handle, again[0], 256, CMR_DEFAULT_STREAM);
  give(handle, again[1], 256, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_fixed_size_resource_destroy(handle));
  ck_assert_counts(&upstream, 1, 0);
}
END_TEST

static void fixed_size_cases(Suite *suite) {
  cmr_test_case(suite, "sizes", setup, teardown, largest_free_block_says_whether_a_block_is_free,
                block_size_is_rounded_up_to_256, defaults_are_one_mebibyte_and_128_blocks, bad_arguments_are_refused);
  cmr_test_case(suite, "chunks", setup, teardown, preallocates_then_grows_in_chunks,
                destroy_returns_every_chunk_even_with_blocks_out, upstream_failure_is_out_of_memory_with_context,
                grows_by_smaller_chunks_when_the_upstream_is_short);
  cmr_test_case(suite, "misuse", setup, teardown, request_larger_than_a_block_is_out_of_memory,
                alignments_above_256_are_refused, foreign_and_freed_pointers_are_unknown,
                freeing_another_size_changes_nothing);
  TCase *streams = tcase_create("streams");
  tcase_add_checked_fixture(streams, setup, teardown);
  tcase_add_test(streams, freed_block_is_reused_on_its_stream);
#if !CMR_WITH_CUDA
  tcase_add_test(streams, block_freed_on_one_stream_reaches_another_after_a_wait);
#endif
  tcase_add_test(streams, blocks_of_a_destroyed_stream_stay_usable);
  suite_add_tcase(suite, streams);
}

int main(void) { return cmr_test_main_suite("fixed_size", CMR_TEST_NEEDS_DEVICE, fixed_size_cases); }
