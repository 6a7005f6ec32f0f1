/* SPDX-License-Identifier: Apache-2.0 */
/* Pre-touched host mappings (host_pages.h) and registered_host over them,
 * on plain host memory: every page present before first use (mincore),
 * touched by several threads, huge-page alignment, the reserved pages'
 * fallback, the spans freed; the resource's frees vouched for (its own
 * entry, resources.registered_host.device, which in the CUDA build needs
 * a device: it pins the mappings). */
#define _DEFAULT_SOURCE /* mincore */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host_pages.h"
#include "test_util.h"

/* Above the size from which mappings are touched in parallel. */
static const size_t large = (size_t)72 << 20;

/* Whether every base page of [ptr, ptr + bytes) is resident. */
static bool all_resident(void *ptr, size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t pages = (bytes + page - 1) / page;
  unsigned char *residency = malloc(pages);
  ck_assert_ptr_nonnull(residency);
  ck_assert_int_eq(mincore(ptr, bytes, residency), 0);
  bool all = true;
  for (size_t i = 0; i < pages && all; i++) all = (residency[i] & 1) != 0;
  free(residency);
  return all;
}

START_TEST(every_page_is_present_before_first_use) {
  const cmr_host_pages_huge modes[] = {CMR_HOST_PAGES_TRANSPARENT, CMR_HOST_PAGES_RESERVED, CMR_HOST_PAGES_BASE};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    void *ptr = NULL;
    cmr_host_pages_made made;
    ck_assert_ok(cmr_host_pages_map("test", large + 12345, modes[m], 4, &ptr, &made));
    const size_t span = cmr_host_pages_span(large + 12345, modes[m]);
    ck_assert_msg(all_resident(ptr, span), "mode %zu: a page was not touched", m);
    unsigned char *bytes = ptr;
    ck_assert_uint_eq(bytes[0], 0);
    ck_assert_uint_eq(bytes[span - 1], 0);
    bytes[span / 2] = 0xab;
    ck_assert_uint_eq(bytes[span / 2], 0xab);
    if (modes[m] == CMR_HOST_PAGES_BASE) ck_assert(!made.reserved && !made.advised);
    if (modes[m] != CMR_HOST_PAGES_RESERVED) ck_assert(!made.reserved);
    cmr_host_pages_unmap(ptr, large + 12345, modes[m]);
  }
}
END_TEST

START_TEST(huge_page_mappings_start_on_a_huge_page) {
  for (int i = 0; i < 4; i++) {
    void *ptr = NULL;
    cmr_host_pages_made made;
    ck_assert_ok(cmr_host_pages_map("test", (size_t)(i + 1) << 20, CMR_HOST_PAGES_TRANSPARENT, 0, &ptr, &made));
    ck_assert_uint_eq((uintptr_t)ptr % CMR_HOST_PAGES_HUGE_BYTES, 0);
    ck_assert(!made.reserved);
    cmr_host_pages_unmap(ptr, (size_t)(i + 1) << 20, CMR_HOST_PAGES_TRANSPARENT);
  }
}
END_TEST

START_TEST(spans_round_to_the_page_their_mode_uses) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  ck_assert_uint_eq(cmr_host_pages_span(1, CMR_HOST_PAGES_BASE), page);
  ck_assert_uint_eq(cmr_host_pages_span(page + 1, CMR_HOST_PAGES_BASE), 2 * page);
  ck_assert_uint_eq(cmr_host_pages_span(1, CMR_HOST_PAGES_TRANSPARENT), CMR_HOST_PAGES_HUGE_BYTES);
  ck_assert_uint_eq(cmr_host_pages_span(CMR_HOST_PAGES_HUGE_BYTES + 1, CMR_HOST_PAGES_RESERVED),
                    2 * (size_t)CMR_HOST_PAGES_HUGE_BYTES);
  ck_assert_uint_eq(cmr_host_pages_span(SIZE_MAX - 10, CMR_HOST_PAGES_BASE), 0);
  void *ptr = (void *)&ptr;
  cmr_host_pages_made made;
  ck_assert_status(cmr_host_pages_map("test", SIZE_MAX - 10, CMR_HOST_PAGES_BASE, 0, &ptr, &made),
                   CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_message_has("test:");
}
END_TEST

START_TEST(the_threads_follow_the_size_and_the_request) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int expected = online < 1 ? 1 : online > 16 ? 16 : (int)online;
  ck_assert_int_eq(cmr_host_pages_threads(large, 0), expected);
  ck_assert_int_eq(cmr_host_pages_threads(large, 5), 5);
  ck_assert_int_eq(cmr_host_pages_threads(large, 1000), 256);
  ck_assert_int_eq(cmr_host_pages_threads((size_t)1 << 20, 8), 1); /* small: the caller alone */
}
END_TEST

