/* SPDX-License-Identifier: Apache-2.0 */
/* The slow paths of cmr_lock (lock.h): the classic three-state futex lock.
 * A thread that finds the lock held spins a little (the holders keep it for
 * a few hundred instructions), then marks it 2 (a sleeper may be waiting)
 * and sleeps until the state changes; a release that saw 2 wakes one. A
 * woken thread marks it 2 again when it takes it, since others may still
 * sleep: at worst one wake too many, never a lost one. */
#define _GNU_SOURCE /* syscall */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lock.h"

enum { cmr_lock_spins = 100 };

/* Tells the core this is a spin-wait loop (x86's pause); elsewhere nothing. */
static void cmr_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void cmr_futex_wait(cmr_lock *lock, int expected) {
  syscall(SYS_futex, &lock->state, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void cmr_lock_acquire_contended(cmr_lock *lock) {
  for (int spin = 0; spin < cmr_lock_spins; ++spin) {
    int free_state = 0;
    if (atomic_load_explicit(&lock->state, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_weak_explicit(&lock->state, &free_state, 1, memory_order_acquire,
                                              memory_order_relaxed)) {
      return;
    }
    cmr_cpu_relax();
  }
  if (atomic_exchange_explicit(&lock->state, 2, memory_order_acquire) == 0) return;
  cmr_before_blocking();
  do {
    cmr_futex_wait(lock, 2);
  } while (atomic_exchange_explicit(&lock->state, 2, memory_order_acquire) != 0);
}

void cmr_lock_wake_one(cmr_lock *lock) { syscall(SYS_futex, &lock->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }
