/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness of fixed_size: the model's checks plus upstream_bytes
 * equal to what the upstream has out; requests larger than the block size
 * must be out of memory. */
#include "fuzz_model.h"

static cmr_fixed_size_resource *fixed;

static void cmr_fuzz_fixed_size_create(cmr_fuzz_run *run, cmr_resource_ref upstream) {
  size_t block_size = cmr_fuzz_range(&run->in, 1, 1 << 16);
  size_t blocks = cmr_fuzz_range(&run->in, 1, 64);
  cmr_fuzz_ok(run,
              cmr_fixed_size_resource_create(upstream, CMR_SIZE(block_size), CMR_SIZE(blocks),
                                             CMR_FIXED_SIZE_CAPTURE_SERVE, &fixed),
              "fixed_size_create");
  run->top = cmr_fixed_size_resource_ref(fixed);
}

static bool cmr_fuzz_fixed_size_oom(cmr_fuzz_run *run, size_t bytes, size_t alignment, bool refused) {
  (void)alignment;
  size_t block_size = 0;
  cmr_fuzz_ok(run, cmr_fixed_size_resource_block_size(fixed, &block_size), "block_size");
  return refused || bytes > block_size;
}

static void cmr_fuzz_fixed_size_check(cmr_fuzz_run *run) {
  size_t held = 0;
  cmr_fuzz_ok(run, cmr_fixed_size_resource_upstream_bytes(fixed, &held), "upstream_bytes");
  cmr_fuzz_expect(run, held, run->upstream.bytes_out, "upstream_bytes");
}

static void cmr_fuzz_fixed_size_destroy(cmr_fuzz_run *run) {
  cmr_fuzz_ok(run, cmr_fixed_size_resource_destroy(fixed), "fixed_size_destroy");
}

CMR_FUZZ_HARNESS(fixed_size, 1 << 17, CMR_DEFAULT_ALIGNMENT, .check = cmr_fuzz_fixed_size_check,
                 .reclaims_on_destroy = true)
