/* SPDX-License-Identifier: Apache-2.0 */
/* Reading an allocation log, and a simulated leaf's peak (replay_log.h). */
#define _XOPEN_SOURCE 700 /* tsearch, getline */

#include "replay_log.h"

#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#if CMR_REPLAY_WITH_ZLIB
#include <zlib.h>
#endif

/* ---- reading the log ------------------------------------------------------------- */

static int cmr_bad_log(const cmr_replay_log *log, size_t line, const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "%s: %s:%zu: ", log->program, log->path, line);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  return 1;
}

bool cmr_replay_parse_number(const char *text, int base, unsigned long long *out) {
  if (text[0] == '\0' || text[0] == '-' || text[0] == '+' || text[0] == ' ') return false;
  char *end = NULL;
  errno = 0;
  *out = strtoull(text, &end, base);
  return errno == 0 && *end == '\0';
}

/* A pointer as RMM writes it: 0x-prefixed hex (fmt), bare hex (printf's
 * %llx, newer RMM) or glibc's "(nil)". */
static bool cmr_parse_pointer(const char *text, uintptr_t *out) {
  unsigned long long value = 0;
  if (strcmp(text, "(nil)") == 0) {
    *out = 0;
    return true;
  }
  if (!cmr_replay_parse_number(text, 16, &value) || value > UINTPTR_MAX) return false;
  *out = (uintptr_t)value;
  return true;
}

static bool cmr_parse_action(const char *text, cmr_log_action *out) {
  static const char *const names[] = {"allocate", "free", "allocate failure"};
  for (int i = 0; i < 3; ++i) {
    if (strcmp(text, names[i]) == 0) {
      *out = (cmr_log_action)i;
      return true;
    }
  }
  return false;
}

/* Splits `line` at commas into exactly six fields; false otherwise. */
static bool cmr_split_fields(char *line, char *fields[6], int *found) {
  *found = 0;
  for (char *field = line; field != NULL; ++*found) {
    char *comma = strchr(field, ',');
    if (comma != NULL) *comma = '\0';
    if (*found < 6) fields[*found] = field;
    field = comma != NULL ? comma + 1 : NULL;
  }
  return *found == 6;
}

