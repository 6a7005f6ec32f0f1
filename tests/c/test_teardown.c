/* SPDX-License-Identifier: Apache-2.0 */
/* Teardown in any order: the three handles of statistics over pool over a
 * counting leaf destroyed in each of the six orders (what an upper layer
 * retained lives until the last holder lets go, and nothing leaks or is
 * freed twice), and a parsed stack destroyed while its top is held
 * elsewhere (a retained ref, the per-device table). */
#include <string.h>

#include "test_counting.h"

enum { LEAF, POOL, TOP, LAYERS, ORDERS = 6, KiB = 1024 };

static const int orders[ORDERS][LAYERS] = {
    {LEAF, POOL, TOP}, {LEAF, TOP, POOL}, {POOL, LEAF, TOP}, {POOL, TOP, LEAF}, {TOP, LEAF, POOL}, {TOP, POOL, LEAF},
};

typedef struct layers {
  test_counting leaf;
  cmr_pool_resource *pool;
  cmr_statistics_resource *top;
  cmr_resource_ref refs[LAYERS];
  bool destroyed[LAYERS];
} layers;

/* Through `ref`, memory that is really there (written to end to end). */
static void use(cmr_resource_ref ref) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 4 * KiB, CMR_DEFAULT_STREAM, &ptr));
  memset(ptr, 0xab, 4 * KiB);
  ck_assert_ok(cmr_deallocate(ref, ptr, 4 * KiB, CMR_DEFAULT_STREAM));
}

static void destroy_layer(layers *stack, int layer) {
  if (layer == LEAF) test_counting_destroy(&stack->leaf);
  if (layer == POOL) ck_assert_ok(cmr_pool_resource_destroy(stack->pool));
  if (layer == TOP) ck_assert_ok(cmr_statistics_resource_destroy(stack->top));
  stack->destroyed[layer] = true;
}

/* A layer lives while its own handle or any layer above it does. */
static void check_liveness(const layers *stack) {
  bool held = false;
  for (int layer = TOP; layer >= LEAF; layer--) {
    held = held || !stack->destroyed[layer];
    ck_assert_status(cmr_ref_validate(stack->refs[layer]), held ? CMR_SUCCESS : CMR_ERROR_DESTROYED_HANDLE);
  }
}

START_TEST(a_stack_survives_every_order_of_destroys) {
  layers stack = {0};
  test_counting_init(&stack.leaf, CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE);
  stack.pool = cmr_test_pool(test_counting_ref(&stack.leaf), 64 * KiB);
  ck_assert_ok(cmr_statistics_resource_create(cmr_pool_resource_ref(stack.pool), &stack.top));
  stack.refs[LEAF] = test_counting_ref(&stack.leaf);
  stack.refs[POOL] = cmr_pool_resource_ref(stack.pool);
  stack.refs[TOP] = cmr_statistics_resource_ref(stack.top);
  for (int step = 0; step < LAYERS; step++) {
    destroy_layer(&stack, orders[_i][step]);
    check_liveness(&stack);
    if (!stack.destroyed[TOP]) use(stack.refs[TOP]);
  }
  ck_assert_uint_eq(atomic_load(&stack.leaf.live_bytes), 0); /* the pool gave its chunk back */
  ck_assert_uint_eq(atomic_load(&stack.leaf.deallocations), atomic_load(&stack.leaf.allocations));
}
END_TEST

static const char expression_host[] = "statistics(pool(system, initial_pool_size=64KiB))";
/* managed, not cuda: use() writes the memory from the host. */
static const char expression_cuda[] = "statistics(pool(managed, initial_pool_size=64KiB))";

/* The stack and its top's and leaf's refs. */
static cmr_stack *parse_stack(cmr_resource_ref *top, cmr_resource_ref *leaf) {
  cmr_stack *stack = cmr_test_stack(cmr_built_with_cuda() ? expression_cuda : expression_host, top);
  ck_assert_ok(cmr_stack_leaf(stack, leaf));
  return stack;
}

START_TEST(a_retained_top_outlives_its_stack) {
  cmr_resource_ref top, leaf;
  cmr_stack *stack = parse_stack(&top, &leaf);
  ck_assert_ok(cmr_ref_retain(top));
  ck_assert_ok(cmr_stack_destroy(stack));
  use(top);
  ck_assert_ok(cmr_ref_validate(leaf)); /* kept by the pool, which the top keeps */
  ck_assert_ok(cmr_ref_release(top));
  ck_assert_status(cmr_ref_validate(top), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_validate(leaf), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(the_per_device_table_keeps_a_destroyed_stack_top) {
  cmr_resource_ref top, leaf;
  cmr_stack *stack = parse_stack(&top, &leaf);
  ck_assert_ok(cmr_set_current_device_resource_ref(top));
  ck_assert_ok(cmr_stack_destroy(stack));
  cmr_resource_ref current;
  ck_assert_ok(cmr_get_current_device_resource_ref(&current));
  ck_assert(current.self == top.self);
  use(current);
  ck_assert_ok(cmr_reset_current_device_resource_ref()); /* the table's share was the last */
  ck_assert_status(cmr_ref_validate(top), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_validate(leaf), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

static void teardown_cases(Suite *suite) {
  TCase *orders_case =
      cmr_test_loop_case(suite, "orders", NULL, NULL, ORDERS, a_stack_survives_every_order_of_destroys);
  cmr_test_add(orders_case, 1, a_retained_top_outlives_its_stack, the_per_device_table_keeps_a_destroyed_stack_top);
}

int main(void) { return cmr_test_main_suite("teardown", CMR_TEST_NEEDS_DEVICE, teardown_cases); }
