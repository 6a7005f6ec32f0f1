/* SPDX-License-Identifier: Apache-2.0 */
/* The prefetch adaptor on a device: managed memory it hands out has been
 * prefetched to the current device on the allocation's stream, and device
 * memory passes through. The driver is asked directly (where the range was
 * last prefetched to), which cmr itself never does outside its backend. */
#include "test_cuda.h"

enum { block_bytes = 1 << 20 };

static int last_prefetch_location(const void *ptr) {
  int location = 12345;
  ck_assert_cuda(cudaMemRangeGetAttribute(&location, sizeof location, cudaMemRangeAttributeLastPrefetchLocation, ptr,
                                          block_bytes));
  return location;
}

START_TEST(managed_memory_is_prefetched_to_the_current_device) {
  int device = -1;
  ck_assert_ok(cmr_current_device(&device));
  cmr_managed_resource *managed = NULL;
  ck_assert_ok(cmr_managed_resource_create(&managed));
  cmr_prefetch_resource *prefetch = NULL;
  ck_assert_ok(cmr_prefetch_resource_create(cmr_managed_resource_ref(managed), &prefetch));
  cmr_stream stream = cmr_test_stream();

  /* Without the adaptor, nothing prefetches it. */
  void *plain = NULL;
  ck_assert_ok(cmr_allocate(cmr_managed_resource_ref(managed), block_bytes, stream, &plain));
  ck_assert_int_eq(last_prefetch_location(plain), cudaInvalidDeviceId);

  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_prefetch_resource_ref(prefetch), block_bytes, stream, &ptr));
  ck_assert_ok(cmr_stream_synchronize(stream));
  ck_assert_int_eq(last_prefetch_location(ptr), device);
  /* Still ordinary managed memory: the host reads what it wrote. */
  memset(ptr, 0x42, block_bytes);
  ck_assert_uint_eq(((unsigned char *)ptr)[block_bytes - 1], 0x42);

  ck_assert_ok(cmr_deallocate(cmr_prefetch_resource_ref(prefetch), ptr, block_bytes, stream));
  ck_assert_ok(cmr_deallocate(cmr_managed_resource_ref(managed), plain, block_bytes, stream));
  cmr_test_destroy(stream, prefetch, managed);
}
END_TEST

START_TEST(device_memory_passes_through) {
  cmr_cuda_resource *cuda = NULL;
  ck_assert_ok(cmr_cuda_resource_create(&cuda));
  cmr_prefetch_resource *prefetch = NULL;
  ck_assert_ok(cmr_prefetch_resource_create(cmr_cuda_resource_ref(cuda), &prefetch));
  ck_assert_ok(cmr_cuda_resource_destroy(cuda)); /* the adaptor holds a share */
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_prefetch_resource_ref(prefetch), block_bytes, CMR_DEFAULT_STREAM, &ptr));
  struct cudaPointerAttributes attributes;
  ck_assert_cuda(cudaPointerGetAttributes(&attributes, ptr));
  ck_assert_int_eq(attributes.type, cudaMemoryTypeDevice);
  ck_assert_cuda(cudaMemset(ptr, 0x11, block_bytes));
  ck_assert_cuda(cudaDeviceSynchronize());
  ck_assert_ok(cmr_deallocate(cmr_prefetch_resource_ref(prefetch), ptr, block_bytes, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_prefetch_resource_destroy(prefetch));
}
END_TEST

static void prefetch_gpu_cases(Suite *suite) {
  cmr_test_case(suite, "gpu", NULL, NULL, managed_memory_is_prefetched_to_the_current_device,
                device_memory_passes_through);
}

int main(void) { return cmr_test_main_suite("prefetch_gpu", CMR_TEST_NEEDS_DEVICE, prefetch_gpu_cases); }
