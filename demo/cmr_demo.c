/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-demo: builds a small resource stack, runs an allocation workload
 * through it and prints what happened.
 *
 *   counting callback resource  (stands in for the adaptors until they land)
 *     -> a stack expression:    by default pool(LEAF, initial_pool_size=64MiB), where
 *        LEAF is cuda            (cudaMalloc) when a GPU is usable (CUDA build)
 *                system          otherwise (host memory)
 *
 * Usage: cmr-demo [--iterations N] [STACK EXPRESSION]
 * Exits non-zero on any unexpected status. Uses only the public API. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <cmr/cmr.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define LIVE_SLOTS 64             /* allocations kept alive at once by the workload */
#define MAX_ALLOCATION (1u << 20) /* 1 MiB */
#define BUFFER_BYTES 4096

/* Where the memory comes from; NO_GPU is a CUDA build on a machine without a
 * usable GPU, where device-side steps (streams, copies, the per-device table)
 * report CMR_ERROR_NO_DEVICE and are skipped. */
typedef enum { ON_GPU, HOST_BUILD, NO_GPU } placement;
static placement where = HOST_BUILD;

/* The "adaptor" layer: forwards to `upstream`, counting as it goes. */
typedef struct {
  cmr_resource_ref upstream;
  size_t allocations, deallocations, failures;
  size_t in_use, peak;
} counting;

_Noreturn static void fail(cmr_status status, const char *what) {
  fprintf(stderr, "cmr-demo: %s failed: %s: %s\n", what, cmr_status_string(status), cmr_last_error_message());
  exit(EXIT_FAILURE);
}

static void check(cmr_status status, const char *what) {
  if (status != CMR_SUCCESS) {
    fail(status, what);
  }
}

/* For a device-side step: true when it succeeded, false when it was skipped
 * because the CUDA build has no usable GPU here; exits on anything else. */
static bool device_step(cmr_status status, const char *what) {
  if (status == CMR_ERROR_NO_DEVICE && where == NO_GPU) {
    printf("  (skipped: %s)\n", cmr_last_error_message());
    return false;
  }
  check(status, what);
  return true;
}

static void *counting_allocate(size_t bytes, cmr_stream stream, void *arg) {
  counting *c = arg;
  void *ptr = NULL;
  cmr_status status = cmr_allocate(c->upstream, bytes, stream, &ptr);
  if (status != CMR_SUCCESS) {
    c->failures++;
    fprintf(stderr, "cmr-demo: upstream allocate of %zu bytes: %s: %s\n", bytes, cmr_status_string(status),
            cmr_last_error_message());
    return NULL;
  }
  c->allocations++;
  c->in_use += bytes;
  if (c->in_use > c->peak) {
    c->peak = c->in_use;
  }
  return ptr;
}

static void counting_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  counting *c = arg;
  cmr_status status = cmr_deallocate(c->upstream, ptr, bytes, stream);
  if (status != CMR_SUCCESS) {
    c->failures++;
    fprintf(stderr, "cmr-demo: upstream deallocate of %zu bytes: %s: %s\n", bytes, cmr_status_string(status),
            cmr_last_error_message());
    return;
  }
  c->deallocations++;
  c->in_use -= bytes;
}

static double seconds_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Mixed sizes from 1 byte to 1 MiB, mostly small (a fixed pseudo-random sequence). */
static size_t next_size(unsigned *state) {
  *state = *state * 1103515245u + 12345u;
  unsigned bits = (*state >> 16) % 21; /* 2^0 .. 2^20 */
  return ((size_t)1 << bits) + (*state >> 8) % ((size_t)1 << bits);
}

/* `iterations` allocate+free pairs with up to LIVE_SLOTS allocations alive at
 * once; returns the nanoseconds per pair. */
static double run_workload(cmr_resource_ref mr, cmr_stream stream, unsigned long iterations) {
  void *ptrs[LIVE_SLOTS] = {0};
  size_t sizes[LIVE_SLOTS] = {0};
  unsigned state = 2024;
  double start = seconds_now();
  for (unsigned long i = 0; i < iterations; i++) {
    size_t slot = i % LIVE_SLOTS;
    check(cmr_deallocate(mr, ptrs[slot], sizes[slot], stream), "cmr_deallocate");
    size_t bytes = next_size(&state);
    sizes[slot] = bytes > MAX_ALLOCATION ? MAX_ALLOCATION : bytes;
    check(cmr_allocate(mr, sizes[slot], stream, &ptrs[slot]), "cmr_allocate");
  }
  for (size_t slot = 0; slot < LIVE_SLOTS; slot++) {
    check(cmr_deallocate(mr, ptrs[slot], sizes[slot], stream), "cmr_deallocate");
  }
  check(cmr_stream_synchronize(stream), "cmr_stream_synchronize");
  return iterations == 0 ? 0.0 : (seconds_now() - start) * 1e9 / (double)iterations;
}

