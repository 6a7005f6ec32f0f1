/* SPDX-License-Identifier: Apache-2.0 */
/* fixed_size's release threshold, measured in the bytes it holds from its
 * upstream: past it, the free that leaves every block of a chunk free in
 * one stream's list gives the chunk back; a chunk with a block still out,
 * or with its blocks in two streams' lists, stays; without a threshold
 * every chunk stays. */
#include "test_util.h"

enum { block = 4096, per_chunk = 4 };

static cmr_fixed_size_resource *make(void) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_fixed_size_resource *made = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(cmr_system_resource_ref(system), CMR_SIZE(block), CMR_SIZE(per_chunk),
                                              CMR_FIXED_SIZE_CAPTURE_SERVE, &made));
  ck_assert_ok(cmr_system_resource_destroy(system));
  return made;
}

CMR_TEST_OUT(held, size_t, 0, cmr_fixed_size_resource_upstream_bytes, cmr_fixed_size_resource *)

/* Takes every block of the first chunk and one of a second, on `stream`. */
static void take_two_chunks(cmr_resource_ref ref, void *blocks[per_chunk + 1], cmr_stream stream) {
  for (int i = 0; i < per_chunk + 1; ++i) ck_assert_ok(cmr_allocate(ref, block, stream, &blocks[i]));
}

START_TEST(whole_chunk_goes_back_past_the_threshold) {
  cmr_fixed_size_resource *resource = make();
  cmr_resource_ref ref = cmr_fixed_size_resource_ref(resource);
  ck_assert_ok(cmr_fixed_size_resource_set_release_threshold(resource, per_chunk * block));
  void *blocks[per_chunk + 1];
  take_two_chunks(ref, blocks, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(held(resource), 2 * per_chunk * block);
  /* The second chunk's one block out: freeing it leaves that chunk whole. */
  ck_assert_ok(cmr_deallocate(ref, blocks[per_chunk], block, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(held(resource), per_chunk * block);
  for (int i = 0; i < per_chunk - 1; ++i) {
    ck_assert_ok(cmr_deallocate(ref, blocks[i], block, CMR_DEFAULT_STREAM));
    ck_assert_uint_eq(held(resource), per_chunk * block); /* a block still out */
  }
  ck_assert_ok(cmr_deallocate(ref, blocks[per_chunk - 1], block, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(held(resource), per_chunk * block); /* at the threshold, not past it */
  ck_assert_ok(cmr_fixed_size_resource_destroy(resource));
}
END_TEST

START_TEST(without_a_threshold_every_chunk_stays) {
  cmr_fixed_size_resource *resource = make();
  cmr_resource_ref ref = cmr_fixed_size_resource_ref(resource);
  void *blocks[per_chunk + 1];
  take_two_chunks(ref, blocks, CMR_DEFAULT_STREAM);
  for (int i = 0; i < per_chunk + 1; ++i) ck_assert_ok(cmr_deallocate(ref, blocks[i], block, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(held(resource), 2 * per_chunk * block);
  ck_assert_ok(cmr_fixed_size_resource_destroy(resource));
}
END_TEST

START_TEST(chunk_split_over_two_streams_stays) {
  cmr_fixed_size_resource *resource = make();
  cmr_resource_ref ref = cmr_fixed_size_resource_ref(resource);
  ck_assert_ok(cmr_fixed_size_resource_set_release_threshold(resource, 0));
  cmr_stream other = cmr_test_stream();
  void *blocks[per_chunk];
  for (int i = 0; i < per_chunk; ++i) ck_assert_ok(cmr_allocate(ref, block, CMR_DEFAULT_STREAM, &blocks[i]));
  ck_assert_ok(cmr_deallocate(ref, blocks[0], block, other));
  for (int i = 1; i < per_chunk; ++i) ck_assert_ok(cmr_deallocate(ref, blocks[i], block, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(held(resource), per_chunk * block);
  cmr_test_destroy(resource, other);
}
END_TEST

static void fixed_size_cases(Suite *suite) {
  cmr_test_case(suite, "release_threshold", NULL, NULL, whole_chunk_goes_back_past_the_threshold,
                without_a_threshold_every_chunk_stays, chunk_split_over_two_streams_stays);
}

/* Streams of the CUDA build need a device (its suites are labelled gpu). */
int main(void) { return cmr_test_main_suite("fixed_size", CMR_TEST_NEEDS_DEVICE, fixed_size_cases); }
