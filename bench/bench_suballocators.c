/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-suballocators: the suballocators against the allocators a user
 * would pick instead, measured in one process so that the ratios compare
 * like with like. Everything goes through cmr_allocate / cmr_deallocate.
 *
 *   pair     ns per allocate+free pair on one stream (one the program made, and the
 *            default stream), sizes cycling 256 B..64 KiB, warm
 *   live     ns per operation with N blocks alive: allocate N mixed sizes
 *            (256 B..16 KiB), free them in shuffled order; N = 1,000 / 10,000 / 100,000.
 *            A search linear in the free blocks shows as time growing with N.
 *   queries  (CUDA builds) ns per call of the stream queries a warm pair
 *            makes, through the runtime and called directly
 *   threads  allocate+free pairs per second in total from T threads, each on a
 *            stream of its own, sizes 256 B..64 KiB, T = 1, 2, 4, 8, 16
 *
 * The peer in each table is the first row: cudaMallocAsync's pool
 * (cuda_async) in the CUDA build, the system allocator in the host build;
 * in the CUDA build the pair table also has that same driver pool called
 * directly (cudaMallocAsync (bare)), so the first row's ratio to it is
 * what cmr adds around the driver call;
 * "ratio" is the row's figure against the peer's (time: lower is better;
 * throughput: higher is better).
 *
 *   cmr-bench-suballocators [--quick] [--csv FILE]
 *
 * --csv also writes one line per figure (table,subject,column,value) for
 * bench/plot.py. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmr/cmr.h>

#include "bench_subjects.h"

static bool quick;

/* ---- pair ---------------------------------------------------------------------- */

enum { pair_sizes = 9 };

static long pair_count(double work) { return (long)((quick ? 20000 : 200000) * work); }

static double pair_ns(const bench_subject *s, cmr_stream stream) {
  long pairs = pair_count(s->work);
  for (int warm = 0; warm < pair_sizes; ++warm) {
    void *ptr;
    bench_check(cmr_allocate(s->ref, (size_t)256 << warm, stream, &ptr), "allocate", s->name);
    bench_check(cmr_deallocate(s->ref, ptr, (size_t)256 << warm, stream), "deallocate", s->name);
  }
  double start = bench_now_seconds();
  for (long i = 0; i < pairs; ++i) {
    size_t bytes = (size_t)256 << (i % pair_sizes);
    void *ptr;
    bench_check(cmr_allocate(s->ref, bytes, stream, &ptr), "allocate", s->name);
    bench_check(cmr_deallocate(s->ref, ptr, bytes, stream), "deallocate", s->name);
  }
  return (bench_now_seconds() - start) * 1e9 / (double)pairs;
}

/* ---- live ---------------------------------------------------------------------- */

static double live_ns(const bench_subject *s, cmr_stream stream, size_t count) {
  count = (size_t)((double)count * s->work) + 1;
  void **blocks = malloc(count * sizeof *blocks);
  size_t *bytes = malloc(count * sizeof *bytes);
  size_t *order = malloc(count * sizeof *order);
  if (blocks == NULL || bytes == NULL || order == NULL) exit(1);
  uint64_t rng = 7;
  for (size_t i = 0; i < count; ++i) {
    bytes[i] = 256 + bench_next_random(&rng) % (16 * 1024);
    order[i] = i;
  }
  int rounds = quick ? 1 : 3;
  double total = 0;
  for (int round = 0; round < rounds + 1; ++round) { /* the first round warms up */
    for (size_t i = count - 1; i > 0; --i) {
      size_t j = bench_next_random(&rng) % (i + 1), t = order[i];
      order[i] = order[j], order[j] = t;
    }
    double start = bench_now_seconds();
    for (size_t i = 0; i < count; ++i)
      bench_check(cmr_allocate(s->ref, bytes[i], stream, &blocks[i]), "allocate", s->name);
    for (size_t i = 0; i < count; ++i) {
      size_t k = order[i];
      bench_check(cmr_deallocate(s->ref, blocks[k], bytes[k], stream), "deallocate", s->name);
    }
    if (round > 0) total += bench_now_seconds() - start;
  }
  free(blocks), free(bytes), free(order);
  return total * 1e9 / (double)(2 * count * (size_t)rounds);
}

/* ---- threads ------------------------------------------------------------------- */

typedef struct runner {
  const bench_subject *subject;
  cmr_stream stream;
  long pairs;
  unsigned seed;
  pthread_barrier_t *start;
  double began, ended; /* each thread times itself: the main thread may be descheduled */
} runner;

static void pairs_on(const bench_subject *s, cmr_stream stream, long pairs, unsigned seed) {
  uint64_t rng = 1234567u + seed;
  for (long i = 0; i < pairs; ++i) {
    size_t bytes = 256 + bench_next_random(&rng) % (64 * 1024 - 255);
    void *ptr;
    bench_check(cmr_allocate(s->ref, bytes, stream, &ptr), "allocate", s->name);
    bench_check(cmr_deallocate(s->ref, ptr, bytes, stream), "deallocate", s->name);
  }
}

static void *run_pairs(void *arg) {
  runner *r = arg;
  pthread_barrier_wait(r->start);
  r->began = bench_now_seconds();
  pairs_on(r->subject, r->stream, r->pairs, r->seed);
  r->ended = bench_now_seconds();
  return NULL;
}