/* Whether the first `bytes` of the buffer read back as `expected`. */
static bool buffer_holds(const cmr_device_buffer *buffer, const unsigned char *expected, size_t bytes) {
  unsigned char back[BUFFER_BYTES];
  if (!device_step(cmr_device_buffer_copy_to_host(buffer, back, bytes), "cmr_device_buffer_copy_to_host")) {
    return false;
  }
  return memcmp(back, expected, bytes) == 0;
}

/* create, copy in, grow (keeping the contents), copy in, copy out, shrink. */
static const char *buffer_round_trip(cmr_resource_ref mr, cmr_stream stream) {
  unsigned char pattern[BUFFER_BYTES];
  for (size_t i = 0; i < sizeof pattern; i++) {
    pattern[i] = (unsigned char)(i * 7 + 3);
  }
  cmr_device_buffer *buffer = NULL;
  check(cmr_device_buffer_create(1024, stream, mr, &buffer), "cmr_device_buffer_create");
  const char *result = "passed (1 KiB copied in, grown to 4 KiB, refilled, read back, shrunk to 512 B)";
  size_t capacity = 0;
  if (!device_step(cmr_device_buffer_copy_from(buffer, pattern, 1024), "cmr_device_buffer_copy_from") ||
      !device_step(cmr_device_buffer_resize(buffer, BUFFER_BYTES, stream), "cmr_device_buffer_resize")) {
    result = "skipped (no usable GPU)";
  } else if (!buffer_holds(buffer, pattern, 1024)) {
    result = "FAILED: contents lost when grown";
  } else if (!device_step(cmr_device_buffer_copy_from(buffer, pattern, BUFFER_BYTES), "cmr_device_buffer_copy_from") ||
             !buffer_holds(buffer, pattern, BUFFER_BYTES)) {
    result = "FAILED: 4 KiB did not read back";
  } else {
    check(cmr_device_buffer_resize(buffer, 512, stream), "cmr_device_buffer_resize");
    check(cmr_device_buffer_shrink_to_fit(buffer, stream), "cmr_device_buffer_shrink_to_fit");
    check(cmr_device_buffer_capacity(buffer, &capacity), "cmr_device_buffer_capacity");
    if (capacity != 512 || !buffer_holds(buffer, pattern, 512)) {
      result = "FAILED: wrong capacity or contents after shrink_to_fit";
    }
  }
  check(cmr_device_buffer_destroy(buffer), "cmr_device_buffer_destroy");
  return result;
}

typedef struct options {
  unsigned long iterations;
  const char *expression; /* NULL: the demo's own stack */
} options;

static const cmr_cli cli = {
    "cmr-demo", "[--iterations N] [STACK EXPRESSION, e.g. \"pool(cuda, initial_pool_size=1GiB)\"]",
    "Builds a resource stack (the expression, or the demo's own), allocates through it and prints what it did.\n"
    "  --iterations N  allocations per phase (default 5000)\n"};

static options parse_options(int argc, char **argv) {
  static const struct option long_options[] = {
      {"iterations", required_argument, NULL, 'i'}, CMR_CLI_STANDARD_OPTIONS, {0}};
  options parsed = {5000, NULL};
  while (cmr_cli_next(&cli, argc, argv, "", long_options) != -1) {
    char *end = NULL;
    errno = 0;
    parsed.iterations = strtoul(optarg, &end, 10);
    if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno != 0) {
      exit(cmr_cli_usage_error(&cli, "--iterations needs a whole number"));
    }
  }
  if (argc - optind > 1) exit(cmr_cli_usage_error(&cli, "one stack expression at most"));
  if (optind < argc) parsed.expression = argv[optind];
  return parsed;
}

