/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-make-random-log: writes an allocation log for cmr-replay, in cmr's
 * own logging format, by driving logging(simulated, filename=OUT) with a
 * random workload: the log is what cmr's logging adaptor writes for it.
 *
 *   cmr-make-random-log SHAPE OUT.csv [--allocations N] [--max-size BYTES]
 *                       [--max-usage BYTES] [--seed S]
 *
 * The workload is RMM's random_allocations benchmark (random_allocation_free):
 * 2N steps; each step allocates with probability 0.73 as long as fewer than
 * N allocations were made and the bytes in use plus the new size stay under
 * max-usage (the first step, and any step with nothing live, always
 * allocates); otherwise it frees a live allocation chosen uniformly at
 * random. What is still live at the end is freed, so the log has no leaks.
 * The shapes differ in their sizes and defaults:
 *
 *   random  sizes uniform in [1, max-size]: RMM's uniform_random_allocations.
 *           Defaults: N = 10,000, max-size 4 MiB, max-usage 1 GiB.
 *   mixed   small mixed sizes, log-uniform below max-size (as many of
 *           1 B as of 32..64 KiB). Defaults: N = 100,000, max-size
 *           64 KiB, max-usage 32 MiB.
 *
 * Prints one line: the file, its allocations and frees and the most bytes
 * in use at once. Exit status 0, 1 when the log cannot be made, 2 for bad
 * usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmr/cmr.h>
#include <cmr/stack.h>

#include "bench_subjects.h" /* bench_now_seconds, bench_next_random, bench_check */
#include "cli.h"

enum { allocate_percent = 73 };

/* A value in [0, bound) (bound > 0); the modulo bias is far below anything
 * these logs could show for the bounds used here. */
static uint64_t random_below(uint64_t *state, uint64_t bound) { return bench_next_random(state) % bound; }

typedef struct log_shape {
  const char *name;
  size_t (*size)(uint64_t *rng, size_t max_size);
  size_t allocations, max_size, max_usage;
} log_shape;

static size_t uniform_size(uint64_t *rng, size_t max_size) { return 1 + (size_t)random_below(rng, max_size); }

/* 2^k with k uniform in [0, K), 2^K the largest power of two up to
 * max_size, then uniform in [2^k, 2^(k+1)). */
static size_t log_uniform_size(uint64_t *rng, size_t max_size) {
  unsigned top = 0;
  while (top < 63 && ((size_t)2 << top) <= max_size) ++top;
  if (top == 0) return 1;
  size_t low = (size_t)1 << random_below(rng, top);
  return low + (size_t)random_below(rng, low);
}

static const log_shape shapes[] = {
    {"random", uniform_size, 10000, (size_t)4 << 20, (size_t)1 << 30},
    {"mixed", log_uniform_size, 100000, (size_t)64 << 10, (size_t)32 << 20},
};

typedef struct live_block {
  void *ptr;
  size_t size;
} live_block;

typedef struct workload {
  cmr_resource_ref ref;
  live_block *live;
  size_t live_count, in_use, peak_in_use, allocations, frees;
} workload;

static void allocate_one(workload *w, size_t size) {
  live_block *b = &w->live[w->live_count++];
  bench_check(cmr_allocate(w->ref, size, CMR_DEFAULT_STREAM, &b->ptr), "cmr_allocate", "cmr-make-random-log");
  b->size = size;
  w->allocations++;
  w->in_use += size;
  if (w->in_use > w->peak_in_use) w->peak_in_use = w->in_use;
}

/* Frees live block `index`, moving the last one into its place (as RMM's remove_at). */
static void free_one(workload *w, size_t index) {
  live_block b = w->live[index];
  w->live[index] = w->live[--w->live_count];
  bench_check(cmr_deallocate(w->ref, b.ptr, b.size, CMR_DEFAULT_STREAM), "cmr_deallocate", "cmr-make-random-log");
  w->frees++;
  w->in_use -= b.size;
}

static void run_workload(workload *w, const log_shape *shape, uint64_t seed) {
  uint64_t rng = seed != 0 ? seed : 1; /* xorshift must not start at 0 */
  for (size_t step = 0; step < 2 * shape->allocations; ++step) {
    size_t size = shape->size(&rng, shape->max_size);
    bool allocate = true;
    if (w->live_count > 0) {
      bool chance = random_below(&rng, 100) < allocate_percent;
      allocate = chance && w->allocations < shape->allocations && w->in_use + size < shape->max_usage;
    }
    if (allocate)
      allocate_one(w, size);
    else
      free_one(w, (size_t)random_below(&rng, w->live_count));
  }
  while (w->live_count > 0) free_one(w, w->live_count - 1);
}