START_TEST(an_address_space_too_small_is_out_of_memory) {
  void *ptr = (void *)&ptr;
  cmr_host_pages_made made;
  /* More than any x86-64 or AArch64 address space holds. */
  ck_assert_status(cmr_host_pages_map("test", (size_t)1 << 62, CMR_HOST_PAGES_TRANSPARENT, 0, &ptr, &made),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("test: mmap");
}
END_TEST

START_TEST(the_resource_hands_out_touched_memory_and_vouches_for_frees) {
  cmr_registered_host_resource *handle = NULL;
  ck_assert_ok(cmr_registered_host_resource_create(CMR_INT(3), CMR_REGISTERED_HOST_HUGE_PAGES_RESERVED, &handle));
  cmr_resource_ref ref = cmr_registered_host_resource_ref(handle);
  unsigned properties = 0;
  ck_assert_ok(cmr_ref_properties(ref, &properties));
  ck_assert_uint_eq(properties, CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_aligned(ref, large, 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert(all_resident(ptr, large));
  memset(ptr, 0x5a, large);
  ck_assert_status(cmr_deallocate(ref, ptr, large - 1, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_deallocate(ref, (char *)ptr + 4096, large, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  /* Another resource of the type did not hand it out. */
  cmr_registered_host_resource *other = NULL;
  ck_assert_ok(cmr_registered_host_resource_create(CMR_INT_DEFAULT, CMR_REGISTERED_HOST_HUGE_PAGES_NONE, &other));
  bool equal = true;
  ck_assert_ok(cmr_ref_equal(ref, cmr_registered_host_resource_ref(other), &equal));
  ck_assert(!equal);
  ck_assert_status(cmr_deallocate(cmr_registered_host_resource_ref(other), ptr, large, CMR_DEFAULT_STREAM),
                   CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_ok(cmr_deallocate(ref, ptr, large, CMR_DEFAULT_STREAM));
  ck_assert_status(cmr_allocate_aligned(ref, 4096, 8192, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  cmr_test_destroy(other, handle);
}
END_TEST

START_TEST(a_pool_over_it_starts_with_its_memory_touched) {
  cmr_registered_host_resource *leaf = NULL;
  ck_assert_ok(cmr_registered_host_resource_create(CMR_INT_DEFAULT, CMR_REGISTERED_HOST_HUGE_PAGES_TRANSPARENT, &leaf));
  cmr_pool_resource *pool = cmr_test_pool(cmr_registered_host_resource_ref(leaf), large);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, large / 2, CMR_DEFAULT_STREAM, &ptr));
  ck_assert(all_resident(ptr, large / 2));
  ck_assert_ok(cmr_deallocate(ref, ptr, large / 2, CMR_DEFAULT_STREAM));
  cmr_test_destroy(pool, leaf);
}
END_TEST

START_TEST(a_stack_expression_makes_it) {
  cmr_resource_ref ref;
  cmr_stack *stack =
      cmr_test_stack("pool(registered_host(touch_threads=2, huge_pages=none), initial_pool_size=4MiB)", &ref);
  ck_assert_str_eq(cmr_test_expression(stack),
                   "pool(registered_host(touch_threads=2, huge_pages=none), initial_pool_size=4MiB, "
                   "maximum_pool_size=unlimited, maximum_growth=unlimited, capture=serve)");
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_stack_destroy(stack));
  cmr_test_stack_refused("registered_host(huge_pages=gigantic)", CMR_ERROR_INVALID_ARGUMENT, "huge_pages");
#if !CMR_WITH_CUDA
  /* The driver's pools are the CUDA build's. */
  ck_assert_status(cmr_stack_parse("pinned_host_pool(numa_node=0)", &stack), CMR_ERROR_UNSUPPORTED);
  ck_assert_status(cmr_stack_parse("cuda_async_device_pool(which_pool=device_default)", &stack), CMR_ERROR_UNSUPPORTED);
#endif
}
END_TEST

static void registered_host_cases(Suite *suite) {
  cmr_test_case(suite, "host_pages", NULL, NULL, every_page_is_present_before_first_use,
                huge_page_mappings_start_on_a_huge_page, spans_round_to_the_page_their_mode_uses,
                the_threads_follow_the_size_and_the_request, an_address_space_too_small_is_out_of_memory);
  /* The CUDA build pins what it hands out: a device case there. */
  tcase_set_tags(
      cmr_test_case(suite, "resource", NULL, NULL, the_resource_hands_out_touched_memory_and_vouches_for_frees,
                    a_pool_over_it_starts_with_its_memory_touched, a_stack_expression_makes_it),
      CMR_TEST_DEVICE_TAG);
}

int main(void) { return cmr_test_main_suite("registered_host", CMR_TEST_ANY_MACHINE, registered_host_cases); }
