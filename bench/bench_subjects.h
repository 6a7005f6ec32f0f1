/* SPDX-License-Identifier: Apache-2.0 */
/* The resources the suballocator benchmark compares, each made over the
 * build's base memory (device memory from cudaMalloc in the CUDA build,
 * host memory in the host build). The first is the peer the others are
 * measured against. */
#ifndef CMR_BENCH_SUBJECTS_H
#define CMR_BENCH_SUBJECTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cmr/cmr.h>

#include "bench_random.h" /* bench_next_random */

#ifdef __cplusplus
extern "C" { /* the multi_stream benchmark is CUDA C++ */
#endif

enum { bench_max_subjects = 8, bench_fixed_size_block = 64 << 10 };

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

/* A subject written as a stack expression (cmr_stack_parse), for the
 * benchmarks that take their subjects by name. */
typedef struct bench_stack_subject {
  const char *name;
  const char *expression;
} bench_stack_subject;
/* The one of the `count` in `table` called `name`; NULL for none. */
const bench_stack_subject *bench_find_stack_subject(const bench_stack_subject *table, int count, const char *name);

/* What every benchmark needs besides bench_next_random: a monotonic clock,
 * and an exit with cmr's message on a status that is not CMR_SUCCESS. */
double bench_now_seconds(void);
void bench_check(cmr_status status, const char *what, const char *subject);

/* The command line of the benchmarks that take --quick (a smoke run) and,
 * `with_csv`, --csv FILE (figures for bench/plot.py, the file opened for
 * writing), besides --help and --version (tools/cli.h); bad usage exits 2. */
typedef struct bench_options {
  bool quick;
  FILE *csv; /* NULL without --csv */
} bench_options;
bench_options bench_parse_options(const char *program, const char *description, bool with_csv, int argc, char **argv);

/* CUDA builds (bench/bare_driver_pool.c): ns per cudaMallocFromPoolAsync +
 * cudaFreeAsync pair on the driver pool `pool` (a cudaMemPool_t), sizes
 * cycling 256 B << 0..sizes-1 as the pair table's, after one warm round. */
double bench_bare_driver_pool_pair_ns(void *pool, cmr_stream stream, long pairs, int sizes);

/* CUDA builds (bench/bare_driver_pool.c): ns per call of the stream queries a
 * suballocator makes on each allocation and free, on `stream`, through the
 * runtime and through the driver's entry point, in this order:
 * cudaStreamIsCapturing, cuStreamIsCapturing, cudaStreamGetId,
 * cuStreamGetId (bench_stream_queries of them). */
enum { bench_stream_queries = 4 };
extern const char *const bench_stream_query_names[bench_stream_queries];
void bench_stream_query_ns(cmr_stream stream, long calls, double *out);

#ifdef __cplusplus
}
#endif

#endif /* CMR_BENCH_SUBJECTS_H */
