/* SPDX-License-Identifier: Apache-2.0 */
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

/* One case of the bad-input matrix over the resource's typed functions,
 * generated from its spec (generator/templates/bad_inputs.c.j2): a call the
 * wrapper must refuse, then the check that nothing changed. */
typedef struct cmr_battery_bad_input {
  const char *name;
  void (*run)(cmr_resource_ref upstream, cmr_resource_ref subject);
} cmr_battery_bad_input;

/* One of the spec's expectations ([[expect]]), generated from it
 * (generator/templates/expectations.c.j2): `run` makes the resource over
 * `upstream` (a statistics adaptor over system, `counted`, when the resource
 * has an upstream; else a zeroed ref and NULL), takes its steps, checks what
 * the spec says, and frees everything it made. */
typedef struct cmr_battery_expectation {
  const char *name;
  void (*run)(cmr_resource_ref upstream, cmr_statistics_resource *counted);
} cmr_battery_expectation;

typedef struct cmr_battery_subject {
  const char *name;
  cmr_battery_properties_rule properties_rule;
  unsigned properties;
  size_t max_alignment;             /* 0: any power of two */
  bool max_alignment_from_upstream; /* the upstream's, whatever max_alignment says */
  bool thread_safe;
  bool equal_by_identity;     /* equal only to itself, not to a twin made alike */
  bool needs_gpu;             /* the resource itself exists only with a GPU */
  const char *gpu_upstreams;  /* space-separated upstreams that need a GPU */
  const char *const *skipped; /* NULL-terminated case names the spec leaves out */
  /* Makes the named upstream and says the largest alignment it honours (0:
   * any), or NULL for a resource tested without one. */
  cmr_status (*make_upstream)(const char *name, cmr_resource_ref *out, size_t *max_alignment);
  /* Makes the resource over `upstream` (a zeroed ref when there is none). The
   * ref carries the creator's share: the battery releases it. */
  cmr_status (*make)(cmr_resource_ref upstream, cmr_resource_ref *out);
  const cmr_battery_bad_input *bad_inputs;     /* ends with a NULL name */
  bool rejects_unknown_pointer;                /* frees of a pointer it never handed out fail */
  bool rejects_wrong_size;                     /* frees with another size fail and keep the block */
  const cmr_battery_expectation *expectations; /* ends with a NULL name */
  bool expect_upstream;                        /* the expectations run over statistics(system) */
} cmr_battery_subject;

/* argv[1] names the upstream when the resource has one; a first argument
 * --bad-inputs runs the bad-input matrix instead of the battery, and
 * --expect (alone) the spec's expectations. Exit status: 0 when every case
 * passed, 77 when the resource needs a GPU and none is there. */
int cmr_battery_main(const cmr_battery_subject *subject, int argc, char **argv);

/* For the specs' conformance.args: values made from the battery's upstream. */
cmr_resource_ref *cmr_battery_upstream_slot(void);
unsigned cmr_battery_upstream_properties(cmr_resource_ref upstream);
void *cmr_battery_upstream_pool_handle(void);
void *cmr_battery_forward_allocate(size_t bytes, cmr_stream stream, void *arg);
void cmr_battery_forward_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg);
/* A failure callback that never asks for a retry. */
bool cmr_battery_never_retry(size_t bytes, void *arg);

/* ---- for the generated bad-input cases --------------------------------------- */

/* A non-NULL address out-parameters are preset to, so that a refused call
 * that leaves them alone is caught. */
extern char cmr_battery_marker[];

/* `call` fails with `expected` and a message that names `named` (the
 * function, and the parameter where there is one). The message is cleared
 * first, so an old one cannot pass for it. */
#define CMR_BATTERY_EXPECT(call, expected, named) \
  (cmr_clear_last_error(), cmr_battery_expect((call), (expected), (named), #call))
void cmr_battery_expect(cmr_status got, cmr_status expected, const char *named, const char *call);
void cmr_battery_expect_ok(cmr_status got, const char *call);
/* A refused call left its out-parameter NULL. */
void cmr_battery_expect_null(const void *out, const char *function);
/* After a refused call: the observed values are as before, and the subject
 * and its upstream (where there is one) still allocate and free. */
void cmr_battery_expect_unchanged(cmr_resource_ref upstream, cmr_resource_ref subject, const double *before,
                                  const double *after, size_t count);
/* ---- for the generated expectations ------------------------------------------ */

/* `bytes` from `subject` on the default stream: the call succeeds and the
 * address is a multiple of `aligned_to` (0: not checked). `where` names the
 * step in failure messages. */
void *cmr_battery_expect_block(cmr_resource_ref subject, size_t bytes, size_t aligned_to, const char *where);
/* Asking `subject` for `bytes` fails with `expected` and a message. */
void cmr_battery_expect_refused(cmr_resource_ref subject, size_t bytes, cmr_status expected, const char *where);
/* Freeing `ptr` (of `bytes`) succeeds. */
void cmr_battery_expect_freed(cmr_resource_ref subject, void *ptr, size_t bytes, const char *where);

/* Refs to resources made and destroyed: a system resource, and one more
 * subject over `upstream`. */
cmr_resource_ref cmr_battery_destroyed_ref(void);
cmr_resource_ref cmr_battery_destroyed_subject(cmr_resource_ref upstream);
/* A live ref of a type no spec describes. */
cmr_resource_ref cmr_battery_foreign_ref(void);

#endif /* CMR_BATTERY_H */
