/* SPDX-License-Identifier: Apache-2.0 */
/* Calls from inside a resource's own call into a resource it holds (a
 * binning resource's bins), inline in the caller.
 *
 * Preconditions: the caller holds a share of the resource (so its target
 * cannot die) and keeps it in a cmr_held set by cmr_held_set, unchanged
 * while a call through it is in progress, and the arguments are ones dispatch has already checked for the
 * caller's own call (bytes > 0 that do not overflow at `alignment`, a power
 * of two of at least CMR_DEFAULT_ALIGNMENT; a non-NULL `ptr`). The caller
 * runs inside dispatch's bracket of its own call (cmr_call_begin), which
 * covers this one.
 *
 * What dispatch does for a call through a ref is done here too: the
 * resource's usage counts move, the history records the call while it is
 * on, and a failure without a message gets one. One check is left to the
 * caller's dispatch: cmr_held_allocate's pointer, non-NULL, is passed on
 * as it came, and the caller must hand it back unchanged as its own answer
 * to a call of the same alignment, so that dispatch's check of that answer
 * is the check of this one (a misaligned pointer is given back through
 * the caller, which routes it back here). */
#ifndef CMR_HELD_CALLS_H
#define CMR_HELD_CALLS_H

#include "errors.h"
#include "history.h"
#include "refs.h"
#include "resource_class.h"
#include "usage.h"

/* The answers that are not a plain success while the history is off
 * (out of line): a failure said (with a message when the resource left
 * none since `serial`; out of memory counted and reported as dispatch
 * does), a NULL pointer refused, or a success recorded in the history. */
cmr_status cmr_held_allocate_answered(const cmr_resource_ref *ref, cmr_status status, unsigned long serial,
                                      size_t bytes, size_t alignment, cmr_stream stream, void **out);
cmr_status cmr_held_deallocate_answered(const cmr_resource_ref *ref, cmr_status status, unsigned long serial, void *ptr,
                                        size_t bytes, cmr_stream stream);

/* A held resource, as the caller keeps it while it holds the share: what
 * a call through it reads (after the call, rather than kept aside across
 * it). */
typedef struct cmr_held {
  cmr_resource_ref ref;
  void *self;       /* cmr_ref_self(ref) */
  cmr_usage *usage; /* the usage counts of one of cmr's resources, else NULL */
} cmr_held;

/* Fills `held` for `ref` (checked, a share of it held). */
static inline void cmr_held_set(cmr_held *held, cmr_resource_ref ref) {
  held->ref = ref;
  held->self = cmr_ref_self(ref);
  held->usage = cmr_usage_of(ref.ops, held->self);
}

static inline __attribute__((always_inline)) cmr_status cmr_held_allocate(const cmr_held *held, size_t bytes,
                                                                          size_t alignment, cmr_stream stream,
                                                                          void **out) {
  unsigned long serial = cmr_error_serial();
  cmr_status status = held->ref.ops->allocate(held->self, bytes, alignment, stream, out);
  if (held->usage != NULL) cmr_usage_allocated(held->usage, status, bytes);
  if (__builtin_expect(status == CMR_SUCCESS && *out != NULL && !cmr_history_is_on(), 1)) return CMR_SUCCESS;
  return cmr_held_allocate_answered(&held->ref, status, serial, bytes, alignment, stream, out);
}

static inline __attribute__((always_inline)) cmr_status cmr_held_deallocate(const cmr_held *held, void *ptr,
                                                                            size_t bytes, size_t alignment,
                                                                            cmr_stream stream) {
  unsigned long serial = cmr_error_serial();
  cmr_status status = held->ref.ops->deallocate(held->self, ptr, bytes, alignment, stream);
  if (held->usage != NULL) cmr_usage_deallocated(held->usage, status, bytes);
  if (__builtin_expect(status == CMR_SUCCESS && !cmr_history_is_on(), 1)) return CMR_SUCCESS;
  return cmr_held_deallocate_answered(&held->ref, status, serial, ptr, bytes, stream);
}

#endif /* CMR_HELD_CALLS_H */
