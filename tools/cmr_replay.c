/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-replay: replays an allocation log in RMM's CSV format (as
 * logging_resource_adaptor and cmr's logging adaptor write it) against a
 * resource stack written as an expression, and reports what the stack did.
 *
 *   cmr-replay [--simulated] [--progress[=N]] LOG.csv "STACK EXPRESSION"
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
#define _XOPEN_SOURCE 700 /* tsearch, getline, clock_gettime */

#include <cmr/cmr.h>
#include <cmr/stack.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define LOG_HEADER "Thread,Time,Action,Pointer,Size,Stream"
#define DEFAULT_PROGRESS_EVERY 1000000u

typedef enum action { ACTION_ALLOCATE, ACTION_FREE, ACTION_FAILURE } action;

typedef struct event {
  action action;
  unsigned thread; /* replay thread */
  size_t line;
  size_t size;
  uintptr_t pointer; /* as logged */
  size_t pair;       /* a free: its allocation's event */
  void *replayed;    /* an allocation: the replayed pointer (NULL when it failed) */
  bool freed;        /* an allocation: the log frees it */
} event;

typedef struct replay_log {
  const char *path;
  event *events;
  size_t count;
  size_t capacity;
  unsigned long long *thread_ids; /* logged id of each replay thread */
  unsigned thread_count;
  size_t allocations, frees, logged_failures;
  size_t leaks, leaked_bytes;
} replay_log;

/* ---- reading the log ------------------------------------------------------------- */

static int bad_log(const replay_log *log, size_t line, const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "cmr-replay: %s:%zu: ", log->path, line);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  return 1;
}

/* An unsigned number filling all of `text` in `base` (16 also takes a 0x). */
static bool parse_number(const char *text, int base, unsigned long long *out) {
  if (text[0] == '\0' || text[0] == '-' || text[0] == '+' || text[0] == ' ') return false;
  char *end = NULL;
  errno = 0;
  *out = strtoull(text, &end, base);
  return errno == 0 && *end == '\0';
}

/* A pointer as RMM writes it: 0x-prefixed hex (fmt), bare hex (printf's
 * %llx, newer RMM) or glibc's "(nil)". */
static bool parse_pointer(const char *text, uintptr_t *out) {
  unsigned long long value = 0;
  if (strcmp(text, "(nil)") == 0) {
    *out = 0;
    return true;
  }
  if (!parse_number(text, 16, &value) || value > UINTPTR_MAX) return false;
  *out = (uintptr_t)value;
  return true;
}

static bool parse_action(const char *text, action *out) {
  static const char *const names[] = {"allocate", "free", "allocate failure"};
  for (int i = 0; i < 3; ++i) {
    if (strcmp(text, names[i]) == 0) {
      *out = (action)i;
      return true;
    }
  }
  return false;
}

/* Splits `line` at commas into exactly six fields; false otherwise. */
static bool split_fields(char *line, char *fields[6], int *found) {
  *found = 0;
  for (char *field = line; field != NULL; ++*found) {
    char *comma = strchr(field, ',');
    if (comma != NULL) *comma = '\0';
    if (*found < 6) fields[*found] = field;
    field = comma != NULL ? comma + 1 : NULL;
  }
  return *found == 6;
}

static int thread_index(replay_log *log, unsigned long long id, unsigned *out) {
  for (unsigned i = 0; i < log->thread_count; ++i) {
    if (log->thread_ids[i] == id) {
      *out = i;
      return 0;
    }
  }
  unsigned long long *ids = realloc(log->thread_ids, (log->thread_count + 1) * sizeof *ids);
  if (ids == NULL) return 1;
  log->thread_ids = ids;
  ids[log->thread_count] = id;
  *out = log->thread_count++;
  return 0;
}

