/* SPDX-License-Identifier: Apache-2.0 */
/* sam_headroom beyond the battery: its memory is system memory the host
 * writes and reads whole; resources made alike share one record of what they
 * handed out, so each frees the other's blocks; and a device that cannot
 * access pageable memory refuses it, saying why. Where the advice puts each
 * part of a block (device above the headroom, host below) needs a device
 * with pageable memory access (HMM or ATS), which these tests do not assume. */
#include <stdint.h>

#include "test_util.h"

enum { BLOCK = 1 << 20 };

/* A sam_headroom resource keeping `headroom` bytes free, or NULL where this
 * device cannot access pageable memory (CUDA build only: the host build has
 * no such device). */
static cmr_sam_headroom_resource *make(size_t headroom) {
  cmr_sam_headroom_resource *handle = NULL;
  cmr_clear_last_error();
  cmr_status status = cmr_sam_headroom_resource_create(headroom, &handle);
  if (CMR_WITH_CUDA && status == CMR_ERROR_UNSUPPORTED) {
    ck_assert_message_has("cudaDevAttrPageableMemoryAccess");
    ck_assert_ptr_null(handle);
    return NULL;
  }
  ck_assert_msg(status == CMR_SUCCESS, "sam_headroom_create: %s: %s", cmr_status_string(status),
                cmr_last_error_message());
  return handle;
}

START_TEST(test_memory_is_written_and_read_whole) {
  cmr_sam_headroom_resource *handle = make(0);
  if (handle == NULL) return; /* refused, and said why: checked in make() */
  cmr_resource_ref ref = cmr_sam_headroom_resource_ref(handle);
  unsigned properties = 0;
  ck_assert_ok(cmr_ref_properties(ref, &properties));
  ck_assert_uint_eq(properties, CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE);
  unsigned char *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, BLOCK, CMR_DEFAULT_STREAM, (void **)&ptr));
  for (size_t i = 0; i < BLOCK; i++) ptr[i] = (unsigned char)(i * 7u);
  size_t same = 0;
  while (same < BLOCK && ptr[same] == (unsigned char)(same * 7u)) same++;
  ck_assert_msg(same == BLOCK, "byte %zu of %d does not hold what was written", same, BLOCK);
  ck_assert_ok(cmr_deallocate(ref, ptr, BLOCK, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_sam_headroom_resource_destroy(handle));
}
END_TEST

START_TEST(test_resources_made_alike_free_each_others_blocks) {
  cmr_sam_headroom_resource *one = make(4096);
  if (one == NULL) return; /* refused, and said why: checked in make() */
  cmr_sam_headroom_resource *alike = make(4096), *other = make(8192);
  cmr_resource_ref a = cmr_sam_headroom_resource_ref(one), b = cmr_sam_headroom_resource_ref(alike);
  bool equal = false;
  ck_assert_ok(cmr_ref_equal(a, b, &equal));
  ck_assert(equal);
  ck_assert_ok(cmr_ref_equal(a, cmr_sam_headroom_resource_ref(other), &equal));
  ck_assert(!equal); /* another headroom is another resource */
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(a, 1000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(b, ptr, 1000, CMR_DEFAULT_STREAM));
  /* Freed once: the record is gone for both. */
  ck_assert_status(cmr_deallocate(a, ptr, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  cmr_test_destroy(one, alike, other);
}
END_TEST

static void sam_headroom_cases(Suite *suite) {
  cmr_test_case(suite, "memory", NULL, NULL, test_memory_is_written_and_read_whole,
                test_resources_made_alike_free_each_others_blocks);
}

int main(void) { return cmr_test_main_suite("sam_headroom", CMR_TEST_NEEDS_DEVICE, sam_headroom_cases); }
