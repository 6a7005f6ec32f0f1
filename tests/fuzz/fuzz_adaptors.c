/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness of adaptor stacks over a pool:
 *   statistics(thread_safe?(logging?(failure_callback?(prefetch?(
 *     tracking?(limiting?(aligned?(pool(upstream)))))))))
 * the input choosing which of the middle seven are there. Besides the
 * model's checks: statistics' counters (with push/pop, the extra operation)
 * against a model of the levels, tracking's and limiting's counts, limiting
 * out of memory exactly when the count would pass the limit, aligned's
 * alignment above its threshold, the failure callback called once per retry
 * it grants and once more for each out of memory that reaches the caller,
 * and logging's rows: no row lost,
 * and one "allocate" row per allocation and one "free" row per free. */
#include <stdio.h>
#include <string.h>

#include "fuzz_model.h"

#define CMR_FUZZ_LEVELS 16

typedef struct cmr_fuzz_counter {
  int64_t value, peak, total;
} cmr_fuzz_counter;

static struct {
  cmr_pool_resource *pool;
  cmr_aligned_resource *aligned;
  cmr_limiting_resource *limiting;
  cmr_tracking_resource *tracking;
  cmr_statistics_resource *statistics;
  size_t allocation_alignment, threshold; /* aligned's */
  size_t limit, limit_alignment, limited; /* limiting's, and the model's count */
  size_t tracked_bytes;
  cmr_prefetch_resource *prefetch;
  cmr_failure_callback_resource *failure_callback;
  unsigned retries;                        /* the callback says retry this many times in a row, then no */
  size_t callback_calls, streak, failures; /* its calls; failures: out of memory reaching the caller */
  cmr_logging_resource *logging;
  FILE *log;
  size_t allocations_logged, frees_logged; /* the model's: successful calls through logging */
  cmr_thread_safe_resource *thread_safe;
  cmr_fuzz_counter bytes[CMR_FUZZ_LEVELS], allocations[CMR_FUZZ_LEVELS];
  size_t levels;
} stack;

static bool cmr_fuzz_on_failure(size_t bytes, void *arg) {
  (void)bytes, (void)arg;
  stack.callback_calls++;
  if (stack.streak < stack.retries) {
    stack.streak++;
    return true;
  }
  stack.streak = 0;
  return false;
}

/* The layers above tracking: prefetch, failure_callback, logging, thread_safe. */
static cmr_resource_ref cmr_fuzz_adaptors_upper(cmr_fuzz_run *run, uint8_t layers, cmr_resource_ref ref) {
  if (layers & 16) {
    cmr_fuzz_ok(run, cmr_prefetch_resource_create(ref, &stack.prefetch), "prefetch_create");
    ref = cmr_prefetch_resource_ref(stack.prefetch);
  }
  if (layers & 32) {
    stack.retries = cmr_fuzz_byte(&run->in) % 3;
    cmr_fuzz_ok(run, cmr_failure_callback_resource_create(ref, cmr_fuzz_on_failure, NULL, &stack.failure_callback),
                "failure_callback_create");
    ref = cmr_failure_callback_resource_ref(stack.failure_callback);
  }
  if (layers & 64) {
    stack.log = tmpfile();
    if (stack.log == NULL) cmr_fuzz_fail(run, "no temporary file for the log");
    cmr_fuzz_ok(run, cmr_logging_resource_create(ref, "", stack.log, false, &stack.logging), "logging_create");
    ref = cmr_logging_resource_ref(stack.logging);
  }
  if (layers & 128) {
    cmr_fuzz_ok(run, cmr_thread_safe_resource_create(ref, &stack.thread_safe), "thread_safe_create");
    ref = cmr_thread_safe_resource_ref(stack.thread_safe);
  }
  return ref;
}

