/* SPDX-License-Identifier: Apache-2.0 */
/* logging: the exact CSV of RMM's logging_resource_adaptor (header, each
 * action, failures, the pointer, size and stream formats), every
 * destination, flushing, rows lost to a failing file (counted exactly: a
 * full device, a short write, a stream without a descriptor), rows from
 * many threads that never interleave, and the retained upstream. The upstream is
 * simulated: it ignores streams, so any stream value can be logged in both
 * builds, and its capacity makes failures on demand. */
#define _GNU_SOURCE /* syscall(SYS_gettid), fopencookie */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test_util.h"

#define HEADER "Thread,Time,Action,Pointer,Size,Stream"

/* One parsed row. */
typedef struct row {
  unsigned long long thread;
  int hours, minutes, seconds;
  long microseconds;
  char action[32];
  uintptr_t pointer;
  size_t size;
  uintptr_t stream;
} row;

/* Parses `line` strictly: every field present and in RMM's form, nothing after. */
static bool parse_row(const char *line, row *out) {
  int used = 0, time_used = 0, action_end = 0;
  if (sscanf(line, "%llu,%2d:%2d:%2d.%n%6ld%n", &out->thread, &out->hours, &out->minutes, &out->seconds, &time_used,
             &out->microseconds, &used) != 5 ||
      used - time_used != 6) {
    return false;
  }
  const char *rest = line + used;
  if (sscanf(rest, ",%31[a-z ]%n", out->action, &action_end) != 1) return false;
  rest += action_end;
  int tail = 0;
  if (sscanf(rest, ",0x%" SCNxPTR ",%zu,0x%" SCNxPTR "%n", &out->pointer, &out->size, &out->stream, &tail) != 3) {
    return false;
  }
  return rest[tail] == '\n' || rest[tail] == '\0';
}

/* The whole of `path`, or of `file` from its start. */
static char *slurp_file(FILE *file) {
  static char text[1 << 20];
  rewind(file);
  size_t length = fread(text, 1, sizeof text - 1, file);
  text[length] = '\0';
  return text;
}

static char *slurp(const char *path) {
  FILE *file = fopen(path, "r");
  ck_assert_ptr_nonnull(file);
  char *text = slurp_file(file);
  fclose(file);
  return text;
}

