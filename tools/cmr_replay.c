/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-replay: replays an allocation log in RMM's CSV format (as
 * logging_resource_adaptor and cmr's logging adaptor write it) against a
 * resource stack written as an expression, and reports what the stack did.
 *
 *   cmr-replay [--simulated] [--progress[=N]] LOG.csv[.gz] "STACK EXPRESSION"
 *
 * Each logged thread gets a replay thread; the events run one at a time in
 * the order of the log (a sequence number handed from thread to thread), so
 * a free always follows its allocation and every resource sees the
 * interleaving the application produced. Logged pointers are mapped to the
 * replayed ones; every event runs on the default stream (logged streams are
 * addresses in another process). Rows logged as "allocate failure" took no
 * memory and are not replayed. Allocations the log never frees are leaks:
 * reported, and freed after the timed replay.
 *
 * --simulated replaces the expression's leaf (the innermost resource, the
 * one that takes no upstream, with its arguments) by `simulated` (1 TiB of
 * addresses without memory) unless it is simulated already, so a GPU
 * application's log replays anywhere. With a
 * simulated leaf the report includes the most bytes the stack held from it.
 * The report gives the replay's time and its rate (replayed events per
 * second, thread hand-offs included) and the most bytes in use at once.
 * --progress prints a line to stderr every N events (default 1000000).
 *
 * Exit status: 0 when the replay ran (allocation failures are a result, not
 * an error), 1 for a log that cannot be read or replayed (with the line) or
 * a report that cannot be written (a full disk), 2 for bad usage or a stack
 * expression that does not build. */
#define _XOPEN_SOURCE 700 /* clock_gettime */

#include <cmr/cmr.h>
#include <cmr/stack.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "replay_log.h"

#define DEFAULT_PROGRESS_EVERY 1000000u

/* ---- the stack ------------------------------------------------------------------- */

/* The stack `expression` describes; with `simulated`, over the simulated
 * resource in place of its leaves (cmr_stack_parse_over: the parser knows
 * which arguments are resources). */
static int build_stack(const char *expression, bool simulated, cmr_stack **out) {
  cmr_status status = simulated ? cmr_stack_parse_over(expression, "simulated", out) : cmr_stack_parse(expression, out);
  if (status != CMR_SUCCESS) {
    fprintf(stderr, "cmr-replay: the stack \"%s\"%s does not build: %s: %s\n", expression,
            simulated ? " over simulated" : "", cmr_status_string(status), cmr_last_error_message());
  }
  return status == CMR_SUCCESS ? 0 : 2;
}

/* ---- replaying --------------------------------------------------------------------- */

typedef struct replay {
  cmr_replay_log *log;
  cmr_resource_ref top;
  size_t progress_every; /* 0: no progress lines */
  pthread_mutex_t lock;
  pthread_cond_t *turn; /* one per thread: signalled when its next event is due */
  size_t next;          /* the event due now */
  bool aborted;
  char abort_message[512];
  /* Written only by the thread whose event is due. */
  size_t in_use, peak_in_use, failures;
} replay;

typedef struct replay_thread {
  replay *r;
  unsigned index;
} replay_thread;

static void abort_replay(replay *r, const cmr_log_event *e, cmr_status status) {
  snprintf(r->abort_message, sizeof r->abort_message, "line %zu: freeing the replayed %p failed: %s: %s", e->line,
           r->log->events[e->pair].replayed, cmr_status_string(status), cmr_last_error_message());
  r->aborted = true;
}

