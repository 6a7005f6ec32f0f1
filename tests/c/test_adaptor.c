/* SPDX-License-Identifier: Apache-2.0 */
#include "test_adaptor.h"

#include <stdint.h>

void test_adaptor_forwards(cmr_resource_ref adaptor, const test_foreign *upstream, cmr_stream stream) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_aligned(adaptor, 3000, 32, stream, &ptr));
  ck_assert_int_eq(upstream->allocations, 1);
  ck_assert_uint_eq(upstream->last_bytes, 3000);
  ck_assert_uint_eq(upstream->last_alignment, 256);
  ck_assert_ptr_eq(upstream->last_stream, stream);
  memset(ptr, 0x3c, 3000);
  ck_assert_ok(cmr_deallocate_aligned(adaptor, ptr, 3000, 32, stream));
  ck_assert_int_eq(upstream->deallocations, 1);
  ck_assert_ptr_eq(upstream->last_freed, ptr);
  ck_assert_uint_eq(upstream->last_bytes, 3000);
  ck_assert_ptr_eq(upstream->last_stream, stream);
  ck_assert_uint_eq(upstream->outstanding, 0);
}

void test_adaptor_passes_alignment_up(cmr_resource_ref adaptor, const test_foreign *upstream) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_aligned(adaptor, 64, 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_uint_eq(upstream->last_alignment, 4096);
  ck_assert_uint_eq((uintptr_t)ptr % 4096, 0);
  ck_assert_ok(cmr_deallocate_aligned(adaptor, ptr, 64, 4096, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(upstream->last_alignment, 4096);
}

cmr_resource_ref test_adaptor_over_released_system(test_adaptor_make make) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref adaptor = {0};
  ck_assert_ok(make(cmr_system_resource_ref(system), &adaptor));
  ck_assert_ok(cmr_system_resource_destroy(system));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(adaptor, 1 << 16, CMR_DEFAULT_STREAM, &ptr));
  memset(ptr, 0x77, 1 << 16);
  ck_assert_ok(cmr_deallocate(adaptor, ptr, 1 << 16, CMR_DEFAULT_STREAM));
  return adaptor;
}
