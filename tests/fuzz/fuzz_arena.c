/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness of arena: it takes arena_size from the upstream once at
 * creation and never again; with nothing live, a request of up to half the
 * arena must succeed (the defragmentation gathers every free superblock). */
#include "fuzz_model.h"

static cmr_arena_resource *arena;
static size_t arena_size;

static void cmr_fuzz_arena_create(cmr_fuzz_run *run, cmr_resource_ref upstream) {
  arena_size = cmr_fuzz_range(&run->in, 1, run->upstream.capacity >> 20) << 20;
  cmr_fuzz_ok(
      run,
      cmr_arena_resource_create(upstream, CMR_SIZE(arena_size), false, "/dev/null", CMR_ARENA_CAPTURE_SERVE, &arena),
      "arena_create");
  run->top = cmr_arena_resource_ref(arena);
}

static bool cmr_fuzz_arena_oom(cmr_fuzz_run *run, size_t bytes, size_t alignment, bool refused) {
  return refused || run->live > 0 || bytes + alignment > arena_size / 2;
}

static void cmr_fuzz_arena_check(cmr_fuzz_run *run) {
  size_t global_free = 0;
  cmr_fuzz_ok(run, cmr_arena_resource_global_free_bytes(arena, &global_free), "global_free_bytes");
  if (global_free > arena_size) cmr_fuzz_fail(run, "global_free_bytes %zu of an arena of %zu", global_free, arena_size);
  cmr_fuzz_expect(run, run->upstream.bytes_out, arena_size, "bytes out from the upstream");
}

static void cmr_fuzz_arena_destroy(cmr_fuzz_run *run) {
  cmr_fuzz_ok(run, cmr_arena_resource_destroy(arena), "arena_destroy");
}

CMR_FUZZ_HARNESS(arena, 2 << 20, SIZE_MAX, .check = cmr_fuzz_arena_check, .reclaims_on_destroy = true)