/* Runs event `i` (its thread holds the turn). */
static void perform(replay *r, size_t i) {
  cmr_log_event *e = &r->log->events[i];
  if (e->action == ACTION_ALLOCATE) {
    if (cmr_allocate(r->top, e->size, CMR_DEFAULT_STREAM, &e->replayed) != CMR_SUCCESS) {
      e->replayed = NULL;
      r->failures++;
      return;
    }
    r->in_use += e->size;
    if (r->in_use > r->peak_in_use) r->peak_in_use = r->in_use;
  } else if (e->action == ACTION_FREE) {
    cmr_log_event *allocation = &r->log->events[e->pair];
    if (allocation->replayed == NULL) return; /* its allocation failed in the replay */
    cmr_status status = cmr_deallocate(r->top, allocation->replayed, e->size, CMR_DEFAULT_STREAM);
    if (status != CMR_SUCCESS) {
      pthread_mutex_lock(&r->lock);
      abort_replay(r, e, status);
      pthread_mutex_unlock(&r->lock);
      return;
    }
    allocation->replayed = NULL;
    r->in_use -= e->size;
  }
}

static void *replay_main(void *arg) {
  replay_thread *self = arg;
  replay *r = self->r;
  size_t count = r->log->count;
  for (size_t i = 0; i < count; ++i) {
    if (r->log->events[i].thread != self->index) continue;
    pthread_mutex_lock(&r->lock);
    while (r->next != i && !r->aborted) pthread_cond_wait(&r->turn[self->index], &r->lock);
    bool aborted = r->aborted;
    pthread_mutex_unlock(&r->lock);
    if (aborted) break;
    perform(r, i);
    if (r->progress_every != 0 && (i + 1) % r->progress_every == 0) {
      fprintf(stderr, "cmr-replay: %zu of %zu events (%.1f%%)\n", i + 1, count,
              100.0 * (double)(i + 1) / (double)count);
    }
    pthread_mutex_lock(&r->lock);
    r->next = i + 1;
    if (r->aborted) {
      for (unsigned t = 0; t < r->log->thread_count; ++t) pthread_cond_signal(&r->turn[t]);
    } else if (r->next < count) {
      pthread_cond_signal(&r->turn[r->log->events[r->next].thread]);
    }
    pthread_mutex_unlock(&r->lock);
  }
  return NULL;
}

