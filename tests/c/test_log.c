/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnostic log (cmr/log.h): levels, flush level, the file sink and
 * its lines, the environment (read in child processes, since it is read
 * once per process), thread safety, and the events the runtime logs. */
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static const char *self_path; /* this program, for the child processes */
static char log_path[64];

static void setup(void) {
  snprintf(log_path, sizeof log_path, "/tmp/cmr_test_log_XXXXXX");
  int fd = mkstemp(log_path);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

/* Back to the defaults, so that the next test (CK_FORK=no) starts clean. */
static void teardown(void) {
  ck_assert_ok(cmr_log_set_level(CMR_LOG_INFO));
  ck_assert_ok(cmr_log_set_file(NULL));
  ck_assert_ok(cmr_log_set_flush_level(CMR_LOG_WARN));
  unlink(log_path);
}

/* The whole file (a string to free). */
static char *read_text(const char *path) {
  FILE *file = fopen(path, "r");
  ck_assert_ptr_nonnull(file);
  size_t capacity = 1 << 20, length = 0;
  char *text = malloc(capacity);
  ck_assert_ptr_nonnull(text);
  length = fread(text, 1, capacity - 1, file);
  text[length] = '\0';
  fclose(file);
  return text;
}

static int count_of(const char *text, const char *needle) {
  int count = 0;
  for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle)) count++;
  return count;
}

/* A failing call: cmr_error logs its message at debug level. */
static void record_an_error(void) {
  cmr_stream stream;
  ck_assert_status(cmr_stream_create_with_flags(9, &stream), CMR_ERROR_INVALID_ARGUMENT);
}

/* Every line is `[YYYY-MM-DD HH:MM:SS.mmm] [level] [thread id] message`. */
static void assert_lines_well_formed(const char *text, int expected_lines) {
  regex_t line;
  ck_assert_int_eq(regcomp(&line,
                           "^\\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}\\] "
                           "\\[(trace|debug|info|warning|error|critical)\\] \\[[0-9]+\\] .+$",
                           REG_EXTENDED | REG_NOSUB),
                   0);
  int lines = 0;
  char *copy = strdup(text), *rest = NULL;
  for (char *one = strtok_r(copy, "\n", &rest); one != NULL; one = strtok_r(NULL, "\n", &rest)) {
    ck_assert_msg(regexec(&line, one, 0, NULL, 0) == 0, "malformed log line: \"%s\"", one);
    lines++;
  }
  free(copy);
  regfree(&line);
  ck_assert_int_eq(lines, expected_lines);
}

/* ---- levels ------------------------------------------------------------------------ */

START_TEST(levels_set_get_and_should_log) {
  cmr_log_level level;
  ck_assert_ok(cmr_log_get_level(&level));
  ck_assert_int_eq(level, CMR_LOG_INFO); /* the default: no CMR_DEBUG_LOG_LEVEL in the test's environment */
  ck_assert(cmr_log_should_log(CMR_LOG_INFO));
  ck_assert(!cmr_log_should_log(CMR_LOG_DEBUG));
  for (int set = CMR_LOG_TRACE; set <= CMR_LOG_OFF; ++set) {
    ck_assert_ok(cmr_log_set_level((cmr_log_level)set));
    ck_assert_ok(cmr_log_get_level(&level));
    ck_assert_int_eq(level, set);
    for (int asked = CMR_LOG_TRACE; asked <= CMR_LOG_OFF; ++asked) {
      bool expected = asked >= set && asked != CMR_LOG_OFF;
      ck_assert_msg(cmr_log_should_log((cmr_log_level)asked) == expected, "level %d, asked %d", set, asked);
    }
  }
  ck_assert_ok(cmr_log_set_level(CMR_LOG_TRACE));
  ck_assert(!cmr_log_should_log((cmr_log_level)7));
  ck_assert(!cmr_log_should_log((cmr_log_level)-1));
}
END_TEST

