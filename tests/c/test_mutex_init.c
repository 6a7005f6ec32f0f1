/* SPDX-License-Identifier: Apache-2.0 */
/* A mutex that cannot be made: every resource that keeps one, alone and
 * stacked, with the Nth pthread_mutex_init of its creation failing, for
 * every N until a creation where the Nth never comes. Each failure is
 * reported (CMR_ERROR_OUT_OF_MEMORY, naming the mutex's owner and the
 * reason), leaves nothing made (the sanitizer builds see a leak), and a
 * failure is never swallowed: a creation that succeeds made every mutex it
 * asked for. The suite links the static library with pthread_mutex_init
 * wrapped (see __wrap_pthread_mutex_init). */
#include <errno.h>
#include <pthread.h>

#include "test_util.h"

int __real_pthread_mutex_init(pthread_mutex_t *mutex, const pthread_mutexattr_t *attributes);
int __wrap_pthread_mutex_init(pthread_mutex_t *mutex, const pthread_mutexattr_t *attributes);

static int failing_call; /* 0: none fails */
static int calls;

/* The failing call returns EAGAIN, as glibc documents for a system short
 * of the resources for another mutex, and makes nothing. */
int __wrap_pthread_mutex_init(pthread_mutex_t *mutex, const pthread_mutexattr_t *attributes) {
  if (failing_call != 0 && ++calls == failing_call) return EAGAIN;
  return __real_pthread_mutex_init(mutex, attributes);
}

static const char *const expressions[] = {
    "pool(system, initial_pool_size=64KiB)",
    "fixed_size(system, block_size=4KiB, blocks_to_preallocate=4)",
    "arena(system, arena_size=4MiB)",
    "binning(system, min_size_exponent=10, max_size_exponent=12)",
    "statistics(system)",
    "thread_safe(system)",
    "tracking(system)",
    "simulated",
    "logging(system, filename=\"/dev/null\")",
    "statistics(thread_safe(pool(tracking(simulated), initial_pool_size=0)))",
};

START_TEST(a_mutex_that_cannot_be_made_fails_the_creation) {
  const char *expression = expressions[_i];
  for (int n = 1;; ++n) {
    ck_assert_int_lt(n, 256);
    failing_call = n;
    calls = 0;
    cmr_stack *stack = NULL;
    cmr_clear_last_error();
    cmr_status status = cmr_stack_parse(expression, &stack);
    failing_call = 0;
    if (status == CMR_SUCCESS) {
      ck_assert_msg(calls < n, "\"%s\": mutex %d of %d could not be made, yet the stack built", expression, n, calls);
      ck_assert_msg(n > 1, "\"%s\" makes no mutex", expression);
      ck_assert_ok(cmr_stack_destroy(stack));
      return;
    }
    ck_assert_msg(status == CMR_ERROR_OUT_OF_MEMORY, "\"%s\", mutex %d: %s: %s", expression, n,
                  cmr_status_string(status), cmr_last_error_message());
    ck_assert_ptr_null(stack);
    ck_assert_message_has("its mutex cannot be made: Resource temporarily unavailable");
  }
}
END_TEST

static void mutex_init_cases(Suite *suite) {
  cmr_test_loop_case(suite, "mutex_init", NULL, NULL, (int)(sizeof expressions / sizeof expressions[0]),
                     a_mutex_that_cannot_be_made_fails_the_creation);
}

int main(void) { return cmr_test_main_suite("mutex_init", CMR_TEST_ANY_MACHINE, mutex_init_cases); }
