/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-call: the C figure the binding benchmarks compare with. One
 * allocate+deallocate pair of 1000 bytes on the default stream through a
 * pool(system, initial_pool_size=64MiB) made by cmr_stack_parse, warm; the
 * best of several repeats of many pairs. The Java, Go and C# benchmarks
 * print the same line with their language's name, so the lines compare.
 *
 *   cmr-bench-call [--quick] */
#include <stdio.h>

#include <cmr/cmr.h>
#include <cmr/stack.h>

#include "bench_subjects.h" /* bench_now_seconds, bench_next_random, bench_check */

#define BENCH_CALL_STACK "pool(system, initial_pool_size=64MiB)"

enum { bench_call_bytes = 1000 };

static void pairs(cmr_resource_ref ref, long count) {
  for (long i = 0; i < count; ++i) {
    void *ptr;
    bench_check(cmr_allocate(ref, bench_call_bytes, CMR_DEFAULT_STREAM, &ptr), "cmr_allocate", BENCH_CALL_STACK);
    bench_check(cmr_deallocate(ref, ptr, bench_call_bytes, CMR_DEFAULT_STREAM), "cmr_deallocate", BENCH_CALL_STACK);
  }
}

int main(int argc, char **argv) {
  bool quick =
      bench_parse_options("cmr-bench-call", "The C figure the binding benchmarks compare with.", false, argc, argv)
          .quick;
  long count = quick ? 100000 : 1000000;
  int repeats = quick ? 3 : 10;
  cmr_stack *stack = NULL;
  cmr_resource_ref ref;
  bench_check(cmr_stack_parse(BENCH_CALL_STACK, &stack), "cmr_stack_parse", BENCH_CALL_STACK);
  bench_check(cmr_stack_ref(stack, &ref), "cmr_stack_ref", BENCH_CALL_STACK);
  pairs(ref, count / 10); /* warm: the pool takes its chunk, the caches fill */
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    double start = bench_now_seconds();
    pairs(ref, count);
    double ns = (bench_now_seconds() - start) * 1e9 / (double)count;
    if (ns < best) best = ns;
  }
  printf("C: pool(system) %d B allocate+deallocate: %.0f ns/pair\n", bench_call_bytes, best);
  bench_check(cmr_stack_destroy(stack), "cmr_stack_destroy", BENCH_CALL_STACK);
  return 0;
}