static void cmr_fuzz_adaptors_create(cmr_fuzz_run *run, cmr_resource_ref upstream) {
  uint8_t layers = cmr_fuzz_byte(&run->in), shape = cmr_fuzz_byte(&run->in);
  memset(&stack, 0, sizeof stack);
  stack.levels = 1;
  cmr_fuzz_ok(run,
              cmr_pool_resource_create(upstream, CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                       CMR_POOL_CAPTURE_SERVE, &stack.pool),
              "pool_create");
  cmr_resource_ref ref = cmr_pool_resource_ref(stack.pool);
  if (layers & 1) {
    stack.allocation_alignment = CMR_DEFAULT_ALIGNMENT << shape % 6;
    stack.threshold = cmr_fuzz_range(&run->in, 1, 1 << 16);
    cmr_fuzz_ok(run,
                cmr_aligned_resource_create(ref, CMR_SIZE(stack.allocation_alignment), CMR_SIZE(stack.threshold),
                                            &stack.aligned),
                "aligned_create");
    ref = cmr_aligned_resource_ref(stack.aligned);
  }
  if (layers & 2) {
    stack.limit_alignment = CMR_DEFAULT_ALIGNMENT << (shape >> 3) % 4;
    stack.limit = cmr_fuzz_range(&run->in, 1, 1 << 12) << 10; /* up to 4 MiB */
    cmr_fuzz_ok(run, cmr_limiting_resource_create(ref, stack.limit, CMR_SIZE(stack.limit_alignment), &stack.limiting),
                "limiting_create");
    ref = cmr_limiting_resource_ref(stack.limiting);
  }
  if (layers & 4) {
    cmr_fuzz_ok(run, cmr_tracking_resource_create(ref, layers & 8, &stack.tracking), "tracking_create");
    ref = cmr_tracking_resource_ref(stack.tracking);
  }
  ref = cmr_fuzz_adaptors_upper(run, layers, ref);
  cmr_fuzz_ok(run, cmr_statistics_resource_create(ref, &stack.statistics), "statistics_create");
  run->top = cmr_statistics_resource_ref(stack.statistics);
}

static size_t cmr_fuzz_counted(size_t bytes) {
  return (bytes + stack.limit_alignment - 1) / stack.limit_alignment * stack.limit_alignment;
}

/* Limiting refuses exactly when the count would pass the limit; below it,
 * only the upstream's refusal explains out of memory. */
static bool cmr_fuzz_adaptors_oom(cmr_fuzz_run *run, size_t bytes, size_t alignment, bool refused) {
  (void)run, (void)alignment;
  bool over = stack.limiting != NULL && cmr_fuzz_counted(bytes) > stack.limit - stack.limited;
  stack.failures++;
  return over || refused;
}

/* A statistics counter moved by `delta` in the top level. */
static void cmr_fuzz_count(cmr_fuzz_counter *levels, int64_t delta) {
  cmr_fuzz_counter *top = &levels[stack.levels - 1];
  top->value += delta;
  if (delta > 0) top->total += delta;
  if (top->value > top->peak) top->peak = top->value;
}

static void cmr_fuzz_adaptors_allocated(cmr_fuzz_run *run, const cmr_fuzz_block *block) {
  if (stack.limiting != NULL && cmr_fuzz_counted(block->bytes) > stack.limit - stack.limited) {
    cmr_fuzz_fail(run, "limiting let %zu bytes pass its limit of %zu (%zu counted)", block->bytes, stack.limit,
                  stack.limited);
  }
  if (stack.aligned != NULL && block->bytes >= stack.threshold &&
      (uintptr_t)block->ptr % stack.allocation_alignment != 0) {
    cmr_fuzz_fail(run, "aligned returned %p for %zu bytes, not aligned to %zu", (void *)block->ptr, block->bytes,
                  stack.allocation_alignment);
  }
  if (stack.limiting != NULL) stack.limited += cmr_fuzz_counted(block->bytes);
  stack.tracked_bytes += block->bytes;
  stack.allocations_logged++;
  cmr_fuzz_count(stack.bytes, (int64_t)block->bytes);
  cmr_fuzz_count(stack.allocations, 1);
}

