/* SPDX-License-Identifier: Apache-2.0 */
/* The work bench/instructions.sh counts, shared by cmr-bench-instructions
 * (over cmr, bench_instructions.c) and instructions_peers.c (over the
 * host's malloc, built without cmr, so this header needs nothing of it):
 *
 *   pair     allocate+free pairs of instructions_pair_bytes, warm
 *   live10k  instructions_live_count blocks of 256 B..16 KiB allocated,
 *            then freed in a shuffled order
 *
 * Every subject draws the same sizes and orders from the same seed. */
#ifndef CMR_BENCH_INSTRUCTIONS_WORKLOAD_H
#define CMR_BENCH_INSTRUCTIONS_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "bench_random.h"

enum { instructions_pair_bytes = 1000, instructions_live_count = 10000, instructions_largest_live = 16 << 10 };

/* A new order of the live blocks' frees. */
static inline void instructions_shuffle(size_t *order, uint64_t *rng) {
  for (size_t i = instructions_live_count - 1; i > 0; --i) {
    size_t j = bench_next_random(rng) % (i + 1), t = order[i];
    order[i] = order[j], order[j] = t;
  }
}

/* The live case's sizes and a first order of its frees, drawn from `rng`
 * (seeded 7 by every subject). */
static inline void instructions_live_workload(size_t *bytes, size_t *order, uint64_t *rng) {
  for (size_t i = 0; i < instructions_live_count; ++i) {
    bytes[i] = 256 + bench_next_random(rng) % (instructions_largest_live - 255);
    order[i] = i;
  }
  instructions_shuffle(order, rng);
}

#endif /* CMR_BENCH_INSTRUCTIONS_WORKLOAD_H */
