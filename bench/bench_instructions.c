/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-instructions: the work bench/instructions.sh counts under
 * callgrind, one subject and one case per run. Everything goes through
 * cmr_allocate / cmr_deallocate on the default stream, over host memory.
 *
 *   pair     PAIRS allocate+free pairs of 1000 B, warm (ir_per_op: per pair)
 *   live10k  10,000 blocks of 256 B..16 KiB allocated, then freed in shuffled
 *            order, after one such round to warm up (ir_per_op: per
 *            allocate or free, with up to 10,000 blocks alive)
 *   torch    the pair through PyTorch's entry points instead
 *            (cmr_pluggable_allocate / _deallocate, device 0, whose
 *            per-device resource the subject is): what cmr adds to
 *            PyTorch's path over the pair (ir_per_op: per pair)
 *
 * Only the functions bench_instructions_pairs, bench_instructions_live and
 * bench_instructions_torch_pairs are counted (by these names: keep them
 * out of line and external).
 *
 *   cmr-bench-instructions SUBJECT CASE [PAIRS]
 *
 * SUBJECT: pool, fixed_size, arena, binning, expandable; CASE: pair, live10k.
 *
 * With CMR_BENCH_HISTORY=on (or =stacks) the allocation history records
 * throughout (with C stacks, 16 frames deep), so the same count gives the
 * cost of recording; unset, it is off, as in every other run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmr/cmr.h>
#include <cmr/stack.h>

#include "bench_subjects.h" /* bench_check */
#include "cli.h"
#include "instructions_workload.h"

/* Room for every case: 10,000 live blocks of at most 16 KiB. */
static const bench_stack_subject subjects[] = {
    {"pool", "pool(system, initial_pool_size=256MiB)"},
    {"fixed_size", "fixed_size(system, block_size=16KiB, blocks_to_preallocate=1024)"},
    {"arena", "arena(system, arena_size=512MiB)"},
    {"binning", "binning(pool(system, initial_pool_size=256MiB), min_size_exponent=8, max_size_exponent=16)"},
    {"expandable", "expandable(reservation_size=1GiB, granule_size=2MiB)"},
};
enum { subject_count = sizeof subjects / sizeof subjects[0] };

static const char *subject_name;

static void check(cmr_status status, const char *what) { bench_check(status, what, subject_name); }

__attribute__((noinline)) void bench_instructions_pairs(cmr_resource_ref ref, long pairs);
__attribute__((noinline)) void bench_instructions_live(cmr_resource_ref ref, void **blocks, const size_t *bytes,
                                                       const size_t *order);
__attribute__((noinline)) void bench_instructions_torch_pairs(long pairs);

/* The rounds, inlined into the counted functions and into the uncounted
 * warm-up alike. */
static inline __attribute__((always_inline)) void pairs_round(cmr_resource_ref ref, long pairs) {
  for (long i = 0; i < pairs; ++i) {
    void *ptr;
    check(cmr_allocate(ref, instructions_pair_bytes, CMR_DEFAULT_STREAM, &ptr), "cmr_allocate");
    check(cmr_deallocate(ref, ptr, instructions_pair_bytes, CMR_DEFAULT_STREAM), "cmr_deallocate");
  }
}

static inline __attribute__((always_inline)) void live_round(cmr_resource_ref ref, void **blocks, const size_t *bytes,
                                                             const size_t *order) {
  for (size_t i = 0; i < instructions_live_count; ++i)
    check(cmr_allocate(ref, bytes[i], CMR_DEFAULT_STREAM, &blocks[i]), "cmr_allocate");
  for (size_t i = 0; i < instructions_live_count; ++i) {
    size_t k = order[i];
    check(cmr_deallocate(ref, blocks[k], bytes[k], CMR_DEFAULT_STREAM), "cmr_deallocate");
  }
}

void bench_instructions_pairs(cmr_resource_ref ref, long pairs) { pairs_round(ref, pairs); }

