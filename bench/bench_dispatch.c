/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-dispatch: what the dispatch layer costs. Each subject is timed
 * doing allocate+deallocate pairs of one size, warm, two ways:
 *
 *   via ref  cmr_allocate / cmr_deallocate (the ref, alignment and size
 *            checks, the error bookkeeping, the check of the returned pointer)
 *   direct   the same resource's own ops->allocate / ops->deallocate, called
 *            with the very arguments dispatch would pass them
 *
 * so the difference is exactly dispatch. Times are the best of several
 * repeats. The instruction counts come from bench/dispatch_instructions.sh,
 * which runs this program under callgrind and counts the two loop functions
 * below.
 *
 *   cmr-bench-dispatch [--pairs N] [--repeats R] [SUBJECT...]
 *
 * SUBJECT is one of the names in `subjects` (default: all). */
#include <stdio.h>
#include <stdlib.h>

#include <cmr/cmr.h>
#include <cmr/stack.h>

#include "bench_subjects.h" /* bench_now_seconds, bench_next_random, bench_check */
#include "cli.h"
#include "internal.h" /* cmr_ref_self */

enum { bench_bytes = 1000, bench_warm_pairs = 1000 };

/* Each named after the resource's type, which dispatch_instructions.sh also
 * uses. pool: the warm exact-size reuse path; fixed_size: a free list of one-size
 * blocks; system: malloc and the record that lets it vouch for each free,
 * for scale; statistics and limiting: an adaptor over that leaf (what a
 * counted, checked free costs end to end). */
static const bench_stack_subject subjects[] = {
    {"pool", "pool(system, initial_pool_size=64MiB)"},
    {"fixed_size", "fixed_size(system, block_size=1KiB, blocks_to_preallocate=128)"},
    {"system", "system"},
    {"statistics", "statistics(system)"},
    {"limiting", "limiting(system, allocation_limit=1GiB)"},
};
enum { subject_count = sizeof subjects / sizeof subjects[0] };

static void pair_failed(cmr_status status, const char *what) { bench_check(status, what, "cmr-bench-dispatch"); }

/* The two loops dispatch_instructions.sh counts (by these names, so they
 * stay out of line and external). Same shape, same checks; only the call
 * differs. */
__attribute__((noinline)) void bench_dispatch_via_ref(cmr_resource_ref ref, size_t bytes, long pairs);
__attribute__((noinline)) void bench_dispatch_direct(cmr_resource_ref ref, size_t bytes, long pairs);

void bench_dispatch_via_ref(cmr_resource_ref ref, size_t bytes, long pairs) {
  for (long i = 0; i < pairs; ++i) {
    void *ptr;
    cmr_status status = cmr_allocate(ref, bytes, CMR_DEFAULT_STREAM, &ptr);
    if (status != CMR_SUCCESS) pair_failed(status, "cmr_allocate");
    status = cmr_deallocate(ref, ptr, bytes, CMR_DEFAULT_STREAM);
    if (status != CMR_SUCCESS) pair_failed(status, "cmr_deallocate");
  }
}

void bench_dispatch_direct(cmr_resource_ref ref, size_t bytes, long pairs) {
  void *self = cmr_ref_self(ref); /* the object the ref's token names, looked up once */
  for (long i = 0; i < pairs; ++i) {
    void *ptr;
    cmr_status status = ref.ops->allocate(self, bytes, CMR_DEFAULT_ALIGNMENT, CMR_DEFAULT_STREAM, &ptr);
    if (status != CMR_SUCCESS) pair_failed(status, "ops->allocate");
    status = ref.ops->deallocate(self, ptr, bytes, CMR_DEFAULT_ALIGNMENT, CMR_DEFAULT_STREAM);
    if (status != CMR_SUCCESS) pair_failed(status, "ops->deallocate");
  }
}

/* Out of the counted functions: brings the resource to its warm state
 * (the pool's first allocation takes its initial chunk from the upstream). */
