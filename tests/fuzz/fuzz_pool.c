/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness of pool: the model's checks plus pool_size equal to what
 * the upstream has out, and free_size no more than what no live block holds. */
#include "fuzz_model.h"

static cmr_pool_resource *pool;
static size_t maximum;

static void cmr_fuzz_pool_create(cmr_fuzz_run *run, cmr_resource_ref upstream) {
  size_t initial = cmr_fuzz_range(&run->in, 0, 8) << 18; /* 0 to 2 MiB */
  uint8_t limited = cmr_fuzz_byte(&run->in);
  maximum = limited & 1 ? initial + (cmr_fuzz_range(&run->in, 1, 64) << 18) : SIZE_MAX;
  /* Unlimited is the default (SIZE_MAX itself is no multiple of 256). */
  cmr_optional_size maximum_pool_size = maximum == SIZE_MAX ? CMR_SIZE_DEFAULT : CMR_SIZE(maximum);
  cmr_status status = cmr_pool_resource_create(upstream, CMR_SIZE(initial), maximum_pool_size, CMR_SIZE_DEFAULT,
                                               CMR_POOL_CAPTURE_SERVE, &pool);
  if (status == CMR_ERROR_OUT_OF_MEMORY && initial > run->upstream.capacity) {
    initial = 0; /* more than the upstream holds: the pool cannot start */
    status = cmr_pool_resource_create(upstream, CMR_SIZE(initial), maximum_pool_size, CMR_SIZE_DEFAULT,
                                      CMR_POOL_CAPTURE_SERVE, &pool);
  }
  cmr_fuzz_ok(run, status, "pool_create");
  run->top = cmr_pool_resource_ref(pool);
}

/* The upstream refused, or growing by the request would pass maximum_pool_size. */
static bool cmr_fuzz_pool_oom(cmr_fuzz_run *run, size_t bytes, size_t alignment, bool refused) {
  size_t size = 0;
  cmr_fuzz_ok(run, cmr_pool_resource_pool_size(pool, &size), "pool_size");
  return refused || (maximum != SIZE_MAX && size + bytes + alignment > maximum);
}

static void cmr_fuzz_pool_check(cmr_fuzz_run *run) {
  size_t size = 0, free_size = 0, used = 0;
  cmr_fuzz_ok(run, cmr_pool_resource_pool_size(pool, &size), "pool_size");
  cmr_fuzz_ok(run, cmr_pool_resource_free_size(pool, &free_size), "free_size");
  cmr_fuzz_expect(run, size, run->upstream.bytes_out, "pool_size");
  for (size_t i = 0; i < run->live; ++i) used += run->blocks[i].bytes;
  if (free_size > size || size - free_size < used) {
    cmr_fuzz_fail(run, "free_size %zu of pool_size %zu with %zu bytes live", free_size, size, used);
  }
}

static void cmr_fuzz_pool_destroy(cmr_fuzz_run *run) {
  cmr_fuzz_ok(run, cmr_pool_resource_destroy(pool), "pool_destroy");
}

CMR_FUZZ_HARNESS(pool, 1 << 20, SIZE_MAX, .check = cmr_fuzz_pool_check, .reclaims_on_destroy = true)
