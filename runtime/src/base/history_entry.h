/* SPDX-License-Identifier: Apache-2.0 */
/* The history at the entry points that foreign code calls from outside
 * cmr (cmr/pluggable.h's): the options' entry_context runs there, before
 * the call enters cmr, and its token stays pending on the thread until
 * the call leaves, so that every event the call records carries it in
 * place of the context function's. Only there may a binding wait for its
 * interpreter (Python's GIL): inside cmr, a thread may hold a lock (a
 * thread_safe adaptor's, a pool's) that the thread holding the GIL waits
 * for. While recording is off, each entry and leave costs one branch. */
#ifndef CMR_HISTORY_ENTRY_H
#define CMR_HISTORY_ENTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "history.h"

/* The token pending on a thread: `set` inside an entry point's call made
 * while a history with an entry context was recording. */
typedef struct cmr_history_pending {
  bool set;
  uint64_t token;
} cmr_history_pending;

/* What cmr_history_leave puts back: an entry point may be called again
 * from inside another's call (a resource's callback that calls PyTorch). */
typedef struct cmr_history_entry {
  bool entered;
  cmr_history_pending outer;
} cmr_history_entry;

/* Runs the recording history's entry context, if it has one, and makes
 * its token pending; returns what was pending before. */
cmr_history_pending cmr_history_enter_recording(void);
/* Makes `outer` pending again. */
void cmr_history_leave_recording(cmr_history_pending outer);

/* Called by an entry point before it enters cmr, holding none of cmr's locks. */
static inline cmr_history_entry cmr_history_enter(void) {
  if (!cmr_history_is_on()) return (cmr_history_entry){.entered = false};
  return (cmr_history_entry){.entered = true, .outer = cmr_history_enter_recording()};
}

/* Called by the entry point once its call into cmr has returned. */
static inline void cmr_history_leave(cmr_history_entry entry) {
  if (entry.entered) cmr_history_leave_recording(entry.outer);
}

#endif /* CMR_HISTORY_ENTRY_H */
