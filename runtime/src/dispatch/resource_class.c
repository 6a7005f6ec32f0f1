/* SPDX-License-Identifier: Apache-2.0 */
/* The generated wrappers' shared part (see resource_class.h). */
#include <stdint.h>
#include <stdlib.h>

#include "resource_class.h"
#include "internal.h"

static const cmr_resource_class *cmr_class_of(const cmr_object *object) {
  return (const cmr_resource_class *)(const void *)object->type; /* type is the class's first member */
}

const cmr_resource_class *cmr_resource_class_of(const cmr_object *object) {
  return object != NULL && object->type->finalize == cmr_resource_finalize ? cmr_class_of(object) : NULL;
}

/* The retained resource parameter `i` of the class, in the struct's params. */
static cmr_resource_ref *cmr_held_ref_at(const cmr_resource_class *cls, const void *impl, size_t i) {
  return (cmr_resource_ref *)(void *)((char *)(uintptr_t)impl + cls->held_refs.refs[i].offset);
}

static void cmr_drop_held_refs(const cmr_resource_class *cls, void *impl, size_t count) {
  for (size_t i = 0; i < count; ++i) cmr_ref_drop(*cmr_held_ref_at(cls, impl, i));
}

/* A share of each of the class's other retained resources, or none. */
static cmr_status cmr_hold_held_refs(const cmr_resource_class *cls, void *impl) {
  for (size_t i = 0; i < cls->held_refs.count; ++i) {
    cmr_status status = cmr_ref_hold(*cmr_held_ref_at(cls, impl, i), cls->held_refs.refs[i].what);
    if (status != CMR_SUCCESS) {
      cmr_drop_held_refs(cls, impl, i);
      return status;
    }
  }
  return CMR_SUCCESS;
}

void cmr_resource_finalize(cmr_object *object) {
  cmr_resource_object *self = (cmr_resource_object *)object;
  const cmr_resource_class *cls = cmr_class_of(object);
  if (self->impl != NULL) {
    if (cls->fini != NULL) cls->fini(self->impl);
    cmr_drop_held_refs(cls, self->impl, cls->held_refs.count);
    cmr_impl_free(self->impl, cls->strings);
  }
  if (cls->retains_upstream && self->upstream.ops != NULL) cmr_ref_drop(self->upstream);
  cmr_log(CMR_LOG_DEBUG, "%s: resource %p destroyed (its last share released)", cls->type.name, (void *)object);
  free(self);
}

void cmr_resource_children(const cmr_object *object, cmr_child_visitor visit, void *arg) {
  const cmr_resource_object *self = (const cmr_resource_object *)object;
  const cmr_resource_class *cls = cmr_class_of(object);
  if (cls->upstream_what != NULL) visit(self->upstream, arg);
  if (cls->visit_children != NULL) cls->visit_children(self->impl, visit, arg);
  for (size_t i = 0; i < cls->held_refs.count; ++i) visit(*cmr_held_ref_at(cls, self->impl, i), arg);
}

/* The algorithm's struct of a new object, set up (CMR_SUCCESS when the class has none). */
static cmr_status cmr_resource_make_impl(const cmr_resource_class *cls, const void *params, size_t params_size,
                                         void **out) {
  if (cls->layout == NULL) return CMR_SUCCESS;
  void *impl = NULL;
  cmr_status made = cmr_impl_new(*cls->layout, params, params_size, cls->strings, cls->type.name, &impl);
  bool held = false;
  if (made == CMR_SUCCESS) {
    made = cmr_hold_held_refs(cls, impl);
    held = made == CMR_SUCCESS;
  }
  if (made == CMR_SUCCESS && cls->init != NULL) made = cls->init(impl);
  if (made != CMR_SUCCESS && impl != NULL) {
    if (held) cmr_drop_held_refs(cls, impl, cls->held_refs.count);
    cmr_impl_free(impl, cls->strings);
  }
  if (made == CMR_SUCCESS) *out = impl;
  return made;
}

cmr_status cmr_resource_create(const cmr_resource_class *cls, cmr_resource_ref upstream, const void *params,
                               size_t params_size, void **out) {
  cmr_resource_object *self = calloc(1, sizeof *self);
  if (self == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the resource", cls->create_name);
  self->object.type = &cls->type; /* finalize (below) reads its class */
  if (cls->upstream_what != NULL) {
    if (cls->retains_upstream) {
      cmr_status status = cmr_ref_hold(upstream, cls->upstream_what);
      if (status != CMR_SUCCESS) {
        free(self);
        return status;
      }
    }
    self->upstream = upstream;
  }
  cmr_status made = cmr_resource_make_impl(cls, params, params_size, &self->impl);
  if (made != CMR_SUCCESS) {
    cmr_resource_finalize(&self->object);
    return cmr_error_context(made, "%s", cls->create_name);
  }
  cmr_status opened = cmr_handle_open(&self->object, &cls->type, cls->create_name, out);
  if (opened == CMR_SUCCESS) {
    cmr_log(CMR_LOG_DEBUG, "%s: resource %p, handle %p", cls->create_name, (void *)self, *out);
  }
  return opened;
}

cmr_resource_ref cmr_resource_ref_of(const cmr_resource_class *cls, const void *handle) {
  cmr_resource_ref ref = {NULL, NULL};
  if (handle != NULL) {
    ref.self = cmr_handle_ref_self(handle, &cls->type);
    ref.ops = &cls->ops;
  }
  return ref;
}

cmr_status cmr_resource_from_ref(const cmr_resource_class *cls, cmr_resource_ref ref, void **out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", cls->from_ref_name);
  *out = NULL;
  cmr_status status = cmr_ref_check(ref, cls->from_ref_name);
  if (status != CMR_SUCCESS) return status;
  if (ref.ops != &cls->ops) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: the ref is a \"%s\" resource, not \"%s\"", cls->from_ref_name,
                     ref.ops->type_name != NULL ? ref.ops->type_name : "(unnamed)", cls->type.name);
  }
  return cmr_handle_share(ref.self, cls->from_ref_name, out);
}

bool cmr_resource_segments(cmr_object *object, struct cmr_segment_sink *sink) {
  if (object->type->finalize != cmr_resource_finalize) return false; /* not a resource's object */
  cmr_resource_object *self = (cmr_resource_object *)object;
  const cmr_resource_class *cls = cmr_class_of(object);
  if (cls->segments == NULL || self->impl == NULL) return false;
  cls->segments(self->impl, sink);
  return true;
}

struct cmr_ipc_records *cmr_resource_export_records(cmr_object *object) {
  if (object->type->finalize != cmr_resource_finalize) return NULL; /* not a resource's object */
  cmr_resource_object *self = (cmr_resource_object *)object;
  const cmr_resource_class *cls = cmr_class_of(object);
  return cls->export_records != NULL && self->impl != NULL ? cls->export_records(self->impl) : NULL;
}
