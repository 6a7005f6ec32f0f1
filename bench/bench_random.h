/* SPDX-License-Identifier: Apache-2.0 */
/* The benchmarks' repeatable xorshift generator: the same workload for
 * every subject. Header-only, for the programs built without cmr too
 * (instructions_peers.c). */
#ifndef CMR_BENCH_RANDOM_H
#define CMR_BENCH_RANDOM_H

#include <stdint.h>

static inline uint64_t bench_next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

#endif /* CMR_BENCH_RANDOM_H */
