/* SPDX-License-Identifier: Apache-2.0 */
/* logging: RMM's CSV event log over an upstream. Each row is formatted
 * whole and put in the adaptor's own buffer under one lock; the buffer goes
 * out when it is full, on every row with auto_flush, on flush and at
 * destroy. It is written with write(2) to a descriptor (the file the adaptor
 * opened, or the caller's stream's, which is flushed first so that what the
 * caller wrote to it comes before), so the bytes that reached the file are
 * known exactly and every row not written whole is counted lost. A caller's
 * stream without a descriptor (fmemopen, fopencookie) is written a row at a
 * time, each flushed, for the same exactness. */
#if defined(__linux__)
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include <sys/syscall.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "impl.h"
#include "lock.h"
#include "upstream_lock.h"

#define CMR_LOGGING_HEADER "Thread,Time,Action,Pointer,Size,Stream\n"

enum { cmr_logging_row_size = 160, cmr_logging_buffer_size = 8192 };

struct cmr_logging_impl {
  cmr_logging_params params; /* first: what it was created with (impl.h) */
  cmr_upstream_lock lock;    /* held across the upstream's free (see deallocate) */
  bool lock_made;
  FILE *file;     /* the caller's stream, or NULL for a file the adaptor opened */
  int descriptor; /* where the rows go: the opened file's, or the caller's stream's; -1: the stream has none */
  char *filename; /* the file written: "" for a caller's FILE * */
  char buffer[cmr_logging_buffer_size]; /* whole rows not yet written */
  size_t buffered;                      /* bytes in buffer */
  size_t buffered_rows;
  bool torn; /* a failed write cut a row short: the next write starts a new line first */
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

/* Writes `length` bytes to `descriptor`, retrying short writes and
 * interruptions; returns how many were written (fewer only with errno set). */
static size_t cmr_logging_write_all(int descriptor, const char *data, size_t length) {
  size_t done = 0;
  while (done < length) {
    ssize_t count = write(descriptor, data + done, length - done);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      if (count == 0) errno = EIO;
      break;
    }
    done += (size_t)count;
  }
  return done;
}

static size_t cmr_logging_rows_in(const char *text, size_t length) {
  size_t rows = 0;
  for (const char *end = text + length; (text = memchr(text, '\n', (size_t)(end - text))) != NULL; ++text) rows++;
  return rows;
}

/* Writes the buffer to the descriptor; returns the rows written whole. */
static size_t cmr_logging_write_descriptor(cmr_logging_impl *impl) {
  if (impl->file != NULL) fflush(impl->file); /* the caller's own text first */
  if (impl->torn) {
    if (cmr_logging_write_all(impl->descriptor, "\n", 1) != 1) return 0;
    impl->torn = false;
  }
  size_t written = cmr_logging_write_all(impl->descriptor, impl->buffer, impl->buffered);
  impl->torn = written > 0 && written < impl->buffered && impl->buffer[written - 1] != '\n';
  return cmr_logging_rows_in(impl->buffer, written);
}

/* Writes the buffer to a stream without a descriptor, a flushed row at a
 * time; returns the rows written. */
static size_t cmr_logging_write_stream(cmr_logging_impl *impl) {
  size_t written = 0;
  for (const char *row = impl->buffer, *end = impl->buffer + impl->buffered; row < end;) {
    const char *next = (const char *)memchr(row, '\n', (size_t)(end - row)) + 1;
    if (fwrite(row, 1, (size_t)(next - row), impl->file) == (size_t)(next - row) && fflush(impl->file) == 0) {
      written++;
    } else {
      impl->last_errno = errno;
      clearerr(impl->file);
    }
    row = next;
  }
  return written;
}

/* Empties the buffer into the destination, counting every row not written
 * whole as lost. The caller holds the lock. */
static void cmr_logging_write_out(cmr_logging_impl *impl) {
  if (impl->buffered == 0) return;
  size_t written = impl->descriptor >= 0 ? cmr_logging_write_descriptor(impl) : cmr_logging_write_stream(impl);
  size_t lost = impl->buffered_rows - written;
  if (lost > 0) {
    if (impl->descriptor >= 0) impl->last_errno = errno;
    impl->lost_rows += lost;
    impl->lost_since_flush += lost;
  }
  impl->buffered = 0;
  impl->buffered_rows = 0;
}

