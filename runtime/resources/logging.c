/* SPDX-License-Identifier: Apache-2.0 */
/* logging: RMM's CSV event log over an upstream. Each row is formatted
 * whole, then written and (with auto_flush) flushed under one lock. */
#if defined(__linux__)
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "impl.h"
#include "upstream_lock.h"

#define CMR_LOGGING_HEADER "Thread,Time,Action,Pointer,Size,Stream\n"

struct cmr_logging_impl {
  cmr_logging_params params; /* first: what it was created with (impl.h) */
  cmr_upstream_lock lock;    /* held across the upstream's free (see deallocate) */
  FILE *file;
  bool owns_file;
  char *filename; /* the file written: "" for a caller's FILE * */
  size_t lost_rows;
  size_t lost_since_flush;
  int last_errno;
};
CMR_IMPL_LAYOUT(logging);

/* The id spdlog's %t writes on Linux (the kernel's thread id), so rows from
 * cmr and from RMM name threads alike; elsewhere pthread_self's value. */
static unsigned long long cmr_logging_thread_id(void) {
#if defined(__linux__)
  return (unsigned long long)syscall(SYS_gettid);
#else
  return (unsigned long long)(uintptr_t)pthread_self();
#endif
}

/* Writes `row` (whole, one line), counting it lost if the write or the
 * auto-flush fails. The caller holds the lock. */
static void cmr_logging_write_locked(cmr_logging_impl *impl, const char *row) {
  bool failed = fputs(row, impl->file) == EOF || (impl->params.auto_flush && fflush(impl->file) != 0);
  if (failed) {
    impl->last_errno = errno;
    impl->lost_rows++;
    impl->lost_since_flush++;
    clearerr(impl->file);
  }
}

/* A row after the upstream's answer: the entry point refused a call from
 * inside this thread's own hold of the lock, so the lock is another's at
 * most; a row that could not be written is counted lost. */
static void cmr_logging_write(cmr_logging_impl *impl, const char *row) {
  if (cmr_upstream_lock_acquire(&impl->lock) != CMR_SUCCESS) {
    impl->lost_rows++;
    return;
  }
  cmr_logging_write_locked(impl, row);
  cmr_upstream_lock_release(&impl->lock);
}

enum { cmr_logging_row_size = 160 };

/* Thread,Time,Action,Pointer,Size,Stream: the time is local, HH:MM:SS with
 * microseconds, as RMM's pattern "%t,%H:%M:%S.%f,%v". */
static void cmr_logging_format(char row[cmr_logging_row_size], const char *action, const void *ptr, size_t bytes,
                               cmr_stream stream) {
  struct timespec now;
  struct tm local;
  clock_gettime(CLOCK_REALTIME, &now);
  localtime_r(&now.tv_sec, &local);
  snprintf(row, cmr_logging_row_size, "%llu,%02d:%02d:%02d.%06ld,%s,0x%" PRIxPTR ",%zu,0x%" PRIxPTR "\n",
           cmr_logging_thread_id(), local.tm_hour, local.tm_min, local.tm_sec, now.tv_nsec / 1000, action,
           (uintptr_t)ptr, bytes, (uintptr_t)stream);
}

static void cmr_logging_event(cmr_logging_impl *impl, const char *action, const void *ptr, size_t bytes,
                              cmr_stream stream) {
  char row[cmr_logging_row_size];
  cmr_logging_format(row, action, ptr, bytes, stream);
  cmr_logging_write(impl, row);
}

/* The destination: the caller's stream, else `filename`, else CMR_LOG_FILE. */
static cmr_status cmr_logging_open(cmr_logging_impl *impl, const char *filename, FILE *file) {
  if (file != NULL) {
    impl->file = file;
    impl->filename = strdup("");
  } else {
    const char *name = filename[0] != '\0' ? filename : getenv("CMR_LOG_FILE");
    if (name == NULL || name[0] == '\0') {
      return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                       "logging: no destination: filename is \"\", file is NULL and CMR_LOG_FILE is %s",
                       name == NULL ? "unset" : "empty");
    }
    impl->file = fopen(name, "w");
    if (impl->file == NULL) {
      return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "logging: \"%s\"%s cannot be opened for writing: %s", name,
                       name == filename ? "" : " (from CMR_LOG_FILE)", strerror(errno));
    }
    impl->owns_file = true;
    impl->filename = strdup(name);
  }
  if (impl->filename == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "logging: no host memory for the file name");
  return CMR_SUCCESS;
}

cmr_status cmr_logging_impl_init(cmr_logging_impl *impl) {
  cmr_upstream_lock_init(&impl->lock, "logging: a call from inside its upstream's free");
  cmr_status status = cmr_logging_open(impl, impl->params.filename, impl->params.file);
  if (status != CMR_SUCCESS) {
    cmr_logging_impl_fini(impl);
    return status;
  }
  cmr_logging_write(impl, CMR_LOGGING_HEADER);
  return CMR_SUCCESS;
}

void cmr_logging_impl_fini(cmr_logging_impl *impl) {
  if (impl->owns_file) {
    fclose(impl->file);
  } else if (impl->file != NULL) {
    fflush(impl->file);
  }
  free(impl->filename);
  cmr_upstream_lock_destroy(&impl->lock);
}

cmr_status cmr_logging_impl_allocate(cmr_logging_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                     void **out) {
  cmr_status status = cmr_upstream_lock_check(&impl->lock);
  if (status != CMR_SUCCESS) return status;
  status = cmr_allocate_aligned(impl->params.upstream, bytes, alignment, stream, out);
  cmr_logging_event(impl, status == CMR_SUCCESS ? "allocate" : "allocate failure", status == CMR_SUCCESS ? *out : NULL,
                    bytes, stream);
  return status;
}

cmr_status cmr_logging_impl_deallocate(cmr_logging_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                       cmr_stream stream) {
  /* Only a free the upstream accepts is logged. The lock is held across the
   * upstream's free: once the upstream has the memory back, another thread
   * may be handed the same address, and its row (which waits for the lock)
   * must come after this one. */
  char row[cmr_logging_row_size];
  cmr_logging_format(row, "free", ptr, bytes, stream);
  cmr_status status = cmr_upstream_lock_acquire(&impl->lock);
  if (status != CMR_SUCCESS) return status;
  status = cmr_deallocate_aligned(impl->params.upstream, ptr, bytes, alignment, stream);
  if (status == CMR_SUCCESS) cmr_logging_write_locked(impl, row);
  cmr_upstream_lock_release(&impl->lock);
  return status;
}

cmr_status cmr_logging_impl_flush(cmr_logging_impl *impl) {
  cmr_status status = cmr_upstream_lock_acquire(&impl->lock);
  if (status != CMR_SUCCESS) return status;
  bool flushed = fflush(impl->file) == 0;
  int error = flushed ? impl->last_errno : errno;
  size_t lost = impl->lost_since_flush;
  impl->lost_since_flush = 0;
  cmr_upstream_lock_release(&impl->lock);
  const char *where = impl->filename[0] != '\0' ? impl->filename : "the FILE *";
  if (!flushed) return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "logging: flushing %s failed: %s", where, strerror(error));
  if (lost > 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "logging: %zu rows could not be written to %s: %s", lost, where,
                     strerror(error));
  }
  return CMR_SUCCESS;
}

cmr_status cmr_logging_impl_filename(cmr_logging_impl *impl, const char **out) {
  *out = impl->filename;
  return CMR_SUCCESS;
}

cmr_status cmr_logging_impl_lost_rows(cmr_logging_impl *impl, size_t *out) {
  cmr_status status = cmr_upstream_lock_acquire(&impl->lock);
  if (status != CMR_SUCCESS) return status;
  *out = impl->lost_rows;
  cmr_upstream_lock_release(&impl->lock);
  return CMR_SUCCESS;
}
