/* SPDX-License-Identifier: Apache-2.0 */
/* logging -> cmr-replay: a workload on two threads runs through statistics
 * over the logging adaptor over simulated; cmr-replay replays the log over a
 * simulated leaf of the same capacity, and its report must match what the
 * workload did, as simulated and the statistics adaptor counted it: the peak
 * bytes in use, the allocations, the failures and the leaks. The
 * threads run one after the other so that the log's order is the order the
 * upstream saw (concurrent threads may log in a slightly different order
 * than they reach the upstream, which moves the peak). argv[1] is the tool. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"

#define CAPACITY ((size_t)1 << 20)
enum { SLOTS = 32 };

static const char *tool;

typedef struct workload {
  cmr_resource_ref ref;
  void *ptrs[SLOTS];
  size_t sizes[SLOTS];
  uint64_t rng;
  size_t failures;
} workload;

static uint64_t next_random(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return *state >> 33;
}

/* 300 steps: a free where the slot holds memory, else an allocation of up
 * to 128 KiB, which fails now and then against the 1 MiB capacity. */
static void *churn(void *arg) {
  workload *w = arg;
  for (int step = 0; step < 300; ++step) {
    unsigned slot = (unsigned)(next_random(&w->rng) % SLOTS);
    if (w->ptrs[slot] != NULL) {
      if (cmr_deallocate(w->ref, w->ptrs[slot], w->sizes[slot], CMR_DEFAULT_STREAM) != CMR_SUCCESS) return (void *)1;
      w->ptrs[slot] = NULL;
      continue;
    }
    w->sizes[slot] = 1 + (size_t)(next_random(&w->rng) % (128u << 10));
    cmr_status status = cmr_allocate(w->ref, w->sizes[slot], CMR_DEFAULT_STREAM, &w->ptrs[slot]);
    if (status == CMR_ERROR_OUT_OF_MEMORY)
      w->failures++;
    else if (status != CMR_SUCCESS)
      return (void *)1;
  }
  return NULL;
}

static void run_on_a_thread(workload *w) {
  pthread_t thread;
  void *failed = NULL;
  ck_assert_int_eq(pthread_create(&thread, NULL, churn, w), 0);
  ck_assert_int_eq(pthread_join(thread, &failed), 0);
  ck_assert_ptr_null(failed);
}

/* The value after `key` in the report, which must have it. */
static unsigned long long reported(const char *report, const char *key) {
  const char *at = strstr(report, key);
  ck_assert_msg(at != NULL, "the report lacks \"%s\":\n%s", key, report);
  return strtoull(at + strlen(key), NULL, 10);
}

START_TEST(test_replay_matches_the_workload) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/cmr_round_trip_XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  cmr_simulated_resource *leaf = NULL;
  cmr_logging_resource *log = NULL;
  cmr_statistics_resource *stats = NULL;
  ck_assert_ok(cmr_simulated_resource_create(CMR_SIZE(CAPACITY), &leaf));
  ck_assert_ok(cmr_logging_resource_create(cmr_simulated_resource_ref(leaf), path, NULL, false, &log));
  ck_assert_ok(cmr_statistics_resource_create(cmr_logging_resource_ref(log), &stats));
  workload w = {.ref = cmr_statistics_resource_ref(stats), .rng = 7};
  run_on_a_thread(&w); /* thread 1 */
  run_on_a_thread(&w); /* thread 2: frees much of what thread 1 left */
  size_t peak = 0, allocations = 0, in_use = 0, live = 0;
  ck_assert_ok(cmr_simulated_resource_peak_bytes_in_use(leaf, &peak));
  ck_assert_ok(cmr_simulated_resource_allocation_count(leaf, &allocations));
  ck_assert_ok(cmr_simulated_resource_bytes_in_use(leaf, &in_use));
  for (int i = 0; i < SLOTS; ++i) live += w.ptrs[i] != NULL;
  ck_assert_uint_gt(w.failures, 0);
  ck_assert_uint_gt(live, 0);
  size_t counted_peak = 0, counted_total = 0, counted_bytes = 0, counted_live = 0;
  ck_assert_ok(cmr_statistics_resource_bytes_peak(stats, &counted_peak));
  ck_assert_ok(cmr_statistics_resource_allocations_total(stats, &counted_total));
  ck_assert_ok(cmr_statistics_resource_bytes_current(stats, &counted_bytes));
  ck_assert_ok(cmr_statistics_resource_allocations_current(stats, &counted_live));
  cmr_test_destroy(stats, log, leaf);

  char command[512], report[4096];
  snprintf(command, sizeof command, "'%s' '%s' 'simulated(capacity=%zu)' 2>&1", tool, path, CAPACITY);
  FILE *output = popen(command, "r");
  ck_assert_ptr_nonnull(output);
  size_t length = fread(report, 1, sizeof report - 1, output);
  report[length] = '\0';
  ck_assert_int_eq(pclose(output), 0);
  ck_assert_uint_eq(reported(report, "peak bytes in use: "), peak);
  ck_assert_uint_eq(reported(report, "peak bytes held from the upstream: "), peak);
  size_t events = 0, logged_allocations = 0, frees = 0, logged_failures = 0, leaks = 0, leaked_bytes = 0;
  ck_assert_int_eq(sscanf(strstr(report, "events: "), "events: %zu (%zu allocations, %zu frees, %zu logged failures)",
                          &events, &logged_allocations, &frees, &logged_failures),
                   4);
  ck_assert_int_eq(sscanf(strstr(report, "leaks in the log: "), "leaks in the log: %zu allocations, %zu bytes", &leaks,
                          &leaked_bytes),
                   2);
  ck_assert_uint_eq(logged_allocations, allocations);
  ck_assert_uint_eq(frees, allocations - live);
  ck_assert_uint_eq(logged_failures, w.failures);
  ck_assert_uint_eq(events, logged_allocations + frees + logged_failures);
  ck_assert_uint_eq(leaks, live);
  ck_assert_uint_eq(leaked_bytes, in_use);
  ck_assert_uint_eq(reported(report, "allocation failures: "), 0);
  ck_assert_uint_eq(reported(report, "threads: "), 2);
  /* The replay's counters are the statistics adaptor's over the same workload. */
  ck_assert_uint_eq(reported(report, "peak bytes in use: "), counted_peak);
  ck_assert_uint_eq(logged_allocations, counted_total);
  ck_assert_uint_eq(leaked_bytes, counted_bytes);
  ck_assert_uint_eq(leaks, counted_live);
  remove(path);
}
END_TEST

static void replay_round_trip_cases(Suite *suite) {
  cmr_test_case(suite, "round_trip", NULL, NULL, test_replay_matches_the_workload);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH-TO-cmr-replay\n", argv[0]);
    return 2;
  }
  tool = argv[1];
  return cmr_test_main_suite("replay_round_trip", CMR_TEST_ANY_MACHINE, replay_round_trip_cases);
}