/* A fresh temporary file name (the file exists, empty). */
static void temp_path(char path[64]) {
  snprintf(path, 64, "/tmp/cmr_test_logging_XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

CMR_TEST_OUT(simulated, cmr_simulated_resource *, NULL, cmr_simulated_resource_create, cmr_optional_size)

static cmr_logging_resource *logging_to(cmr_simulated_resource *leaf, const char *filename, FILE *file,
                                        bool auto_flush) {
  cmr_logging_resource *handle = NULL;
  ck_assert_ok(cmr_logging_resource_create(cmr_simulated_resource_ref(leaf), filename, file, auto_flush, &handle));
  return handle;
}

/* Lines of `text` after the header, which must be exactly the first line. */
static char *after_header(char *text) {
  ck_assert_msg(strncmp(text, HEADER "\n", strlen(HEADER) + 1) == 0, "log starts \"%.60s\"", text);
  return text + strlen(HEADER) + 1;
}

START_TEST(test_exact_rows) {
  char path[64];
  temp_path(path);
  cmr_simulated_resource *leaf = simulated(CMR_SIZE(4096));
  cmr_logging_resource *log = logging_to(leaf, path, NULL, false);
  cmr_resource_ref ref = cmr_logging_resource_ref(log);
  cmr_stream stream = (cmr_stream)(uintptr_t)0xabc0;
  void *ptr = NULL, *failed = (void *)1;
  ck_assert_ok(cmr_allocate(ref, 1000, stream, &ptr));
  ck_assert_status(cmr_allocate(ref, 5000, CMR_DEFAULT_STREAM, &failed), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ok(cmr_deallocate(ref, ptr, 1000, stream));
  ck_assert_ok(cmr_logging_resource_flush(log));

  char *lines = after_header(slurp(path));
  const char *actions[] = {"allocate", "allocate failure", "free"};
  uintptr_t pointers[] = {(uintptr_t)ptr, 0, (uintptr_t)ptr};
  size_t sizes[] = {1000, 5000, 1000};
  uintptr_t streams[] = {0xabc0, 0, 0xabc0};
  for (int i = 0; i < 3; ++i) {
    row r;
    ck_assert_msg(parse_row(lines, &r), "row %d malformed: %.80s", i, lines);
    ck_assert_uint_eq(r.thread, (unsigned long long)syscall(SYS_gettid));
    ck_assert(r.hours < 24 && r.minutes < 60 && r.seconds < 61 && r.microseconds < 1000000);
    ck_assert_str_eq(r.action, actions[i]);
    ck_assert_uint_eq(r.pointer, pointers[i]);
    ck_assert_uint_eq(r.size, sizes[i]);
    ck_assert_uint_eq(r.stream, streams[i]);
    lines = strchr(lines, '\n') + 1;
  }
  ck_assert_str_eq(lines, "");
  /* The literal forms: 0x-prefixed lower-case hex, 0x0 for a failure. */
  char *text = slurp(path);
  char expected[64];
  snprintf(expected, sizeof expected, ",allocate,0x%" PRIxPTR ",1000,0xabc0\n", (uintptr_t)ptr);
  ck_assert_ptr_nonnull(strstr(text, expected));
  ck_assert_ptr_nonnull(strstr(text, ",allocate failure,0x0,5000,0x0\n"));
  cmr_test_destroy(log, leaf);
  remove(path);
}
END_TEST

START_TEST(test_named_file_is_truncated_and_named) {
  char path[64];
  temp_path(path);
  FILE *old = fopen(path, "w");
  fputs("old contents\n", old);
  fclose(old);
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, path, NULL, false);
  const char *name = NULL;
  ck_assert_ok(cmr_logging_resource_filename(log, &name));
  ck_assert_str_eq(name, path);
  ck_assert_ok(cmr_logging_resource_destroy(log));
  ck_assert_str_eq(slurp(path), HEADER "\n");
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
  remove(path);
}
END_TEST

START_TEST(test_callers_file_stays_open) {
  FILE *file = tmpfile();
  ck_assert_ptr_nonnull(file);
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, "", file, false);
  const char *name = NULL;
  ck_assert_ok(cmr_logging_resource_filename(log, &name));
  ck_assert_str_eq(name, "");
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_logging_resource_ref(log), 256, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_logging_resource_destroy(log));
  /* Still the caller's: writable after destroy, with the rows in it. */
  ck_assert_int_ge(fputs("caller\n", file), 0);
  char *lines = after_header(slurp_file(file));
  row r;
  ck_assert(parse_row(lines, &r));
  ck_assert_str_eq(r.action, "allocate");
  ck_assert_ptr_nonnull(strstr(lines, "\ncaller\n"));
  fclose(file);
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
}
END_TEST

