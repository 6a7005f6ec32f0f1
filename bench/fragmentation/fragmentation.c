/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-fragmentation: how much memory each allocator holds to serve an
 * allocation log, and whether it completes under a cap.
 *
 *   cmr-bench-fragmentation [--leaf EXPR] [--cap-ratio R] [--csv OUT] TRACE...
 *
 * Each TRACE is an allocation log in RMM's CSV format (what cmr's logging
 * adaptor writes; .csv.gz read directly where the build has zlib), read by
 * the reader cmr-replay uses (tools/replay_log.h). Its events are replayed
 * in the log's order on one thread (the order is what fragments; threads
 * would only shuffle it) through every allocator of the table below, each
 * over the leaf EXPR (default "simulated": addresses without memory, so a
 * GPU's log replays anywhere and what an allocator takes from it is counted
 * exactly), three times on a fresh stack each:
 *
 *   1. timed: the seconds of the replay, per operation (allocations and
 *      frees), and as a ratio to pool's on the same trace;
 *   2. held: the most bytes the allocator held from below at once: the
 *      simulated leaf's peak when it sits on one; for an allocator that is
 *      its own leaf (cuda_async, expandable) the peak of held bytes its
 *      statistics give (cmr_ref_stats: the driver pool's reserved high,
 *      expandable's committed high), where they give it; otherwise (a real
 *      leaf) the largest drop of the device's free memory
 *      (cmr_device_memory_info) seen after any allocation, an untimed pass
 *      of its own;
 *   3. capped: under a cap of R (default 1.25) times the trace's peak in use,
 *      rounded up to 2 MiB: the number of allocations refused with
 *      out-of-memory. The cap is limiting(LEAF, allocation_limit=CAP) under
 *      the allocator, so it bounds what the allocator holds; for an
 *      allocator that is its own leaf it is limiting on top, bounding what
 *      is in use (its driver pool is not capped).
 *
 * It prints one table (trace, allocator, peak in use, peak held, held / in
 * use, ns per operation, time against pool, cap, failures under the cap;
 * held is "unmeasured" where sampling saw free memory not move: a leaf
 * whose memory is not taken when handed out, as the host's untouched pages)
 * and, with --csv, writes the same rows as CSV for bench/fragmentation/plot.py.
 * An allocator the build lacks (cuda_async in the host build) is reported
 * as such; fixed_size is replayed only on traces whose requests fit its
 * block. Figures are results, never checked here: the exit status is 0 when
 * every replay ran, 1 when a trace cannot be read, a stack does not build
 * for another reason than the build lacking it, or a free fails, 2 for bad
 * usage, 77 in a CUDA build without a GPU. */
#define _POSIX_C_SOURCE 200809L

#include <cmr/cmr.h>
#include <cmr/stack.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "replay_log.h"

/* One allocator: its stack, with {leaf} where the leaf goes (none: it is
 * its own leaf), {cap} for the cap in bytes and {largest} for the trace's
 * largest request rounded up to 256, {in_use} for its peak in use rounded up
 * to 2 MiB; `largest` is the largest request it
 * is replayed with (0: any). Adding an allocator is one line. */
typedef struct cmr_subject {
  const char *name;
  const char *expression;
  size_t largest;
} cmr_subject;

static const cmr_subject cmr_subjects[] = {
    {"pool", "pool({leaf}, initial_pool_size=0)", 0},
    /* The arena takes its whole size at creation: its held is the cap. */
    {"arena", "arena({leaf}, arena_size={cap})", 0},
    {"binning", "binning(pool({leaf}, initial_pool_size=0), min_size_exponent=8, max_size_exponent=16)", 0},
    /* Blocks of the trace's largest request, for traces of requests up to 1 MiB. */
    {"fixed_size", "fixed_size({leaf}, block_size={largest}, blocks_to_preallocate=1)", (size_t)1 << 20},
    {"cuda_async", "cuda_async", 0},
    /* One reserved range, committed a granule at a time: its own leaf;
     * then told the working set, so that it decommits its free granules
     * once it holds more (a program that knows its budget). */
    {"expandable", "expandable", 0},
    {"expandable_rt", "expandable(release_threshold={in_use})", 0},
};
enum { cmr_subject_count = sizeof cmr_subjects / sizeof cmr_subjects[0] };

#define CMR_CAP_GRANULE ((size_t)2 << 20)

/* `bytes` rounded up to the cap's granule. */
static size_t cmr_cap_granules(size_t bytes) {
  return (bytes + CMR_CAP_GRANULE - 1) / CMR_CAP_GRANULE * CMR_CAP_GRANULE;
}

typedef struct cmr_result {
  const char *trace;
  const char *name;
  const char *skipped; /* why it did not run (often `why`), or NULL */
  char why[128];
  size_t peak_in_use, peak_held, cap, failures, operations;
  double seconds;
  /* Sampled free memory did not move: the leaf's memory is not taken when
   * handed out (the host's untouched pages), so what is held is unknown. */
  bool held_unmeasured;
} cmr_result;

typedef struct cmr_run {
  size_t peak_in_use, peak_held, failures, operations;
  double seconds;
} cmr_run;

static double cmr_seconds_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

typedef struct cmr_fill {
  const char *leaf;
  size_t cap, largest, in_use;
} cmr_fill;

/* `pattern` with {leaf}, {cap}, {largest} (rounded up to 256) and {in_use}
 * (the trace's peak in use, rounded up to the cap's granule) replaced;
 * false when it does not fit. */
static bool cmr_expand(const char *pattern, const cmr_fill *fill, char *out, size_t size) {
  const struct {
    const char *name;
    size_t value;
  } numbers[] = {{"{cap}", fill->cap}, {"{largest}", (fill->largest + 255) / 256 * 256}, {"{in_use}", fill->in_use}};
  size_t used = 0;
  for (const char *at = pattern; *at != '\0';) {
    int wrote = -1;
    if (strncmp(at, "{leaf}", 6) == 0) {
      wrote = snprintf(out + used, size - used, "%s", fill->leaf);
      at += 6;
    }
    for (size_t i = 0; wrote < 0 && i < sizeof numbers / sizeof numbers[0]; ++i) {
      size_t length = strlen(numbers[i].name);
      if (strncmp(at, numbers[i].name, length) == 0) {
        wrote = snprintf(out + used, size - used, "%zu", numbers[i].value);
        at += length;
      }
    }
    if (wrote < 0) wrote = snprintf(out + used, size - used, "%c", *at++);
    if (wrote < 0 || (size_t)wrote >= size - used) return false;
    used += (size_t)wrote;
  }
  return true;
}

/* CMR_NOT_UNDER_CAP: making the stack took more than the cap (binning's
 * bins, an arena larger than it): under the cap nothing can be served. */
typedef enum cmr_built { CMR_BUILT, CMR_NOT_IN_BUILD, CMR_NOT_UNDER_CAP, CMR_BUILD_FAILED } cmr_built;

/* Whether `subject` is its own leaf (no {leaf} in its stack). */
static bool cmr_is_own_leaf(const cmr_subject *subject) { return strstr(subject->expression, "{leaf}") == NULL; }

/* The stack of `subject` over the fill's leaf, capped at its cap when `capped`. */
static cmr_built cmr_build(const cmr_subject *subject, cmr_fill fill, bool capped, cmr_stack **out) {
  char capped_leaf[512], expression[1024], wrapped[1200];
  bool own_leaf = cmr_is_own_leaf(subject);
  size_t cap = fill.cap;
  if (capped && !own_leaf) {
    snprintf(capped_leaf, sizeof capped_leaf, "limiting(%s, allocation_limit=%zu)", fill.leaf, cap);
    fill.leaf = capped_leaf;
  }
  if (!cmr_expand(subject->expression, &fill, expression, sizeof expression)) {
    fprintf(stderr, "cmr-bench-fragmentation: the stack of %s is too long\n", subject->name);
    return CMR_BUILD_FAILED;
  }
  const char *text = expression;
  if (capped && own_leaf) {
    snprintf(wrapped, sizeof wrapped, "limiting(%s, allocation_limit=%zu)", expression, cap);
    text = wrapped;
  }
  cmr_status status = cmr_stack_parse(text, out);
  if (status == CMR_ERROR_UNSUPPORTED || status == CMR_ERROR_NO_DEVICE) {
    cmr_clear_last_error();
    return CMR_NOT_IN_BUILD;
  }
  if (status == CMR_ERROR_OUT_OF_MEMORY && capped) {
    cmr_clear_last_error();
    return CMR_NOT_UNDER_CAP;
  }
  if (status != CMR_SUCCESS) {
    fprintf(stderr, "cmr-bench-fragmentation: \"%s\" does not build: %s: %s\n", text, cmr_status_string(status),
            cmr_last_error_message());
    return CMR_BUILD_FAILED;
  }
  return CMR_BUILT;
}

/* Bytes the device has free now (the host's available memory in the host build). */
static size_t cmr_free_memory(void) {
  size_t free_bytes = 0, total = 0;
  if (cmr_device_memory_info(&free_bytes, &total) != CMR_SUCCESS) cmr_clear_last_error();
  return free_bytes;
}

/* Replays the log through `top` in its order; with `sample`, tracks the
 * largest drop of free memory from `free_at_start`. Every allocation still
 * live at the end is freed. False when a free fails (said on stderr). */
static bool cmr_replay(cmr_replay_log *log, cmr_resource_ref top, bool sample, cmr_run *run) {
  size_t in_use = 0, free_at_start = sample ? cmr_free_memory() : 0;
  bool ok = true;
  *run = (cmr_run){0};
  double start = cmr_seconds_now();
  for (size_t i = 0; i < log->count && ok; ++i) {
    cmr_log_event *e = &log->events[i];
    if (e->action == ACTION_ALLOCATE) {
      run->operations++;
      if (cmr_allocate(top, e->size, CMR_DEFAULT_STREAM, &e->replayed) != CMR_SUCCESS) {
        e->replayed = NULL;
        run->failures++;
        continue;
      }
      in_use += e->size;
      if (in_use > run->peak_in_use) run->peak_in_use = in_use;
      if (sample) {
        size_t free_now = cmr_free_memory();
        if (free_now < free_at_start && free_at_start - free_now > run->peak_held) {
          run->peak_held = free_at_start - free_now;
        }
      }
    } else if (e->action == ACTION_FREE) {
      cmr_log_event *allocation = &log->events[e->pair];
      if (allocation->replayed == NULL) continue; /* refused in this replay */
      run->operations++;
      cmr_status status = cmr_deallocate(top, allocation->replayed, e->size, CMR_DEFAULT_STREAM);
      if (status != CMR_SUCCESS) {
        fprintf(stderr, "cmr-bench-fragmentation: %s:%zu: the free failed: %s: %s\n", log->path, e->line,
                cmr_status_string(status), cmr_last_error_message());
        ok = false;
      }
      allocation->replayed = NULL;
      in_use -= e->size;
    }
  }
  run->seconds = cmr_seconds_now() - start;
  for (size_t i = 0; i < log->count; ++i) {
    cmr_log_event *e = &log->events[i];
    if (e->action == ACTION_ALLOCATE && e->replayed != NULL) {
      cmr_deallocate(top, e->replayed, e->size, CMR_DEFAULT_STREAM);
      e->replayed = NULL;
    }
  }
  return ok;
}

/* One replay on a fresh stack: 0, 1 for a failure, or -1 when the build
 * lacks it. A stack that cannot be made under its cap serves nothing: every
 * allocation of the log fails. */
static int cmr_replay_on(cmr_replay_log *log, const cmr_subject *subject, cmr_fill fill, bool capped, bool sample,
                         cmr_run *run, size_t *held_peak) {
  cmr_stack *stack = NULL;
  cmr_built built = cmr_build(subject, fill, capped, &stack);
  if (built == CMR_NOT_UNDER_CAP) {
    *run = (cmr_run){.failures = log->allocations, .operations = log->allocations};
    return 0;
  }
  if (built != CMR_BUILT) return built == CMR_NOT_IN_BUILD ? -1 : 1;
  cmr_resource_ref top;
  cmr_stack_ref(stack, &top);
  int failed = cmr_replay(log, top, sample, run) ? 0 : 1;
  if (held_peak != NULL && !cmr_replay_held_peak(stack, held_peak)) *held_peak = SIZE_MAX;
  cmr_stack_destroy(stack);
  return failed;
}

static size_t cmr_largest_request(const cmr_replay_log *log) {
  size_t largest = 0;
  for (size_t i = 0; i < log->count; ++i) {
    if (log->events[i].action == ACTION_ALLOCATE && log->events[i].size > largest) largest = log->events[i].size;
  }
  return largest;
}

/* The three runs of one allocator on one trace. */
static int cmr_measure(cmr_replay_log *log, const cmr_subject *subject, const char *leaf, double cap_ratio,
                       size_t trace_peak, cmr_result *result) {
  cmr_fill fill = {.leaf = leaf, .largest = cmr_largest_request(log), .in_use = cmr_cap_granules(trace_peak)};
  if (subject->largest != 0 && fill.largest > subject->largest) {
    snprintf(result->why, sizeof result->why, "requests up to %zu B pass the %zu B it is replayed with", fill.largest,
             subject->largest);
    result->skipped = result->why;
    return 0;
  }
  fill.cap = (size_t)((double)trace_peak * cap_ratio);
  fill.cap = cmr_cap_granules(fill.cap);
  result->cap = fill.cap;
  cmr_run timed, held, capped;
  size_t held_peak = SIZE_MAX;
  int failed = cmr_replay_on(log, subject, fill, false, false, &timed, &held_peak);
  if (failed < 0) {
    result->skipped = "not in this build";
    return 0;
  }
  if (failed == 0 && held_peak == SIZE_MAX) {
    failed = cmr_replay_on(log, subject, fill, false, true, &held, NULL);
    held_peak = held.peak_held;
  }
  if (failed == 0) failed = cmr_replay_on(log, subject, fill, true, false, &capped, NULL);
  if (failed != 0) return 1;
  result->peak_in_use = timed.peak_in_use;
  result->peak_held = held_peak;
  result->held_unmeasured = held_peak == 0 && timed.peak_in_use > 0;
  result->seconds = timed.seconds;
  result->operations = timed.operations;
  result->failures = capped.failures;
  if (timed.failures != 0) {
    fprintf(stderr, "cmr-bench-fragmentation: %s: %s refused %zu allocations without a cap\n", log->path, subject->name,
            timed.failures);
  }
  return 0;
}

static const char *cmr_base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

static double cmr_ns_per_operation(const cmr_result *r) {
  return r->operations != 0 ? r->seconds * 1e9 / (double)r->operations : 0.0;
}

/* Pool's time on the same trace, the reference of the time ratio. */
static const cmr_result *cmr_pool_of(const cmr_result *results, size_t count, const char *trace) {
  for (size_t i = 0; i < count; ++i) {
    if (results[i].trace == trace && strcmp(results[i].name, "pool") == 0 && results[i].skipped == NULL) {
      return &results[i];
    }
  }
  return NULL;
}

static void cmr_print_table(const cmr_result *results, size_t count) {
  printf("%-28s %-14s %14s %14s %9s %9s %9s %14s %9s\n", "trace", "allocator", "peak in use", "peak held", "held/use",
         "ns/op", "vs pool", "cap", "failures");
  for (size_t i = 0; i < count; ++i) {
    const cmr_result *r = &results[i];
    if (r->skipped != NULL) {
      printf("%-28s %-14s %s\n", cmr_base_name(r->trace), r->name, r->skipped);
      continue;
    }
    const cmr_result *pool = cmr_pool_of(results, count, r->trace);
    double ratio = pool != NULL && pool->seconds > 0 ? r->seconds / pool->seconds : 0.0;
    char held[24] = "unmeasured", share[16] = "-";
    if (!r->held_unmeasured) {
      snprintf(held, sizeof held, "%zu", r->peak_held);
      snprintf(share, sizeof share, "%.3f", r->peak_in_use ? (double)r->peak_held / (double)r->peak_in_use : 0.0);
    }
    printf("%-28s %-14s %14zu %14s %9s %9.1f %9.2f %14zu %9zu\n", cmr_base_name(r->trace), r->name, r->peak_in_use,
           held, share, cmr_ns_per_operation(r), ratio, r->cap, r->failures);
  }
}

static int cmr_write_csv(const char *path, const cmr_result *results, size_t count) {
  FILE *file = fopen(path, "w");
  if (file == NULL) {
    fprintf(stderr, "cmr-bench-fragmentation: %s: cannot be written: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(file, "trace,allocator,peak_in_use,peak_held,ns_per_operation,time_vs_pool,cap,failures_under_cap\n");
  for (size_t i = 0; i < count; ++i) {
    const cmr_result *r = &results[i];
    if (r->skipped != NULL) continue;
    const cmr_result *pool = cmr_pool_of(results, count, r->trace);
    char held[24] = ""; /* empty: unmeasured */
    if (!r->held_unmeasured) snprintf(held, sizeof held, "%zu", r->peak_held);
    fprintf(file, "%s,%s,%zu,%s,%.3f,%.4f,%zu,%zu\n", cmr_base_name(r->trace), r->name, r->peak_in_use, held,
            cmr_ns_per_operation(r), pool != NULL && pool->seconds > 0 ? r->seconds / pool->seconds : 0.0, r->cap,
            r->failures);
  }
  int failed = fclose(file) != 0;
  if (failed) fprintf(stderr, "cmr-bench-fragmentation: %s: writing failed: %s\n", path, strerror(errno));
  return failed;
}

/* Every allocator on one trace, its rows appended to `results`. */
static int cmr_bench_trace(const char *path, const char *leaf, double cap_ratio, cmr_result *results, size_t *count) {
  cmr_replay_log log;
  int failed = cmr_replay_log_read("cmr-bench-fragmentation", path, &log);
  cmr_run reference = {0};
  if (failed == 0) {
    /* The trace's own peak in use, from a replay over the leaf alone. */
    static const cmr_subject leaf_alone = {"leaf", "{leaf}", 0};
    failed = cmr_replay_on(&log, &leaf_alone, (cmr_fill){.leaf = leaf}, false, false, &reference, NULL) != 0;
  }
  for (size_t s = 0; s < cmr_subject_count && failed == 0; ++s) {
    cmr_result *r = &results[(*count)++];
    *r = (cmr_result){.trace = path, .name = cmr_subjects[s].name};
    failed = cmr_measure(&log, &cmr_subjects[s], leaf, cap_ratio, reference.peak_in_use, r);
  }
  cmr_replay_log_free(&log);
  return failed;
}

static const cmr_cli cmr_fragmentation_cli = {
    "cmr-bench-fragmentation", "[--leaf EXPR] [--cap-ratio R] [--csv OUT] TRACE.csv[.gz]...",
    "Replays allocation logs through every allocator: peak held / peak in use, failures under a cap, time.\n"
    "  --leaf EXPR      the leaf under each allocator (default simulated: addresses without memory)\n"
    "  --cap-ratio R    the cap, as R times the trace's peak in use (default 1.25)\n"
    "  --csv OUT        also write the rows as CSV (bench/fragmentation/plot.py draws them)\n"};

int main(int argc, char **argv) {
  static const struct option options[] = {{"leaf", required_argument, NULL, 'l'},
                                          {"cap-ratio", required_argument, NULL, 'r'},
                                          {"csv", required_argument, NULL, 'c'},
                                          CMR_CLI_STANDARD_OPTIONS,
                                          {0}};
  const char *leaf = "simulated", *csv = NULL;
  double cap_ratio = 1.25;
  int option;
  while ((option = cmr_cli_next(&cmr_fragmentation_cli, argc, argv, "", options)) != -1) {
    if (option == 'l') {
      leaf = optarg;
    } else if (option == 'c') {
      csv = optarg;
    } else {
      char *end = NULL;
      cap_ratio = strtod(optarg, &end);
      if (end == optarg || *end != '\0' || !(cap_ratio >= 1.0 && cap_ratio <= 100.0)) {
        return cmr_cli_usage_error(&cmr_fragmentation_cli, "--cap-ratio needs a number from 1 to 100");
      }
    }
  }
  if (optind >= argc) return cmr_cli_usage_error(&cmr_fragmentation_cli, "at least one trace is needed");
  int devices = 0;
  if (cmr_built_with_cuda() && (cmr_device_count(&devices) != CMR_SUCCESS || devices == 0)) {
    printf("a CUDA build without a GPU: skipped\n"); /* its streams are the device's */
    return 77;
  }
  size_t traces = (size_t)(argc - optind);
  cmr_result *results = calloc(traces * cmr_subject_count, sizeof *results);
  if (results == NULL) {
    fprintf(stderr, "cmr-bench-fragmentation: no host memory for the results\n");
    return 1;
  }
  size_t count = 0;
  int failed = 0;
  for (int i = optind; i < argc && failed == 0; ++i)
    failed = cmr_bench_trace(argv[i], leaf, cap_ratio, results, &count);
  if (failed == 0) {
    printf("leaf: %s; cap: %.2f x each trace's peak in use (rounded up to 2 MiB)\n", leaf, cap_ratio);
    cmr_print_table(results, count);
    if (csv != NULL) failed = cmr_write_csv(csv, results, count);
  }
  free(results);
  if (failed == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
    fprintf(stderr, "cmr-bench-fragmentation: the table could not be written: %s\n", strerror(errno));
    failed = 1;
  }
  return failed;
}
