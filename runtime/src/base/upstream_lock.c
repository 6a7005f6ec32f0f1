/* SPDX-License-Identifier: Apache-2.0 */
/* Locks held across upstream calls (upstream_lock.h). The holder is written
 * by the holding thread alone, after it takes the mutex and before it lets
 * go: a thread reading its own identity there holds the lock, whatever
 * the order of other threads' writes it sees. */
#include "internal.h"
#include "lock.h"
#include "upstream_lock.h"

static uintptr_t cmr_this_thread(void) { return (uintptr_t)pthread_self(); }

cmr_status cmr_upstream_lock_init(cmr_upstream_lock *lock, const char *owner) {
  lock->owner = owner;
  atomic_init(&lock->holder, 0);
  return cmr_mutex_init(&lock->mutex, owner);
}

void cmr_upstream_lock_destroy(cmr_upstream_lock *lock) { pthread_mutex_destroy(&lock->mutex); }

cmr_status cmr_upstream_lock_check(cmr_upstream_lock *lock) {
  if (atomic_load_explicit(&lock->holder, memory_order_relaxed) != cmr_this_thread()) return CMR_SUCCESS;
  return cmr_error(CMR_ERROR_REENTRANT_CALL,
                   "%s: the resource was called again from inside its own call to its upstream, on the same thread "
                   "(the upstream, or a callback it runs, called back into it): refused, as waiting for its own "
                   "lock would never end",
                   lock->owner);
}

cmr_status cmr_upstream_lock_acquire(cmr_upstream_lock *lock) {
  cmr_status status = cmr_upstream_lock_check(lock);
  if (status != CMR_SUCCESS) return status;
  cmr_mutex_lock(&lock->mutex);
  atomic_store_explicit(&lock->holder, cmr_this_thread(), memory_order_relaxed);
  return CMR_SUCCESS;
}

void cmr_upstream_lock_release(cmr_upstream_lock *lock) {
  atomic_store_explicit(&lock->holder, 0, memory_order_relaxed);
  pthread_mutex_unlock(&lock->mutex);
}
