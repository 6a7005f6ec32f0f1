/* SPDX-License-Identifier: Apache-2.0 */
/* The blocking hook (core.h): what cmr calls right before it may wait, the
 * mutex acquire that calls it only when the mutex is held by another
 * thread, and the checked making of cmr's mutexes. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "lock.h"

static _Atomic(cmr_blocking_hook) cmr_hook;

cmr_blocking_hook cmr_set_blocking_hook(cmr_blocking_hook hook) {
  return atomic_exchange_explicit(&cmr_hook, hook, memory_order_acq_rel);
}

void cmr_before_blocking(void) {
  cmr_blocking_hook hook = atomic_load_explicit(&cmr_hook, memory_order_acquire);
  if (hook != NULL) hook();
}

void cmr_mutex_lock_contended(pthread_mutex_t *mutex) {
  cmr_before_blocking();
  pthread_mutex_lock(mutex);
}

cmr_status cmr_mutex_init(pthread_mutex_t *mutex, const char *owner) {
  int error = pthread_mutex_init(mutex, NULL);
  if (error == 0) return CMR_SUCCESS;
  return cmr_error(error == ENOMEM || error == EAGAIN ? CMR_ERROR_OUT_OF_MEMORY : CMR_ERROR_INTERNAL,
                   "%s: its mutex cannot be made: %s", owner, strerror(error));
}
