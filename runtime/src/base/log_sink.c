/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnostic log's writer (log_write.h, log_sink.h): a threshold read
 * inline by cmr_log, a flush threshold, and one sink - stderr or a file
 * opened for appending - that a mutex guards, so lines from many threads
 * never interleave. The environment is read once, by whichever call comes
 * first. It records no error (cmr_error logs): the settings that report
 * errors are in log_settings.c. */
#define _GNU_SOURCE /* syscall(SYS_gettid): spdlog's thread id is the kernel's */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fork.h"
#include "internal.h"
#include "lock.h"
#include "log_sink.h"

_Atomic int cmr_log_threshold = CMR_LOG_UNREAD;
_Atomic int cmr_log_flush_threshold = CMR_LOG_WARN;
static pthread_once_t cmr_log_once = PTHREAD_ONCE_INIT;

/* The sink. Paths once set are kept for the life of the process, so the
 * text cmr_log_get_file hands out never dangles. */
typedef struct cmr_log_path {
  struct cmr_log_path *next;
  char text[];
} cmr_log_path;

static pthread_mutex_t cmr_log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *cmr_log_file; /* NULL: stderr */
static const char *cmr_log_file_path = "";
static cmr_log_path *cmr_log_paths; /* every path set so far */
static int cmr_log_write_errno;     /* why a line could not be written since the last flush; 0: none failed */

/* spdlog's names, which RMM's log lines carry. */
static const char *const cmr_log_level_names[] = {"trace", "debug", "info", "warning", "error", "critical", "off"};

/* The kept copy of `path`, or NULL when there is no memory for one. Lock held. */
static const char *cmr_log_keep_path(const char *path) {
  for (cmr_log_path *kept = cmr_log_paths; kept != NULL; kept = kept->next) {
    if (strcmp(kept->text, path) == 0) return kept->text;
  }
  size_t length = strlen(path);
  cmr_log_path *kept = malloc(sizeof *kept + length + 1);
  if (kept == NULL) return NULL;
  memcpy(kept->text, path, length + 1);
  kept->next = cmr_log_paths;
  cmr_log_paths = kept;
  return kept->text;
}

bool cmr_log_sink_use(FILE *file, const char *path) {
  cmr_mutex_lock(&cmr_log_lock);
  const char *kept = file == NULL ? "" : cmr_log_keep_path(path);
  FILE *previous = cmr_log_file;
  if (kept != NULL) {
    if (previous != NULL) fflush(previous);
    cmr_log_write_errno = 0; /* what the new sink's flush reports starts afresh */
    cmr_log_file = file;
    cmr_log_file_path = kept;
  }
  cmr_mutex_unlock(&cmr_log_lock);
  /* No line is being written to it any more: writers take the sink under the lock. */
  FILE *unused = kept != NULL ? previous : file;
  if (unused != NULL) fclose(unused);
  return kept != NULL;
}

/* The level a name spells, in any case; -1 for none. */
static int cmr_log_level_named(const char *name) {
  for (int level = CMR_LOG_TRACE; level <= CMR_LOG_OFF; ++level) {
    if (strcasecmp(name, cmr_log_level_names[level]) == 0) return level;
  }
  return strcasecmp(name, "warn") == 0 ? CMR_LOG_WARN : -1;
}

static void cmr_log_read_environment(void) {
  int threshold = CMR_LOG_INFO;
  const char *level_text = getenv("CMR_DEBUG_LOG_LEVEL");
  if (level_text != NULL && level_text[0] != '\0') {
    int level = cmr_log_level_named(level_text);
    if (level >= 0) {
      threshold = level;
    } else {
      fprintf(stderr,
              "cmr: CMR_DEBUG_LOG_LEVEL=\"%s\" is not one of trace, debug, info, warn, error, critical, off: "
              "ignored (the level stays info)\n",
              level_text);
    }
  }
  const char *path = getenv("CMR_DEBUG_LOG_FILE");
  if (path != NULL && path[0] != '\0') {
    FILE *file = fopen(path, "a");
    if (file == NULL) {
      fprintf(stderr, "cmr: CMR_DEBUG_LOG_FILE=\"%s\" cannot be opened for appending (%s): logging to stderr\n", path,
              strerror(errno));
    } else if (!cmr_log_sink_use(file, path)) {
      fprintf(stderr, "cmr: CMR_DEBUG_LOG_FILE=\"%s\": no memory to keep the path: logging to stderr\n", path);
    }
  }
  atomic_store_explicit(&cmr_log_threshold, threshold, memory_order_release);
}

