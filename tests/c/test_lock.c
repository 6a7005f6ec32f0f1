/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_lock (runtime/src/resource_api/lock.h): mutual exclusion under contention (more
 * threads than cores, so holders are descheduled and waiters sleep on the
 * futex), no lost wake-up (every thread finishes), and the uncontended
 * acquire/release; the blocking hook (cmr_set_blocking_hook), called by a
 * thread that is about to wait for a cmr_lock or a mutex another holds, and
 * never for one it takes at once. Run under TSan in CI, which checks the
 * ordering. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "lock.h"
#include "test_util.h"

enum { contenders = 8, rounds = 200000 };

static cmr_lock shared_lock = CMR_LOCK_INIT;
static unsigned long counter; /* only touched under shared_lock */
static unsigned long inside;  /* threads inside the critical section: must stay 1 */
static unsigned long overlaps;

static void *contend(void *arg) {
  (void)arg;
  for (int i = 0; i < rounds; ++i) {
    cmr_lock_acquire(&shared_lock);
    if (++inside != 1) ++overlaps;
    ++counter;
    --inside;
    cmr_lock_release(&shared_lock);
  }
  return NULL;
}

START_TEST(contended_increments_are_never_lost) {
  ck_assert_ptr_null(cmr_test_threads(contenders, contend, NULL, 0).returned);
  ck_assert_uint_eq(overlaps, 0);
  ck_assert_uint_eq(counter, (unsigned long)contenders * rounds);
  ck_assert_int_eq(atomic_load(&shared_lock.state), 0); /* free, with no sleeper marked */
}
END_TEST

START_TEST(uncontended_acquire_and_release) {
  cmr_lock lock;
  cmr_lock_init(&lock);
  cmr_lock_acquire(&lock);
  ck_assert_int_eq(atomic_load(&lock.state), 1);
  cmr_lock_release(&lock);
  ck_assert_int_eq(atomic_load(&lock.state), 0);
}
END_TEST

/* ---- the blocking hook ---- */

static _Atomic int hook_calls;            /* by any thread */
static _Thread_local int hook_calls_here; /* by this thread */

static void count_hook(void) {
  ++hook_calls_here;
  atomic_fetch_add(&hook_calls, 1);
}

static pthread_mutex_t held_mutex = PTHREAD_MUTEX_INITIALIZER;
static cmr_lock held_lock = CMR_LOCK_INIT;

/* Takes the mutex (or lock) the main thread holds; returns how often this
 * thread called the hook. */
static void *wait_for_mutex(void *arg) {
  (void)arg;
  cmr_mutex_lock(&held_mutex);
  pthread_mutex_unlock(&held_mutex);
  return (void *)(intptr_t)hook_calls_here;
}

static void *wait_for_lock(void *arg) {
  (void)arg;
  cmr_lock_acquire(&held_lock);
  cmr_lock_release(&held_lock);
  return (void *)(intptr_t)hook_calls_here;
}

/* Holds what `take` waits for until the waiter has called the hook (it must,
 * or this never ends: ctest's timeout fails it), then lets it go. */
static intptr_t hook_calls_of_a_waiter(void *(*take)(void *), void (*hold)(void), void (*let_go)(void)) {
  atomic_store(&hook_calls, 0);
  hold();
  pthread_t waiter;
  ck_assert_int_eq(pthread_create(&waiter, NULL, take, NULL), 0);
  while (atomic_load(&hook_calls) == 0) sched_yield();
  let_go();
  void *calls;
  ck_assert_int_eq(pthread_join(waiter, &calls), 0);
  return (intptr_t)calls;
}

static void hold_mutex(void) { pthread_mutex_lock(&held_mutex); }
static void let_go_mutex(void) { pthread_mutex_unlock(&held_mutex); }
static void hold_lock(void) { cmr_lock_acquire(&held_lock); }
static void let_go_lock(void) { cmr_lock_release(&held_lock); }

START_TEST(a_wait_calls_the_blocking_hook_once_and_a_free_lock_never) {
  ck_assert(cmr_set_blocking_hook(count_hook) == NULL);
  ck_assert_int_eq(hook_calls_of_a_waiter(wait_for_mutex, hold_mutex, let_go_mutex), 1);
  ck_assert_int_eq(hook_calls_of_a_waiter(wait_for_lock, hold_lock, let_go_lock), 1);
  /* Taken at once: no call. */
  hook_calls_here = 0;
  cmr_mutex_lock(&held_mutex);
  pthread_mutex_unlock(&held_mutex);
  cmr_lock_acquire(&held_lock);
  cmr_lock_release(&held_lock);
  ck_assert_int_eq(hook_calls_here, 0);
  ck_assert(cmr_set_blocking_hook(NULL) == count_hook);
  /* No hook: a wait still ends. */
  pthread_mutex_lock(&held_mutex);
  pthread_t waiter;
  ck_assert_int_eq(pthread_create(&waiter, NULL, wait_for_mutex, NULL), 0);
  pthread_mutex_unlock(&held_mutex);
  ck_assert_int_eq(pthread_join(waiter, NULL), 0);
}
END_TEST

static void lock_cases(Suite *suite) {
  tcase_set_timeout(
      cmr_test_case(suite, "lock", NULL, NULL, uncontended_acquire_and_release, contended_increments_are_never_lost,
                    a_wait_calls_the_blocking_hook_once_and_a_free_lock_never),
      120);
}

int main(void) { return cmr_test_main_suite("lock", CMR_TEST_ANY_MACHINE, lock_cases); }