static void cmr_fuzz_adaptors_freed(cmr_fuzz_run *run, const cmr_fuzz_block *block) {
  (void)run;
  if (stack.limiting != NULL) stack.limited -= cmr_fuzz_counted(block->bytes);
  stack.tracked_bytes -= block->bytes;
  stack.frees_logged++;
  cmr_fuzz_count(stack.bytes, -(int64_t)block->bytes);
  cmr_fuzz_count(stack.allocations, -1);
}

/* push_counters, or pop_counters (refused with only the base level left). */
static void cmr_fuzz_adaptors_push_pop(cmr_fuzz_run *run, uint8_t byte) {
  if (byte & 1 && stack.levels < CMR_FUZZ_LEVELS) {
    cmr_fuzz_ok(run, cmr_statistics_resource_push_counters(stack.statistics), "push_counters");
    stack.bytes[stack.levels] = stack.allocations[stack.levels] = (cmr_fuzz_counter){0, 0, 0};
    ++stack.levels;
    return;
  }
  cmr_status status = cmr_statistics_resource_pop_counters(stack.statistics);
  if (stack.levels == 1) {
    if (status != CMR_ERROR_INVALID_ARGUMENT)
      cmr_fuzz_fail(run, "pop of the base level returned %s", cmr_status_string(status));
    return;
  }
  cmr_fuzz_ok(run, status, "pop_counters");
  --stack.levels;
  cmr_fuzz_counter *kinds[] = {stack.bytes, stack.allocations};
  for (int k = 0; k < 2; ++k) {
    cmr_fuzz_counter *below = &kinds[k][stack.levels - 1], *top = &kinds[k][stack.levels];
    if (below->value + top->peak > below->peak) below->peak = below->value + top->peak;
    below->value += top->value;
    below->total += top->total;
  }
}

/* Every statistics reader of one kind against the model. */
static void cmr_fuzz_check_kind(cmr_fuzz_run *run, const cmr_fuzz_counter *levels, const char *kind,
                                cmr_status (*current)(cmr_statistics_resource *, size_t *),
                                cmr_status (*peak)(cmr_statistics_resource *, size_t *),
                                cmr_status (*total)(cmr_statistics_resource *, size_t *)) {
  int64_t sum = 0;
  for (size_t i = 0; i < stack.levels; ++i) sum += levels[i].value;
  size_t got = 0;
  cmr_fuzz_ok(run, current(stack.statistics, &got), kind);
  cmr_fuzz_expect(run, got, (size_t)sum, kind);
  cmr_fuzz_ok(run, peak(stack.statistics, &got), kind);
  cmr_fuzz_expect(run, got, (size_t)levels[stack.levels - 1].peak, kind);
  cmr_fuzz_ok(run, total(stack.statistics, &got), kind);
  cmr_fuzz_expect(run, got, (size_t)levels[stack.levels - 1].total, kind);
}