/* Buffers `row` (whole, one line, at most cmr_logging_row_size bytes). The
 * caller holds the lock. */
static void cmr_logging_put_locked(cmr_logging_impl *impl, const char *row) {
  size_t length = strlen(row);
  if (impl->buffered + length > sizeof impl->buffer) cmr_logging_write_out(impl);
  memcpy(impl->buffer + impl->buffered, row, length);
  impl->buffered += length;
  impl->buffered_rows++;
  if (impl->params.auto_flush) cmr_logging_write_out(impl);
}

/* A row after the upstream's answer: the entry point refused a call from
 * inside this thread's own hold of the lock, so the lock is another's at
 * most; a row that cannot be put is counted lost. */
static void cmr_logging_put(cmr_logging_impl *impl, const char *row) {
  if (cmr_upstream_lock_acquire(&impl->lock) != CMR_SUCCESS) {
    impl->lost_rows++;
    return;
  }
  cmr_logging_put_locked(impl, row);
  cmr_upstream_lock_release(&impl->lock);
}

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
  cmr_logging_put(impl, row);
}

/* The destination: the caller's stream, else `filename`, else CMR_LOG_FILE. */
static cmr_status cmr_logging_open(cmr_logging_impl *impl, const char *filename, FILE *file) {
  if (file != NULL) {
    impl->file = file;
    impl->descriptor = fileno(file);
    impl->filename = strdup("");
  } else {
    const char *name = filename[0] != '\0' ? filename : getenv("CMR_LOG_FILE");
    if (name == NULL || name[0] == '\0') {
      return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                       "logging: no destination: filename is \"\", file is NULL and CMR_LOG_FILE is %s",
                       name == NULL ? "unset" : "empty");
    }
    impl->descriptor = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (impl->descriptor < 0) {
      return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "logging: \"%.*s%s\"%s cannot be opened for writing: %s",
                       CMR_QUOTE(name), name == filename ? "" : " (from CMR_LOG_FILE)", strerror(errno));
    }
    impl->filename = strdup(name);
  }
  if (impl->filename == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "logging: no host memory for the file name");
  return CMR_SUCCESS;
}

cmr_status cmr_logging_impl_init(cmr_logging_impl *impl) {
  impl->descriptor = -1;
  cmr_status status = cmr_upstream_lock_init(&impl->lock, "logging: a call from inside its upstream's free");
  impl->lock_made = status == CMR_SUCCESS;
  if (status == CMR_SUCCESS) status = cmr_logging_open(impl, impl->params.filename, impl->params.file);
  if (status != CMR_SUCCESS) {
    cmr_logging_impl_fini(impl);
    return status;
  }
  cmr_logging_put(impl, CMR_LOGGING_HEADER);
  return CMR_SUCCESS;
}

/* What is still buffered is written out; rows lost now cannot be reported. */
void cmr_logging_impl_fini(cmr_logging_impl *impl) {
  if (impl->lock_made) cmr_logging_write_out(impl);
  if (impl->file == NULL && impl->descriptor >= 0) close(impl->descriptor);
  free(impl->filename);
  if (impl->lock_made) cmr_upstream_lock_destroy(&impl->lock);
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
  if (status == CMR_SUCCESS) cmr_logging_put_locked(impl, row);
  cmr_upstream_lock_release(&impl->lock);
  return status;
}

cmr_status cmr_logging_impl_flush(cmr_logging_impl *impl) {
  cmr_status status = cmr_upstream_lock_acquire(&impl->lock);
  if (status != CMR_SUCCESS) return status;
  cmr_logging_write_out(impl);
  int error = impl->last_errno;
  size_t lost = impl->lost_since_flush;
  impl->lost_since_flush = 0;
  cmr_upstream_lock_release(&impl->lock);
  if (lost == 0) return CMR_SUCCESS;
  const char *where = impl->filename[0] != '\0' ? impl->filename : "the FILE *";
  return cmr_error(CMR_ERROR_IO, "logging: %zu rows could not be written to %.*s%s: %s", lost, CMR_QUOTE(where),
                   strerror(error));
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
