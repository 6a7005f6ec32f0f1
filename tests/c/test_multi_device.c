/* SPDX-License-Identifier: Apache-2.0 */
/* Several devices in one process, on the host build's simulated devices
 * (ctest sets CMR_HOST_DEVICE_COUNT=3): each thread's current device, the
 * per-device table across devices, each resource's work on the device that
 * was current at its creation (seen through the host backend's record of
 * the device current at each call) with the caller's device left as it was,
 * and device buffers of one device used and freed from another. */
#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "test_util.h"

enum { DEVICES = 3, SIZE = 4096 };

/* Every test starts and ends on device 0 with an empty table (the suite may
 * run in one process, CK_FORK=no). */
static void back_to_device_0(void) {
  ck_assert_ok(cmr_set_current_device(0));
  for (int device = 0; device < DEVICES; device++) ck_assert_ok(cmr_reset_per_device_resource_ref(device));
}

/* A system resource made with `device` current; device 0 current after. */
static cmr_system_resource *system_on(int device) {
  ck_assert_ok(cmr_set_current_device(device));
  cmr_system_resource *system = cmr_test_system_resource();
  ck_assert_ok(cmr_set_current_device(0));
  return system;
}

START_TEST(the_device_count_is_the_variables) {
  const char *variable = getenv("CMR_HOST_DEVICE_COUNT");
  int count = -1;
  if (variable != NULL && strcmp(variable, "3") == 0) {
    ck_assert_ok(cmr_device_count(&count));
    ck_assert_int_eq(count, DEVICES);
  } else {
    /* The suite's second run (runtime.multi_device_bad_count): not a count. */
    ck_assert_status(cmr_device_count(&count), CMR_ERROR_INVALID_ARGUMENT);
    ck_assert_message_has("CMR_HOST_DEVICE_COUNT=\"");
    ck_assert_message_has(variable);
  }
}
END_TEST

START_TEST(a_device_outside_the_count_is_refused) {
  ck_assert_status(cmr_set_current_device(DEVICES), CMR_ERROR_UNKNOWN_DEVICE);
  ck_assert_message_has("device 3 is not in [0, 3)");
  ck_assert_status(cmr_set_current_device(-1), CMR_ERROR_UNKNOWN_DEVICE);
  cmr_resource_ref ref;
  ck_assert_status(cmr_get_per_device_resource_ref(DEVICES, &ref), CMR_ERROR_UNKNOWN_DEVICE);
  ck_assert_int_eq(cmr_test_current_device(), 0);
}
END_TEST

static void *read_current_device(void *out) {
  cmr_current_device(out);
  return NULL;
}

START_TEST(each_thread_has_its_current_device) {
  ck_assert_ok(cmr_set_current_device(2));
  int other = -1;
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, read_current_device, &other), 0);
  ck_assert_int_eq(pthread_join(thread, NULL), 0);
  ck_assert_int_eq(other, 0); /* a new thread starts on device 0, as CUDA's */
  ck_assert_int_eq(cmr_test_current_device(), 2);
}
END_TEST

/* Frees through `ref` with device 0 current: the free waits for its stream
 * (a system resource's does) on the resource's device. */
static void free_is_seen_on(cmr_resource_ref ref, int device) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, SIZE, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, SIZE, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(cmr_backend_host_device_seen(CMR_BACKEND_HOST_STREAM_SYNCHRONIZE), device);
  ck_assert_int_eq(cmr_test_current_device(), 0);
}

