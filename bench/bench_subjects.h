/* The resources the suballocator benchmark compares, each made over the
 * build's base memory (device memory from cudaMalloc in the CUDA build,
 * host memory in the host build). The first is the peer the others are
 * measured against. */
#ifndef CMR_BENCH_SUBJECTS_H
#define CMR_BENCH_SUBJECTS_H

#include <cmr/cmr.h>

enum { bench_max_subjects = 8 };

typedef struct bench_subject {
  const char *name;
  cmr_resource_ref ref;
  /* Fraction of the standard work it is given (cudaMalloc is too slow for
   * the full count); its figures are per operation either way. */
  double work;
  void *handle;
  cmr_status (*destroy)(void *handle);
} bench_subject;

/* Fills `subjects` and returns how many; exits with a message on failure. */
int bench_make_subjects(bench_subject *subjects);
void bench_destroy_subjects(bench_subject *subjects, int count);

#endif /* CMR_BENCH_SUBJECTS_H */