static double seconds_since(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* One thread per logged thread, all started before the first event is due. */
static int run_threads(replay *r, double *seconds) {
  unsigned count = r->log->thread_count;
  pthread_t *threads = calloc(count, sizeof *threads);
  replay_thread *selves = calloc(count, sizeof *selves);
  r->turn = calloc(count, sizeof *r->turn);
  int failed = threads == NULL || selves == NULL || r->turn == NULL;
  unsigned started = 0;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (unsigned t = 0; t < count && !failed; ++t) pthread_cond_init(&r->turn[t], NULL);
  for (; started < count && !failed; ++started) {
    selves[started] = (replay_thread){r, started};
    if (pthread_create(&threads[started], NULL, replay_main, &selves[started]) != 0) {
      pthread_mutex_lock(&r->lock);
      snprintf(r->abort_message, sizeof r->abort_message, "cannot start replay thread %u", started);
      r->aborted = true;
      for (unsigned t = 0; t < started; ++t) pthread_cond_signal(&r->turn[t]);
      pthread_mutex_unlock(&r->lock);
      failed = 1;
    }
  }
  for (unsigned t = 0; t < started; ++t) pthread_join(threads[t], NULL);
  *seconds = seconds_since(&start);
  for (unsigned t = 0; r->turn != NULL && t < count; ++t) pthread_cond_destroy(&r->turn[t]);
  if (threads == NULL || selves == NULL || r->turn == NULL) fprintf(stderr, "cmr-replay: no host memory for threads\n");
  free(threads), free(selves), free(r->turn);
  return failed || r->aborted;
}

/* Frees what the log leaked, so the stack is destroyed empty. */
static void free_leaks(replay *r) {
  for (size_t i = 0; i < r->log->count; ++i) {
    cmr_log_event *e = &r->log->events[i];
    if (e->action == ACTION_ALLOCATE && e->replayed != NULL) {
      cmr_deallocate(r->top, e->replayed, e->size, CMR_DEFAULT_STREAM);
    }
  }
}

static void report(const replay *r, const cmr_stack *stack, double seconds) {
  const cmr_replay_log *log = r->log;
  const char *expression = "";
  cmr_stack_expression(stack, &expression);
  printf("log: %s\n", log->path);
  printf("stack: %s\n", expression);
  printf("events: %zu (%zu allocations, %zu frees, %zu logged failures)\n", log->count, log->allocations, log->frees,
         log->logged_failures);
  printf("threads: %u\n", log->thread_count);
  printf("time: %.3f ms\n", seconds * 1e3);
  /* Replayed events (allocations and frees; logged failures are not replayed) per second of the replay. */
  size_t replayed = log->allocations + log->frees;
  printf("rate: %.0f events/s\n", seconds > 0 ? (double)replayed / seconds : 0.0);
  printf("peak bytes in use: %zu\n", r->peak_in_use);
  size_t held = 0;
  if (cmr_replay_held_peak(stack, &held)) {
    printf("peak bytes held from the upstream: %zu\n", held);
  } else {
    printf(
        "peak bytes held from the upstream: unknown (the leaf is neither simulated nor counts what it holds; "
        "try --simulated)\n");
  }
  printf("allocation failures: %zu\n", r->failures);
  printf("leaks in the log: %zu allocations, %zu bytes\n", log->leaks, log->leaked_bytes);
}

static int replay_log_on(cmr_replay_log *log, cmr_stack *stack, size_t progress_every) {
  replay r = {.log = log, .progress_every = progress_every};
  cmr_stack_ref(stack, &r.top);
  pthread_mutex_init(&r.lock, NULL);
  double seconds = 0;
  int failed = log->count > 0 ? run_threads(&r, &seconds) : 0;
  if (failed)
    fprintf(stderr, "cmr-replay: %s: %s\n", log->path, r.abort_message);
  else
    report(&r, stack, seconds);
  free_leaks(&r);
  pthread_mutex_destroy(&r.lock);
  return failed;
}

/* ---- command line ------------------------------------------------------------------ */

static const cmr_cli cli = {
    "cmr-replay", "[--simulated] [--progress[=N]] LOG.csv \"STACK EXPRESSION\"",
    "Replays an allocation log (RMM's or cmr's CSV) through a resource stack, each log thread on a thread.\n"
    "  --simulated     the stack's leaf is the simulated resource (addresses without memory)\n"
    "  --progress[=N]  a line on stderr every N events (default 1000000)\n"};

int main(int argc, char **argv) {
  static const struct option options[] = {
      {"simulated", no_argument, NULL, 's'}, {"progress", optional_argument, NULL, 'p'}, CMR_CLI_STANDARD_OPTIONS, {0}};
  bool simulated = false;
  size_t progress_every = 0;
  int option;
  while ((option = cmr_cli_next(&cli, argc, argv, "", options)) != -1) {
    unsigned long long every = DEFAULT_PROGRESS_EVERY;
    if (option == 's') {
      simulated = true;
    } else if (optarg != NULL && (!cmr_replay_parse_number(optarg, 10, &every) || every == 0 || every > SIZE_MAX)) {
      return cmr_cli_usage_error(&cli, "--progress=N needs a positive number of events");
    } else {
      progress_every = (size_t)every;
    }
  }
  if (argc - optind < 2) return cmr_cli_usage_error(&cli, "a log and a stack expression are needed");
  if (argc - optind > 2) return cmr_cli_usage_error(&cli, "too many arguments");
  const char *positional[2] = {argv[optind], argv[optind + 1]};
  cmr_replay_log log;
  int failed = cmr_replay_log_read("cmr-replay", positional[0], &log);
  cmr_stack *stack = NULL;
  if (failed == 0) failed = build_stack(positional[1], simulated, &stack);
  if (failed == 0) failed = replay_log_on(&log, stack, progress_every);
  if (stack != NULL) cmr_stack_destroy(stack);
  cmr_replay_log_free(&log);
  if (failed == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
    fprintf(stderr, "cmr-replay: the report could not be written: %s\n", strerror(errno));
    failed = 1;
  }
  return failed;
}
