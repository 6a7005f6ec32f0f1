/* SPDX-License-Identifier: Apache-2.0 */
/* What the runtime's Check suites share: status assertions that also demand
 * a message on failure, destroys by handle type, the skip rule for GPU-less
 * machines, a suite runner that refuses to pass when nothing ran, makers of
 * the stacks, pools and streams tests use, a thread runner, and a foreign
 * resource (an ops table of the test's own) that records what the runtime
 * asked of it. */
#ifndef CMR_TEST_UTIL_H
#define CMR_TEST_UTIL_H

#include <check.h>
#include <string.h>

#include <cmr/cmr.h>

/* `call` returns `expected`; a failing call must leave a message. The
 * message is cleared first, so an old one cannot pass for it. */
#define ck_assert_status(call, expected) ck_assert_status_named(call, expected, #call)

/* ck_assert_status, with `text` naming the call in the failure. */
#define ck_assert_status_named(call, expected, text)                                                               \
  do {                                                                                                             \
    cmr_clear_last_error();                                                                                        \
    cmr_status got_ = (call);                                                                                      \
    cmr_status want_ = (expected);                                                                                 \
    ck_assert_msg(got_ == want_, "%s returned %s, expected %s (message: \"%s\")", (text), cmr_status_string(got_), \
                  cmr_status_string(want_), cmr_last_error_message());                                             \
    ck_assert_msg(want_ == CMR_SUCCESS || cmr_last_error_message()[0] != '\0',                                     \
                  "%s failed with %s but left no message", (text), cmr_status_string(got_));                       \
  } while (0)

#define ck_assert_ok(call) ck_assert_status(call, CMR_SUCCESS)

/* CMR_TEST_RESOURCES(X): every resource of spec/ as X(name), for each
 * cmr_<name>_resource, separated by commas; CMakeLists.txt writes it from
 * the spec's list. */
#include "cmr_test_resources.h"

/* The association of `type *` with cmr_<name>_destroy. */
#define CMR_TEST_DESTROYS_(type, name) type * : cmr_##name##_destroy
#define CMR_TEST_DESTROY_OF_(name) CMR_TEST_DESTROYS_(cmr_##name##_resource, name##_resource)

/* The destroy function of `handle`'s type: any resource's, a stack's, a
 * stream's (cmr_stream is struct CUstream_st *), a buffer's, a stream pool's
 * or an IPC pool's. `handle` is not evaluated. */
#define cmr_test_destroy_function(handle)                                                                        \
  _Generic((handle), CMR_TEST_RESOURCES(CMR_TEST_DESTROY_OF_), CMR_TEST_DESTROYS_(cmr_stack, stack),             \
           CMR_TEST_DESTROYS_(struct CUstream_st, stream), CMR_TEST_DESTROYS_(cmr_device_buffer, device_buffer), \
           CMR_TEST_DESTROYS_(cmr_stream_pool, stream_pool), CMR_TEST_DESTROYS_(cmr_ipc_pool, ipc_pool))

