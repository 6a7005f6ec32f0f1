/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_lock (runtime/src/lock.h): mutual exclusion under contention (more
 * threads than cores, so holders are descheduled and waiters sleep on the
 * futex), no lost wake-up (every thread finishes), and the uncontended
 * acquire/release. Run under TSan in CI, which checks the ordering. */
#include <pthread.h>

#include "lock.h"
#include "test_util.h"

enum { contenders = 8, rounds = 200000 };

static cmr_lock shared_lock = CMR_LOCK_INIT;
static unsigned long counter;     /* only touched under shared_lock */
static unsigned long inside;      /* threads inside the critical section: must stay 1 */
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
  pthread_t threads[contenders];
  for (int i = 0; i < contenders; ++i) ck_assert_int_eq(pthread_create(&threads[i], NULL, contend, NULL), 0);
  for (int i = 0; i < contenders; ++i) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
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

int main(void) {
  Suite *suite = suite_create("lock");
  TCase *tc = tcase_create("lock");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, uncontended_acquire_and_release);
  tcase_add_test(tc, contended_increments_are_never_lost);
  suite_add_tcase(suite, tc);
  return cmr_test_run(suite);
}