/* "logging(simulated, filename=\"PATH\")" with the path's quotes and
 * backslashes escaped (a copy to free). */
static char *logging_expression(const char *path) {
  size_t length = strlen(path);
  char *text = malloc(2 * length + sizeof "logging(simulated, filename=\"\")");
  if (text == NULL) return NULL;
  char *out = text + sprintf(text, "logging(simulated, filename=\"");
  for (const char *c = path; *c != '\0'; ++c) {
    if (*c == '"' || *c == '\\') *out++ = '\\';
    *out++ = *c;
  }
  strcpy(out, "\")");
  return text;
}

static int make_log(const log_shape *shape, const char *path, uint64_t seed) {
  char *expression = logging_expression(path);
  workload w = {.live = calloc(shape->allocations + 1, sizeof *w.live)};
  if (expression == NULL || w.live == NULL) {
    fprintf(stderr, "cmr-make-random-log: no host memory for %zu allocations\n", shape->allocations);
    free(expression), free(w.live);
    return 1;
  }
  cmr_stack *stack = NULL;
  bench_check(cmr_stack_parse(expression, &stack), "cmr_stack_parse", expression);
  bench_check(cmr_stack_ref(stack, &w.ref), "cmr_stack_ref", expression);
  run_workload(&w, shape, seed);
  /* Destroying the stack closes the log; a row it could not write fails the flush. */
  cmr_logging_resource *logging = NULL;
  bench_check(cmr_logging_resource_from_ref(w.ref, &logging), "cmr_logging_resource_from_ref", expression);
  bench_check(cmr_logging_resource_flush(logging), "flushing the log", path);
  bench_check(cmr_logging_resource_destroy(logging), "cmr_logging_resource_destroy", expression);
  bench_check(cmr_stack_destroy(stack), "cmr_stack_destroy", expression);
  printf("%s: %s log, %zu allocations, %zu frees, peak bytes in use %zu\n", path, shape->name, w.allocations, w.frees,
         w.peak_in_use);
  free(expression), free(w.live);
  return 0;
}

static const cmr_cli cli = {
    "cmr-make-random-log", "random|mixed OUT.csv [--allocations N] [--max-size BYTES] [--max-usage BYTES] [--seed S]",
    "Writes an allocation log for cmr-replay: RMM's random_allocations workload through cmr's logging adaptor.\n"
    "  --allocations N    allocations (random: 10000, mixed: 100000)\n"
    "  --max-size BYTES   largest allocation (random: 4 MiB, mixed: 64 KiB)\n"
    "  --max-usage BYTES  most bytes in use at once (random: 1 GiB, mixed: 32 MiB)\n"
    "  --seed S           the random sequence (default 42)\n"};

static bool parse_count(const char *text, unsigned long long *out) {
  char *end = NULL;
  if (text[0] < '0' || text[0] > '9') return false;
  *out = strtoull(text, &end, 10);
  return *end == '\0' && *out > 0;
}

int main(int argc, char **argv) {
  static const struct option options[] = {{"allocations", required_argument, NULL, 'a'},
                                          {"max-size", required_argument, NULL, 's'},
                                          {"max-usage", required_argument, NULL, 'u'},
                                          {"seed", required_argument, NULL, 'r'},
                                          CMR_CLI_STANDARD_OPTIONS,
                                          {0}};
  unsigned long long given[4] = {0, 0, 0, 42}; /* allocations, max-size, max-usage, seed; 0: the shape's */
  int option;
  while ((option = cmr_cli_next(&cli, argc, argv, "", options)) != -1) {
    int which = option == 'a' ? 0 : option == 's' ? 1 : option == 'u' ? 2 : 3;
    if (!parse_count(optarg, &given[which]) || given[which] > (which == 0 ? SIZE_MAX / 2 : SIZE_MAX)) {
      return cmr_cli_usage_error(&cli, "each option needs a positive number in range");
    }
  }
  if (argc - optind != 2) return cmr_cli_usage_error(&cli, "a shape and an output file are needed");
  const log_shape *known = NULL;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
    if (strcmp(argv[optind], shapes[i].name) == 0) known = &shapes[i];
  }
  if (known == NULL) return cmr_cli_usage_error(&cli, "the shape is random or mixed");
  log_shape shape = *known;
  if (given[0] != 0) shape.allocations = (size_t)given[0];
  if (given[1] != 0) shape.max_size = (size_t)given[1];
  if (given[2] != 0) shape.max_usage = (size_t)given[2];
  unsigned long long seed = given[3];
  return make_log(&shape, argv[optind + 1], seed);
}
