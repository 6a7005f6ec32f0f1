/* SPDX-License-Identifier: Apache-2.0 */
/* The checked making of cmr's mutexes (lock.h): a failure is an error with
 * the owner's name. */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "lock.h"

cmr_status cmr_mutex_init(pthread_mutex_t *mutex, const char *owner) {
  int error = pthread_mutex_init(mutex, NULL);
  if (error == 0) return CMR_SUCCESS;
  return cmr_error(error == ENOMEM || error == EAGAIN ? CMR_ERROR_OUT_OF_MEMORY : CMR_ERROR_INTERNAL,
                   "%s: its mutex cannot be made: %s", owner, strerror(error));
}
