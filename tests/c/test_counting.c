/* SPDX-License-Identifier: Apache-2.0 */
#include "test_counting.h"

#include <stdint.h>
#include <stdlib.h>

static void *counting_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  test_counting *counting = arg;
  size_t left = atomic_load(&counting->successes_left);
  do {
    if (left == 0) return NULL;
  } while (left != SIZE_MAX && !atomic_compare_exchange_weak(&counting->successes_left, &left, left - 1));
  void *ptr = aligned_alloc(CMR_DEFAULT_ALIGNMENT, (bytes + 255) / 256 * 256);
  if (ptr == NULL) return NULL;
  atomic_fetch_add(&counting->allocations, 1);
  atomic_fetch_add(&counting->live_bytes, bytes);
  atomic_store(&counting->last_bytes, bytes);
  return ptr;
}

static void counting_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  test_counting *counting = arg;
  atomic_fetch_add(&counting->deallocations, 1);
  atomic_fetch_sub(&counting->live_bytes, bytes);
  free(ptr);
}

void test_counting_init(test_counting *counting, unsigned properties) {
  *counting = (test_counting){.successes_left = SIZE_MAX};
  ck_assert_ok(cmr_callback_resource_create(counting_allocate, counting_deallocate, counting, counting, properties,
                                            &counting->handle));
}

cmr_resource_ref test_counting_ref(test_counting *counting) { return cmr_callback_resource_ref(counting->handle); }

void test_counting_destroy(test_counting *counting) { ck_assert_ok(cmr_callback_resource_destroy(counting->handle)); }