START_TEST(bad_levels_are_refused) {
  ck_assert_ok(cmr_log_set_level(CMR_LOG_ERROR));
  ck_assert_ok(cmr_log_set_flush_level(CMR_LOG_CRITICAL));
  const int bad[] = {-1, 7, 100};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    ck_assert_status(cmr_log_set_level((cmr_log_level)bad[i]), CMR_ERROR_INVALID_ARGUMENT);
    ck_assert_message_has("cmr_log_set_level: level");
    ck_assert_status(cmr_log_set_flush_level((cmr_log_level)bad[i]), CMR_ERROR_INVALID_ARGUMENT);
    ck_assert_message_has("cmr_log_set_flush_level: level");
  }
  cmr_log_level level;
  ck_assert_ok(cmr_log_get_level(&level));
  ck_assert_int_eq(level, CMR_LOG_ERROR);
  ck_assert_ok(cmr_log_get_flush_level(&level));
  ck_assert_int_eq(level, CMR_LOG_CRITICAL);
  ck_assert_status(cmr_log_get_level(NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_log_get_flush_level(NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_log_get_file(NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

/* ---- the file sink ------------------------------------------------------------------- */

START_TEST(file_sink_appends_well_formed_lines) {
  FILE *file = fopen(log_path, "w");
  fputs("[written before]\n", file);
  fclose(file);
  const char *path;
  ck_assert_ok(cmr_log_get_file(&path));
  ck_assert_str_eq(path, "");
  ck_assert_ok(cmr_log_set_file(log_path));
  ck_assert_ok(cmr_log_get_file(&path));
  ck_assert_str_eq(path, log_path);
  ck_assert_ok(cmr_log_set_level(CMR_LOG_DEBUG));
  record_an_error();
  ck_assert_ok(cmr_log_set_level(CMR_LOG_ERROR)); /* below the threshold: not written */
  record_an_error();
  ck_assert_ok(cmr_log_set_file(""));
  ck_assert_ok(cmr_log_get_file(&path));
  ck_assert_str_eq(path, "");
  char *text = read_text(log_path);
  ck_assert_msg(strncmp(text, "[written before]\n", 17) == 0, "the file was not appended to: %s", text);
  ck_assert_int_eq(count_of(text, "[debug]"), 1);
  ck_assert_int_eq(count_of(text, "CMR_ERROR_INVALID_ARGUMENT: cmr_stream_create_with_flags: flags 9"), 1);
  assert_lines_well_formed(text + 17, 1);
  free(text);
}
END_TEST

START_TEST(unopenable_file_is_refused) {
  ck_assert_ok(cmr_log_set_file(log_path));
  ck_assert_status(cmr_log_set_file("/nonexistent-cmr-dir/x.log"), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("/nonexistent-cmr-dir/x.log");
  const char *path;
  ck_assert_ok(cmr_log_get_file(&path));
  ck_assert_str_eq(path, log_path); /* unchanged */
}
END_TEST

/* Below the flush level a line stays in the file's buffer until a flush. */
START_TEST(flush_level_decides_when_lines_reach_the_file) {
  ck_assert_ok(cmr_log_set_file(log_path));
  ck_assert_ok(cmr_log_set_level(CMR_LOG_DEBUG));
  ck_assert_ok(cmr_log_set_flush_level(CMR_LOG_OFF));
  record_an_error();
  char *text = read_text(log_path);
  ck_assert_str_eq(text, "");
  free(text);
  ck_assert_ok(cmr_log_flush());
  text = read_text(log_path);
  ck_assert_int_eq(count_of(text, "[debug]"), 1);
  free(text);
  ck_assert_ok(cmr_log_set_flush_level(CMR_LOG_DEBUG));
  record_an_error();
  text = read_text(log_path);
  ck_assert_int_eq(count_of(text, "[debug]"), 2);
  free(text);
}
END_TEST

/* One line at debug level (the flush's own error, also a debug line, is
 * not logged: the level is back at info). */
static void log_one_line(void) {
  ck_assert_ok(cmr_log_set_level(CMR_LOG_DEBUG));
  record_an_error();
  ck_assert_ok(cmr_log_set_level(CMR_LOG_INFO));
}

/* A full disk: a line still in the buffer fails at the flush, one flushed
 * as it is written fails then and is reported by the next flush; either is
 * CMR_ERROR_IO with the system's reason, reported once. */
START_TEST(full_disk_is_an_io_error) {
  ck_assert_ok(cmr_log_set_file("/dev/full"));
  ck_assert_ok(cmr_log_set_flush_level(CMR_LOG_OFF));
  log_one_line();
  ck_assert_status(cmr_log_flush(), CMR_ERROR_IO);
  ck_assert_message_has("cmr_log_flush: writing the log to /dev/full failed: No space left on device");
  ck_assert_ok(cmr_log_flush()); /* nothing new */
  ck_assert_ok(cmr_log_set_flush_level(CMR_LOG_DEBUG));
  log_one_line(); /* written and flushed at once: it fails now */
  ck_assert_status(cmr_log_flush(), CMR_ERROR_IO);
  ck_assert_message_has("No space left on device");
  ck_assert_ok(cmr_log_flush());
  /* Another sink starts afresh. */
  log_one_line();
  ck_assert_ok(cmr_log_set_file(log_path));
  ck_assert_ok(cmr_log_flush());
}
END_TEST

enum { log_threads = 4, lines_per_thread = 200 };

static void *log_from_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < lines_per_thread; ++i) {
    cmr_stream stream;
    (void)cmr_stream_create_with_flags(9, &stream);
  }
  return NULL;
}

START_TEST(threads_write_whole_lines) {
  ck_assert_ok(cmr_log_set_file(log_path));
  ck_assert_ok(cmr_log_set_level(CMR_LOG_DEBUG));
  ck_assert_ptr_null(cmr_test_threads(log_threads, log_from_thread, NULL, 0).returned);
  ck_assert_ok(cmr_log_set_file(NULL));
  char *text = read_text(log_path);
  assert_lines_well_formed(text, log_threads * lines_per_thread);
  free(text);
}
END_TEST

/* ---- the environment, read once by a fresh process ------------------------------------ */

/* Runs this program as a child with the two variables (NULL: unset); its
 * stdout and stderr into `output`. Returns its exit status. */
static int run_child(const char *level, const char *file, char *output, size_t capacity) {
  int pipe_ends[2];
  ck_assert_int_eq(pipe(pipe_ends), 0);
  fflush(stdout);
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    dup2(pipe_ends[1], 1);
    dup2(pipe_ends[1], 2);
    close(pipe_ends[0]);
    if (level != NULL)
      setenv("CMR_DEBUG_LOG_LEVEL", level, 1);
    else
      unsetenv("CMR_DEBUG_LOG_LEVEL");
    if (file != NULL)
      setenv("CMR_DEBUG_LOG_FILE", file, 1);
    else
      unsetenv("CMR_DEBUG_LOG_FILE");
    execl(self_path, self_path, "--env-child", (char *)NULL);
    _exit(127);
  }
  close(pipe_ends[1]);
  size_t length = 0;
  ssize_t got;
  while (length + 1 < capacity && (got = read(pipe_ends[0], output + length, capacity - 1 - length)) > 0)
    length += (size_t)got;
  output[length] = '\0';
  close(pipe_ends[0]);
  int status = 0;
  ck_assert_int_eq(waitpid(child, &status, 0), child);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* What the child reports: its level, flush level and file; then one error
 * recorded (a debug line) and the level asked again. */
static int env_child(void) {
  cmr_log_level level = CMR_LOG_OFF, flush = CMR_LOG_OFF;
  const char *file = "?";
  if (cmr_log_get_level(&level) != CMR_SUCCESS || cmr_log_get_flush_level(&flush) != CMR_SUCCESS ||
      cmr_log_get_file(&file) != CMR_SUCCESS) {
    return 1;
  }
  cmr_stream stream;
  (void)cmr_stream_create_with_flags(9, &stream);
  (void)cmr_log_get_level(&level);
  (void)cmr_log_flush();
  printf("level=%d flush=%d file=[%s]\n", (int)level, (int)flush, file);
  return 0;
}

START_TEST(environment_sets_level_and_file) {
  char output[4096];
  ck_assert_int_eq(run_child("DeBuG", log_path, output, sizeof output), 0);
  char expected[160];
  snprintf(expected, sizeof expected, "level=1 flush=3 file=[%s]\n", log_path);
  ck_assert_str_eq(output, expected);
  char *text = read_text(log_path);
  ck_assert_int_eq(count_of(text, "[debug]"), 1);
  ck_assert_int_eq(count_of(text, "cmr_stream_create_with_flags: flags 9"), 1);
  assert_lines_well_formed(text, 1);
  free(text);
  /* Every name, in any case; "warning" as well as "warn". */
  const char *names[] = {"trace", "DEBUG", "Info", "warn", "WARNING", "error", "critical", "off"};
  const int levels[] = {0, 1, 2, 3, 3, 4, 5, 6};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    ck_assert_int_eq(run_child(names[i], NULL, output, sizeof output), 0);
    char want[64];
    snprintf(want, sizeof want, "level=%d flush=3 file=[]", levels[i]);
    ck_assert_msg(strstr(output, want) != NULL, "%s: got \"%s\"", names[i], output);
  }
}
END_TEST

START_TEST(bad_environment_is_reported_once_and_ignored) {
  char output[4096];
  ck_assert_int_eq(run_child("loud", NULL, output, sizeof output), 0);
  ck_assert_int_eq(count_of(output, "CMR_DEBUG_LOG_LEVEL=\"loud\""), 1);
  ck_assert_msg(strstr(output, "level=2 flush=3 file=[]\n") != NULL, "got \"%s\"", output);
  ck_assert_int_eq(run_child(NULL, "/nonexistent-cmr-dir/x.log", output, sizeof output), 0);
  ck_assert_int_eq(count_of(output, "CMR_DEBUG_LOG_FILE=\"/nonexistent-cmr-dir/x.log\""), 1);
  ck_assert_msg(strstr(output, "level=2 flush=3 file=[]\n") != NULL, "got \"%s\"", output);
  /* Unset: the defaults, and nothing written at info of a debug event. */
  ck_assert_int_eq(run_child(NULL, NULL, output, sizeof output), 0);
  ck_assert_str_eq(output, "level=2 flush=3 file=[]\n");
}
END_TEST

/* ---- events the runtime logs ------------------------------------------------------------- */

START_TEST(runtime_events_are_logged) {
  ck_assert_ok(cmr_log_set_file(log_path));
  ck_assert_ok(cmr_log_set_level(CMR_LOG_DEBUG));
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_pool_resource *pool;
  ck_assert_ok(cmr_pool_resource_create(cmr_system_resource_ref(system), CMR_SIZE(4096), CMR_SIZE(1 << 20),
                                        CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &pool));
  void *ptr;
  ck_assert_ok(cmr_allocate(cmr_pool_resource_ref(pool), 65536, CMR_DEFAULT_STREAM, &ptr));
  /* A limit the pool cannot pass: its upstream refuses, the callback retries once. */
  cmr_limiting_resource *limit;
  ck_assert_ok(cmr_limiting_resource_create(cmr_system_resource_ref(system), 1024, CMR_SIZE_DEFAULT, &limit));
  int calls = 0;
  cmr_failure_callback_resource *retrying;
  ck_assert_ok(
      cmr_failure_callback_resource_create(cmr_limiting_resource_ref(limit), cmr_test_retry_once, &calls, &retrying));
  void *refused;
  ck_assert_status(cmr_allocate(cmr_failure_callback_resource_ref(retrying), 4096, CMR_DEFAULT_STREAM, &refused),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ok(cmr_set_current_device_resource_ref(cmr_pool_resource_ref(pool)));
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  ck_assert_ok(cmr_deallocate(cmr_pool_resource_ref(pool), ptr, 65536, CMR_DEFAULT_STREAM));
  cmr_test_destroy(retrying, limit, pool, system);
  ck_assert_ok(cmr_log_set_file(NULL));
  char *text = read_text(log_path);
  const char *expected[] = {
      "cmr_system_resource_create: resource",
      "cmr_pool_resource_create: resource",
      "grew by 4096 bytes from the upstream (at least 4096 needed): pool size 4096",
      "grew by 65536 bytes",
      "pool size 69632",
      "failure_callback: the upstream is out of memory for 4096 bytes: the callback asks for a retry",
      "failure_callback: the upstream is out of memory for 4096 bytes: the callback gives up",
      "cmr_set_current_device_resource_ref: device 0: pool in place of",
      "cmr_reset_current_device_resource_ref: device 0: nothing (reset",
      "pool: resource",
      "destroyed (its last share released)",
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; ++i) {
    ck_assert_msg(strstr(text, expected[i]) != NULL, "the log lacks \"%s\":\n%s", expected[i], text);
  }
  free(text);
}
END_TEST

static void log_cases(Suite *suite) {
  cmr_test_case(suite, "log", setup, teardown, levels_set_get_and_should_log, bad_levels_are_refused,
                file_sink_appends_well_formed_lines, unopenable_file_is_refused,
                flush_level_decides_when_lines_reach_the_file, full_disk_is_an_io_error, threads_write_whole_lines,
                environment_sets_level_and_file, bad_environment_is_reported_once_and_ignored,
                runtime_events_are_logged);
}

int main(int argc, char **argv) {
  self_path = argv[0];
  if (argc > 1 && strcmp(argv[1], "--env-child") == 0) return env_child();
  /* The events need resources and the per-device table. */
  return cmr_test_main_suite("log", CMR_TEST_NEEDS_DEVICE, log_cases);
}
