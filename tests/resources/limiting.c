/* SPDX-License-Identifier: Apache-2.0 */
/* limiting beyond its expectations: a limit written as a fraction of the
 * device's free memory. */
#include <cmr/stack.h>

#include "test_util.h"

/* allocation_limit=50% is half the free memory when the text is read: not
 * more than half of what was free just before, a multiple of 256, and
 * (memory being what it is between two reads) more than nothing. */
START_TEST(test_a_fraction_is_a_share_of_free_memory) {
  size_t free_before = 0, total = 0;
  ck_assert_ok(cmr_device_memory_info(&free_before, &total));
  cmr_resource_ref top;
  cmr_stack *stack = cmr_test_stack("limiting(system, allocation_limit=50%)", &top);
  cmr_limiting_resource *handle = NULL;
  ck_assert_ok(cmr_limiting_resource_from_ref(top, &handle));
  size_t limit = 0;
  ck_assert_ok(cmr_limiting_resource_allocation_limit(handle, &limit));
  ck_assert_uint_gt(limit, 0);
  ck_assert_uint_eq(limit % 256, 0);
  ck_assert_uint_le(limit, total / 2);
  cmr_test_destroy(handle, stack);
  ck_assert_status(cmr_stack_parse("limiting(system, allocation_limit=101%)", &stack), CMR_ERROR_INVALID_ARGUMENT);
}
END_TEST

static void limiting_cases(Suite *suite) {
  cmr_test_case(suite, "limits", NULL, NULL, test_a_fraction_is_a_share_of_free_memory);
}

/* The fraction is of the device's free memory. */
int main(void) { return cmr_test_main_suite("limiting", CMR_TEST_NEEDS_DEVICE, limiting_cases); }
