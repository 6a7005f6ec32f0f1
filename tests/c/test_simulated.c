/* SPDX-License-Identifier: Apache-2.0 */
/* simulated beyond the battery: the capacity, the counters, addresses that
 * no real memory has, frees it refuses, and a pool deciding over it. */
#include <stdint.h>

#include <cmr/stack.h>

#include "test_util.h"

CMR_TEST_OUT(make, cmr_simulated_resource *, NULL, cmr_simulated_resource_create, cmr_optional_size)

static void *take(cmr_simulated_resource *handle, size_t bytes) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_simulated_resource_ref(handle), bytes, CMR_DEFAULT_STREAM, &ptr));
  return ptr;
}

CMR_TEST_OUT(bytes_in_use, size_t, SIZE_MAX, cmr_simulated_resource_bytes_in_use, cmr_simulated_resource *)
CMR_TEST_OUT(peak_bytes_in_use, size_t, SIZE_MAX, cmr_simulated_resource_peak_bytes_in_use, cmr_simulated_resource *)
CMR_TEST_OUT(allocation_count, size_t, SIZE_MAX, cmr_simulated_resource_allocation_count, cmr_simulated_resource *)
CMR_TEST_OUT(deallocation_count, size_t, SIZE_MAX, cmr_simulated_resource_deallocation_count, cmr_simulated_resource *)

START_TEST(test_counters_follow_allocations) {
  cmr_simulated_resource *handle = make(CMR_SIZE_DEFAULT);
  void *a = take(handle, 1000);
  void *b = take(handle, 3000);
  ck_assert_uint_eq(bytes_in_use(handle), 4000);
  ck_assert_ok(cmr_deallocate(cmr_simulated_resource_ref(handle), a, 1000, CMR_DEFAULT_STREAM));
  void *c = take(handle, 500);
  ck_assert_uint_eq(bytes_in_use(handle), 3500);
  ck_assert_uint_eq(peak_bytes_in_use(handle), 4000);
  ck_assert_uint_eq(allocation_count(handle), 3);
  ck_assert_uint_eq(deallocation_count(handle), 1);
  /* A bump pointer: every address is new, in order, 256-aligned. */
  ck_assert((uintptr_t)b >= (uintptr_t)a + 1000 && (uintptr_t)c >= (uintptr_t)b + 3000);
  ck_assert_uint_eq((uintptr_t)c % 256, 0);
  ck_assert_uint_ge((uintptr_t)a, (uintptr_t)1 << 62);
  ck_assert_ok(cmr_simulated_resource_destroy(handle));
}
END_TEST

