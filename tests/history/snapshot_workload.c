/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-snapshot-workload DIR: records a workload over pool, arena,
 * fixed_size and binning (over a pool), each over system memory, with the
 * history on (C stacks), and writes each one's snapshot into DIR as
 * NAME.pickle (protocol 4), NAME.p2.pickle (protocol 2), NAME.json and
 * NAME.html. Each stack keeps some blocks out at the end (so its segments
 * hold both states); the pool's also has an out-of-memory failure (its
 * maximum is 8 MiB). Prints "NAME live N" for each, the blocks left out.
 * Exit status 0, or 1 with the failing call's message; 77 in a CUDA build
 * on a machine without a device (system memory synchronizes streams). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmr/cmr.h>
#include <cmr/stack.h>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cmr_status status_ = (call);                                                           \
    if (status_ != CMR_SUCCESS) {                                                          \
      fprintf(stderr, "cmr-snapshot-workload: %s: %s\n", #call, cmr_last_error_message()); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

enum { rounds = 64 };

static const struct {
  const char *name;
  const char *expression;
} stacks[] = {
    {"pool", "pool(system, initial_pool_size=1MiB, maximum_pool_size=8MiB, maximum_growth=1MiB)"},
    {"arena", "arena(system, arena_size=8MiB)"},
    {"fixed_size", "fixed_size(system, block_size=4KiB, blocks_to_preallocate=64)"},
    {"binning", "binning(pool(system, initial_pool_size=2MiB), min_size_exponent=10, max_size_exponent=14)"},
};

/* A request's size: 256 B .. 4 KiB, varied (fixed_size's block is 4 KiB). */
static size_t size_of(int i) { return 256 + (size_t)((i * 977) % 3841); }

/* Allocates `rounds` blocks, frees every third, and leaves the rest out
 * until after the snapshot; returns how many are left. */
static int workload(cmr_resource_ref ref, void **blocks) {
  for (int i = 0; i < rounds; ++i) CHECK(cmr_allocate(ref, size_of(i), CMR_DEFAULT_STREAM, &blocks[i]));
  int live = rounds;
  for (int i = 0; i < rounds; i += 3) {
    CHECK(cmr_deallocate(ref, blocks[i], size_of(i), CMR_DEFAULT_STREAM));
    blocks[i] = NULL;
    --live;
  }
  return live;
}

static void write_all(cmr_resource_ref ref, const char *dir, const char *name) {
  static const struct {
    cmr_snapshot_format format;
    const char *suffix;
  } forms[] = {{CMR_SNAPSHOT_PICKLE, ".pickle"},
               {CMR_SNAPSHOT_PICKLE_2, ".p2.pickle"},
               {CMR_SNAPSHOT_JSON, ".json"},
               {CMR_SNAPSHOT_HTML, ".html"}};
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; ++f) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, forms[f].suffix);
    CHECK(cmr_snapshot_write(ref, forms[f].format, path));
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: cmr-snapshot-workload DIR\n");
    return 2;
  }
  int devices = 0;
  if (cmr_built_with_cuda() && (cmr_device_count(&devices) != CMR_SUCCESS || devices == 0)) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  for (size_t s = 0; s < sizeof stacks / sizeof stacks[0]; ++s) {
    cmr_history_options options = {.size = sizeof options, .flags = CMR_HISTORY_C_STACKS, .stack_depth = 8};
    CHECK(cmr_history_start(&options));
    cmr_stack *stack = NULL;
    cmr_resource_ref ref;
    CHECK(cmr_stack_parse(stacks[s].expression, &stack));
    CHECK(cmr_stack_ref(stack, &ref));
    void *blocks[rounds];
    int live = workload(ref, blocks);
    if (strcmp(stacks[s].name, "pool") == 0) {
      void *too_much = NULL;
      if (cmr_allocate(ref, (size_t)16 << 20, CMR_DEFAULT_STREAM, &too_much) != CMR_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, "cmr-snapshot-workload: 16 MiB from an 8 MiB pool did not fail\n");
        return 1;
      }
    }
    write_all(ref, argv[1], stacks[s].name);
    printf("%s live %d\n", stacks[s].name, live);
    for (int i = 0; i < rounds; ++i) {
      if (blocks[i] != NULL) CHECK(cmr_deallocate(ref, blocks[i], size_of(i), CMR_DEFAULT_STREAM));
    }
    CHECK(cmr_stack_destroy(stack));
    CHECK(cmr_history_stop());
  }
  return 0;
}
