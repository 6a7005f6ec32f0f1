/* The conformance battery every resource passes, in the spirit of RMM's
 * mr_ref tests. generated/tests/conformance_<name>.c describes one resource
 * (from its spec) and hands it to cmr_battery_main. */
#ifndef CMR_BATTERY_H
#define CMR_BATTERY_H

#include <cmr/cmr.h>

typedef enum cmr_battery_properties_rule {
  CMR_BATTERY_PROPERTIES_FIXED,    /* exactly `properties` */
  CMR_BATTERY_PROPERTIES_UPSTREAM, /* those of the upstream */
  CMR_BATTERY_PROPERTIES_DYNAMIC   /* decided by the resource: a valid, non-empty mask */
} cmr_battery_properties_rule;

typedef struct cmr_battery_subject {
  const char *name;
  cmr_battery_properties_rule properties_rule;
  unsigned properties;
  size_t max_alignment; /* 0: any power of two */
  bool max_alignment_from_upstream; /* the upstream's, whatever max_alignment says */
  bool thread_safe;
  bool equal_by_identity;    /* equal only to itself, not to a twin made alike */
  bool needs_gpu;            /* the resource itself exists only with a GPU */
  const char *gpu_upstreams; /* space-separated upstreams that need a GPU */
  const char *const *skipped; /* NULL-terminated case names the spec leaves out */
  /* Makes the named upstream and says the largest alignment it honours (0:
   * any), or NULL for a resource tested without one. */
  cmr_status (*make_upstream)(const char *name, cmr_resource_ref *out, size_t *max_alignment);
  /* Makes the resource over `upstream` (a zeroed ref when there is none). The
   * ref carries the creator's share: the battery releases it. */
  cmr_status (*make)(cmr_resource_ref upstream, cmr_resource_ref *out);
} cmr_battery_subject;

/* argv[1] names the upstream when the resource has one. Exit status: 0 when
 * every case passed, 77 when the resource needs a GPU and none is there. */
int cmr_battery_main(const cmr_battery_subject *subject, int argc, char **argv);

/* For the specs' conformance.args: values made from the battery's upstream. */
cmr_resource_ref *cmr_battery_upstream_slot(void);
unsigned cmr_battery_upstream_properties(cmr_resource_ref upstream);
void *cmr_battery_upstream_pool_handle(void);
void *cmr_battery_forward_allocate(size_t bytes, cmr_stream stream, void *arg);
void cmr_battery_forward_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg);
/* A failure callback that never asks for a retry. */
bool cmr_battery_never_retry(size_t bytes, void *arg);

#endif /* CMR_BATTERY_H */
