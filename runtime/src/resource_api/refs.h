/* SPDX-License-Identifier: Apache-2.0 */
/* Refs (dispatch.c): checking them, reaching the object behind one, holding
 * and dropping shares. */
#ifndef CMR_REFS_H
#define CMR_REFS_H

#include <stdbool.h>

#include <cmr/cmr.h>

#include "object.h"

/* Liveness and shape of a ref, with "<what>: ..." in the message. */
cmr_status cmr_ref_check(cmr_resource_ref ref, const char *what);
/* The `self` the ops functions of `ref` take: for cmr's own (counted)
 * resources the object its token names, else ref.self as it is. False when
 * cmr_ref_check would refuse the ref (it then gives the message). Inline:
 * every call through a ref asks. */
static inline bool cmr_ref_target(cmr_resource_ref ref, void **self) {
  if (ref.ops == NULL || ref.ops->allocate == NULL || ref.ops->deallocate == NULL) return false;
  if (!(ref.ops->flags & CMR_OPS_FLAG_COUNTED)) {
    *self = ref.self;
    return true;
  }
  return cmr_object_live(ref.self, (cmr_object **)self);
}
/* The same for a ref already checked (NULL only if it died since). */
static inline void *cmr_ref_self(cmr_resource_ref ref) {
  return (ref.ops->flags & CMR_OPS_FLAG_COUNTED) ? (void *)cmr_object_peek(ref.self) : ref.self;
}
/* Gives `ptr` (`bytes` at `alignment` from `ref`, on `stream`) back on a
 * failure path: returns `status` with this thread's message as it was
 * before, or, should giving back fail too, that message followed by why. */
cmr_status cmr_give_back(cmr_status status, cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment,
                         cmr_stream stream);
/* The same through a ref whose target `self` the caller holds alive (no
 * look-up: the ref may already say its resource is gone), with arguments
 * already checked, as cmr_held_deallocate (held_calls.h). */
cmr_status cmr_held_give_back(cmr_status status, cmr_resource_ref ref, void *self, void *ptr, size_t bytes,
                              size_t alignment, cmr_stream stream);
/* Properties of a ref already checked. */
unsigned cmr_ref_properties_of(cmr_resource_ref ref);
/* The resource's type name, "(unnamed)" for a table without one (ops set). */
const char *cmr_ref_type_name_of(cmr_resource_ref ref);
/* Retain / release a ref already checked (no-ops for foreign resources
 * without retain / release). Retaining fails (CMR_ERROR_DESTROYED_HANDLE)
 * when the resource's last share is being released meanwhile. */
cmr_status cmr_ref_hold(cmr_resource_ref ref, const char *what);
void cmr_ref_drop(cmr_resource_ref ref);
/* cmr_ref_drop of a share the caller took and still holds, without the
 * token's checks (cmr_object_release_taken). */
void cmr_ref_drop_taken(cmr_resource_ref ref);
/* Whether two checked refs are interchangeable (cmr_ref_equal without checks). */
bool cmr_ref_same(cmr_resource_ref a, cmr_resource_ref b);

#endif /* CMR_REFS_H */
