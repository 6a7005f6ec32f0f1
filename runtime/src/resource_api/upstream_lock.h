/* SPDX-License-Identifier: Apache-2.0 */
/* The lock a resource holds across a call to its upstream (a pool's growth,
 * the logging adaptor's free, thread_safe's every call). That upstream may
 * be anything, a user's callback among them, and may call the resource
 * again on the same thread: a plain mutex would then wait for itself
 * forever. This one records the thread that holds it, so that such a
 * re-entry is refused at once with CMR_ERROR_REENTRANT_CALL and a message.
 * Calls from other threads wait as on any mutex (the blocking hook first,
 * as cmr_mutex_lock). Not for locks held only around a resource's own
 * bookkeeping: those never wait on an upstream. */
#ifndef CMR_UPSTREAM_LOCK_H
#define CMR_UPSTREAM_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cmr/core.h>

typedef struct cmr_upstream_lock {
  pthread_mutex_t mutex;
  const char *owner;        /* names the resource and the call in messages */
  _Atomic uintptr_t holder; /* the holding thread (pthread_self), 0 when free */
} cmr_upstream_lock;

/* Makes the lock, free; `owner` (a string that outlives the lock) names what
 * holds it, e.g. "pool: growing". A failure is cmr_mutex_init's. */
cmr_status cmr_upstream_lock_init(cmr_upstream_lock *lock, const char *owner);
void cmr_upstream_lock_destroy(cmr_upstream_lock *lock);

/* CMR_ERROR_REENTRANT_CALL, with a message naming the owner, when this
 * thread holds `lock`, else CMR_SUCCESS: for an entry point that must refuse
 * a re-entry before it does anything (one that takes the lock only later). */
cmr_status cmr_upstream_lock_check(cmr_upstream_lock *lock);
/* Takes the lock, waiting for another thread's hold; refused as
 * cmr_upstream_lock_check when this thread holds it already. */
cmr_status cmr_upstream_lock_acquire(cmr_upstream_lock *lock);
void cmr_upstream_lock_release(cmr_upstream_lock *lock);

#endif /* CMR_UPSTREAM_LOCK_H */