static double pairs_per_second(const bench_subject *s, int threads) {
  runner runners[16];
  pthread_t ids[16];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  long pairs = (long)((quick ? 5000 : 50000) * s->work) + 1;
  for (int i = 0; i < threads; ++i) {
    runners[i] = (runner){s, NULL, pairs, (unsigned)i, &start, 0, 0};
    bench_check(cmr_stream_create(&runners[i].stream), "stream", s->name);
    pairs_on(s, runners[i].stream, 100, (unsigned)i); /* warm its list */
  }
  for (int i = 0; i < threads; ++i) pthread_create(&ids[i], NULL, run_pairs, &runners[i]);
  pthread_barrier_wait(&start);
  double began = 1e300, ended = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(ids[i], NULL);
    if (runners[i].began < began) began = runners[i].began;
    if (runners[i].ended > ended) ended = runners[i].ended;
  }
  double seconds = ended - began;
  for (int i = 0; i < threads; ++i) {
    bench_check(cmr_stream_synchronize(runners[i].stream), "synchronize", s->name);
    bench_check(cmr_stream_destroy(runners[i].stream), "stream", s->name);
  }
  pthread_barrier_destroy(&start);
  return (double)pairs * threads / seconds;
}

/* ---- tables -------------------------------------------------------------------- */

static FILE *csv;

static void print_row(const char *table, const char *name, const char *const *columns, const double *values,
                      const double *peer, int count, bool higher_better) {
  printf("%-24s", name);
  for (int i = 0; i < count; ++i) {
    double ratio = higher_better ? values[i] / peer[i] : peer[i] / values[i];
    printf(" %12.0f (%5.2fx)", values[i], ratio);
    if (csv != NULL) fprintf(csv, "%s,%s,%s,%.1f\n", table, name, columns[i], values[i]);
  }
  printf("\n");
}

#ifdef CMR_BENCH_BARE_DRIVER_POOL
/* The first subject's own driver pool called directly: the pair row
 * against which cmr's cuda_async row shows what cmr adds. */
static void print_bare_driver_pool_row(const bench_subject *cuda_async, cmr_stream stream, const double *peer) {
  void *pool = NULL;
  bench_check(cmr_cuda_async_resource_pool_handle(cuda_async->handle, &pool), "pool_handle", cuda_async->name);
  double values[2];
  values[0] = bench_bare_driver_pool_pair_ns(pool, stream, pair_count(1.0), pair_sizes);
  values[1] = bench_bare_driver_pool_pair_ns(pool, CMR_DEFAULT_STREAM, pair_count(1.0), pair_sizes);
  print_row("pair", "cudaMallocAsync (bare)", (const char *[]){"made stream", "default stream"}, values, peer, 2,
            false);
}

/* What a suballocator's warm pair pays the driver: its stream queries,
 * each through the runtime and called directly, on a made stream. The
 * ratio is to the runtime's capture query. */
static void print_stream_queries(cmr_stream stream) {
  double values[bench_stream_queries];
  bench_stream_query_ns(stream, pair_count(1.0), values);
  printf("\n%-24s %20s\n", "queries (ns per call)", "a stream made");
  for (int query = 0; query < bench_stream_queries; ++query) {
    print_row("queries", bench_stream_query_names[query], (const char *[]){"made stream"}, &values[query], &values[0],
              1, false);
  }
}
#endif

int main(int argc, char **argv) {
  bench_options options =
      bench_parse_options("cmr-bench-suballocators",
                          "The suballocators against the allocators a user would pick instead.", true, argc, argv);
  quick = options.quick;
  csv = options.csv;
  if (csv != NULL) fprintf(csv, "table,subject,column,value\n");
  bench_subject subjects[bench_max_subjects];
  int count = bench_make_subjects(subjects);
  printf("cmr %s suballocator benchmark, %s; (ratio) = speed against the first row\n\n", cmr_version(),
         cmr_built_with_cuda() ? "CUDA build, device memory" : "host build, host memory");

  cmr_stream stream;
  bench_check(cmr_stream_create(&stream), "stream", "bench");
  double peer[5], values[5];

  printf("%-24s %20s %20s\n", "pair (ns per pair)", "a stream made", "default stream");
  for (int i = 0; i < count; ++i) {
    values[0] = pair_ns(&subjects[i], stream);
    values[1] = pair_ns(&subjects[i], CMR_DEFAULT_STREAM);
    if (i == 0) memcpy(peer, values, sizeof values);
    print_row("pair", subjects[i].name, (const char *[]){"made stream", "default stream"}, values, peer, 2, false);
#ifdef CMR_BENCH_BARE_DRIVER_POOL
    if (i == 0) print_bare_driver_pool_row(&subjects[0], stream, peer);
#endif
  }

#ifdef CMR_BENCH_BARE_DRIVER_POOL
  print_stream_queries(stream);
#endif

  size_t lives[] = {1000, 10000, 100000};
  printf("\n%-24s %20s %20s %20s\n", "live (ns per op)", "1,000 alive", "10,000 alive", "100,000 alive");
  for (int i = 0; i < count; ++i) {
    for (int k = 0; k < 3; ++k) values[k] = live_ns(&subjects[i], stream, lives[k]);
    if (i == 0) memcpy(peer, values, sizeof values);
    print_row("live", subjects[i].name, (const char *[]){"1000", "10000", "100000"}, values, peer, 3, false);
  }

  int threads[] = {1, 2, 4, 8, 16};
  printf("\n%-24s %20s %20s %20s %20s %20s\n", "threads (pairs/s)", "1", "2", "4", "8", "16");
  for (int i = 0; i < count; ++i) {
    for (int k = 0; k < 5; ++k) values[k] = pairs_per_second(&subjects[i], threads[k]);
    if (i == 0) memcpy(peer, values, sizeof values);
    print_row("threads", subjects[i].name, (const char *[]){"1", "2", "4", "8", "16"}, values, peer, 5, true);
  }
  bench_check(cmr_stream_destroy(stream), "stream", "bench");
  bench_destroy_subjects(subjects, count);
  if (csv != NULL) fclose(csv);
  return 0;
}
