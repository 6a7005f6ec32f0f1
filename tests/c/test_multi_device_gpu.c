/* SPDX-License-Identifier: Apache-2.0 */
/* Two GPUs in one process (skipped, 77, with fewer): the per-device table
 * across devices, every resource's memory on the device that was current
 * at its creation (cudaPointerGetAttributes) whichever is current at the
 * call, the caller's device left as it was, device buffers of device 1 used
 * and freed with device 0 current, and cuda_async's access_devices granting
 * device 1 access to a pool of device 0. */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "test_util.h"

enum { SIZE = 1 << 20 };

static void back_to_device_0(void) {
  ck_assert_ok(cmr_set_current_device(0));
  ck_assert_ok(cmr_reset_per_device_resource_ref(0));
  ck_assert_ok(cmr_reset_per_device_resource_ref(1));
}

/* The device of device memory at `ptr`. */
static int device_of(const void *ptr) {
  struct cudaPointerAttributes attributes;
  ck_assert_int_eq(cudaPointerGetAttributes(&attributes, ptr), cudaSuccess);
  ck_assert_int_eq(attributes.type, cudaMemoryTypeDevice);
  return attributes.device;
}

/* Allocates through `ref` on `stream` with device 0 current: the memory is
 * on `device`, and device 0 is still current after the allocation and the
 * free. */
static void lands_on(cmr_resource_ref ref, cmr_stream stream, int device) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, SIZE, stream, &ptr));
  ck_assert_int_eq(cmr_test_current_device(), 0);
  ck_assert_int_eq(device_of(ptr), device);
  ck_assert_ok(cmr_deallocate(ref, ptr, SIZE, stream));
  ck_assert_int_eq(cmr_test_current_device(), 0);
}

START_TEST(the_default_of_device_1_is_made_on_device_1) {
  cmr_resource_ref ref;
  ck_assert_ok(cmr_acquire_per_device_resource_ref(1, &ref));
  ck_assert_int_eq(cmr_test_current_device(), 0);
  lands_on(ref, CMR_DEFAULT_STREAM, 1);
  ck_assert_ok(cmr_ref_release(ref));
  ck_assert_ok(cmr_get_per_device_resource_ref(0, &ref));
  lands_on(ref, CMR_DEFAULT_STREAM, 0);
}
END_TEST

START_TEST(device_1s_resource_is_set_while_device_0_is_current) {
  ck_assert_ok(cmr_set_current_device(1));
  cmr_cuda_async_resource *async = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                              CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE, CMR_SIZE_DEFAULT, &async));
  ck_assert_ok(cmr_set_current_device(0));
  ck_assert_ok(cmr_set_per_device_resource_ref(1, cmr_cuda_async_resource_ref(async)));
  ck_assert_ok(cmr_cuda_async_resource_destroy(async)); /* the table keeps its share */
  cmr_resource_ref ref;
  ck_assert_ok(cmr_get_per_device_resource_ref(1, &ref));
  lands_on(ref, CMR_DEFAULT_STREAM, 1);
}
END_TEST

/* Each leaf and a pool over one, made on device 1, used from device 0 on a
 * stream of device 1 (the pool's frees and takes across two streams make
 * and record its events there). */
START_TEST(every_resource_of_device_1_allocates_there) {
  ck_assert_ok(cmr_set_current_device(1));
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  cmr_cuda_resource *cuda = NULL;
  cmr_cuda_async_resource *async = NULL;
  cmr_pool_resource *pool = NULL;
  ck_assert_ok(cmr_cuda_resource_create(&cuda));
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                              CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE, CMR_SIZE_DEFAULT, &async));
  pool = cmr_test_pool(cmr_cuda_resource_ref(cuda), 4 * SIZE);
  ck_assert_ok(cmr_set_current_device(0));
  lands_on(cmr_cuda_resource_ref(cuda), a, 1);
  lands_on(cmr_cuda_async_resource_ref(async), a, 1);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  for (int round = 0; round < 3; round++) {
    lands_on(ref, a, 1);
    lands_on(ref, b, 1);
  }
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 4 * SIZE, a, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, 4 * SIZE, a));
  ck_assert_ok(cmr_allocate(ref, 3 * SIZE, b, &ptr)); /* a's memory, ordered after a's work */
  ck_assert_int_eq(device_of(ptr), 1);
  ck_assert_ok(cmr_deallocate(ref, ptr, 3 * SIZE, b));
  ck_assert_int_eq(cmr_test_current_device(), 0);
  ck_assert_ok(cmr_stream_synchronize(a));
  ck_assert_ok(cmr_stream_synchronize(b));
  cmr_test_destroy(pool, async, cuda, a, b);
  ck_assert_int_eq(cmr_test_current_device(), 0);
}
END_TEST

START_TEST(a_buffer_of_device_1_is_resized_copied_and_freed_from_device_0) {
  ck_assert_ok(cmr_set_current_device(1));
  cmr_cuda_resource *cuda = NULL;
  ck_assert_ok(cmr_cuda_resource_create(&cuda));
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(SIZE, CMR_DEFAULT_STREAM, cmr_cuda_resource_ref(cuda), &buffer));
  ck_assert_ok(cmr_set_current_device(0));
  static unsigned char bytes[SIZE], back[SIZE];
  for (int i = 0; i < SIZE; i++) bytes[i] = (unsigned char)(i * 13);
  ck_assert_ok(cmr_device_buffer_copy_from(buffer, bytes, SIZE));
  ck_assert_ok(cmr_device_buffer_resize(buffer, 3 * SIZE, CMR_DEFAULT_STREAM));
  void *data = NULL;
  ck_assert_ok(cmr_device_buffer_data(buffer, &data));
  ck_assert_int_eq(device_of(data), 1);
  ck_assert_ok(cmr_device_buffer_copy_to_host(buffer, back, SIZE));
  ck_assert_mem_eq(back, bytes, SIZE);
  /* A copy into memory of device 0. */
  void *on_0 = NULL;
  ck_assert_int_eq(cudaMalloc(&on_0, SIZE), cudaSuccess);
  ck_assert_ok(cmr_memcpy(on_0, data, SIZE, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(cudaMemcpy(back, on_0, SIZE, cudaMemcpyDeviceToHost), cudaSuccess);
  ck_assert_mem_eq(back, bytes, SIZE);
  ck_assert_int_eq(cudaFree(on_0), cudaSuccess);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_int_eq(cmr_test_current_device(), 0);
  ck_assert_ok(cmr_cuda_resource_destroy(cuda));
}
END_TEST

/* Device 1's access to `pool` (of device 0). */
static enum cudaMemAccessFlags access_of_device_1(cmr_cuda_async_resource *async) {
  void *pool = NULL;
  ck_assert_ok(cmr_cuda_async_resource_pool_handle(async, &pool));
  struct cudaMemLocation location = {.type = cudaMemLocationTypeDevice, .id = 1};
  enum cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  ck_assert_int_eq(cudaMemPoolGetAccess(&flags, (cudaMemPool_t)pool, &location), cudaSuccess);
  return flags;
}

/* A copy on a stream of device 1, device 1 current, reads pool memory of
 * device 0 into device 1's memory; the host checks what arrived. */
static void device_1_reads(cmr_cuda_async_resource *async) {
  static unsigned char bytes[SIZE], back[SIZE];
  for (int i = 0; i < SIZE; i++) bytes[i] = (unsigned char)(i * 29 + 1);
  void *ptr = NULL;
  cmr_resource_ref ref = cmr_cuda_async_resource_ref(async);
  ck_assert_ok(cmr_allocate(ref, SIZE, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_int_eq(device_of(ptr), 0);
  ck_assert_int_eq(cudaMemcpy(ptr, bytes, SIZE, cudaMemcpyHostToDevice), cudaSuccess);
  ck_assert_int_eq(cudaSetDevice(1), cudaSuccess);
  cudaStream_t stream = NULL;
  void *on_1 = NULL;
  ck_assert_int_eq(cudaStreamCreate(&stream), cudaSuccess);
  ck_assert_int_eq(cudaMalloc(&on_1, SIZE), cudaSuccess);
  ck_assert_int_eq(cudaMemcpyAsync(on_1, ptr, SIZE, cudaMemcpyDeviceToDevice, stream), cudaSuccess);
  ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(back, on_1, SIZE, cudaMemcpyDeviceToHost), cudaSuccess);
  ck_assert_mem_eq(back, bytes, SIZE);
  ck_assert_int_eq(cudaFree(on_1), cudaSuccess);
  ck_assert_int_eq(cudaStreamDestroy(stream), cudaSuccess);
  ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
  ck_assert_ok(cmr_deallocate(ref, ptr, SIZE, CMR_DEFAULT_STREAM));
}

START_TEST(access_devices_lets_device_1_read_a_pool_of_device_0) {
  int can_access = 0;
  ck_assert_int_eq(cudaDeviceCanAccessPeer(&can_access, 1, 0), cudaSuccess);
  cmr_cuda_async_resource *plain = NULL, *shared = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                              CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE, CMR_SIZE_DEFAULT, &plain));
  ck_assert_int_eq(access_of_device_1(plain), cudaMemAccessFlagsProtNone);
  ck_assert_ok(cmr_cuda_async_resource_destroy(plain));
  if (!can_access) {
    ck_assert_status(cmr_cuda_async_resource_create(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                                    CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE, CMR_SIZE(2), &shared),
                     CMR_ERROR_UNSUPPORTED);
    return;
  }
  /* Its own device's bit changes nothing. */
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                              CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE, CMR_SIZE(3), &shared));
  ck_assert_int_eq(access_of_device_1(shared), cudaMemAccessFlagsProtReadWrite);
  device_1_reads(shared);
  ck_assert_ok(cmr_cuda_async_resource_destroy(shared));
  /* The same through a stack expression. */
  cmr_resource_ref top;
  cmr_stack *stack = cmr_test_stack("cuda_async(access_devices=2)", &top);
  ck_assert_ok(cmr_cuda_async_resource_from_ref(top, &shared));
  ck_assert_int_eq(access_of_device_1(shared), cudaMemAccessFlagsProtReadWrite);
  device_1_reads(shared);
  cmr_test_destroy(shared, stack);
}
END_TEST