static inline __attribute__((always_inline)) void torch_round(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    void *ptr = cmr_pluggable_allocate(instructions_pair_bytes, 0, CMR_DEFAULT_STREAM);
    if (ptr == NULL) check(CMR_ERROR_OUT_OF_MEMORY, "cmr_pluggable_allocate");
    cmr_pluggable_deallocate(ptr, instructions_pair_bytes, 0, CMR_DEFAULT_STREAM);
  }
}

void bench_instructions_torch_pairs(long pairs) { torch_round(pairs); }

void bench_instructions_live(cmr_resource_ref ref, void **blocks, const size_t *bytes, const size_t *order) {
  live_round(ref, blocks, bytes, order);
}

static void run_live(cmr_resource_ref ref) {
  static void *blocks[instructions_live_count];
  static size_t bytes[instructions_live_count], order[instructions_live_count];
  uint64_t rng = 7;
  instructions_live_workload(bytes, order, &rng);
  live_round(ref, blocks, bytes, order); /* the warm-up round: not counted */
  instructions_shuffle(order, &rng);
  bench_instructions_live(ref, blocks, bytes, order);
}

static const cmr_cli cli = {"cmr-bench-instructions", "SUBJECT CASE [PAIRS]",
                            "The work bench/instructions.sh counts under callgrind.\n"
                            "  SUBJECT  pool, fixed_size, arena, binning or expandable\n"
                            "  CASE     pair (PAIRS warm allocate+free pairs, default 10000), live10k, or torch\n"
                            "           (the pairs through cmr_pluggable_allocate / _deallocate)\n"};

int main(int argc, char **argv) {
  static const struct option options[] = {CMR_CLI_STANDARD_OPTIONS, {0}};
  while (cmr_cli_next(&cli, argc, argv, "", options) != -1) {
  }
  if (argc - optind < 2 || argc - optind > 3) return cmr_cli_usage_error(&cli, "SUBJECT and CASE are needed");
  const bench_stack_subject *subject = bench_find_stack_subject(subjects, subject_count, argv[optind]);
  if (subject == NULL)
    return cmr_cli_usage_error(&cli, "unknown subject (pool, fixed_size, arena, binning, expandable)");
  const char *which = argv[optind + 1];
  long pairs = argc - optind == 3 ? strtol(argv[optind + 2], NULL, 10) : 10000;
  if (pairs <= 0) return cmr_cli_usage_error(&cli, "PAIRS must be a positive number");
  subject_name = subject->name;
  const char *history = getenv("CMR_BENCH_HISTORY");
  if (history != NULL && (strcmp(history, "on") == 0 || strcmp(history, "stacks") == 0)) {
    cmr_history_options recording = {.size = sizeof recording,
                                     .flags = strcmp(history, "stacks") == 0 ? CMR_HISTORY_C_STACKS : 0};
    check(cmr_history_start(&recording), "cmr_history_start");
  } else if (history != NULL) {
    return cmr_cli_usage_error(&cli, "CMR_BENCH_HISTORY is on or stacks");
  }
  cmr_stack *stack = NULL;
  cmr_resource_ref ref;
  check(cmr_stack_parse(subject->expression, &stack), subject->expression);
  check(cmr_stack_ref(stack, &ref), "cmr_stack_ref");
  if (strcmp(which, "pair") == 0) {
    pairs_round(ref, 1000); /* warm-up, not counted: the pool's first allocation takes its chunk */
    bench_instructions_pairs(ref, pairs);
  } else if (strcmp(which, "live10k") == 0) {
    run_live(ref);
  } else if (strcmp(which, "torch") == 0) {
    check(cmr_set_per_device_resource_ref(0, ref), "cmr_set_per_device_resource_ref");
    torch_round(1000); /* warm-up, not counted */
    bench_instructions_torch_pairs(pairs);
    check(cmr_reset_per_device_resource_ref(0), "cmr_reset_per_device_resource_ref");
  } else {
    cmr_stack_destroy(stack);
    return cmr_cli_usage_error(&cli, "unknown case (pair, live10k, torch)");
  }
  check(cmr_stack_destroy(stack), "cmr_stack_destroy");
  return 0;
}
