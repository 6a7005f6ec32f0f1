/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness of binning: fixed_size bins by size class, larger
 * requests straight to the upstream. Its extra operation adds a bin, which
 * must succeed while nothing is allocated. */
#include "fuzz_model.h"

static cmr_binning_resource *binning;

static void cmr_fuzz_binning_create(cmr_fuzz_run *run, cmr_resource_ref upstream) {
  uint8_t shape = cmr_fuzz_byte(&run->in);
  int min = shape & 1 ? 8 + shape / 2 % 5 : -1; /* bins of 2^8 .. 2^18, or none */
  int max = min < 0 ? -1 : min + shape / 16 % 7;
  cmr_status status = cmr_binning_resource_create(upstream, CMR_INT(min), CMR_INT(max), &binning);
  if (status == CMR_ERROR_OUT_OF_MEMORY && run->upstream.refusals > 0) {
    /* The bins' first chunks need more than the upstream holds: start with none. */
    status = cmr_binning_resource_create(upstream, CMR_INT(-1), CMR_INT(-1), &binning);
  }
  cmr_fuzz_ok(run, status, "binning_create");
  run->top = cmr_binning_resource_ref(binning);
}

static bool cmr_fuzz_binning_oom(cmr_fuzz_run *run, size_t bytes, size_t alignment, bool refused) {
  (void)run, (void)bytes, (void)alignment;
  return refused;
}

static void cmr_fuzz_binning_add_bin(cmr_fuzz_run *run, uint8_t byte) {
  if (run->live > 0) return;
  size_t size = (size_t)(byte % 64 + 1) << 10; /* 1 to 64 KiB */
  size_t before = 0, after = 0, served = 0;
  cmr_fuzz_ok(run, cmr_binning_resource_bin_count(binning, &before), "bin_count");
  cmr_status status = cmr_binning_resource_add_bin(binning, size);
  if (status == CMR_ERROR_OUT_OF_MEMORY) return; /* the new bin's first chunk */
  cmr_fuzz_ok(run, status, "add_bin");
  cmr_fuzz_ok(run, cmr_binning_resource_bin_count(binning, &after), "bin_count");
  cmr_fuzz_ok(run, cmr_binning_resource_bin_size_for(binning, size, &served), "bin_size_for");
  cmr_fuzz_expect(run, served, size, "the bin serving a just-added size");
  if (after != before && after != before + 1)
    cmr_fuzz_fail(run, "add_bin took bin_count from %zu to %zu", before, after);
}

static void cmr_fuzz_binning_destroy(cmr_fuzz_run *run) {
  cmr_fuzz_ok(run, cmr_binning_resource_destroy(binning), "binning_destroy");
}

CMR_FUZZ_HARNESS(binning, 1 << 19, CMR_DEFAULT_ALIGNMENT, .extra = cmr_fuzz_binning_add_bin)
