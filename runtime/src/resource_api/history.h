/* SPDX-License-Identifier: Apache-2.0 */
/* The recording side of the history (cmr/history.h): one relaxed load and
 * a branch predicted not taken while recording is off, which is what the
 * dispatch layer, the chunks and failure_callback pay on every call. */
#ifndef CMR_HISTORY_INTERNAL_H
#define CMR_HISTORY_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include <cmr/history.h>

#include "refs.h"

/* True while cmr_history_start's recording is on (hidden, like every runtime symbol). */
extern _Atomic bool cmr_history_on;

/* Appends one event about the resource `ref` names (out of line: only
 * while recording). Never fails: an event that cannot be kept is counted
 * as dropped. */
void cmr_history_append(cmr_history_action action, cmr_resource_ref ref, cmr_stream stream, const void *address,
                        size_t bytes);

/* Whether recording is on: one relaxed load, its branch predicted not taken. */
static inline __attribute__((always_inline)) bool cmr_history_is_on(void) {
  return __builtin_expect(atomic_load_explicit(&cmr_history_on, memory_order_relaxed), 0);
}

/* Records the event when recording is on. */
static inline __attribute__((always_inline)) void cmr_history_note(cmr_history_action action, cmr_resource_ref ref,
                                                                   cmr_stream stream, const void *address,
                                                                   size_t bytes) {
  if (cmr_history_is_on()) {
    cmr_history_append(action, ref, stream, address, bytes);
  }
}

/* A copy of the events kept, oldest first, in *out (free() it; NULL when
 * there are none) and their count; how many were lost in *dropped. C
 * frames stay addresses (symbolised by the snapshot writer). */
cmr_status cmr_history_copy(cmr_history_event **out, size_t *count, uint64_t *dropped);

#endif /* CMR_HISTORY_INTERNAL_H */