static int parse_row(replay_log *log, char *line, size_t number, event *out) {
  char *fields[6];
  int found = 0;
  if (!split_fields(line, fields, &found)) {
    return bad_log(log, number, "expected 6 fields (" LOG_HEADER "), found %d", found);
  }
  unsigned long long thread = 0, size = 0;
  if (!parse_number(fields[0], 10, &thread)) return bad_log(log, number, "Thread \"%s\" is not a number", fields[0]);
  if (fields[1][0] == '\0') return bad_log(log, number, "Time is empty");
  if (!parse_action(fields[2], &out->action)) {
    return bad_log(log, number, "Action \"%s\" is not allocate, free or allocate failure", fields[2]);
  }
  if (!parse_pointer(fields[3], &out->pointer)) {
    return bad_log(log, number, "Pointer \"%s\" is not a hex address", fields[3]);
  }
  if (!parse_number(fields[4], 10, &size) || size > SIZE_MAX) {
    return bad_log(log, number, "Size \"%s\" is not a byte count", fields[4]);
  }
  uintptr_t stream = 0;
  if (!parse_pointer(fields[5], &stream)) return bad_log(log, number, "Stream \"%s\" is not a hex handle", fields[5]);
  if (out->action != ACTION_FAILURE && out->pointer == 0) {
    return bad_log(log, number, "%s of a null pointer (only an allocate failure has one)", fields[2]);
  }
  out->size = (size_t)size;
  out->line = number;
  if (thread_index(log, thread, &out->thread) != 0) return bad_log(log, number, "no host memory for the threads");
  return 0;
}

static int append_event(replay_log *log, const event *e) {
  if (log->count == log->capacity) {
    size_t capacity = log->capacity != 0 ? log->capacity * 2 : 1024;
    event *events = realloc(log->events, capacity * sizeof *events);
    if (events == NULL) return bad_log(log, e->line, "no host memory for %zu events", capacity);
    log->events = events;
    log->capacity = capacity;
  }
  log->events[log->count++] = *e;
  return 0;
}

static int read_rows(replay_log *log, FILE *file) {
  char *line = NULL;
  size_t length = 0, number = 0;
  int failed = 0;
  ssize_t got;
  while (failed == 0 && (got = getline(&line, &length, file)) >= 0) {
    ++number;
    while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
    if (number == 1) {
      if (strcmp(line, LOG_HEADER) != 0) failed = bad_log(log, 1, "the header is not \"" LOG_HEADER "\"");
      continue;
    }
    if (got == 0) continue; /* a blank line, e.g. at the end */
    event e = {0};
    failed = parse_row(log, line, number, &e);
    if (failed == 0) failed = append_event(log, &e);
  }
  if (failed == 0 && ferror(file)) failed = bad_log(log, number + 1, "reading failed: %s", strerror(errno));
  if (failed == 0 && number == 0) failed = bad_log(log, 1, "the file is empty (no header)");
  free(line);
  return failed;
}

/* ---- pairing frees with allocations ------------------------------------------------ */

static const event *pairing_events; /* tsearch's comparison sees only keys */

static int by_pointer(const void *a, const void *b) {
  uintptr_t x = pairing_events[*(const size_t *)a].pointer, y = pairing_events[*(const size_t *)b].pointer;
  return (x > y) - (x < y);
}

/* Walks the log in order with the live allocations in a tree keyed by the
 * logged pointer: a free must name a live pointer with its size, and an
 * allocation a pointer not live. Leaves the leaks counted. */
static int pair_events(replay_log *log) {
  void *live = NULL;
  size_t *keys = malloc((log->count + 1) * sizeof *keys);
  if (keys == NULL) return bad_log(log, 0, "no host memory to pair %zu events", log->count);
  pairing_events = log->events;
  int failed = 0;
  for (size_t i = 0; i < log->count && failed == 0; ++i) {
    event *e = &log->events[i];
    keys[i] = i;
    if (e->action == ACTION_FAILURE) {
      log->logged_failures++;
      continue;
    }
    size_t **found =
        e->action == ACTION_ALLOCATE ? tsearch(&keys[i], &live, by_pointer) : tfind(&keys[i], &live, by_pointer);
    if (e->action == ACTION_ALLOCATE) {
      if (found == NULL)
        failed = bad_log(log, e->line, "no host memory for the live allocations");
      else if (**found != i) {
        failed = bad_log(log, e->line, "0x%" PRIxPTR " is allocated again while live since line %zu", e->pointer,
                         log->events[**found].line);
      } else {
        log->allocations++;
      }
      continue;
    }
    if (found == NULL) {
      failed =
          bad_log(log, e->line, "free of 0x%" PRIxPTR ", which is not allocated (never, or freed already)", e->pointer);
      continue;
    }
    event *allocation = &log->events[**found];
    if (allocation->size != e->size) {
      failed = bad_log(log, e->line, "free of 0x%" PRIxPTR " with %zu bytes, allocated with %zu at line %zu",
                       e->pointer, e->size, allocation->size, allocation->line);
      continue;
    }
    e->pair = **found;
    allocation->freed = true;
    tdelete(&keys[i], &live, by_pointer);
    log->frees++;
  }
  /* The tree's root node starts with its key (POSIX), so it empties so. */
  while (live != NULL) tdelete(*(size_t **)live, &live, by_pointer);
  for (size_t i = 0; i < log->count && failed == 0; ++i) { /* what the log never frees leaked */
    const event *e = &log->events[i];
    if (e->action == ACTION_ALLOCATE && !e->freed) log->leaks++, log->leaked_bytes += e->size;
  }
  free(keys);
  return failed;
}