int cmr_log_start(void) {
  pthread_once(&cmr_log_once, cmr_log_read_environment);
  return atomic_load_explicit(&cmr_log_threshold, memory_order_acquire);
}

static unsigned long cmr_log_thread_id(void) {
#if defined(__linux__)
  return (unsigned long)syscall(SYS_gettid);
#else
  return (unsigned long)(uintptr_t)pthread_self();
#endif
}

void cmr_log_write(cmr_log_level level, const char *format, ...) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  struct tm local;
  cmr_local_time(now.tv_sec, &local);
  unsigned long thread = cmr_log_thread_id();
  bool flush = (int)level >= atomic_load_explicit(&cmr_log_flush_threshold, memory_order_relaxed);
  va_list args;
  va_start(args, format);
  cmr_mutex_lock(&cmr_log_lock);
  FILE *sink = cmr_log_file != NULL ? cmr_log_file : stderr;
  bool failed = fprintf(sink, "[%04d-%02d-%02d %02d:%02d:%02d.%03ld] [%s] [%lu] ", local.tm_year + 1900,
                        local.tm_mon + 1, local.tm_mday, local.tm_hour, local.tm_min, local.tm_sec,
                        now.tv_nsec / 1000000, cmr_log_level_names[level], thread) < 0;
  failed = failed || vfprintf(sink, format, args) < 0;
  failed = failed || fputc('\n', sink) == EOF;
  failed = failed || (flush && fflush(sink) != 0);
  if (failed) {
    cmr_log_write_errno = errno != 0 ? errno : EIO; /* cmr_log_flush reports it */
    clearerr(sink);
  }
  cmr_mutex_unlock(&cmr_log_lock);
  va_end(args);
}

int cmr_log_sink_flush(const char **path) {
  (void)cmr_log_start();
  cmr_mutex_lock(&cmr_log_lock);
  FILE *sink = cmr_log_file != NULL ? cmr_log_file : stderr;
  int error = fflush(sink) != 0 ? errno : cmr_log_write_errno;
  cmr_log_write_errno = 0;
  clearerr(sink);
  *path = cmr_log_file_path;
  cmr_mutex_unlock(&cmr_log_lock);
  return error;
}

const char *cmr_log_sink_path(void) {
  (void)cmr_log_start();
  cmr_mutex_lock(&cmr_log_lock);
  const char *path = cmr_log_file_path;
  cmr_mutex_unlock(&cmr_log_lock);
  return path;
}

/* glibc's lock of the time zone is not reset in a forked child: held there
 * by a thread of the parent inside localtime_r, it would never be free.
 * Every cmr call of localtime_r is under this lock, which a fork takes. */
static pthread_mutex_t cmr_time_lock = PTHREAD_MUTEX_INITIALIZER;

void cmr_local_time(time_t seconds, struct tm *out) {
  cmr_mutex_lock(&cmr_time_lock);
  localtime_r(&seconds, out);
  cmr_mutex_unlock(&cmr_time_lock);
}

/* ---- fork (fork.h) ------------------------------------------------------------ */

/* Held over the fork, so that no line is half written to the sink then,
 * and no cmr thread is inside localtime_r. */
static void cmr_log_fork_take(void) {
  cmr_mutex_lock(&cmr_log_lock);
  cmr_mutex_lock(&cmr_time_lock);
}

static void cmr_log_fork_give(void) {
  cmr_mutex_unlock(&cmr_time_lock);
  cmr_mutex_unlock(&cmr_log_lock);
}

CMR_FORK_PART(CMR_FORK_LOG, NULL, cmr_log_fork_take, cmr_log_fork_give, NULL)