START_TEST(test_environment_variable) {
  char path[64];
  temp_path(path);
  ck_assert_int_eq(setenv("CMR_LOG_FILE", path, 1), 0);
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, "", NULL, true);
  const char *name = NULL;
  ck_assert_ok(cmr_logging_resource_filename(log, &name));
  ck_assert_str_eq(name, path);
  ck_assert_ok(cmr_logging_resource_destroy(log));
  ck_assert_str_eq(slurp(path), HEADER "\n");
  /* An explicit name wins over the variable. */
  char other[64];
  temp_path(other);
  log = logging_to(leaf, other, NULL, false);
  ck_assert_ok(cmr_logging_resource_filename(log, &name));
  ck_assert_str_eq(name, other);
  ck_assert_ok(cmr_logging_resource_destroy(log));

  cmr_logging_resource *none = NULL;
  cmr_resource_ref upstream = cmr_simulated_resource_ref(leaf);
  ck_assert_int_eq(setenv("CMR_LOG_FILE", "", 1), 0);
  ck_assert_status(cmr_logging_resource_create(upstream, "", NULL, false, &none), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("CMR_LOG_FILE is empty");
  ck_assert_int_eq(unsetenv("CMR_LOG_FILE"), 0);
  ck_assert_status(cmr_logging_resource_create(upstream, "", NULL, false, &none), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("CMR_LOG_FILE is unset");
  ck_assert_ptr_null(none);
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
  remove(path);
  remove(other);
}
END_TEST

START_TEST(test_bad_destinations) {
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_resource_ref upstream = cmr_simulated_resource_ref(leaf);
  cmr_logging_resource *log = NULL;
  ck_assert_status(cmr_logging_resource_create(upstream, "/nonexistent-dir/log.csv", NULL, false, &log),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cannot be opened for writing");
  ck_assert_status(cmr_logging_resource_create(upstream, "x.csv", stderr, false, &log), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("give one destination, not both");
  ck_assert_status(cmr_logging_resource_create(upstream, NULL, NULL, false, &log), CMR_ERROR_NULL_POINTER);
  ck_assert_ptr_null(log);
  /* A long name is cut in the message; the reason stays. */
  static char long_name[4096];
  memset(long_name, 'n', sizeof long_name - 1);
  ck_assert_status(cmr_logging_resource_create(upstream, long_name, stderr, false, &log), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("nnn...\" and file ");
  ck_assert_message_has(": give one destination, not both");
  ck_assert_status(cmr_logging_resource_create(upstream, long_name, NULL, false, &log), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("nnn...\" cannot be opened for writing: File name too long");
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
}
END_TEST

/* A few rows stay in the adaptor's buffer until a flush, unless auto_flush
 * writes each one out. */
static void check_flushing(bool auto_flush) {
  char path[64];
  temp_path(path);
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, path, NULL, auto_flush);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_logging_resource_ref(log), 256, CMR_DEFAULT_STREAM, &ptr));
  char *text = slurp(path);
  if (auto_flush) {
    row r;
    ck_assert(parse_row(after_header(text), &r));
  } else {
    ck_assert_str_eq(text, "");
    ck_assert_ok(cmr_logging_resource_flush(log));
    row r;
    ck_assert(parse_row(after_header(slurp(path)), &r));
  }
  cmr_test_destroy(log, leaf);
  remove(path);
}

START_TEST(test_flush) { check_flushing(false); }
END_TEST

START_TEST(test_auto_flush) { check_flushing(true); }
END_TEST

START_TEST(test_lost_rows_keep_the_allocations) {
  FILE *full = fopen("/dev/full", "w");
  ck_assert_ptr_nonnull(full);
  setvbuf(full, NULL, _IONBF, 0); /* every write reaches the device and fails */
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, "", full, false);
  cmr_resource_ref ref = cmr_logging_resource_ref(log);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 512, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_nonnull(ptr);
  ck_assert_ok(cmr_deallocate(ref, ptr, 512, CMR_DEFAULT_STREAM));
  size_t lost = 1, in_use = 1;
  ck_assert_ok(cmr_logging_resource_lost_rows(log, &lost));
  ck_assert_uint_eq(lost, 0); /* still in the adaptor's buffer */
  ck_assert_ok(cmr_simulated_resource_bytes_in_use(leaf, &in_use));
  ck_assert_uint_eq(in_use, 0);
  ck_assert_status(cmr_logging_resource_flush(log), CMR_ERROR_IO);
  ck_assert_message_has("3 rows could not be written to the FILE *: No space left on device");
  ck_assert_ok(cmr_logging_resource_lost_rows(log, &lost));
  ck_assert_uint_eq(lost, 3); /* header, allocate, free */
  /* Reported once: the next flush has nothing new to say. */
  ck_assert_ok(cmr_logging_resource_flush(log));
  cmr_test_destroy(log, leaf);
  fclose(full);
}
END_TEST

/* `rows` - 1 allocations through `log` (the header is the first row),
 * freed afterwards through the adaptor's upstream, unlogged. */
static void log_rows(cmr_logging_resource *log, cmr_simulated_resource *leaf, size_t rows) {
  static void *ptrs[4096];
  ck_assert_uint_le(rows - 1, sizeof ptrs / sizeof ptrs[0]);
  for (size_t i = 0; i + 1 < rows; ++i) {
    ck_assert_ok(cmr_allocate(cmr_logging_resource_ref(log), 256, CMR_DEFAULT_STREAM, &ptrs[i]));
  }
  for (size_t i = 0; i + 1 < rows; ++i) {
    ck_assert_ok(cmr_deallocate(cmr_simulated_resource_ref(leaf), ptrs[i], 256, CMR_DEFAULT_STREAM));
  }
}

CMR_TEST_OUT(lost_rows_of, size_t, 0, cmr_logging_resource_lost_rows, cmr_logging_resource *)

/* A full device takes none of 1,001 rows, whichever way they reach it:
 * each is counted, the ones the buffer held as well as the ones that came
 * after, and the flush says so with CMR_ERROR_IO. */
static void check_full_device(const char *filename, bool callers_stream, bool auto_flush) {
  FILE *full = callers_stream ? fopen("/dev/full", "w") : NULL;
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, filename, full, auto_flush);
  log_rows(log, leaf, 1001);
  ck_assert_status(cmr_logging_resource_flush(log), CMR_ERROR_IO);
  ck_assert_message_has("1001 rows could not be written to ");
  ck_assert_message_has(callers_stream ? "the FILE *: No space left on device" : "/dev/full: No space left on device");
  ck_assert_uint_eq(lost_rows_of(log), 1001);
  cmr_test_destroy(log, leaf);
  if (full != NULL) fclose(full);
}