START_TEST(access_devices_beyond_the_devices_is_refused) {
  int count = 0;
  ck_assert_ok(cmr_device_count(&count));
  cmr_cuda_async_resource *async = NULL;
  ck_assert_status(
      cmr_cuda_async_resource_create(CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE,
                                     CMR_SIZE((size_t)1 << count), &async),
      CMR_ERROR_UNKNOWN_DEVICE);
  ck_assert_message_has("access_devices");
  ck_assert_ptr_null(async);
}
END_TEST

static void multi_device_gpu_cases(Suite *suite) {
  TCase *devices =
      cmr_test_case(suite, "devices", NULL, back_to_device_0, the_default_of_device_1_is_made_on_device_1,
                    device_1s_resource_is_set_while_device_0_is_current, every_resource_of_device_1_allocates_there,
                    a_buffer_of_device_1_is_resized_copied_and_freed_from_device_0,
                    access_devices_lets_device_1_read_a_pool_of_device_0, access_devices_beyond_the_devices_is_refused);
  tcase_set_timeout(devices, 120);
}

int main(void) {
  cmr_test_require_device(); /* before the CUDA runtime is asked for the count */
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    printf("runtime.multi_device_gpu: %d device(s), the suite needs 2: skipped\n", count);
    return 77;
  }
  return cmr_test_main_suite("multi_device_gpu", CMR_TEST_NEEDS_DEVICE, multi_device_gpu_cases);
}