static int read_log(const char *path, replay_log *log) {
  *log = (replay_log){.path = path};
  FILE *file = fopen(path, "r");
  if (file == NULL) {
    fprintf(stderr, "cmr-replay: %s: cannot be opened: %s\n", path, strerror(errno));
    return 1;
  }
  int failed = read_rows(log, file);
  fclose(file);
  if (failed == 0) failed = pair_events(log);
  return failed;
}

static void free_log(replay_log *log) {
  free(log->events);
  free(log->thread_ids);
}

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
  replay_log *log;
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

static void abort_replay(replay *r, const event *e, cmr_status status) {
  snprintf(r->abort_message, sizeof r->abort_message, "line %zu: freeing the replayed %p failed: %s: %s", e->line,
           r->log->events[e->pair].replayed, cmr_status_string(status), cmr_last_error_message());
  r->aborted = true;
}

/* Runs event `i` (its thread holds the turn). */
static void perform(replay *r, size_t i) {
  event *e = &r->log->events[i];
  if (e->action == ACTION_ALLOCATE) {
    if (cmr_allocate(r->top, e->size, CMR_DEFAULT_STREAM, &e->replayed) != CMR_SUCCESS) {
      e->replayed = NULL;
      r->failures++;
      return;
    }
    r->in_use += e->size;
    if (r->in_use > r->peak_in_use) r->peak_in_use = r->in_use;
  } else if (e->action == ACTION_FREE) {
    event *allocation = &r->log->events[e->pair];
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
    event *e = &r->log->events[i];
    if (e->action == ACTION_ALLOCATE && e->replayed != NULL) {
      cmr_deallocate(r->top, e->replayed, e->size, CMR_DEFAULT_STREAM);
    }
  }
}

/* The most bytes the stack held from a simulated leaf; false for another leaf. */
static bool leaf_peak(const cmr_stack *stack, size_t *out) {
  cmr_resource_ref leaf;
  cmr_simulated_resource *simulated = NULL;
  if (cmr_stack_leaf(stack, &leaf) != CMR_SUCCESS || cmr_simulated_resource_from_ref(leaf, &simulated) != CMR_SUCCESS) {
    cmr_clear_last_error();
    return false;
  }
  bool known = cmr_simulated_resource_peak_bytes_in_use(simulated, out) == CMR_SUCCESS;
  cmr_simulated_resource_destroy(simulated); /* from_ref's share; the stack keeps its own */
  return known;
}

static void report(const replay *r, const cmr_stack *stack, double seconds) {
  const replay_log *log = r->log;
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
  if (leaf_peak(stack, &held)) {
    printf("peak bytes held from the upstream: %zu\n", held);
  } else {
    printf("peak bytes held from the upstream: unknown (the leaf is not simulated; try --simulated)\n");
  }
  printf("allocation failures: %zu\n", r->failures);
  printf("leaks in the log: %zu allocations, %zu bytes\n", log->leaks, log->leaked_bytes);
}

static int replay_log_on(replay_log *log, cmr_stack *stack, size_t progress_every) {
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
    } else if (optarg != NULL && (!parse_number(optarg, 10, &every) || every == 0 || every > SIZE_MAX)) {
      return cmr_cli_usage_error(&cli, "--progress=N needs a positive number of events");
    } else {
      progress_every = (size_t)every;
    }
  }
  if (argc - optind < 2) return cmr_cli_usage_error(&cli, "a log and a stack expression are needed");
  if (argc - optind > 2) return cmr_cli_usage_error(&cli, "too many arguments");
  const char *positional[2] = {argv[optind], argv[optind + 1]};
  replay_log log;
  int failed = read_log(positional[0], &log);
  cmr_stack *stack = NULL;
  if (failed == 0) failed = build_stack(positional[1], simulated, &stack);
  if (failed == 0) failed = replay_log_on(&log, stack, progress_every);
  if (stack != NULL) cmr_stack_destroy(stack);
  free_log(&log);
  if (failed == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
    fprintf(stderr, "cmr-replay: the report could not be written: %s\n", strerror(errno));
    failed = 1;
  }
  return failed;
}
