/* SPDX-License-Identifier: Apache-2.0 */
/* What the libFuzzer harnesses share: a reader of the input bytes, a
 * recording upstream (a callback resource over system or simulated that keeps
 * every range it hands out), a model of the live blocks, and the loop that
 * turns the input into allocate / free / stream operations and checks the
 * model after every step. Each harness supplies a cmr_fuzz_target: how to
 * build its resource over the upstream, when out of memory is plausible, and
 * the counters it checks. Any broken check prints a line and aborts, which
 * libFuzzer reports as a crash with the input that caused it. */
#ifndef CMR_FUZZ_MODEL_H
#define CMR_FUZZ_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmr/cmr.h>

#define CMR_FUZZ_MAX_BLOCKS 128
#define CMR_FUZZ_MAX_RANGES 1024
#define CMR_FUZZ_STREAMS 4

typedef struct cmr_fuzz_input {
  const uint8_t *data;
  size_t size;
  size_t pos;
} cmr_fuzz_input;

/* The next byte, 0 once the input is used up. */
uint8_t cmr_fuzz_byte(cmr_fuzz_input *in);
/* A value in [lo, hi] from the next two bytes. */
size_t cmr_fuzz_range(cmr_fuzz_input *in, size_t lo, size_t hi);

typedef struct cmr_fuzz_block {
  uint8_t *ptr;
  size_t bytes;
  size_t alignment;
  int stream; /* index into the run's streams */
  uint8_t pattern;
} cmr_fuzz_block;

typedef struct cmr_fuzz_span {
  uintptr_t begin;
  size_t bytes;
} cmr_fuzz_span;

/* The recording upstream: what it handed out and not yet got back. */
typedef struct cmr_fuzz_upstream {
  cmr_resource_ref inner;
  cmr_system_resource *system;
  cmr_simulated_resource *simulated;
  cmr_callback_resource *callback;
  bool host;       /* system: blocks may be written */
  size_t capacity; /* most bytes out at once; more is refused (NULL) */
  size_t bytes_out;
  size_t refusals; /* requests refused so far */
  cmr_fuzz_span spans[CMR_FUZZ_MAX_RANGES];
  size_t count;
} cmr_fuzz_upstream;

struct cmr_fuzz_run;

typedef struct cmr_fuzz_target {
  const char *name;
  size_t max_bytes;     /* largest request the loop makes */
  size_t max_alignment; /* largest alignment the stack honours (larger: UNSUPPORTED_ALIGNMENT) */
  /* Builds the stack over `upstream` (reading parameters from the input) and sets run->top. */
  void (*create)(struct cmr_fuzz_run *run, cmr_resource_ref upstream);
  /* Whether CMR_ERROR_OUT_OF_MEMORY is an allowed answer; `refused` says the
   * upstream refused a request during the call. */
  bool (*oom_plausible)(struct cmr_fuzz_run *run, size_t bytes, size_t alignment, bool refused);
  /* Model updates on a successful allocation / free (may be NULL). */
  void (*allocated)(struct cmr_fuzz_run *run, const cmr_fuzz_block *block);
  void (*freed)(struct cmr_fuzz_run *run, const cmr_fuzz_block *block);
  void (*check)(struct cmr_fuzz_run *run);               /* counters against the model (may be NULL) */
  void (*extra)(struct cmr_fuzz_run *run, uint8_t byte); /* a target-specific operation (may be NULL) */
  /* Whether live blocks may be left for destroy to reclaim. */
  bool reclaims_on_destroy;
  void (*destroy)(struct cmr_fuzz_run *run);
} cmr_fuzz_target;

typedef struct cmr_fuzz_run {
  const cmr_fuzz_target *target;
  cmr_fuzz_input in;
  cmr_fuzz_upstream upstream;
  cmr_resource_ref top;
  void *state; /* the target's */
  cmr_stream streams[CMR_FUZZ_STREAMS];
  bool stream_live[CMR_FUZZ_STREAMS];
  cmr_fuzz_block blocks[CMR_FUZZ_MAX_BLOCKS];
  size_t live;
  bool leave_live; /* teardown leaves live blocks to the destroy (reclaiming targets only) */
} cmr_fuzz_run;

/* Prints "<target>: <message>" and aborts. */
_Noreturn void cmr_fuzz_fail(const cmr_fuzz_run *run, const char *format, ...);
/* Fails unless `status` is CMR_SUCCESS. */
void cmr_fuzz_ok(const cmr_fuzz_run *run, cmr_status status, const char *what);
/* Fails unless `got` equals `want`. */
void cmr_fuzz_expect(const cmr_fuzz_run *run, size_t got, size_t want, const char *what);

/* The whole run over one input: the libFuzzer entry point of every harness. */
int cmr_fuzz_execute(const cmr_fuzz_target *target, const uint8_t *data, size_t size);

/* Defines libFuzzer's entry point, running `target` over each input. */
#define CMR_FUZZ_ENTRY(target)                                  \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return cmr_fuzz_execute(&(target), data, size); }

/* Defines the target of harness `resource` and the entry point that runs it.
 * The harness's functions are named after it: cmr_fuzz_<resource>_create,
 * _oom (oom_plausible) and _destroy; the optional members follow as
 * designated initializers (.check = ..., .reclaims_on_destroy = true). */
#define CMR_FUZZ_HARNESS(resource, largest_request, largest_alignment, ...)                       \
  static const cmr_fuzz_target cmr_fuzz_##resource = {.name = #resource,                          \
                                                      .max_bytes = (largest_request),             \
                                                      .max_alignment = (largest_alignment),       \
                                                      .create = cmr_fuzz_##resource##_create,     \
                                                      .oom_plausible = cmr_fuzz_##resource##_oom, \
                                                      .destroy = cmr_fuzz_##resource##_destroy,   \
                                                      __VA_ARGS__};                               \
  CMR_FUZZ_ENTRY(cmr_fuzz_##resource)

#endif /* CMR_FUZZ_MODEL_H */