/* A block that destroys `handle` as ck_assert_ok would, naming it. */
#define cmr_test_destroy_block_(handle) \
  { ck_assert_status_named(cmr_test_destroy_function(handle)(handle), CMR_SUCCESS, "destroying " #handle); }

/* f(a) for each argument a, in order (1 to 8 arguments): `f` makes a block. */
#define CMR_TEST_EACH_1_(f, a) f(a)
#define CMR_TEST_EACH_2_(f, a, ...) f(a) CMR_TEST_EACH_1_(f, __VA_ARGS__)
#define CMR_TEST_EACH_3_(f, a, ...) f(a) CMR_TEST_EACH_2_(f, __VA_ARGS__)
#define CMR_TEST_EACH_4_(f, a, ...) f(a) CMR_TEST_EACH_3_(f, __VA_ARGS__)
#define CMR_TEST_EACH_5_(f, a, ...) f(a) CMR_TEST_EACH_4_(f, __VA_ARGS__)
#define CMR_TEST_EACH_6_(f, a, ...) f(a) CMR_TEST_EACH_5_(f, __VA_ARGS__)
#define CMR_TEST_EACH_7_(f, a, ...) f(a) CMR_TEST_EACH_6_(f, __VA_ARGS__)
#define CMR_TEST_EACH_8_(f, a, ...) f(a) CMR_TEST_EACH_7_(f, __VA_ARGS__)
#define CMR_TEST_PICK_(_1, _2, _3, _4, _5, _6, _7, _8, each, ...) each
#define CMR_TEST_EACH(f, ...)                                                                         \
  CMR_TEST_PICK_(__VA_ARGS__, CMR_TEST_EACH_8_, CMR_TEST_EACH_7_, CMR_TEST_EACH_6_, CMR_TEST_EACH_5_, \
                 CMR_TEST_EACH_4_, CMR_TEST_EACH_3_, CMR_TEST_EACH_2_, CMR_TEST_EACH_1_, unused)      \
  (f, __VA_ARGS__)

/* Destroys each handle named (1 to 8), in that order, as ck_assert_ok would
 * its destroy: the test fails at the first that does not succeed, naming
 * the handle. */
#define cmr_test_destroy(...)                           \
  do {                                                  \
    CMR_TEST_EACH(cmr_test_destroy_block_, __VA_ARGS__) \
  } while (0)

/* The last message contains `text`. */
#define ck_assert_message_has(text)                                                                         \
  ck_assert_msg(strstr(cmr_last_error_message(), (text)) != NULL, "message \"%s\" does not contain \"%s\"", \
                cmr_last_error_message(), (text))

/* Defines `static type name(arg_type arg)`: the value `call(arg, &value)`
 * leaves in value (set to `initial` first), failing the test unless the
 * call succeeds. For readers (cmr_*_bytes_in_use, ...) and makers of one
 * argument. */
#define CMR_TEST_OUT(name, type, initial, call, arg_type) \
  static type name(arg_type arg) {                        \
    type value = (initial);                               \
    ck_assert_ok(call(arg, &value));                      \
    return value;                                         \
  }

/* Whether the build has CUDA but the machine no driver or device. Safe to
 * call in the runner: the question is asked in a child process. */
bool cmr_test_no_device(void);

/* Exits with ctest's skip code 77 when cmr_test_no_device(). Call first in
 * main() of a suite that needs a device. */
void cmr_test_require_device(void);

/* The Check tag of the cases that need a device in a suite that otherwise
 * does not (cmr_add_check_test's DEVICE_CASES): the suite's ctest entry
 * leaves them out (CK_EXCLUDE_TAGS) and an entry of their own runs them
 * alone (CK_INCLUDE_TAGS), which cmr_test_run skips, 77, without a device.
 * A test never returns early for want of a device: that would count as a
 * pass. */
#define CMR_TEST_DEVICE_TAG "device"

/* Runs `suite` in Check's default (forking) mode. Fails when no test ran,
 * e.g. because CK_RUN_SUITE / CK_RUN_CASE named nothing; exits 77 when the
 * device cases alone are asked for and there is no device. */
int cmr_test_run(Suite *suite);

/* Whether a suite needs a device (cmr_test_main_suite). */
typedef enum cmr_test_machine { CMR_TEST_ANY_MACHINE, CMR_TEST_NEEDS_DEVICE } cmr_test_machine;

/* main's whole body for a suite named `name` whose cases `add_cases` adds
 * (with cmr_test_case and the like): cmr_test_require_device() first when
 * `machine` is CMR_TEST_NEEDS_DEVICE, then the suite, run as cmr_test_run
 * runs it. */
int cmr_test_main_suite(const char *name, cmr_test_machine machine, void (*add_cases)(Suite *suite));

/* Adds to `suite` a test case named `name` with a checked fixture (`setup`,
 * `teardown`, either may be NULL) and the tests that follow, in that order.
 * Returns the case, for a timeout or loop tests. */
#define cmr_test_case(suite, name, setup, teardown, ...) \
  cmr_test_add_case((suite), (name), (setup), (teardown), (const TTest *const[]){__VA_ARGS__, NULL})

/* cmr_test_case() for tests that each run `count` times, _i from 0 to
 * count - 1 (tcase_add_loop_test). */
#define cmr_test_loop_case(suite, name, setup, teardown, count, ...)                                             \
  cmr_test_add((cmr_test_add_case((suite), (name), (setup), (teardown), (const TTest *const[]){NULL})), (count), \
               __VA_ARGS__)

/* Adds the tests that follow to `tcase`, each run `count` times, _i from 0
 * to count - 1 (once when count is 1); returns tcase. */
#define cmr_test_add(tcase, count, ...) cmr_test_add_tests((tcase), (count), (const TTest *const[]){__VA_ARGS__, NULL})

/* What cmr_test_case() and cmr_test_add() call: `tests` ends with NULL. */
TCase *cmr_test_add_case(Suite *suite, const char *name, SFun setup, SFun teardown, const TTest *const *tests);
TCase *cmr_test_add_tests(TCase *tcase, int count, const TTest *const *tests);

/* main's whole body for a suite of one case, both named `name`, without a
 * fixture: the tests that follow, run as cmr_test_run runs them. */
#define cmr_test_main(name, ...) cmr_test_run_case((name), (const TTest *const[]){__VA_ARGS__, NULL})
int cmr_test_run_case(const char *name, const TTest *const *tests);

/* Allocates `bytes` from `ref` on the default stream, writes `byte` over
 * them and frees them, failing the test if any step fails. */
void cmr_test_use(cmr_resource_ref ref, size_t bytes, int byte);

/* The current device; fails the test if it cannot be read. */
int cmr_test_current_device(void);

/* A system resource for the test to own; fails the test if it cannot be made. */
cmr_system_resource *cmr_test_system_resource(void);

/* A pool over `upstream` for the test to destroy: `initial_pool_size` bytes
 * at first, the other parameters their defaults; fails the test if it cannot
 * be made. */
cmr_pool_resource *cmr_test_pool(cmr_resource_ref upstream, size_t initial_pool_size);

/* A new stream for the test to destroy; fails the test if it cannot be made. */
cmr_stream cmr_test_stream(void);

/* A stack parsed from `expression` for the test to destroy, its top in *top
 * unless `top` is NULL; fails the test, naming the expression, if either
 * step fails. */
cmr_stack *cmr_test_stack(const char *expression, cmr_resource_ref *top);

/* cmr_stack_parse(expression) fails with `status`, its message containing
 * `why`, and gives back no stack (NULL in its out parameter). */
void cmr_test_stack_refused(const char *expression, cmr_status status, const char *why);

/* The stack's expression written out with every parameter
 * (cmr_stack_expression); fails the test if it cannot be had. */
const char *cmr_test_expression(const cmr_stack *stack);

/* failure_callback callbacks: cmr_test_retry_once asks for a retry at the
 * first failure only, counting its calls in the int at `calls`;
 * cmr_test_never_retry gives up at once. */
bool cmr_test_retry_once(size_t bytes, void *calls);
bool cmr_test_never_retry(size_t bytes, void *arg);

/* What cmr_test_threads saw: the lowest-numbered thread that returned
 * anything but NULL and what it returned; index -1 and NULL when every
 * thread returned NULL. */
typedef struct cmr_test_threads_result {
  int index;
  void *returned;
} cmr_test_threads_result;

/* Runs `body` on `count` threads at once and joins them all, failing the
 * test if one cannot be made or joined. Thread i is given
 * (char *)args + i * arg_size: the i-th element of an array of them, or
 * `args` itself for every thread when arg_size is 0. */
cmr_test_threads_result cmr_test_threads(int count, void *(*body)(void *), void *args, size_t arg_size);

/* cmr_test_threads, thread i given its number: (void *)(intptr_t)i. */
cmr_test_threads_result cmr_test_numbered_threads(int count, void *(*body)(void *));

/* How many file descriptors this process has open now (/proc/self/fd), for
 * tests that nothing leaks one. */
int cmr_test_open_descriptors(void);

/* ---- the foreign resource ---------------------------------------------------- */

typedef struct test_foreign {
  /* configuration */
  size_t misalign;      /* added to every pointer allocate returns */
  cmr_status fail_with; /* allocate fails with this, silently, unless CMR_SUCCESS */
  bool return_null;     /* allocate "succeeds" with NULL */
  unsigned properties;
  size_t limit; /* when nonzero, allocate fails with OUT_OF_MEMORY past this many outstanding bytes */
  int fail_at;  /* when nonzero, the allocation numbered so (allocations counts from 1) fails
                               with OUT_OF_MEMORY, silently; the ones after it succeed again */
  /* what the runtime did */
  size_t outstanding; /* bytes allocated and not yet freed */
  int allocations;
  int deallocations;
  int sync_allocations; /* through allocate_sync / deallocate_sync */
  int sync_deallocations;
  int retains;
  int releases;
  size_t last_bytes;
  size_t last_alignment; /* as the ops table saw it */
  cmr_stream last_stream;
  void *last_freed;
} test_foreign;

/* Ops without retain/release (non-owning), with them (counted in the
 * struct), and with the _sync pair. */
extern const cmr_resource_ops test_foreign_ops;
extern const cmr_resource_ops test_foreign_counted_ops;
extern const cmr_resource_ops test_foreign_sync_ops;

cmr_resource_ref test_foreign_ref(test_foreign *foreign, const cmr_resource_ops *ops);

#endif /* CMR_TEST_UTIL_H */
