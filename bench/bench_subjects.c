/* SPDX-License-Identifier: Apache-2.0 */
/* The benchmark's resources (see bench_subjects.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_subjects.h"
#include "cli.h"

static void require(cmr_status status, const char *what) { bench_check(status, "making", what); }

double bench_now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void bench_check(cmr_status status, const char *what, const char *subject) {
  if (status == CMR_SUCCESS) return;
  fprintf(stderr, "%s: %s: %s: %s\n", subject, what, cmr_status_string(status), cmr_last_error_message());
  exit(1);
}

const bench_stack_subject *bench_find_stack_subject(const bench_stack_subject *table, int count, const char *name) {
  for (int i = 0; i < count; ++i) {
    if (strcmp(table[i].name, name) == 0) return &table[i];
  }
  return NULL;
}

/* Each maker adds one subject over `base`. */
#define CMR_BENCH_OWNED(type, subject_name, work_share, ...)                                                   \
  do {                                                                                                         \
    cmr_##type##_resource *handle_ = NULL;                                                                     \
    require(cmr_##type##_resource_create(__VA_ARGS__, &handle_), subject_name);                                \
    subjects[count++] = (bench_subject){subject_name, cmr_##type##_resource_ref(handle_), work_share, handle_, \
                                        (cmr_status(*)(void *))cmr_##type##_resource_destroy};                 \
  } while (0)

static cmr_resource_ref base_ref;
static void *base_handle;
static cmr_status (*base_destroy)(void *handle);

/* The base the other subjects sit on, itself a subject (destroyed last, by
 * bench_destroy_subjects, not as a subject). */
#define CMR_BENCH_BASE(type, subject_name, work_share)                                   \
  do {                                                                                   \
    cmr_##type##_resource *base_ = NULL;                                                 \
    require(cmr_##type##_resource_create(&base_), #type);                                \
    base_ref = cmr_##type##_resource_ref(base_);                                         \
    base_handle = base_;                                                                 \
    base_destroy = (cmr_status(*)(void *))cmr_##type##_resource_destroy;                 \
    subjects[count++] = (bench_subject){subject_name, base_ref, work_share, NULL, NULL}; \
  } while (0)

int bench_make_subjects(bench_subject *subjects) {
  int count = 0;
  size_t pool_bytes = (size_t)1 << 30, arena_bytes = (size_t)1 << 30;
  if (cmr_built_with_cuda()) {
    CMR_BENCH_OWNED(cuda_async, "cuda_async (driver pool)", 1.0, CMR_SIZE(0), CMR_SIZE_DEFAULT,
                    CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE, CMR_SIZE_DEFAULT);
    CMR_BENCH_BASE(cuda, "cuda (cudaMalloc)", 0.01);
    /* Both take their memory at creation, outside the timed cases: the pool
     * 32 GiB, what it grows to for random_allocations' 16 GiB cap (from
     * 8 GiB it grew by 8 and 16 GiB of cudaMalloc inside the 2,000
     * operations of 1,000 x 64 MiB, which were then 56 us each, issue 20;
     * it still doubles to 64 GiB for blocks of up to 4 GiB).
     * The arena cannot grow: room for random_allocations' 16 GiB cap with
     * its fragmentation. 32 GiB was not enough for 100,000 blocks of up to
     * 4 GiB (the pool, which grows, took 64 GiB there; given 32 GiB it runs
     * out sooner than the arena); 40 GiB holds every case
     * (tests/c/test_random_workload.c replays them on a simulated H200). */
    pool_bytes = (size_t)32 << 30, arena_bytes = (size_t)40 << 30;
  } else {
    CMR_BENCH_BASE(system, "system (malloc)", 1.0);
  }
  CMR_BENCH_OWNED(pool, "pool", 1.0, base_ref, CMR_SIZE(pool_bytes), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                  CMR_POOL_CAPTURE_SERVE);
  cmr_resource_ref pool_ref = subjects[count - 1].ref;
  CMR_BENCH_OWNED(arena, "arena", 1.0, base_ref, CMR_SIZE(arena_bytes), false, "", CMR_ARENA_CAPTURE_SERVE);
  CMR_BENCH_OWNED(fixed_size, "fixed_size (64 KiB)", 1.0, base_ref, CMR_SIZE(bench_fixed_size_block), CMR_SIZE(1024),
                  CMR_FIXED_SIZE_CAPTURE_SERVE);
  /* Over the pool, as a user would stack it: bins for the small sizes, the
   * pool for the rest. */
  CMR_BENCH_OWNED(binning, "binning(pool) 2^8..2^16", 1.0, pool_ref, CMR_INT(8), CMR_INT(16));
  return count;
}

void bench_destroy_subjects(bench_subject *subjects, int count) {
  for (int i = count - 1; i >= 0; --i) {
    if (subjects[i].destroy != NULL) require(subjects[i].destroy(subjects[i].handle), subjects[i].name);
  }
  require(base_destroy(base_handle), "base");
}

bench_options bench_parse_options(const char *program, const char *description, bool with_csv, int argc, char **argv) {
  static const struct option all_options[] = {
      {"quick", no_argument, NULL, 'q'}, CMR_CLI_STANDARD_OPTIONS, {"csv", required_argument, NULL, 'c'}, {0}};
  /* Without --csv the table ends before it. */
  struct option options[sizeof all_options / sizeof all_options[0]];
  memcpy(options, all_options, sizeof options);
  if (!with_csv) memset(&options[3], 0, sizeof options[3]);
  char help[512];
  snprintf(help, sizeof help, "%s\n  --quick      a smoke run: a fraction of the work\n%s", description,
           with_csv ? "  --csv FILE   also write the figures to FILE, for bench/plot.py\n" : "");
  cmr_cli cli = {program, with_csv ? "[--quick] [--csv FILE]" : "[--quick]", help};
  bench_options parsed = {false, NULL};
  int option;
  while ((option = cmr_cli_next(&cli, argc, argv, "", options)) != -1) {
    if (option == 'q') {
      parsed.quick = true;
    } else if ((parsed.csv = fopen(optarg, "w")) == NULL) {
      perror(optarg);
      exit(cmr_cli_usage_error(&cli, "--csv needs a file that can be written"));
    }
  }
  if (optind < argc) exit(cmr_cli_usage_error(&cli, "no operands are taken"));
  return parsed;
}
