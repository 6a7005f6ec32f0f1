/* SPDX-License-Identifier: Apache-2.0 */
/* Resources that hold resources: the check that no resource comes to reach
 * itself (a bin that allocates from its own binning resource, directly or
 * through adaptors), which would recurse without end on the next
 * allocation. Creation cannot close a cycle (nothing holds a new resource
 * yet); only a method that gives an existing resource another one to hold
 * can, and it runs its check and its change under cmr_topology_lock, so two
 * such changes cannot close a cycle between them. */
#ifndef CMR_TOPOLOGY_H
#define CMR_TOPOLOGY_H

#include "object.h"

void cmr_topology_lock(void);
void cmr_topology_unlock(void);

/* CMR_ERROR_INVALID_ARGUMENT when `holder` would reach itself once it holds
 * `child` (child is holder, or holds it through any chain of cmr resources),
 * else CMR_SUCCESS. A foreign resource is opaque: what it allocates from is
 * not seen. Call under cmr_topology_lock. */
cmr_status cmr_topology_check_adopt(const cmr_object *holder, cmr_resource_ref child, const char *what);

#endif /* CMR_TOPOLOGY_H */