int main(int argc, char **argv) {
  options given = parse_options(argc, argv);
  printf("cmr %s demo\n", cmr_version());

  /* Where the memory comes from: a GPU when there is one, host memory otherwise. */
  char memory[512];
  int device_count = 0;
  cmr_status status = cmr_device_count(&device_count);
  const char *leaf = "system";
  if (cmr_built_with_cuda() && status == CMR_SUCCESS && device_count >= 1) {
    int device = 0;
    where = ON_GPU;
    check(cmr_current_device(&device), "cmr_current_device");
    snprintf(memory, sizeof memory, "GPU device %d (CUDA build)", device);
    leaf = "cuda";
  } else if (!cmr_built_with_cuda()) {
    check(status, "cmr_device_count");
    snprintf(memory, sizeof memory, "host memory (host build)");
  } else if (status == CMR_ERROR_NO_DEVICE) {
    where = NO_GPU;
    snprintf(memory, sizeof memory, "host memory: CUDA build but no usable GPU: %s", cmr_last_error_message());
  } else {
    fail(status, "cmr_device_count");
  }
  printf("memory:         %s\n", memory);

  size_t free_bytes = 0, total_bytes = 0;
  if (device_step(cmr_device_memory_info(&free_bytes, &total_bytes), "cmr_device_memory_info")) {
    printf("memory info:    %.1f MiB free of %.1f MiB\n", (double)free_bytes / (1 << 20),
           (double)total_bytes / (1 << 20));
  }

  /* The stack (by default a pool over the leaf), written as an expression,
   * and the counting layer on top of it, made the current device's resource. */
  char expression[256];
  snprintf(expression, sizeof expression, "pool(%s, initial_pool_size=64MiB)", leaf);
  cmr_stack *stack = NULL;
  check(cmr_stack_parse(given.expression != NULL ? given.expression : expression, &stack), "cmr_stack_parse");
  cmr_resource_ref stacked;
  check(cmr_stack_ref(stack, &stacked), "cmr_stack_ref");
  counting counts = {.upstream = stacked};
  unsigned properties = 0;
  check(cmr_ref_properties(stacked, &properties), "cmr_ref_properties");
  cmr_callback_resource *counter = NULL;
  check(cmr_callback_resource_create(counting_allocate, counting_deallocate, &counts, &counts, properties, &counter),
        "cmr_callback_resource_create");
  cmr_resource_ref mr = cmr_callback_resource_ref(counter);
  const char *written_out = NULL;
  check(cmr_stack_expression(stack, &written_out), "cmr_stack_expression");
  printf("stack:          callback (counting) -> %s\n", written_out);
  bool in_table = device_step(cmr_set_current_device_resource_ref(mr), "cmr_set_current_device_resource_ref");
  if (in_table) {
    check(cmr_get_current_device_resource_ref(&mr), "cmr_get_current_device_resource_ref");
  }

  cmr_stream stream = CMR_DEFAULT_STREAM;
  if (!device_step(cmr_stream_create(&stream), "cmr_stream_create")) {
    stream = CMR_DEFAULT_STREAM;
  }
  printf("workload:       %lu allocate+free pairs, 1 B to 1 MiB, up to %d alive, on %s\n", given.iterations, LIVE_SLOTS,
         stream == CMR_DEFAULT_STREAM ? "the default stream" : "a stream of its own");
  double ns_per_pair = run_workload(mr, stream, given.iterations);
  const char *buffer_result = buffer_round_trip(mr, stream);

  printf("allocations:    %zu (%zu freed, %zu failed)\n", counts.allocations, counts.deallocations, counts.failures);
  printf("peak bytes:     %zu (%.1f MiB); in use at the end: %zu\n", counts.peak, (double)counts.peak / (1 << 20),
         counts.in_use);
  printf("time:           %.0f ns per allocate+free pair\n", ns_per_pair);
  printf("buffer check:   %s\n", buffer_result);
  /* A pool at the top says what it holds; all of it is free again. */
  cmr_pool_resource *pool = NULL;
  size_t pool_size = 0, pool_free = 0;
  if (cmr_pool_resource_from_ref(stacked, &pool) == CMR_SUCCESS) {
    check(cmr_pool_resource_pool_size(pool, &pool_size), "cmr_pool_resource_pool_size");
    check(cmr_pool_resource_free_size(pool, &pool_free), "cmr_pool_resource_free_size");
    printf("pool:           %.1f MiB taken from its upstream, %.1f MiB of it free\n", (double)pool_size / (1 << 20),
           (double)pool_free / (1 << 20));
    check(cmr_pool_resource_destroy(pool), "cmr_pool_resource_destroy");
  }

  if (stream != CMR_DEFAULT_STREAM) {
    check(cmr_stream_destroy(stream), "cmr_stream_destroy");
  }
  if (in_table) { /* the table's share goes before the upstream does */
    check(cmr_reset_current_device_resource_ref(), "cmr_reset_current_device_resource_ref");
  }
  check(cmr_callback_resource_destroy(counter), "cmr_callback_resource_destroy");
  check(cmr_stack_destroy(stack), "cmr_stack_destroy");
  bool ok =
      counts.failures == 0 && counts.in_use == 0 && pool_free == pool_size && strncmp(buffer_result, "FAILED", 6) != 0;
  printf("result:         %s\n", ok ? "ok" : "FAILED");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
