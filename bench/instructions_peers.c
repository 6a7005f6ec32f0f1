/* SPDX-License-Identifier: Apache-2.0 */
/* The host's own allocators, for bench/instructions.sh: the same two cases
 * as cmr-bench-instructions (bench_instructions.c), counted under callgrind
 * in functions of the same names, over malloc/free. The script compiles it
 * once per peer, with no cmr at all:
 *
 *   glibc     cc -O2 instructions_peers.c
 *   jemalloc  cc -O2 instructions_peers.c -ljemalloc   (Debian's replaces malloc)
 *   mimalloc  cc -O2 -DPEER_MIMALLOC instructions_peers.c -lmimalloc   (mi_malloc/mi_free)
 *
 *   pair     PAIRS malloc+free pairs of 1000 B, warm (ir_per_op: per pair)
 *   live10k  10,000 blocks of 256 B..16 KiB allocated, then freed in shuffled
 *            order, after one such round to warm up, the sizes and orders
 *            drawn as cmr-bench-instructions draws them
 *
 *   instructions_peers pair|live10k [PAIRS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instructions_workload.h"

#ifdef PEER_MIMALLOC
#include <mimalloc.h>
#define peer_malloc mi_malloc
#define peer_free mi_free
#else
#define peer_malloc malloc
#define peer_free free
#endif

/* What cmr's loop does with each answer (bench_check): a test, out of line,
 * which also keeps the compiler from eliding a malloc+free pair. */
__attribute__((noinline)) static void check(void *ptr) {
  if (ptr == NULL) {
    fprintf(stderr, "instructions_peers: out of memory\n");
    exit(1);
  }
  __asm__ volatile("" : : "r"(ptr) : "memory");
}

__attribute__((noinline)) void bench_instructions_pairs(long pairs);
__attribute__((noinline)) void bench_instructions_live(void **blocks, const size_t *bytes, const size_t *order);

static inline __attribute__((always_inline)) void pairs_round(long pairs) {
  for (long i = 0; i < pairs; ++i) {
    void *ptr = peer_malloc(instructions_pair_bytes);
    check(ptr);
    peer_free(ptr);
  }
}

static inline __attribute__((always_inline)) void live_round(void **blocks, const size_t *bytes, const size_t *order) {
  for (size_t i = 0; i < instructions_live_count; ++i) {
    blocks[i] = peer_malloc(bytes[i]);
    check(blocks[i]);
  }
  for (size_t i = 0; i < instructions_live_count; ++i) peer_free(blocks[order[i]]);
}

void bench_instructions_pairs(long pairs) { pairs_round(pairs); }

void bench_instructions_live(void **blocks, const size_t *bytes, const size_t *order) {
  live_round(blocks, bytes, order);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: instructions_peers pair|live10k [PAIRS]\n");
    return 2;
  }
  long pairs = argc == 3 ? strtol(argv[2], NULL, 10) : 10000;
  if (strcmp(argv[1], "pair") == 0 && pairs > 0) {
    pairs_round(1000); /* warm-up, not counted */
    bench_instructions_pairs(pairs);
  } else if (strcmp(argv[1], "live10k") == 0) {
    static void *blocks[instructions_live_count];
    static size_t bytes[instructions_live_count], order[instructions_live_count];
    uint64_t rng = 7;
    instructions_live_workload(bytes, order, &rng);
    live_round(blocks, bytes, order); /* the warm-up round: not counted */
    instructions_shuffle(order, &rng);
    bench_instructions_live(blocks, bytes, order);
  } else {
    fprintf(stderr, "usage: instructions_peers pair|live10k [PAIRS]\n");
    return 2;
  }
  return 0;
}
