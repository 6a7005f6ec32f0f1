/* See bench_common.h. */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double bench_now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

uint64_t bench_next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

uint64_t bench_random_below(uint64_t *state, uint64_t bound) { return bench_next_random(state) % bound; }

void bench_check(cmr_status status, const char *what, const char *subject) {
  if (status == CMR_SUCCESS) return;
  fprintf(stderr, "%s: %s: %s: %s\n", subject, what, cmr_status_string(status), cmr_last_error_message());
  exit(1);
}
