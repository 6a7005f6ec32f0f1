/* SPDX-License-Identifier: Apache-2.0 */
/* What the generated wrapper of every resource shares (generated/src/resources/<name>.c):
 * the object a handle names, and its making, finalizing, refs and
 * from_ref, driven by a constant class the wrapper defines per resource.
 * The wrapper keeps what differs: the argument checks of create, the ops
 * functions (which call the algorithm), the methods. */
#ifndef CMR_RESOURCE_CLASS_H
#define CMR_RESOURCE_CLASS_H

#include <stdbool.h>

#include "impl_state.h"
#include "object.h"
#include "usage.h"

struct cmr_segment_sink; /* segments.h */
struct cmr_ipc_records;  /* ipc_records.h */

/* What a resource's handle names: the object behind its refs' self. */
typedef struct cmr_resource_object {
  cmr_object object;         /* first: the counted-object header */
  void *impl;                /* the algorithm's struct (impl_state.h), NULL for a resource without one */
  cmr_resource_ref upstream; /* the upstream it was created over, or a zeroed ref */
  cmr_usage usage;           /* counted by dispatch (usage.h) */
} cmr_resource_object;

/* The usage counts of `self`, a ref's target (cmr_ref_self) through
 * `ops`: one of cmr's own resources' (CMR_OPS_FLAG_COUNTED), else NULL (a
 * foreign resource, which dispatch does not count). */
static inline cmr_usage *cmr_usage_of(const cmr_resource_ops *ops, void *self) {
  return (ops->flags & CMR_OPS_FLAG_COUNTED) ? &((cmr_resource_object *)self)->usage : NULL;
}

/* Where the memory fields of a resource's statistics come from. */
typedef enum cmr_memory_source {
  /* A leaf: it holds what it handed out (bytes held = bytes in use), unless its hook says more. */
  CMR_MEMORY_HANDED_OUT,
  /* An adaptor: held, free, segments, lists, pool counters and retries are its upstream's. */
  CMR_MEMORY_OF_UPSTREAM,
  /* A suballocator: its hook fills them. */
  CMR_MEMORY_OWN
} cmr_memory_source;
/* A retained resource parameter besides the upstream: where it is in the
 * params (offsetof a cmr_resource_ref) and how messages name it. */
typedef struct cmr_held_ref {
  size_t offset;
  const char *what; /* "cmr_<name>_resource_create: <param>" */
} cmr_held_ref;
typedef struct cmr_held_refs {
  const cmr_held_ref *refs;
  size_t count;
} cmr_held_refs;

/* One resource's constants. `type` and `ops` are what the runtime and
 * dispatch see: type.finalize is cmr_resource_finalize and type.children
 * cmr_resource_children (NULL when it holds no resource); ops.flags is
 * CMR_OPS_FLAG_COUNTED and its retain/release are NULL, as for all of cmr's
 * own resources (dispatch takes their shares through the object table). */
typedef struct cmr_resource_class {
  cmr_object_type type; /* first: type.name is the resource's name */
  cmr_resource_ops ops;
  const char *create_name;        /* "cmr_<name>_resource_create", in messages */
  const char *from_ref_name;      /* "cmr_<name>_resource_from_ref" */
  const char *upstream_what;      /* "cmr_<name>_resource_create: upstream", or NULL: no upstream stored */
  bool retains_upstream;          /* the stored upstream is held (a share taken at create, dropped at finalize) */
  const cmr_impl_layout *layout;  /* the algorithm's struct, or NULL: none */
  cmr_impl_strings strings;       /* the params' strings the struct keeps a copy of */
  cmr_status (*init)(void *impl); /* the algorithm's hooks, or NULL */
  void (*fini)(void *impl);
  void (*visit_children)(const void *impl, cmr_child_visitor visit, void *arg); /* what it adopted, or NULL */
  /* Statistics (stats.c): where its memory fields come from; `stats`, or
   * NULL: what the algorithm knows, set into *out over what is already
   * there (and, when `spread` is not NULL, how its free memory lies over
   * streams); `reset_peak_stats`, or NULL: its own peaks set to their
   * current values. */
  cmr_memory_source memory;
  cmr_status (*stats)(void *impl, cmr_stats *out, cmr_free_by_stream *spread);
  cmr_status (*reset_peak_stats)(void *impl);
  void (*segments)(void *impl, struct cmr_segment_sink *sink); /* its walk for snapshots (segments.h), or NULL */
  /* The export records of a resource whose buffers are shared with other
   * processes (ipc_records.h), or NULL: it has none (now or ever). */
  struct cmr_ipc_records *(*export_records)(void *impl);
  /* Held from before the init hook until after the fini hook (a share of
   * each), and children of the resource. */
  cmr_held_refs held_refs;
} cmr_resource_class;

/* The tail of every `_create` once its arguments are checked: a new object
 * holding `upstream` (when the class stores one: a share of it taken when
 * retained) and the algorithm's struct made from the `params_size` bytes at
 * `params` and set up by its init hook, then its handle in *out. Every
 * failure leaves nothing behind, with the class's create name in the message. */
cmr_status cmr_resource_create(const cmr_resource_class *cls, cmr_resource_ref upstream, const void *params,
                               size_t params_size, void **out);
/* type.finalize of every class: the fini hook, the struct, the upstream's share, the object. */
void cmr_resource_finalize(cmr_object *object);
/* type.children of a class that stores an upstream or adopts resources. */
void cmr_resource_children(const cmr_object *object, cmr_child_visitor visit, void *arg);
/* When `object` is a resource whose class walks its segments: that walk
 * into `sink`, and true; else false. */
bool cmr_resource_segments(cmr_object *object, struct cmr_segment_sink *sink);
/* The export records of `object` (its class's export_records hook), or
 * NULL: not a resource's object, or one without export records. */
struct cmr_ipc_records *cmr_resource_export_records(cmr_object *object);
/* `_ref`: the ref of a handle of the class (a zeroed ref for NULL). */
cmr_resource_ref cmr_resource_ref_of(const cmr_resource_class *cls, const void *handle);
/* `_from_ref`: a new handle owning a share of the resource `ref` names,
 * which must be of the class. */
cmr_status cmr_resource_from_ref(const cmr_resource_class *cls, cmr_resource_ref ref, void **out);
/* The class of `object` when it is one of cmr's resources, else NULL. */
const cmr_resource_class *cmr_resource_class_of(const cmr_object *object);

#endif /* CMR_RESOURCE_CLASS_H */
