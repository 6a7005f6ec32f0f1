/* SPDX-License-Identifier: Apache-2.0 */
/* The driver's pools in full, on a device (the H200): attributes read and
 * set after creation on every pool resource, trim, the device's own pools
 * (never destroyed by cmr), pinned host pools on their own and under every
 * suballocator and as the staging memory of buffer copies, and
 * registered_host's pinned mappings. Skips (77) without a device. */
#include <stdint.h>
#include <stdlib.h>

#include "backend.h"
#include "test_util.h"

enum { mib = 1 << 20 };

static cmr_cuda_async_resource *make_async(size_t release_threshold) {
  cmr_cuda_async_resource *async = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE(0), CMR_SIZE(release_threshold),
                                              CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE, CMR_SIZE_DEFAULT, &async));
  return async;
}

START_TEST(the_release_threshold_is_read_and_set_after_creation) {
  cmr_cuda_async_resource *async = make_async((size_t)64 * mib);
  size_t threshold = 0;
  ck_assert_ok(cmr_cuda_async_resource_release_threshold(async, &threshold));
  ck_assert_uint_eq(threshold, (size_t)64 * mib);
  ck_assert_ok(cmr_cuda_async_resource_set_release_threshold(async, (size_t)3 * mib));
  ck_assert_ok(cmr_cuda_async_resource_release_threshold(async, &threshold));
  ck_assert_uint_eq(threshold, (size_t)3 * mib);
  /* The driver's own reading agrees: the method reads the pool, not a copy. */
  void *pool = NULL;
  ck_assert_ok(cmr_cuda_async_resource_pool_handle(async, &pool));
  uint64_t driver = 0;
  ck_assert_ok(cmr_backend_pool_release_threshold(pool, &driver));
  ck_assert_uint_eq(driver, (uint64_t)3 * mib);
  ck_assert_ok(cmr_cuda_async_resource_destroy(async));
}
END_TEST

