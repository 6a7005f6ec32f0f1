/* SPDX-License-Identifier: Apache-2.0 */
/* The backend's memory primitives a resource may call (resource_api/backend.h):
 * cmr_backend_fill on the memory of the current device's resource (the
 * device's in the CUDA build, read back with cmr_backend_copy; host memory
 * in the host build), virtual memory (reserved, committed in pieces and
 * decommitted a granule at a time), and, in the host build, a fill and a
 * commit that fail. */
#include <stdint.h>

#include "backend.h"
#include "test_util.h"

enum { BLOCK = 4096 };

/* A block of the current device's resource, and the ref it came from. */
static void *take(cmr_resource_ref *ref) {
  ck_assert_ok(cmr_get_current_device_resource_ref(ref));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(*ref, BLOCK, CMR_DEFAULT_STREAM, &ptr));
  return ptr;
}

/* Every byte of `bytes` at `ptr` (device memory in the CUDA build) is
 * `byte`, read back a block at a time. */
static void expect_bytes(const void *ptr, size_t bytes, unsigned char byte) {
  static unsigned char host[BLOCK];
  for (size_t done = 0; done < bytes; done += BLOCK) {
    size_t piece = bytes - done < BLOCK ? bytes - done : BLOCK;
    ck_assert_ok(cmr_backend_copy(host, (const char *)ptr + done, piece, CMR_DEFAULT_STREAM));
    ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
    for (size_t i = 0; i < piece; i++) {
      ck_assert_msg(host[i] == byte, "byte %zu is %#x, expected %#x", done + i, host[i], byte);
    }
  }
}

START_TEST(test_fill_sets_every_byte) {
  cmr_resource_ref ref;
  unsigned char *ptr = take(&ref);
  ck_assert_ok(cmr_backend_fill(ptr, 0xa5, BLOCK, CMR_DEFAULT_STREAM));
  expect_bytes(ptr, BLOCK, 0xa5);
  /* A part of the block: what lies around it keeps its bytes. */
  ck_assert_ok(cmr_backend_fill(ptr + 256, 0x00, 512, CMR_DEFAULT_STREAM));
  expect_bytes(ptr, 256, 0xa5);
  expect_bytes(ptr + 256, 512, 0x00);
  expect_bytes(ptr + 768, BLOCK - 768, 0xa5);
  ck_assert_ok(cmr_deallocate(ref, ptr, BLOCK, CMR_DEFAULT_STREAM));
}
END_TEST