START_TEST(test_capacity_bounds_bytes_in_use) {
  cmr_simulated_resource *handle = make(CMR_SIZE(4096));
  cmr_resource_ref ref = cmr_simulated_resource_ref(handle);
  void *a = take(handle, 4096), *ptr = (void *)1;
  ck_assert_status(cmr_allocate(ref, 1, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("capacity 4096");
  ck_assert_ptr_null(ptr);
  /* The capacity limits bytes in use, not addresses: after a free it serves again. */
  ck_assert_ok(cmr_deallocate(ref, a, 4096, CMR_DEFAULT_STREAM));
  void *b = take(handle, 4096);
  ck_assert((uintptr_t)b > (uintptr_t)a);
  ck_assert_uint_eq(allocation_count(handle), 2);
  ck_assert_ok(cmr_simulated_resource_destroy(handle));
}
END_TEST

START_TEST(test_large_alignment) {
  cmr_simulated_resource *handle = make(CMR_SIZE_DEFAULT);
  cmr_resource_ref ref = cmr_simulated_resource_ref(handle);
  void *ptr = NULL;
  take(handle, 10);
  ck_assert_ok(cmr_allocate_aligned(ref, 10, (size_t)1 << 40, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_uint_eq((uintptr_t)ptr % ((uintptr_t)1 << 40), 0);
  ck_assert_status(cmr_allocate_aligned(ref, 10, (size_t)1 << 62, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("larger than the simulated range");
  ck_assert_ok(cmr_simulated_resource_destroy(handle));
}
END_TEST

START_TEST(test_refused_frees_change_nothing) {
  cmr_simulated_resource *handle = make(CMR_SIZE_DEFAULT);
  cmr_resource_ref ref = cmr_simulated_resource_ref(handle);
  void *a = take(handle, 1000);
  int local;
  ck_assert_status(cmr_deallocate(ref, &local, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("was not allocated by this resource");
  ck_assert_status(cmr_deallocate(ref, (char *)a + 4096, 10, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_status(cmr_deallocate(ref, (char *)a + 256, 10, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_status(cmr_deallocate(ref, a, 1001, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("allocated with 1000 bytes, not 1001");
  ck_assert_status(cmr_deallocate(ref, a, 999, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_uint_eq(bytes_in_use(handle), 1000);
  ck_assert_uint_eq(deallocation_count(handle), 0);
  ck_assert_ok(cmr_deallocate(ref, a, 1000, CMR_DEFAULT_STREAM));
  ck_assert_status(cmr_deallocate(ref, a, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_uint_eq(bytes_in_use(handle), 0);
  ck_assert_uint_eq(deallocation_count(handle), 1);
  ck_assert_ok(cmr_simulated_resource_destroy(handle));
}
END_TEST

START_TEST(test_bad_arguments) {
  cmr_simulated_resource *handle = NULL;
  ck_assert_status(cmr_simulated_resource_create(CMR_SIZE(0), &handle), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("capacity");
  ck_assert_status(cmr_simulated_resource_create(CMR_SIZE(4096), NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(test_pool_over_simulated) {
  /* The pool keeps its bookkeeping in host memory, so it can run over
   * addresses that have none; the simulated peak is what the pool held. No
   * initial size: taking one synchronizes a stream, which a CUDA build
   * without a GPU cannot. */
  cmr_simulated_resource *leaf = make(CMR_SIZE((size_t)1 << 30));
  cmr_pool_resource *pool = cmr_test_pool(cmr_simulated_resource_ref(leaf), 0);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *ptrs[8];
  for (int i = 0; i < 8; ++i) ck_assert_ok(cmr_allocate(ref, (size_t)1 << 19, CMR_DEFAULT_STREAM, &ptrs[i]));
  size_t held = 0;
  ck_assert_ok(cmr_pool_resource_pool_size(pool, &held));
  ck_assert_uint_eq(peak_bytes_in_use(leaf), held);
  for (int i = 0; i < 8; ++i) ck_assert_ok(cmr_deallocate(ref, ptrs[i], (size_t)1 << 19, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
  ck_assert_uint_eq(bytes_in_use(leaf), 0);
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
}
END_TEST

START_TEST(test_leaf_of_a_stack) {
  /* cmr-replay reads a simulated leaf's peak through cmr_stack_leaf. */
  cmr_resource_ref leaf, top;
  cmr_stack *stack = cmr_test_stack("pool(simulated(capacity=1GiB), initial_pool_size=0)", &top);
  ck_assert_ok(cmr_stack_leaf(stack, &leaf));
  cmr_simulated_resource *simulated = NULL;
  ck_assert_ok(cmr_simulated_resource_from_ref(leaf, &simulated));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(top, 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_uint_ge(peak_bytes_in_use(simulated), 4096);
  ck_assert_ok(cmr_deallocate(top, ptr, 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_simulated_resource_destroy(simulated));
  ck_assert_status(cmr_stack_leaf(stack, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_stack_destroy(stack));
  ck_assert_status(cmr_stack_leaf(NULL, &leaf), CMR_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(test_copies_refused) {
  /* Its addresses have no bytes behind them: a buffer over it may be made,
   * sized and freed, but every copy into or out of it is refused (on the
   * host a copy would fault), and a refused resize leaves the buffer as it was. */
  cmr_simulated_resource *leaf = make(CMR_SIZE((size_t)1 << 30));
  cmr_resource_ref ref = cmr_simulated_resource_ref(leaf);
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(64, CMR_DEFAULT_STREAM, ref, &buffer));
  char host[64] = {0};
  ck_assert_status(cmr_device_buffer_copy_from(buffer, host, sizeof host), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("simulated");
  ck_assert_status(cmr_device_buffer_copy_to_host(buffer, host, sizeof host), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("simulated");
  void *data = NULL;
  ck_assert_ok(cmr_device_buffer_data(buffer, &data));
  ck_assert_status(cmr_device_buffer_resize(buffer, 1 << 20, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  size_t size = 0;
  void *after = NULL;
  ck_assert_ok(cmr_device_buffer_size(buffer, &size));
  ck_assert_ok(cmr_device_buffer_data(buffer, &after));
  ck_assert_uint_eq(size, 64);
  ck_assert_ptr_eq(after, data);
  ck_assert_uint_eq(bytes_in_use(leaf), 64); /* the refused move's memory went back */
  ck_assert_status(cmr_memcpy(host, data, 8, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_memcpy");
  ck_assert_status(cmr_memcpy(data, host, 8, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 0, CMR_DEFAULT_STREAM)); /* nothing kept, nothing copied */
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  cmr_device_buffer *copy = NULL;
  ck_assert_status(cmr_device_buffer_create_copy(host, sizeof host, CMR_DEFAULT_STREAM, ref, &copy),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_null(copy);
  ck_assert_ok(cmr_stream_synchronize(CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(bytes_in_use(leaf), 0);
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
}
END_TEST

static void simulated_cases(Suite *suite) {
  cmr_test_case(suite, "simulated", NULL, NULL, test_counters_follow_allocations, test_capacity_bounds_bytes_in_use,
                test_large_alignment, test_refused_frees_change_nothing, test_bad_arguments, test_pool_over_simulated,
                test_leaf_of_a_stack);
  /* A buffer enters its device. */
  tcase_set_tags(cmr_test_case(suite, "copies", NULL, NULL, test_copies_refused), CMR_TEST_DEVICE_TAG);
}

int main(void) { return cmr_test_main_suite("simulated", CMR_TEST_ANY_MACHINE, simulated_cases); }
