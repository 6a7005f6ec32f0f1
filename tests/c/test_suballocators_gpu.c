/* SPDX-License-Identifier: Apache-2.0 */
/* Stream ordering of the suballocators on a real GPU. Memory freed on stream
 * A while A's work on it is still pending (A is held back by a host function
 * that sleeps), then allocated on stream B: B's write must land after A's.
 * If the suballocator hands the block over without making B wait, B's write
 * runs first and A's overwrites it, and the check on the bytes fails.
 *
 * Two paths: once another stream has taken from A's list, A's frees record
 * an event and B waits on it; before that, A's free records nothing and B's
 * taking synchronizes the device. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "test_cuda.h"

enum { block_bytes = 1 << 20, stall_microseconds = 300 * 1000 };

typedef struct subject {
  const char *name;
  const char *expression; /* a stack over cuda */
} subject;

/* Each hands stream b only the block stream a freed: the pool has no chunk
 * but a's; the arena one superblock, so b, finding its own arena empty and
 * nothing new to cut, takes a's block; fixed_size one block preallocated. */
static const subject subjects[] = {
    {"pool", "pool(cuda, initial_pool_size=0)"},
    {"arena", "arena(cuda, arena_size=1MiB)"},
    {"fixed_size", "fixed_size(cuda, block_size=1MiB, blocks_to_preallocate=1)"},
};

static void CUDART_CB stall(void *arg) {
  (void)arg;
  struct timespec pause = {0, stall_microseconds * 1000L};
  nanosleep(&pause, NULL);
}

static void check_ordering(const subject *s, bool with_event) {
  cmr_resource_ref ref;
  cmr_stack *stack = cmr_test_stack(s->expression, &ref);
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  if (with_event) {
    /* b takes from a's list, then a from b's: both lists are shared. */
    void *warm = NULL;
    ck_assert_ok(cmr_allocate(ref, block_bytes, a, &warm));
    ck_assert_ok(cmr_deallocate(ref, warm, block_bytes, a));
    ck_assert_ok(cmr_allocate(ref, block_bytes, b, &warm));
    ck_assert_ok(cmr_deallocate(ref, warm, block_bytes, b));
  }

  void *on_a = NULL;
  ck_assert_ok(cmr_allocate(ref, block_bytes, a, &on_a));
  ck_assert_cuda(cudaLaunchHostFunc(a, stall, NULL));
  ck_assert_cuda(cudaMemsetAsync(on_a, 0xAA, block_bytes, a));
  ck_assert_ok(cmr_deallocate(ref, on_a, block_bytes, a));

  void *on_b = NULL;
  ck_assert_ok(cmr_allocate(ref, block_bytes, b, &on_b));
  ck_assert_msg(on_b == on_a, "%s: stream b got %p, not the block %p freed on a: nothing to check", s->name, on_b,
                on_a);
  ck_assert_cuda(cudaMemsetAsync(on_b, 0xBB, block_bytes, b));
  ck_assert_cuda(cudaDeviceSynchronize());

  unsigned char *bytes = malloc(block_bytes);
  ck_assert_ptr_nonnull(bytes);
  ck_assert_cuda(cudaMemcpy(bytes, on_b, block_bytes, cudaMemcpyDeviceToHost));
  size_t stale = 0;
  for (size_t i = 0; i < block_bytes; ++i) stale += bytes[i] != 0xBB;
  free(bytes);
  ck_assert_msg(stale == 0, "%s: %zu of %d bytes hold a's write, made after b's: b did not wait for a", s->name, stale,
                block_bytes);

  ck_assert_ok(cmr_deallocate(ref, on_b, block_bytes, b));
  cmr_test_destroy(stack, a, b);
}

START_TEST(other_stream_waits_on_the_event) { check_ordering(&subjects[_i], true); }
END_TEST

START_TEST(lone_stream_is_ordered_by_a_device_synchronize) { check_ordering(&subjects[_i], false); }
END_TEST

static void suballocators_gpu_cases(Suite *suite) {
  TCase *ordering = cmr_test_loop_case(suite, "ordering", NULL, NULL, (int)(sizeof subjects / sizeof subjects[0]),
                                       other_stream_waits_on_the_event, lone_stream_is_ordered_by_a_device_synchronize);
  tcase_set_timeout(ordering, 120);
}

int main(void) { return cmr_test_main_suite("suballocators_gpu", CMR_TEST_NEEDS_DEVICE, suballocators_gpu_cases); }