static int cmr_thread_index(cmr_replay_log *log, unsigned long long id, unsigned *out) {
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

static int cmr_parse_row(cmr_replay_log *log, char *line, size_t number, cmr_log_event *out) {
  char *fields[6];
  int found = 0;
  if (!cmr_split_fields(line, fields, &found)) {
    return cmr_bad_log(log, number, "expected 6 fields (" LOG_HEADER "), found %d", found);
  }
  unsigned long long thread = 0, size = 0;
  if (!cmr_replay_parse_number(fields[0], 10, &thread))
    return cmr_bad_log(log, number, "Thread \"%s\" is not a number", fields[0]);
  if (fields[1][0] == '\0') return cmr_bad_log(log, number, "Time is empty");
  if (!cmr_parse_action(fields[2], &out->action)) {
    return cmr_bad_log(log, number, "Action \"%s\" is not allocate, free or allocate failure", fields[2]);
  }
  if (!cmr_parse_pointer(fields[3], &out->pointer)) {
    return cmr_bad_log(log, number, "Pointer \"%s\" is not a hex address", fields[3]);
  }
  if (!cmr_replay_parse_number(fields[4], 10, &size) || size > SIZE_MAX) {
    return cmr_bad_log(log, number, "Size \"%s\" is not a byte count", fields[4]);
  }
  uintptr_t stream = 0;
  if (!cmr_parse_pointer(fields[5], &stream))
    return cmr_bad_log(log, number, "Stream \"%s\" is not a hex handle", fields[5]);
  if (out->action != ACTION_FAILURE && out->pointer == 0) {
    return cmr_bad_log(log, number, "%s of a null pointer (only an allocate failure has one)", fields[2]);
  }
  out->size = (size_t)size;
  out->line = number;
  if (cmr_thread_index(log, thread, &out->thread) != 0)
    return cmr_bad_log(log, number, "no host memory for the threads");
  return 0;
}

static int cmr_append_event(cmr_replay_log *log, const cmr_log_event *e) {
  if (log->count == log->capacity) {
    size_t capacity = log->capacity != 0 ? log->capacity * 2 : 1024;
    cmr_log_event *events = realloc(log->events, capacity * sizeof *events);
    if (events == NULL) return cmr_bad_log(log, e->line, "no host memory for %zu events", capacity);
    log->events = events;
    log->capacity = capacity;
  }
  log->events[log->count++] = *e;
  return 0;
}

/* Lines of the log, from a plain file or, with zlib, a gzip one (gzread
 * reads a file that is not gzip as it is). */
typedef struct cmr_log_lines {
#if CMR_REPLAY_WITH_ZLIB
  gzFile file;
#else
  FILE *file;
#endif
  char *line;
  size_t capacity;
} cmr_log_lines;

static bool cmr_log_lines_open(cmr_log_lines *lines, const char *path) {
  *lines = (cmr_log_lines){0};
#if CMR_REPLAY_WITH_ZLIB
  lines->file = gzopen(path, "rb");
#else
  lines->file = fopen(path, "r");
#endif
  return lines->file != NULL;
}

/* Whether the file starts with gzip's magic bytes (read back again after). */
static bool cmr_is_gzip(cmr_log_lines *lines) {
#if CMR_REPLAY_WITH_ZLIB
  (void)lines;
  return false;
#else
  int first = fgetc(lines->file), second = fgetc(lines->file);
  rewind(lines->file);
  return first == 0x1f && second == 0x8b;
#endif
}

static void cmr_log_lines_close(cmr_log_lines *lines) {
#if CMR_REPLAY_WITH_ZLIB
  gzclose(lines->file);
#else
  fclose(lines->file);
#endif
  free(lines->line);
}

/* The next line without its end of line in lines->line, its length in
 * *got; false at the end of the file or on a failure (*failed: why). */
static bool cmr_log_lines_next(cmr_log_lines *lines, size_t *got, const char **failed) {
  *failed = NULL;
#if CMR_REPLAY_WITH_ZLIB
  size_t used = 0;
  for (;;) {
    if (lines->capacity - used < 2) {
      size_t capacity = lines->capacity != 0 ? lines->capacity * 2 : 256;
      char *grown = realloc(lines->line, capacity);
      if (grown == NULL) {
        *failed = "no host memory for a line";
        return false;
      }
      lines->line = grown, lines->capacity = capacity;
    }
    if (gzgets(lines->file, lines->line + used, (int)(lines->capacity - used)) == NULL) {
      int code = 0;
      const char *why = gzerror(lines->file, &code);
      if (code != Z_OK && code != Z_BUF_ERROR) *failed = why;
      if (used == 0 || *failed != NULL) return false;
      break; /* a last line without an end of line */
    }
    used += strlen(lines->line + used);
    if (used > 0 && lines->line[used - 1] == '\n') break;
    if (gzeof(lines->file)) break;
  }
  *got = used;
#else
  ssize_t read = getline(&lines->line, &lines->capacity, lines->file);
  if (read < 0) {
    if (ferror(lines->file)) *failed = strerror(errno);
    return false;
  }
  *got = (size_t)read;
#endif
  while (*got > 0 && (lines->line[*got - 1] == '\n' || lines->line[*got - 1] == '\r')) lines->line[--*got] = '\0';
  return true;
}

static int cmr_read_rows(cmr_replay_log *log, cmr_log_lines *lines) {
  size_t got = 0, number = 0;
  int failed = 0;
  const char *why = NULL;
  while (failed == 0 && cmr_log_lines_next(lines, &got, &why)) {
    char *line = lines->line;
    ++number;
    if (number == 1) {
      if (strcmp(line, LOG_HEADER) != 0) failed = cmr_bad_log(log, 1, "the header is not \"" LOG_HEADER "\"");
      continue;
    }
    if (got == 0) continue; /* a blank line, e.g. at the end */
    cmr_log_event e = {0};
    failed = cmr_parse_row(log, line, number, &e);
    if (failed == 0) failed = cmr_append_event(log, &e);
  }
  if (failed == 0 && why != NULL) failed = cmr_bad_log(log, number + 1, "reading failed: %s", why);
  if (failed == 0 && number == 0) failed = cmr_bad_log(log, 1, "the file is empty (no header)");
  return failed;
}

/* ---- pairing frees with allocations ------------------------------------------------ */

static const cmr_log_event *cmr_pairing_events; /* tsearch's comparison sees only keys */

static int cmr_by_pointer(const void *a, const void *b) {
  uintptr_t x = cmr_pairing_events[*(const size_t *)a].pointer, y = cmr_pairing_events[*(const size_t *)b].pointer;
  return (x > y) - (x < y);
}

/* Walks the log in order with the live allocations in a tree keyed by the
 * logged pointer: a free must name a live pointer with its size, and an
 * allocation a pointer not live. Leaves the leaks counted. */
static int cmr_pair_events(cmr_replay_log *log) {
  void *live = NULL;
  size_t *keys = malloc((log->count + 1) * sizeof *keys);
  if (keys == NULL) return cmr_bad_log(log, 0, "no host memory to pair %zu events", log->count);
  cmr_pairing_events = log->events;
  int failed = 0;
  for (size_t i = 0; i < log->count && failed == 0; ++i) {
    cmr_log_event *e = &log->events[i];
    keys[i] = i;
    if (e->action == ACTION_FAILURE) {
      log->logged_failures++;
      continue;
    }
    size_t **found = e->action == ACTION_ALLOCATE ? tsearch(&keys[i], &live, cmr_by_pointer)
                                                  : tfind(&keys[i], &live, cmr_by_pointer);
    if (e->action == ACTION_ALLOCATE) {
      if (found == NULL)
        failed = cmr_bad_log(log, e->line, "no host memory for the live allocations");
      else if (**found != i) {
        failed = cmr_bad_log(log, e->line, "0x%" PRIxPTR " is allocated again while live since line %zu", e->pointer,
                             log->events[**found].line);
      } else {
        log->allocations++;
      }
      continue;
    }
    if (found == NULL) {
      failed = cmr_bad_log(log, e->line, "free of 0x%" PRIxPTR ", which is not allocated (never, or freed already)",
                           e->pointer);
      continue;
    }
    cmr_log_event *allocation = &log->events[**found];
    if (allocation->size != e->size) {
      failed = cmr_bad_log(log, e->line, "free of 0x%" PRIxPTR " with %zu bytes, allocated with %zu at line %zu",
                           e->pointer, e->size, allocation->size, allocation->line);
      continue;
    }
    e->pair = **found;
    allocation->freed = true;
    tdelete(&keys[i], &live, cmr_by_pointer);
    log->frees++;
  }
  /* The tree's root node starts with its key (POSIX), so it empties so. */
  while (live != NULL) tdelete(*(size_t **)live, &live, cmr_by_pointer);
  for (size_t i = 0; i < log->count && failed == 0; ++i) { /* what the log never frees leaked */
    const cmr_log_event *e = &log->events[i];
    if (e->action == ACTION_ALLOCATE && !e->freed) log->leaks++, log->leaked_bytes += e->size;
  }
  free(keys);
  return failed;
}

int cmr_replay_log_read(const char *program, const char *path, cmr_replay_log *log) {
  *log = (cmr_replay_log){.program = program, .path = path};
  cmr_log_lines lines;
  if (!cmr_log_lines_open(&lines, path)) {
    fprintf(stderr, "%s: %s: cannot be opened: %s\n", program, path, strerror(errno));
    return 1;
  }
  if (!CMR_REPLAY_WITH_ZLIB && cmr_is_gzip(&lines)) {
    fprintf(stderr, "%s: %s: is gzip-compressed and this build has no zlib: gunzip it first\n", program, path);
    cmr_log_lines_close(&lines);
    return 1;
  }
  int failed = cmr_read_rows(log, &lines);
  cmr_log_lines_close(&lines);
  if (failed == 0) failed = cmr_pair_events(log);
  return failed;
}

void cmr_replay_log_free(cmr_replay_log *log) {
  free(log->events);
  free(log->thread_ids);
}

bool cmr_replay_held_peak(const cmr_stack *stack, size_t *out) {
  cmr_resource_ref leaf;
  if (cmr_stack_leaf(stack, &leaf) != CMR_SUCCESS) {
    cmr_clear_last_error();
    return false;
  }
  cmr_simulated_resource *simulated = NULL;
  if (cmr_simulated_resource_from_ref(leaf, &simulated) == CMR_SUCCESS) {
    bool known = cmr_simulated_resource_peak_bytes_in_use(simulated, out) == CMR_SUCCESS;
    cmr_simulated_resource_destroy(simulated); /* from_ref's share; the stack keeps its own */
    return known;
  }
  cmr_stats stats = {.size = sizeof stats};
  if (cmr_ref_stats(leaf, &stats) == CMR_SUCCESS && (stats.supported & CMR_STATS_BYTES_HELD_PEAK)) {
    *out = stats.bytes_held_peak;
    return true;
  }
  cmr_clear_last_error();
  return false;
}
