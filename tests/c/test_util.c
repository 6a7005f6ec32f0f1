/* SPDX-License-Identifier: Apache-2.0 */
#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Asked in a child process: CUDA does not survive fork(), and Check forks
 * one process per test, so the runner itself must never initialise CUDA. */
bool cmr_test_no_device(void) {
  if (!cmr_built_with_cuda()) {
    return false;
  }
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    int count = 0;
    bool none = cmr_device_count(&count) == CMR_ERROR_NO_DEVICE;
    if (none) {
      printf("no CUDA device: %s\n", cmr_last_error_message());
    }
    fflush(stdout);
    _exit(none ? 0 : 1);
  }
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void cmr_test_require_device(void) {
  if (cmr_test_no_device()) {
    printf("skipped\n");
    exit(77);
  }
}

int cmr_test_run(Suite *suite) {
  const char *tags = getenv("CK_INCLUDE_TAGS");
  if (tags != NULL && strstr(tags, CMR_TEST_DEVICE_TAG) != NULL) cmr_test_require_device();
  SRunner *runner = srunner_create(suite);
  srunner_run_all(runner, CK_NORMAL);
  int ran = srunner_ntests_run(runner);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  if (ran == 0) {
    fprintf(stderr, "no test ran: check CK_RUN_SUITE / CK_RUN_CASE\n");
    return EXIT_FAILURE;
  }
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

TCase *cmr_test_add_case(Suite *suite, const char *name, SFun setup, SFun teardown, const TTest *const *tests) {
  TCase *tcase = tcase_create(name);
  if (setup != NULL || teardown != NULL) tcase_add_checked_fixture(tcase, setup, teardown);
  suite_add_tcase(suite, tcase);
  return cmr_test_add_tests(tcase, 1, tests);
}

TCase *cmr_test_add_tests(TCase *tcase, int count, const TTest *const *tests) {
  for (; *tests != NULL; ++tests) tcase_add_loop_test(tcase, *tests, 0, count);
  return tcase;
}

int cmr_test_run_case(const char *name, const TTest *const *tests) {
  Suite *suite = suite_create(name);
  cmr_test_add_case(suite, name, NULL, NULL, tests);
  return cmr_test_run(suite);
}

int cmr_test_main_suite(const char *name, cmr_test_machine machine, void (*add_cases)(Suite *suite)) {
  if (machine == CMR_TEST_NEEDS_DEVICE) cmr_test_require_device();
  Suite *suite = suite_create(name);
  add_cases(suite);
  return cmr_test_run(suite);
}

void cmr_test_use(cmr_resource_ref ref, size_t bytes, int byte) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, bytes, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_nonnull(ptr);
  memset(ptr, byte, bytes);
  ck_assert_ok(cmr_deallocate(ref, ptr, bytes, CMR_DEFAULT_STREAM));
}

cmr_system_resource *cmr_test_system_resource(void) {
  cmr_system_resource *resource = NULL;
  ck_assert_ok(cmr_system_resource_create(&resource));
  ck_assert_ptr_nonnull(resource);
  return resource;
}

cmr_pool_resource *cmr_test_pool(cmr_resource_ref upstream, size_t initial_pool_size) {
  cmr_pool_resource *pool = NULL;
  ck_assert_ok(cmr_pool_resource_create(upstream, CMR_SIZE(initial_pool_size), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                        CMR_POOL_CAPTURE_SERVE, &pool));
  return pool;
}

cmr_stream cmr_test_stream(void) {
  cmr_stream stream = NULL;
  ck_assert_ok(cmr_stream_create(&stream));
  return stream;
}

cmr_stack *cmr_test_stack(const char *expression, cmr_resource_ref *top) {
  char parsing[512];
  snprintf(parsing, sizeof parsing, "cmr_stack_parse(\"%s\")", expression);
  cmr_stack *stack = NULL;
  ck_assert_status_named(cmr_stack_parse(expression, &stack), CMR_SUCCESS, parsing);
  ck_assert_ptr_nonnull(stack);
  if (top != NULL) ck_assert_ok(cmr_stack_ref(stack, top));
  return stack;
}

void cmr_test_stack_refused(const char *expression, cmr_status status, const char *why) {
  char parsing[512];
  snprintf(parsing, sizeof parsing, "cmr_stack_parse(\"%s\")", expression);
  cmr_stack *stack = (void *)1;
  ck_assert_status_named(cmr_stack_parse(expression, &stack), status, parsing);
  ck_assert_message_has(why);
  ck_assert_ptr_null(stack);
}

const char *cmr_test_expression(const cmr_stack *stack) {
  const char *text = NULL;
  ck_assert_ok(cmr_stack_expression(stack, &text));
  return text;
}

bool cmr_test_retry_once(size_t bytes, void *calls) {
  (void)bytes;
  return ++*(int *)calls == 1;
}

bool cmr_test_never_retry(size_t bytes, void *arg) {
  (void)bytes, (void)arg;
  return false;
}

/* Thread i is given the i-th of the `arg_size`-byte elements at `args`
 * (`args` itself when arg_size is 0), or its number when `numbered`. */