START_TEST(each_reuse_policy_is_read_and_set) {
  cmr_cuda_async_resource *async = make_async(SIZE_MAX);
  bool on = false;
  /* The driver's defaults: every policy on. */
  ck_assert_ok(cmr_cuda_async_resource_reuse_follow_event_dependencies(async, &on));
  ck_assert(on);
  ck_assert_ok(cmr_cuda_async_resource_reuse_allow_opportunistic(async, &on));
  ck_assert(on);
  ck_assert_ok(cmr_cuda_async_resource_reuse_allow_internal_dependencies(async, &on));
  ck_assert(on);
  ck_assert_ok(cmr_cuda_async_resource_set_reuse_follow_event_dependencies(async, false));
  ck_assert_ok(cmr_cuda_async_resource_set_reuse_allow_opportunistic(async, false));
  ck_assert_ok(cmr_cuda_async_resource_set_reuse_allow_internal_dependencies(async, false));
  ck_assert_ok(cmr_cuda_async_resource_reuse_follow_event_dependencies(async, &on));
  ck_assert(!on);
  ck_assert_ok(cmr_cuda_async_resource_reuse_allow_opportunistic(async, &on));
  ck_assert(!on);
  ck_assert_ok(cmr_cuda_async_resource_reuse_allow_internal_dependencies(async, &on));
  ck_assert(!on);
  /* Still allocates with every policy off. */
  void *ptr = NULL;
  cmr_resource_ref ref = cmr_cuda_async_resource_ref(async);
  ck_assert_ok(cmr_allocate(ref, mib, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, mib, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_cuda_async_resource_set_reuse_allow_opportunistic(async, true));
  ck_assert_ok(cmr_cuda_async_resource_reuse_allow_opportunistic(async, &on));
  ck_assert(on);
  ck_assert_ok(cmr_cuda_async_resource_destroy(async));
}
END_TEST

/* What the pool holds from the device, as the driver counts it (its
 * reserved memory): the device's free memory would also move with the
 * other processes on it. */
static size_t held_by(cmr_resource_ref ref) {
  cmr_stats stats = {.size = sizeof stats};
  ck_assert_ok(cmr_ref_stats(ref, &stats));
  ck_assert(stats.supported & CMR_STATS_BYTES_HELD);
  return stats.bytes_held;
}

START_TEST(trim_gives_unused_memory_back_to_the_device) {
  const size_t bytes = (size_t)512 * mib;
  cmr_cuda_async_resource *async = make_async(SIZE_MAX); /* keeps everything until trimmed */
  cmr_resource_ref ref = cmr_cuda_async_resource_ref(async);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, bytes, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, bytes, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
  const size_t kept = held_by(ref);
  ck_assert_msg(kept >= bytes, "the pool holds %zu bytes after a free of %zu at an unlimited threshold", kept, bytes);
  ck_assert_ok(cmr_cuda_async_resource_trim(async, 0));
  const size_t trimmed = held_by(ref);
  ck_assert_msg(trimmed + bytes <= kept, "the pool held %zu bytes before trim, %zu after: it kept them", kept, trimmed);
  ck_assert_ok(cmr_cuda_async_resource_destroy(async));
}
END_TEST

START_TEST(every_pool_resource_has_the_attribute_methods) {
  cmr_cuda_async_resource *async = make_async(SIZE_MAX);
  void *pool = NULL;
  ck_assert_ok(cmr_cuda_async_resource_pool_handle(async, &pool));
  cmr_cuda_async_view_resource *view = NULL;
  ck_assert_ok(cmr_cuda_async_view_resource_create(pool, &view));
  ck_assert_ok(cmr_cuda_async_view_resource_set_release_threshold(view, (size_t)5 * mib));
  size_t threshold = 0;
  ck_assert_ok(cmr_cuda_async_resource_release_threshold(async, &threshold)); /* one pool: the view's change shows */
  ck_assert_uint_eq(threshold, (size_t)5 * mib);
  ck_assert_ok(cmr_cuda_async_view_resource_trim(view, 0));
  bool on = false;
  ck_assert_ok(cmr_cuda_async_view_resource_reuse_allow_internal_dependencies(view, &on));
  ck_assert(on);
  cmr_test_destroy(view, async);

  cmr_pinned_host_pool_resource *pinned = NULL;
  ck_assert_ok(cmr_pinned_host_pool_resource_create(CMR_INT_DEFAULT, CMR_SIZE(0), CMR_SIZE((size_t)7 * mib), &pinned));
  ck_assert_ok(cmr_pinned_host_pool_resource_release_threshold(pinned, &threshold));
  ck_assert_uint_eq(threshold, (size_t)7 * mib);
  ck_assert_ok(cmr_pinned_host_pool_resource_trim(pinned, 0));
  ck_assert_ok(cmr_pinned_host_pool_resource_set_reuse_follow_event_dependencies(pinned, false));
  ck_assert_ok(cmr_pinned_host_pool_resource_reuse_follow_event_dependencies(pinned, &on));
  ck_assert(!on);
  ck_assert_ok(cmr_pinned_host_pool_resource_destroy(pinned));
}
END_TEST

START_TEST(the_device_pools_are_named_and_never_destroyed) {
  cmr_cuda_async_device_pool_resource *current = NULL, *initial = NULL;
  ck_assert_ok(cmr_cuda_async_device_pool_resource_create(CMR_CUDA_ASYNC_DEVICE_POOL_WHICH_POOL_CURRENT, &current));
  ck_assert_ok(
      cmr_cuda_async_device_pool_resource_create(CMR_CUDA_ASYNC_DEVICE_POOL_WHICH_POOL_DEVICE_DEFAULT, &initial));
  void *current_pool = NULL, *default_pool = NULL;
  ck_assert_ok(cmr_cuda_async_device_pool_resource_pool_handle(current, &current_pool));
  ck_assert_ok(cmr_cuda_async_device_pool_resource_pool_handle(initial, &default_pool));
  ck_assert_ptr_nonnull(default_pool);
  /* Nobody replaced the current pool in this process: it is the default one,
   * and two resources over one pool are equal. */
  ck_assert_ptr_eq(current_pool, default_pool);
  bool equal = false;
  ck_assert_ok(cmr_ref_equal(cmr_cuda_async_device_pool_resource_ref(current),
                             cmr_cuda_async_device_pool_resource_ref(initial), &equal));
  ck_assert(equal);
  cmr_resource_ref ref = cmr_cuda_async_device_pool_resource_ref(current);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, mib, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_backend_fill(ptr, 0x11, mib, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(ref, ptr, mib, CMR_DEFAULT_STREAM));
  cmr_test_destroy(current, initial);
  /* The pool outlives the resources: its attributes still read, and a new
   * resource over it still allocates. */
  uint64_t threshold = 0;
  ck_assert_ok(cmr_backend_pool_release_threshold(default_pool, &threshold));
  ck_assert_ok(cmr_cuda_async_device_pool_resource_create(CMR_CUDA_ASYNC_DEVICE_POOL_WHICH_POOL_CURRENT, &current));
  ref = cmr_cuda_async_device_pool_resource_ref(current);
  ck_assert_ok(cmr_allocate(ref, mib, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, mib, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_cuda_async_device_pool_resource_destroy(current));
}
END_TEST

/* Host writes, a device round trip through a device buffer, host reads:
 * the memory at `ptr` is pinned host memory the device reaches. */
static void check_pinned(void *ptr, size_t bytes) {
  unsigned char *host = ptr;
  for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(i * 7);
  cmr_cuda_resource *cuda = NULL;
  ck_assert_ok(cmr_cuda_resource_create(&cuda));
  cmr_device_buffer *buffer = NULL;
  /* The buffer's copies stage through the pinned memory. */
  ck_assert_ok(cmr_device_buffer_create_copy(ptr, bytes, CMR_DEFAULT_STREAM, cmr_cuda_resource_ref(cuda), &buffer));
  ck_assert_ok(cmr_backend_fill(ptr, 0, bytes, CMR_DEFAULT_STREAM)); /* a device write into the host memory */
  ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(host[bytes - 1], 0);
  ck_assert_ok(cmr_device_buffer_copy_to_host(buffer, ptr, bytes));
  for (size_t i = 0; i < bytes; i++) ck_assert_uint_eq(host[i], (unsigned char)(i * 7));
  cmr_test_destroy(buffer, cuda);
}

/* A pinned host pool's properties and memory, then the pool destroyed. */
static void check_pinned_pool(cmr_pinned_host_pool_resource *pinned) {
  cmr_resource_ref ref = cmr_pinned_host_pool_resource_ref(pinned);
  unsigned properties = 0;
  ck_assert_ok(cmr_ref_properties(ref, &properties));
  ck_assert_uint_eq(properties, CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, mib, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
  check_pinned(ptr, mib);
  ck_assert_ok(cmr_deallocate(ref, ptr, mib, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_pinned_host_pool_resource_destroy(pinned));
}

START_TEST(a_pinned_host_pool_serves_host_and_device) {
  cmr_pinned_host_pool_resource *pinned = NULL;
  ck_assert_ok(
      cmr_pinned_host_pool_resource_create(CMR_INT_DEFAULT, CMR_SIZE((size_t)8 * mib), CMR_SIZE_DEFAULT, &pinned));
  check_pinned_pool(pinned);
}
END_TEST

START_TEST(a_pinned_host_pool_on_numa_node_zero) {
  /* Node 0 exists on every Linux host; a device without host NUMA pools
   * refuses it by name. */
  cmr_pinned_host_pool_resource *pinned = NULL;
  cmr_clear_last_error();
  cmr_status status = cmr_pinned_host_pool_resource_create(CMR_INT(0), CMR_SIZE(0), CMR_SIZE_DEFAULT, &pinned);
  if (status == CMR_ERROR_UNSUPPORTED) {
    ck_assert_message_has("cudaDevAttrHostNumaMemoryPoolsSupported");
    ck_assert_ptr_null(pinned);
    return;
  }
  ck_assert_ok(status);
  check_pinned_pool(pinned);
}
END_TEST

/* One suballocator over the pinned pool: allocate, use from host and device, free. */
static void check_suballocator(cmr_resource_ref ref, const char *name) {
  void *ptr = NULL;
  cmr_status status = cmr_allocate(ref, 64 * 1024, CMR_DEFAULT_STREAM, &ptr);
  ck_assert_msg(status == CMR_SUCCESS, "%s over pinned_host_pool: %s", name, cmr_last_error_message());
  ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
  check_pinned(ptr, 64 * 1024);
  ck_assert_ok(cmr_deallocate(ref, ptr, 64 * 1024, CMR_DEFAULT_STREAM));
}

START_TEST(every_suballocator_runs_over_a_pinned_host_pool) {
  cmr_pinned_host_pool_resource *pinned = NULL;
  ck_assert_ok(cmr_pinned_host_pool_resource_create(CMR_INT_DEFAULT, CMR_SIZE(0), CMR_SIZE_DEFAULT, &pinned));
  cmr_resource_ref upstream = cmr_pinned_host_pool_resource_ref(pinned);
  cmr_pool_resource *pool = cmr_test_pool(upstream, (size_t)4 * mib);
  check_suballocator(cmr_pool_resource_ref(pool), "pool");
  cmr_arena_resource *arena = NULL;
  ck_assert_ok(
      cmr_arena_resource_create(upstream, CMR_SIZE((size_t)4 * mib), false, "", CMR_ARENA_CAPTURE_SERVE, &arena));
  check_suballocator(cmr_arena_resource_ref(arena), "arena");
  cmr_binning_resource *binning = NULL;
  ck_assert_ok(cmr_binning_resource_create(upstream, CMR_INT_DEFAULT, CMR_INT_DEFAULT, &binning));
  check_suballocator(cmr_binning_resource_ref(binning), "binning");
  cmr_fixed_size_resource *fixed = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(upstream, CMR_SIZE(64 * 1024), CMR_SIZE_DEFAULT,
                                              CMR_FIXED_SIZE_CAPTURE_SERVE, &fixed));
  check_suballocator(cmr_fixed_size_resource_ref(fixed), "fixed_size");
  cmr_test_destroy(fixed, binning, arena, pool, pinned);
}
END_TEST

START_TEST(registered_host_memory_is_pinned) {
  cmr_registered_host_resource *registered = NULL;
  ck_assert_ok(
      cmr_registered_host_resource_create(CMR_INT(4), CMR_REGISTERED_HOST_HUGE_PAGES_TRANSPARENT, &registered));
  cmr_resource_ref ref = cmr_registered_host_resource_ref(registered);
  const size_t bytes = (size_t)80 * mib; /* touched by the four threads */
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, bytes, CMR_DEFAULT_STREAM, &ptr));
  check_pinned(ptr, 4 * mib);
  ck_assert_ok(cmr_backend_fill(ptr, 0x3c, bytes, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(((unsigned char *)ptr)[bytes - 1], 0x3c);
  ck_assert_ok(cmr_deallocate(ref, ptr, bytes, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_registered_host_resource_destroy(registered));
}
END_TEST

START_TEST(stack_expressions_make_the_new_pools) {
  cmr_resource_ref ref;
  cmr_stack *stack =
      cmr_test_stack("pool(pinned_host_pool(numa_node=-1, initial_pool_size=2MiB), initial_pool_size=1MiB)", &ref);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM));
  memset(ptr, 1, 4096); /* host memory */
  ck_assert_ok(cmr_deallocate(ref, ptr, 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_stack_destroy(stack));
  stack = cmr_test_stack("cuda_async_device_pool(which_pool=device_default)", NULL);
  ck_assert_str_eq(cmr_test_expression(stack), "cuda_async_device_pool(which_pool=device_default)");
  ck_assert_ok(cmr_stack_destroy(stack));
}
END_TEST

static void driver_pools_cases(Suite *suite) {
  cmr_test_case(suite, "attributes", NULL, NULL, the_release_threshold_is_read_and_set_after_creation,
                each_reuse_policy_is_read_and_set, trim_gives_unused_memory_back_to_the_device,
                every_pool_resource_has_the_attribute_methods);
  cmr_test_case(suite, "device_pools", NULL, NULL, the_device_pools_are_named_and_never_destroyed,
                stack_expressions_make_the_new_pools);
  cmr_test_case(suite, "pinned", NULL, NULL, a_pinned_host_pool_serves_host_and_device,
                a_pinned_host_pool_on_numa_node_zero, every_suballocator_runs_over_a_pinned_host_pool,
                registered_host_memory_is_pinned);
}

int main(void) { return cmr_test_main_suite("driver_pools_gpu", CMR_TEST_NEEDS_DEVICE, driver_pools_cases); }