START_TEST(the_default_of_a_device_is_made_on_that_device) {
  for (int device = DEVICES - 1; device >= 0; device--) {
    cmr_resource_ref ref;
    ck_assert_ok(cmr_get_per_device_resource_ref(device, &ref));
    ck_assert_int_eq(cmr_test_current_device(), 0);
    free_is_seen_on(ref, device);
  }
  cmr_resource_ref first, again;
  ck_assert_ok(cmr_acquire_per_device_resource_ref(1, &first));
  ck_assert_ok(cmr_acquire_per_device_resource_ref(1, &again));
  ck_assert_ptr_eq(first.self, again.self); /* made once */
  ck_assert_int_eq(cmr_test_current_device(), 0);
  ck_assert_ok(cmr_ref_release(first));
  ck_assert_ok(cmr_ref_release(again));
}
END_TEST

START_TEST(a_device_resource_is_set_while_another_is_current) {
  cmr_system_resource *system = system_on(1);
  cmr_resource_ref mine = cmr_system_resource_ref(system);
  ck_assert_ok(cmr_set_per_device_resource_ref(1, mine));
  cmr_resource_ref got, on_0;
  ck_assert_ok(cmr_get_per_device_resource_ref(1, &got));
  ck_assert_ptr_eq(got.self, mine.self);
  ck_assert_ok(cmr_get_current_device_resource_ref(&on_0));
  ck_assert_ptr_ne(on_0.self, mine.self);
  ck_assert_ok(cmr_set_current_device(1));
  ck_assert_ok(cmr_get_current_device_resource_ref(&got));
  ck_assert_ptr_eq(got.self, mine.self);
  ck_assert_ok(cmr_set_current_device(0));
  ck_assert_ok(cmr_system_resource_destroy(system)); /* the table keeps its share */
  free_is_seen_on(mine, 1);
}
END_TEST

/* A pool made on device 2 over a system resource of device 2, used with
 * device 0 current: memory freed on one stream and taken by another makes
 * the pool synchronize device 2 (the list had no event), and a free into a
 * list another stream has taken from makes its event there. */
START_TEST(a_suballocator_orders_streams_on_its_device) {
  cmr_system_resource *system = system_on(2);
  ck_assert_ok(cmr_set_current_device(2));
  cmr_pool_resource *pool = cmr_test_pool(cmr_system_resource_ref(system), 16 * SIZE);
  ck_assert_ok(cmr_set_current_device(0));
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 16 * SIZE, a, &ptr)); /* the whole pool */
  ck_assert_ok(cmr_deallocate(ref, ptr, 16 * SIZE, a));
  ck_assert_ok(cmr_allocate(ref, 12 * SIZE, b, &ptr)); /* from a's list */
  ck_assert_int_eq(cmr_backend_host_device_seen(CMR_BACKEND_HOST_DEVICE_SYNCHRONIZE), 2);
  ck_assert_int_eq(cmr_test_current_device(), 0);
  ck_assert_ok(cmr_deallocate(ref, ptr, 12 * SIZE, b));
  ck_assert_ok(cmr_allocate(ref, 12 * SIZE, a, &ptr));  /* from b's list */
  ck_assert_ok(cmr_deallocate(ref, ptr, 12 * SIZE, a)); /* into a's, which b took from: an event */
  ck_assert_int_eq(cmr_backend_host_device_seen(CMR_BACKEND_HOST_EVENT_CREATE), 2);
  ck_assert_int_eq(cmr_test_current_device(), 0);
  cmr_test_destroy(a, b, pool, system);
}
END_TEST

