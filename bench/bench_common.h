/* Helpers shared by the benchmark programs of bench/: a monotonic clock,
 * a small deterministic random generator and a status check that ends the
 * program with cmr's message. */
#ifndef CMR_BENCH_COMMON_H
#define CMR_BENCH_COMMON_H

#include <stdint.h>

#include <cmr/cmr.h>

/* Seconds on the monotonic clock (only differences mean anything). */
double bench_now_seconds(void);

/* xorshift64: the next value of `*state`, which must not start at 0. The
 * same seed gives the same sequence on every machine, so runs compare. */
uint64_t bench_next_random(uint64_t *state);

/* A value in [0, bound) (bound > 0) from `*state`; the modulo bias is far
 * below anything a benchmark can see for the bounds used here. */
uint64_t bench_random_below(uint64_t *state, uint64_t bound);

/* Returns when `status` is CMR_SUCCESS; otherwise prints
 * "<subject>: <what>: <status>: <message>" to stderr and exits with 1. */
void bench_check(cmr_status status, const char *what, const char *subject);

#endif /* CMR_BENCH_COMMON_H */
