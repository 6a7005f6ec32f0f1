/* SPDX-License-Identifier: Apache-2.0 */
/* The blocking hook (core.h): what cmr calls right before it may wait, and
 * the mutex acquire that calls it only when the mutex is held by another
 * thread. It records no error: the logging under cmr_error takes these
 * mutexes. */
#include <stdatomic.h>

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
