/* SPDX-License-Identifier: Apache-2.0 */
/* A ref's checks and holds (internal.h): the bottom of the dispatch layer,
 * which the calls (dispatch.c), the generated wrappers' shared code
 * (resource_class.c) and the statistics (stats.c) all use. */
#include "internal.h"
#include "refs.h"

const char *cmr_ref_type_name_of(cmr_resource_ref ref) {
  return ref.ops->type_name != NULL ? ref.ops->type_name : "(unnamed)";
}

cmr_status cmr_ref_check(cmr_resource_ref ref, const char *what) {
  if (ref.ops == NULL) {
    return cmr_error(CMR_ERROR_INVALID_REF, "%s: the ref has no ops table (zeroed or never made)", what);
  }
  if (ref.ops->flags & CMR_OPS_FLAG_COUNTED) {
    if (ref.self == NULL) {
      return cmr_error(CMR_ERROR_INVALID_REF, "%s: the ref to resource %s has a NULL handle", what,
                       cmr_ref_type_name_of(ref));
    }
    if ((uint64_t)(uintptr_t)ref.self & CMR_TOKEN_HANDLE_BIT) {
      /* What a ref constructor gives for a handle that is not a live one of
       * its resource: the handle itself. */
      void *token;
      cmr_status status = cmr_handle_target(ref.self, what, &token);
      if (status == CMR_SUCCESS) {
        return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                         "%s: the ref to resource %s was made from handle %p, a handle of another resource", what,
                         cmr_ref_type_name_of(ref), ref.self);
      }
      if (status == CMR_ERROR_FORKED) return status;
      return cmr_error(CMR_ERROR_DESTROYED_HANDLE,
                       "%s: the ref to resource %s was made from handle %p, already destroyed", what,
                       cmr_ref_type_name_of(ref), ref.self);
    }
    cmr_object *object;
    cmr_status status = cmr_object_resolve(ref.self, NULL, what, &object);
    if (status != CMR_SUCCESS) {
      return status;
    }
  }
  if (ref.ops->allocate == NULL || ref.ops->deallocate == NULL) {
    return cmr_error(CMR_ERROR_INVALID_REF, "%s: resource %s has no %s function", what, cmr_ref_type_name_of(ref),
                     ref.ops->allocate == NULL ? "allocate" : "deallocate");
  }
  return CMR_SUCCESS;
}

unsigned cmr_ref_properties_of(cmr_resource_ref ref) {
  void *self = cmr_ref_self(ref);
  return ref.ops->properties != NULL && self != NULL ? ref.ops->properties(self) : 0u;
}

cmr_status cmr_ref_hold(cmr_resource_ref ref, const char *what) {
  if (ref.ops->flags & CMR_OPS_FLAG_COUNTED) {
    return cmr_object_retain(ref.self, what);
  }
  if (ref.ops->retain != NULL) {
    ref.ops->retain(ref.self);
  }
  return CMR_SUCCESS;
}

void cmr_ref_drop_taken(cmr_resource_ref ref) {
  if (ref.ops->flags & CMR_OPS_FLAG_COUNTED) {
    cmr_object_release_taken(ref.self);
  } else {
    cmr_ref_drop(ref);
  }
}

void cmr_ref_drop(cmr_resource_ref ref) {
  if (ref.ops->flags & CMR_OPS_FLAG_COUNTED) {
    (void)cmr_object_release(ref.self, "cmr_ref_drop");
  } else if (ref.ops->release != NULL) {
    ref.ops->release(ref.self);
  }
}

bool cmr_ref_same(cmr_resource_ref a, cmr_resource_ref b) {
  if (a.self == b.self && a.ops == b.ops) {
    return true;
  }
  void *self = cmr_ref_self(a);
  return a.ops->is_equal != NULL && self != NULL && a.ops->is_equal(self, b);
}