static void cmr_fuzz_adaptors_check(cmr_fuzz_run *run) {
  cmr_fuzz_check_kind(run, stack.bytes, "bytes (current, peak, total)", cmr_statistics_resource_bytes_current,
                      cmr_statistics_resource_bytes_peak, cmr_statistics_resource_bytes_total);
  cmr_fuzz_check_kind(run, stack.allocations, "allocations (current, peak, total)",
                      cmr_statistics_resource_allocations_current, cmr_statistics_resource_allocations_peak,
                      cmr_statistics_resource_allocations_total);
  size_t got = 0;
  cmr_fuzz_ok(run, cmr_statistics_resource_counter_levels(stack.statistics, &got), "counter_levels");
  cmr_fuzz_expect(run, got, stack.levels, "counter_levels");
  if (stack.limiting != NULL) {
    cmr_fuzz_ok(run, cmr_limiting_resource_allocated_bytes(stack.limiting, &got), "limiting allocated_bytes");
    cmr_fuzz_expect(run, got, stack.limited, "limiting allocated_bytes");
  }
  if (stack.tracking != NULL) {
    cmr_fuzz_ok(run, cmr_tracking_resource_allocated_bytes(stack.tracking, &got), "tracking allocated_bytes");
    cmr_fuzz_expect(run, got, stack.tracked_bytes, "tracking allocated_bytes");
    cmr_fuzz_ok(run, cmr_tracking_resource_outstanding_count(stack.tracking, &got), "outstanding_count");
    cmr_fuzz_expect(run, got, run->live, "tracking outstanding_count");
  }
  if (stack.failure_callback != NULL) {
    cmr_fuzz_expect(run, stack.callback_calls, stack.failures * (stack.retries + 1), "failure callback calls");
  }
  if (stack.logging != NULL) {
    cmr_fuzz_ok(run, cmr_logging_resource_lost_rows(stack.logging, &got), "lost_rows");
    cmr_fuzz_expect(run, got, 0, "logging lost_rows");
  }
}

/* The log's rows of one action (its third field), header excluded. */
static size_t cmr_fuzz_rows(cmr_fuzz_run *run, const char *action) {
  rewind(stack.log);
  char line[256], wanted[32];
  snprintf(wanted, sizeof wanted, ",%s,", action);
  size_t rows = 0;
  bool header = true;
  while (fgets(line, sizeof line, stack.log) != NULL) {
    if (header) {
      if (strncmp(line, "Thread,Time,Action", 18) != 0) cmr_fuzz_fail(run, "the log starts with %s", line);
      header = false;
    } else if (strstr(line, wanted) != NULL) {
      ++rows;
    }
  }
  return rows;
}

/* Top down: each handle drops the caller's share, and each adaptor holds
 * one of its upstream, so the order is free; top down is the natural one. */
static void cmr_fuzz_adaptors_destroy(cmr_fuzz_run *run) {
  cmr_fuzz_ok(run, cmr_statistics_resource_destroy(stack.statistics), "statistics_destroy");
  if (stack.thread_safe != NULL)
    cmr_fuzz_ok(run, cmr_thread_safe_resource_destroy(stack.thread_safe), "thread_safe_destroy");
  if (stack.logging != NULL) {
    cmr_fuzz_ok(run, cmr_logging_resource_destroy(stack.logging), "logging_destroy"); /* the last share: flushed */
    cmr_fuzz_expect(run, cmr_fuzz_rows(run, "allocate"), stack.allocations_logged, "the log's allocate rows");
    cmr_fuzz_expect(run, cmr_fuzz_rows(run, "free"), stack.frees_logged, "the log's free rows");
    fclose(stack.log);
  }
  if (stack.failure_callback != NULL) {
    cmr_fuzz_ok(run, cmr_failure_callback_resource_destroy(stack.failure_callback), "failure_callback_destroy");
  }
  if (stack.prefetch != NULL) cmr_fuzz_ok(run, cmr_prefetch_resource_destroy(stack.prefetch), "prefetch_destroy");
  if (stack.tracking != NULL) cmr_fuzz_ok(run, cmr_tracking_resource_destroy(stack.tracking), "tracking_destroy");
  if (stack.limiting != NULL) cmr_fuzz_ok(run, cmr_limiting_resource_destroy(stack.limiting), "limiting_destroy");
  if (stack.aligned != NULL) cmr_fuzz_ok(run, cmr_aligned_resource_destroy(stack.aligned), "aligned_destroy");
  cmr_fuzz_ok(run, cmr_pool_resource_destroy(stack.pool), "pool_destroy");
}

CMR_FUZZ_HARNESS(adaptors, 1 << 18, SIZE_MAX, .allocated = cmr_fuzz_adaptors_allocated,
                 .freed = cmr_fuzz_adaptors_freed, .check = cmr_fuzz_adaptors_check,
                 .extra = cmr_fuzz_adaptors_push_pop)