START_TEST(a_buffer_of_one_device_is_used_and_freed_from_another) {
  cmr_system_resource *system = system_on(1);
  ck_assert_ok(cmr_set_current_device(1));
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(SIZE, CMR_DEFAULT_STREAM, cmr_system_resource_ref(system), &buffer));
  ck_assert_ok(cmr_set_current_device(2));
  unsigned char bytes[SIZE], back[2 * SIZE];
  for (int i = 0; i < SIZE; i++) bytes[i] = (unsigned char)(i * 7);
  ck_assert_ok(cmr_device_buffer_copy_from(buffer, bytes, SIZE));
  ck_assert_int_eq(cmr_backend_host_device_seen(CMR_BACKEND_HOST_COPY), 1);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 2 * SIZE, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(cmr_backend_host_device_seen(CMR_BACKEND_HOST_COPY), 1);
  ck_assert_int_eq(cmr_backend_host_device_seen(CMR_BACKEND_HOST_STREAM_SYNCHRONIZE), 1); /* the old memory's free */
  ck_assert_ok(cmr_device_buffer_copy_to_host(buffer, back, SIZE));
  ck_assert_mem_eq(back, bytes, SIZE);
  ck_assert_int_eq(cmr_test_current_device(), 2);
  ck_assert_ok(cmr_set_current_device(0));
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_int_eq(cmr_backend_host_device_seen(CMR_BACKEND_HOST_STREAM_SYNCHRONIZE), 1);
  ck_assert_int_eq(cmr_test_current_device(), 0);
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

/* One thread per device, each on its own device's default and a pool of
 * its own, at once. */
static void *work_on_device(void *arg) {
  int device = (int)(intptr_t)arg;
  if (cmr_set_current_device(device) != CMR_SUCCESS) return "set device";
  cmr_resource_ref ref;
  if (cmr_acquire_current_device_resource_ref(&ref) != CMR_SUCCESS) return "acquire";
  cmr_pool_resource *pool = NULL;
  const char *failed = NULL;
  if (cmr_pool_resource_create(ref, CMR_SIZE(64 * SIZE), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE,
                               &pool) != CMR_SUCCESS)
    failed = "pool";
  for (int i = 0; failed == NULL && i < 1000; i++) {
    void *ptr = NULL;
    if (cmr_allocate(cmr_pool_resource_ref(pool), SIZE, CMR_DEFAULT_STREAM, &ptr) != CMR_SUCCESS ||
        cmr_deallocate(cmr_pool_resource_ref(pool), ptr, SIZE, CMR_DEFAULT_STREAM) != CMR_SUCCESS) {
      failed = "pair";
    }
  }
  int now = -1;
  if (failed == NULL && (cmr_current_device(&now) != CMR_SUCCESS || now != device))
    failed = "the thread's device moved";
  if (cmr_pool_resource_destroy(pool) != CMR_SUCCESS && failed == NULL) failed = "destroy";
  if (cmr_ref_release(ref) != CMR_SUCCESS && failed == NULL) failed = "release";
  return (void *)failed;
}

START_TEST(one_thread_per_device) {
  cmr_test_threads_result failed = cmr_test_numbered_threads(DEVICES, work_on_device);
  ck_assert_msg(failed.index < 0, "device %d: %s", failed.index, failed.index < 0 ? "" : (const char *)failed.returned);
  cmr_resource_ref entries[DEVICES];
  for (int device = 0; device < DEVICES; device++) {
    ck_assert_ok(cmr_get_per_device_resource_ref(device, &entries[device]));
  }
  ck_assert_ptr_ne(entries[0].self, entries[1].self);
  ck_assert_ptr_ne(entries[1].self, entries[2].self);
  ck_assert_ptr_ne(entries[0].self, entries[2].self);
}
END_TEST

static void multi_device_cases(Suite *suite) {
  cmr_test_case(suite, "count", NULL, NULL, the_device_count_is_the_variables);
  const char *variable = getenv("CMR_HOST_DEVICE_COUNT");
  if (variable != NULL && strcmp(variable, "3") == 0) {
    cmr_test_case(suite, "devices", NULL, back_to_device_0, a_device_outside_the_count_is_refused,
                  each_thread_has_its_current_device, the_default_of_a_device_is_made_on_that_device,
                  a_device_resource_is_set_while_another_is_current, a_suballocator_orders_streams_on_its_device,
                  a_buffer_of_one_device_is_used_and_freed_from_another, one_thread_per_device);
  }
}

int main(void) { return cmr_test_main_suite("multi_device", CMR_TEST_ANY_MACHINE, multi_device_cases); }