START_TEST(test_fill_of_nothing_is_a_no_op) {
  cmr_resource_ref ref;
  unsigned char *ptr = take(&ref);
  ck_assert_ok(cmr_backend_fill(ptr, 0x11, BLOCK, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_backend_fill(ptr, 0x22, 0, CMR_DEFAULT_STREAM));
  expect_bytes(ptr, BLOCK, 0x11);
  ck_assert_ok(cmr_deallocate(ref, ptr, BLOCK, CMR_DEFAULT_STREAM));
}
END_TEST

/* No bytes: nothing is written, nothing is asked of a device. */
START_TEST(test_fill_of_no_bytes_touches_no_memory) {
  ck_assert_ok(cmr_backend_fill(NULL, 0x22, 0, CMR_DEFAULT_STREAM));
}
END_TEST

/* Memory committed in one call is decommitted a granule at a time, and
 * committed again, each granule holding what was written to it. */
START_TEST(test_virtual_memory_commits_and_decommits_granules) {
  size_t granule = 0;
  ck_assert_ok(cmr_backend_vm_granularity(-1, &granule));
  ck_assert_uint_gt(granule, 0);
  char *base = NULL;
  ck_assert_ok(cmr_backend_vm_reserve(-1, 4 * granule, (void **)&base));
  ck_assert_ptr_nonnull(base);
  ck_assert_uint_eq((uintptr_t)base % granule, 0);
  ck_assert_ok(cmr_backend_vm_commit(-1, base + granule, 2 * granule));
  ck_assert_ok(cmr_backend_fill(base + granule, 0x5a, 2 * granule, CMR_DEFAULT_STREAM));
  expect_bytes(base + granule, 2 * granule, 0x5a);
  ck_assert_ok(cmr_backend_vm_decommit(-1, base + granule, granule));
  expect_bytes(base + 2 * granule, granule, 0x5a); /* its neighbour, committed in the same call, stays */
  ck_assert_ok(cmr_backend_vm_commit(-1, base, 2 * granule));
  ck_assert_ok(cmr_backend_fill(base, 0x6b, 2 * granule, CMR_DEFAULT_STREAM));
  expect_bytes(base, 2 * granule, 0x6b);
  expect_bytes(base + 2 * granule, granule, 0x5a);
  ck_assert_ok(cmr_backend_vm_decommit(-1, base, 3 * granule));
  ck_assert_ok(cmr_backend_vm_unreserve(base, 4 * granule));
}
END_TEST

#if !CMR_WITH_CUDA
/* Committed memory decommitted and committed again reads zero: its pages
 * went back to the kernel. */
START_TEST(test_decommitted_memory_comes_back_zeroed) {
  size_t granule = 0;
  ck_assert_ok(cmr_backend_vm_granularity(-1, &granule));
  char *base = NULL;
  ck_assert_ok(cmr_backend_vm_reserve(-1, granule, (void **)&base));
  ck_assert_ok(cmr_backend_vm_commit(-1, base, granule));
  memset(base, 0x7c, granule);
  ck_assert_ok(cmr_backend_vm_decommit(-1, base, granule));
  ck_assert_ok(cmr_backend_vm_commit(-1, base, granule));
  for (size_t i = 0; i < granule; i++) ck_assert_uint_eq((unsigned char)base[i], 0);
  ck_assert_ok(cmr_backend_vm_decommit(-1, base, granule));
  ck_assert_ok(cmr_backend_vm_unreserve(base, granule));
}
END_TEST

/* A failed commit names the driver call it stands for; the next succeeds. */
START_TEST(test_failed_commit_reports_the_call) {
  size_t granule = 0;
  ck_assert_ok(cmr_backend_vm_granularity(-1, &granule));
  char *base = NULL;
  ck_assert_ok(cmr_backend_vm_reserve(-1, granule, (void **)&base));
  cmr_backend_host_fail_call(CMR_BACKEND_HOST_VM_COMMIT, 1);
  ck_assert_status(cmr_backend_vm_commit(-1, base, granule), CMR_ERROR_CUDA);
  ck_assert_message_has("cuMemCreate");
  ck_assert_ok(cmr_backend_vm_commit(-1, base, granule));
  base[0] = 1;
  ck_assert_ok(cmr_backend_vm_decommit(-1, base, granule));
  ck_assert_ok(cmr_backend_vm_unreserve(base, granule));
}
END_TEST

/* A failed fill reports the CUDA call it stands for and writes nothing. */
START_TEST(test_failed_fill_writes_nothing) {
  unsigned char block[BLOCK];
  memset(block, 0x33, sizeof block);
  cmr_backend_host_fail_call(CMR_BACKEND_HOST_FILL, 1);
  ck_assert_status(cmr_backend_fill(block, 0x44, sizeof block, CMR_DEFAULT_STREAM), CMR_ERROR_CUDA);
  ck_assert_message_has("cudaMemsetAsync");
  for (size_t i = 0; i < sizeof block; i++) ck_assert_uint_eq(block[i], 0x33);
  /* The next one succeeds again. */
  ck_assert_ok(cmr_backend_fill(block, 0x44, sizeof block, CMR_DEFAULT_STREAM));
  for (size_t i = 0; i < sizeof block; i++) ck_assert_uint_eq(block[i], 0x44);
}
END_TEST
#endif

static void backend_cases(Suite *suite) {
  tcase_set_tags(cmr_test_case(suite, "fill", NULL, NULL, test_fill_sets_every_byte, test_fill_of_nothing_is_a_no_op),
                 CMR_TEST_DEVICE_TAG);
  cmr_test_case(suite, "fill_nothing", NULL, NULL, test_fill_of_no_bytes_touches_no_memory);
  tcase_set_tags(cmr_test_case(suite, "virtual_memory", NULL, NULL, test_virtual_memory_commits_and_decommits_granules),
                 CMR_TEST_DEVICE_TAG);
#if !CMR_WITH_CUDA
  cmr_test_case(suite, "host_faults", NULL, NULL, test_failed_fill_writes_nothing, test_failed_commit_reports_the_call);
  cmr_test_case(suite, "host_virtual_memory", NULL, NULL, test_decommitted_memory_comes_back_zeroed);
#endif
}

int main(void) { return cmr_test_main_suite("backend", CMR_TEST_ANY_MACHINE, backend_cases); }