static cmr_test_threads_result run_threads(int count, void *(*body)(void *), void *args, size_t arg_size,
                                           bool numbered) {
  pthread_t *threads = calloc((size_t)count, sizeof *threads);
  ck_assert_ptr_nonnull(threads);
  for (int i = 0; i < count; ++i) {
    void *arg = numbered ? (void *)(intptr_t)i : arg_size == 0 ? args : (char *)args + (size_t)i * arg_size;
    ck_assert_int_eq(pthread_create(&threads[i], NULL, body, arg), 0);
  }
  cmr_test_threads_result result = {-1, NULL};
  for (int i = 0; i < count; ++i) {
    void *returned = NULL;
    ck_assert_int_eq(pthread_join(threads[i], &returned), 0);
    if (returned != NULL && result.index < 0) result = (cmr_test_threads_result){i, returned};
  }
  free(threads);
  return result;
}

cmr_test_threads_result cmr_test_threads(int count, void *(*body)(void *), void *args, size_t arg_size) {
  return run_threads(count, body, args, arg_size, false);
}

cmr_test_threads_result cmr_test_numbered_threads(int count, void *(*body)(void *)) {
  return run_threads(count, body, NULL, 0, true);
}

/* ---- the foreign resource ------------------------------------------------------ */

static cmr_status foreign_allocate(void *self, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  test_foreign *foreign = self;
  foreign->allocations++;
  foreign->last_bytes = bytes;
  foreign->last_alignment = alignment;
  foreign->last_stream = stream;
  if (foreign->fail_with != CMR_SUCCESS) {
    return foreign->fail_with; /* deliberately without a message */
  }
  if (foreign->return_null) {
    *out = NULL;
    return CMR_SUCCESS;
  }
  bool limited = foreign->limit != 0 && bytes > foreign->limit - foreign->outstanding;
  if (limited || foreign->allocations == foreign->fail_at) {
    return CMR_ERROR_OUT_OF_MEMORY;
  }
  size_t rounded = (bytes + foreign->misalign + alignment - 1) / alignment * alignment;
  char *base = aligned_alloc(alignment, rounded);
  if (base == NULL) {
    return CMR_ERROR_OUT_OF_MEMORY;
  }
  *out = base + foreign->misalign;
  foreign->outstanding += bytes;
  return CMR_SUCCESS;
}

static cmr_status foreign_deallocate(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  test_foreign *foreign = self;
  foreign->deallocations++;
  foreign->last_bytes = bytes;
  foreign->last_alignment = alignment;
  foreign->last_stream = stream;
  foreign->last_freed = ptr;
  foreign->outstanding -= bytes;
  free((char *)ptr - foreign->misalign);
  return CMR_SUCCESS;
}

static cmr_status foreign_allocate_sync(void *self, size_t bytes, size_t alignment, void **out) {
  ((test_foreign *)self)->sync_allocations++;
  return foreign_allocate(self, bytes, alignment, CMR_DEFAULT_STREAM, out);
}

static cmr_status foreign_deallocate_sync(void *self, void *ptr, size_t bytes, size_t alignment) {
  ((test_foreign *)self)->sync_deallocations++;
  return foreign_deallocate(self, ptr, bytes, alignment, CMR_DEFAULT_STREAM);
}

/* Equal to any ref to the same struct, whichever ops table it uses. */
static bool foreign_is_equal(const void *self, cmr_resource_ref other) { return other.self == self; }

static unsigned foreign_properties(const void *self) { return ((const test_foreign *)self)->properties; }

static void foreign_retain(void *self) { ((test_foreign *)self)->retains++; }

static void foreign_release(void *self) { ((test_foreign *)self)->releases++; }

/* The members every foreign ops table has; `...` names it and adds the rest. */
#define FOREIGN_OPS(...)                                                                          \
  {                                                                                               \
    .allocate = foreign_allocate, .deallocate = foreign_deallocate, .is_equal = foreign_is_equal, \
    .properties = foreign_properties, __VA_ARGS__                                                 \
  }

const cmr_resource_ops test_foreign_ops = FOREIGN_OPS(.type_name = "foreign");
const cmr_resource_ops test_foreign_counted_ops =
    FOREIGN_OPS(.type_name = "foreign_counted", .retain = foreign_retain, .release = foreign_release);
const cmr_resource_ops test_foreign_sync_ops =
    FOREIGN_OPS(.type_name = "foreign_sync", .allocate_sync = foreign_allocate_sync,
                .deallocate_sync = foreign_deallocate_sync);

cmr_resource_ref test_foreign_ref(test_foreign *foreign, const cmr_resource_ops *ops) {
  return (cmr_resource_ref){foreign, ops};
}

int cmr_test_current_device(void) {
  int device = -1;
  ck_assert_ok(cmr_current_device(&device));
  return device;
}

int cmr_test_open_descriptors(void) {
  DIR *directory = opendir("/proc/self/fd");
  ck_assert_ptr_nonnull(directory);
  int count = 0;
  for (struct dirent *entry = readdir(directory); entry != NULL; entry = readdir(directory)) {
    if (entry->d_name[0] != '.') count++;
  }
  closedir(directory);
  return count - 1; /* the directory's own */
}
