/* SPDX-License-Identifier: Apache-2.0 */
/* The cycle check of resources that hold resources (topology.h). */
#include <pthread.h>

#include "internal.h"
#include "lock.h"
#include "topology.h"

static pthread_mutex_t cmr_topology_mutex = PTHREAD_MUTEX_INITIALIZER;

void cmr_topology_lock(void) { cmr_mutex_lock(&cmr_topology_mutex); }
void cmr_topology_unlock(void) { cmr_mutex_unlock(&cmr_topology_mutex); }

/* A walk from one resource down everything it holds. The graph has no
 * cycle (every change that could make one is checked), so the walk ends;
 * the budget only bounds the work of a graph that shares many nodes. */
typedef struct cmr_walk {
  const cmr_object *sought;
  unsigned long budget;
  bool found;
} cmr_walk;

enum { CMR_WALK_BUDGET = 1u << 20 };

static void cmr_walk_visit(cmr_resource_ref ref, void *arg) {
  cmr_walk *walk = arg;
  if (walk->found || walk->budget == 0 || ref.ops == NULL || !(ref.ops->flags & CMR_OPS_FLAG_COUNTED)) return;
  walk->budget--;
  const cmr_object *object = cmr_object_peek(ref.self);
  if (object == NULL) return;
  if (object == walk->sought) {
    walk->found = true;
  } else if (object->type->children != NULL) {
    object->type->children(object, cmr_walk_visit, walk);
  }
}

cmr_status cmr_topology_check_adopt(const cmr_object *holder, cmr_resource_ref child, const char *what) {
  cmr_walk walk = {holder, CMR_WALK_BUDGET, false};
  cmr_walk_visit(child, &walk);
  if (walk.found) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "%s: the %s resource would then allocate from itself (the resource given is it, or "
                     "holds it through its upstreams or bins)",
                     what, holder->type->name);
  }
  if (walk.budget == 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "%s: the resource given holds more than %u resources below it, too many to check "
                     "for a cycle",
                     what, (unsigned)CMR_WALK_BUDGET);
  }
  return CMR_SUCCESS;
}