static void warm_up(cmr_resource_ref ref) {
  for (int i = 0; i < bench_warm_pairs; ++i) {
    void *ptr;
    pair_failed(cmr_allocate(ref, bench_bytes, CMR_DEFAULT_STREAM, &ptr), "cmr_allocate");
    pair_failed(cmr_deallocate(ref, ptr, bench_bytes, CMR_DEFAULT_STREAM), "cmr_deallocate");
  }
}

typedef void (*pairs_fn)(cmr_resource_ref ref, size_t bytes, long pairs);

static double ns_per_pair(pairs_fn run, cmr_resource_ref ref, long pairs) {
  double start = bench_now_seconds();
  run(ref, bench_bytes, pairs);
  return (bench_now_seconds() - start) * 1e9 / (double)pairs;
}

/* Best of `repeats` for each way, the two interleaved so that a slow spell
 * of a shared machine hits both alike. */
static void measure(const bench_stack_subject *s, long pairs, int repeats) {
  cmr_stack *stack = NULL;
  cmr_resource_ref ref;
  pair_failed(cmr_stack_parse(s->expression, &stack), s->expression);
  pair_failed(cmr_stack_ref(stack, &ref), "cmr_stack_ref");
  warm_up(ref);
  double via_ref = 1e300, direct = 1e300;
  for (int r = 0; r < repeats; ++r) {
    double t = ns_per_pair(bench_dispatch_via_ref, ref, pairs);
    if (t < via_ref) via_ref = t;
    t = ns_per_pair(bench_dispatch_direct, ref, pairs);
    if (t < direct) direct = t;
  }
  printf("%-12s %-62s %15.1f %15.1f %15.1f\n", s->name, s->expression, via_ref, direct, via_ref - direct);
  pair_failed(cmr_stack_destroy(stack), "cmr_stack_destroy");
}

static const cmr_cli cli = {"cmr-bench-dispatch", "[--pairs N] [--repeats R] [SUBJECT...]",
                            "What the dispatch layer costs: allocate+deallocate pairs via the ref and direct.\n"
                            "  --pairs N    pairs per repeat (default 200000)\n"
                            "  --repeats R  repeats, the best counts (default 7)\n"
                            "  SUBJECT      pool, fixed_size or system (default: all)\n"};

static bool positive(const char *text, long *out) {
  char *end = NULL;
  *out = strtol(text, &end, 10);
  return end != text && *end == '\0' && *out > 0;
}

int main(int argc, char **argv) {
  long pairs = 200000, repeats = 7;
  const bench_stack_subject *chosen[subject_count];
  int chosen_count = 0;
  static const struct option options[] = {{"pairs", required_argument, NULL, 'p'},
                                          {"repeats", required_argument, NULL, 'r'},
                                          CMR_CLI_STANDARD_OPTIONS,
                                          {0}};
  int option;
  while ((option = cmr_cli_next(&cli, argc, argv, "", options)) != -1) {
    if (!positive(optarg, option == 'p' ? &pairs : &repeats)) {
      return cmr_cli_usage_error(&cli, "--pairs and --repeats need a positive number");
    }
  }
  for (int i = optind; i < argc; ++i) {
    const bench_stack_subject *subject = bench_find_stack_subject(subjects, subject_count, argv[i]);
    if (subject == NULL)
      return cmr_cli_usage_error(&cli, "unknown subject (pool, fixed_size, system, statistics, limiting)");
    if (chosen_count == subject_count) return cmr_cli_usage_error(&cli, "too many subjects");
    chosen[chosen_count++] = subject;
  }
  if (chosen_count == 0) {
    for (int i = 0; i < subject_count; ++i) chosen[chosen_count++] = &subjects[i];
  }
  printf("cmr %s dispatch benchmark, %s; %d B allocate+deallocate pairs, warm, best of %ld x %ld pairs\n\n",
         cmr_version(), cmr_built_with_cuda() ? "CUDA build" : "host build, host memory", bench_bytes, repeats, pairs);
  printf("%-12s %-62s %15s %15s %15s\n", "subject", "stack", "via ref ns/pair", "direct ns/pair", "dispatch ns/pair");
  for (int i = 0; i < chosen_count; ++i) measure(chosen[i], pairs, (int)repeats);
  return 0;
}
