/* SPDX-License-Identifier: Apache-2.0 */
/* A lock for the few that every allocation and free takes (a stream list's,
 * a block-map shard's): an uncontended acquire and release are one atomic
 * each, inline, where glibc's pthread_mutex_lock and unlock cost about 55
 * instructions a pair (callgrind, the pool's allocate+free: a fifth of it).
 * A contended acquire spins briefly, then sleeps on a futex (Linux), so
 * waiting threads do not burn a core. Not recursive; no error checking.
 * The acquire has acquire order and the release release order, which is
 * what ThreadSanitizer sees. A wait (past the spins) calls the blocking
 * hook first, as cmr_mutex_lock does for the mutexes. */
#ifndef CMR_LOCK_H
#define CMR_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <cmr/core.h>

typedef struct cmr_lock {
  /* 0: free; 1: held; 2: held, and a thread may be asleep on it */
  _Atomic int state;
} cmr_lock;

#define CMR_LOCK_INIT \
  { 0 }

void cmr_lock_acquire_contended(cmr_lock *lock);
void cmr_lock_wake_one(cmr_lock *lock);

static inline void cmr_lock_init(cmr_lock *lock) { atomic_init(&lock->state, 0); }

static inline void cmr_lock_acquire(cmr_lock *lock) {
  int free_state = 0;
  if (!atomic_compare_exchange_strong_explicit(&lock->state, &free_state, 1, memory_order_acquire,
                                               memory_order_relaxed)) {
    cmr_lock_acquire_contended(lock);
  }
}

/* Takes the lock if it is free, without waiting: false when it is held. */
static inline bool cmr_lock_try(cmr_lock *lock) {
  int free_state = 0;
  return atomic_compare_exchange_strong_explicit(&lock->state, &free_state, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}

static inline void cmr_lock_release(cmr_lock *lock) {
  if (atomic_exchange_explicit(&lock->state, 0, memory_order_release) == 2) cmr_lock_wake_one(lock);
}

/* Calls the blocking hook (cmr_set_blocking_hook), if one is set: right
 * before this thread may wait (a contended lock, a backend call that can
 * block). */
void cmr_before_blocking(void);

void cmr_mutex_lock_contended(pthread_mutex_t *mutex);

/* pthread_mutex_init for cmr's mutexes (default attributes), checked: a
 * failure is CMR_ERROR_OUT_OF_MEMORY (no memory or other resource for one)
 * or CMR_ERROR_INTERNAL, its message naming `owner`, and the mutex is not
 * made (nothing to destroy). */
cmr_status cmr_mutex_init(pthread_mutex_t *mutex, const char *owner);

/* pthread_mutex_lock for cmr's mutexes: a wait for another thread's hold
 * first calls the blocking hook (a binding lets go of its own lock, such as
 * Python's GIL, which that holder may need). */
static inline void cmr_mutex_lock(pthread_mutex_t *mutex) {
  if (pthread_mutex_trylock(mutex) != 0) cmr_mutex_lock_contended(mutex);
}

/* Releases what cmr_mutex_lock took. */
static inline void cmr_mutex_unlock(pthread_mutex_t *mutex) { pthread_mutex_unlock(mutex); }

#endif /* CMR_LOCK_H */