START_TEST(test_full_device_counts_every_row) {
  check_full_device("/dev/full", false, false);
  check_full_device("/dev/full", false, true);
  check_full_device("", true, false);
  check_full_device("", true, true);
}
END_TEST

/* A stream without a descriptor whose every other write fails. */
static ssize_t refuse_every_other(void *cookie, const char *data, size_t size) {
  (void)data;
  size_t *calls = cookie;
  if ((*calls)++ % 2 == 1) {
    errno = ENOSPC;
    return -1;
  }
  return (ssize_t)size;
}

START_TEST(test_stream_without_descriptor_counts_exactly) {
  size_t calls = 0;
  FILE *stream = fopencookie(&calls, "w", (cookie_io_functions_t){.write = refuse_every_other});
  ck_assert_ptr_nonnull(stream);
  ck_assert_int_lt(fileno(stream), 0);
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, "", stream, false);
  log_rows(log, leaf, 10);
  ck_assert_status(cmr_logging_resource_flush(log), CMR_ERROR_IO);
  ck_assert_message_has("5 rows could not be written to the FILE *: No space left on device");
  ck_assert_uint_eq(lost_rows_of(log), 5);
  ck_assert_uint_eq(calls, 10); /* a write per row */
  cmr_test_destroy(log, leaf);
  fclose(stream);
}
END_TEST

/* Reads what the pipe holds now into text (appending). */
static void drain(int reader, char *text, size_t capacity) {
  size_t used = strlen(text);
  ssize_t count;
  while ((count = read(reader, text + used, capacity - 1 - used)) > 0) used += (size_t)count;
  text[used] = '\0';
}

/* A pipe that holds one page and does not wait (so a write stops short in
 * the middle of a row, then fails): every row is either in the pipe, whole,
 * or counted lost, and once the pipe has room again the rows after the cut
 * one start on their own line. */
START_TEST(test_short_write_counts_exactly) {
  int ends[2];
  ck_assert_int_eq(pipe(ends), 0);
  long page = sysconf(_SC_PAGESIZE);
  ck_assert_int_eq(fcntl(ends[1], F_SETPIPE_SZ, (int)page), page);
  ck_assert_int_eq(fcntl(ends[1], F_SETFL, O_NONBLOCK), 0);
  ck_assert_int_eq(fcntl(ends[0], F_SETFL, O_NONBLOCK), 0);
  FILE *stream = fdopen(ends[1], "w");
  ck_assert_ptr_nonnull(stream);
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, "", stream, false);
  log_rows(log, leaf, 200); /* about 11 KiB: the buffer fills and is written once */
  ck_assert_status(cmr_logging_resource_flush(log), CMR_ERROR_IO);
  ck_assert_message_has(strerror(EAGAIN));
  static char text[1 << 16];
  text[0] = '\0';
  drain(ends[0], text, sizeof text);
  ck_assert_uint_eq(strlen(text), (size_t)page);
  size_t lost = lost_rows_of(log);
  log_rows(log, leaf, 3); /* two more allocations */
  ck_assert_ok(cmr_logging_resource_flush(log));
  ck_assert_uint_eq(lost_rows_of(log), lost);
  drain(ends[0], text, sizeof text);
  ck_assert_ok(cmr_logging_resource_destroy(log));
  fclose(stream);
  close(ends[0]);

  /* Every row but the header has one length (fixed-width fields, one
   * thread, pointers of one width): the page cuts a row unless it falls
   * between two. */
  const char *line = after_header(text);
  size_t row_length = strcspn(line, "\n") + 1, before_cut = (size_t)page - (strlen(HEADER) + 1);
  size_t whole = 1, malformed = 0; /* the header */
  for (const char *end; (end = strchr(line, '\n')) != NULL; line = end + 1) {
    row r;
    if (parse_row(line, &r)) {
      whole++;
    } else {
      malformed++;
    }
  }
  ck_assert_str_eq(line, ""); /* the text ends with a whole line */
  ck_assert_uint_eq(malformed, before_cut % row_length != 0 ? 1 : 0);
  ck_assert_uint_eq(whole, 1 + before_cut / row_length + 2);
  ck_assert_uint_eq(whole + lost, 200 + 2);
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
}
END_TEST

enum { THREADS = 8, ROUNDS = 500 };

static void *churn(void *arg) {
  cmr_resource_ref ref = *(cmr_resource_ref *)arg;
  for (int i = 0; i < ROUNDS; ++i) {
    void *ptr = NULL;
    if (cmr_allocate(ref, 256 + (size_t)i, CMR_DEFAULT_STREAM, &ptr) != CMR_SUCCESS) return (void *)1;
    if (cmr_deallocate(ref, ptr, 256 + (size_t)i, CMR_DEFAULT_STREAM) != CMR_SUCCESS) return (void *)1;
  }
  return NULL;
}

START_TEST(test_threads_never_interleave) {
  char path[64];
  temp_path(path);
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_logging_resource *log = logging_to(leaf, path, NULL, false);
  cmr_resource_ref ref = cmr_logging_resource_ref(log);
  ck_assert_ptr_null(cmr_test_threads(THREADS, churn, &ref, 0).returned);
  ck_assert_ok(cmr_logging_resource_destroy(log));

  /* Every line a whole row; per thread, each free right after its allocate
   * (simulated never reuses an address, so pointers identify allocations). */
  unsigned long long ids[THREADS] = {0};
  uintptr_t open_pointer[THREADS] = {0};
  int rows_of[THREADS] = {0}, rows = 0;
  for (char *line = after_header(slurp(path)); *line != '\0'; line = strchr(line, '\n') + 1, ++rows) {
    row r;
    ck_assert_msg(parse_row(line, &r), "line %d malformed: %.80s", rows + 2, line);
    int t = 0;
    while (t < THREADS && ids[t] != 0 && ids[t] != r.thread) ++t;
    ck_assert_int_lt(t, THREADS);
    ids[t] = r.thread;
    if (strcmp(r.action, "allocate") == 0) {
      ck_assert_uint_eq(open_pointer[t], 0);
      open_pointer[t] = r.pointer;
    } else {
      ck_assert_str_eq(r.action, "free");
      ck_assert_uint_eq(r.pointer, open_pointer[t]);
      open_pointer[t] = 0;
    }
    rows_of[t]++;
  }
  ck_assert_int_eq(rows, THREADS * ROUNDS * 2);
  for (int t = 0; t < THREADS; ++t) ck_assert_int_eq(rows_of[t], ROUNDS * 2);
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
  remove(path);
}
END_TEST

START_TEST(test_upstream_retained) {
  cmr_simulated_resource *leaf = simulated(CMR_SIZE_DEFAULT);
  cmr_resource_ref upstream = cmr_simulated_resource_ref(leaf);
  cmr_logging_resource *log = logging_to(leaf, "/dev/null", NULL, false);
  ck_assert_ok(cmr_simulated_resource_destroy(leaf));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_logging_resource_ref(log), 256, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(cmr_logging_resource_ref(log), ptr, 256, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_ref_validate(upstream));
  ck_assert_ok(cmr_logging_resource_destroy(log));
  ck_assert_status(cmr_ref_validate(upstream), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

static void logging_cases(Suite *suite) {
  cmr_test_case(suite, "format", NULL, NULL, test_exact_rows, test_threads_never_interleave);
  cmr_test_case(suite, "destinations", NULL, NULL, test_named_file_is_truncated_and_named, test_callers_file_stays_open,
                test_environment_variable, test_bad_destinations, test_flush, test_auto_flush,
                test_lost_rows_keep_the_allocations, test_full_device_counts_every_row,
                test_stream_without_descriptor_counts_exactly, test_short_write_counts_exactly);
  cmr_test_case(suite, "lifetime", NULL, NULL, test_upstream_retained);
}

int main(void) { return cmr_test_main_suite("logging", CMR_TEST_ANY_MACHINE, logging_cases); }
