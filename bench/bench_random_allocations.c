/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-random-allocations: RMM's random_allocations workload over the
 * suballocators and the allocators a user would pick instead, in one process.
 *
 * A case is (count, maximum size): `count` allocations, each made with
 * probability 0.73 while the bytes alive stay under a cap (16 GiB on the GPU,
 * 1 GiB on the host), else a random live allocation is freed instead; sizes
 * are uniform in 1..maximum; everything still alive is freed at the end.
 * The figure is ns per operation (allocations and frees), all on one stream
 * the program made, with the same random sequence for every subject.
 *
 *   large  count 1,000 / 10,000 / 100,000 x maximum 1, 4, 64, 256, 1024, 4096 MiB
 *   small  count 100,000 x maximum 8 B .. 64 KiB, where the allocator's own
 *          cost is all there is (fixed_size takes part here: its blocks are 64 KiB)
 *
 * cudaMalloc (cuda) runs 1/100 of the count (at least 100 operations): its
 * figure is per operation all the same. A subject that runs out of memory
 * in a case shows "oom" there (and frees what it holds) instead of a figure.
 * Ratios: the peer's time (the first row, cudaMallocAsync's pool in the CUDA
 * build, the system allocator in the host build) over the row's, higher is
 * better.
 *
 *   cmr-bench-random-allocations [--quick] [--csv FILE]
 *
 * --quick: counts / 100 and maximum sizes up to 4 MiB (a smoke run);
 * --csv: one line per subject and case (table,subject,count,max_bytes,ns_per_op)
 * for bench/plot.py. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmr/cmr.h>

#include "bench_subjects.h"

enum { max_columns = 6 };
#define ALLOCATE_PERCENT 73

typedef struct live_block {
  void *ptr;
  size_t bytes;
} live_block;

/* One case: ns per operation, or a negative value when the subject ran out
 * of memory (everything it held is freed either way). */
static double random_case(const bench_subject *s, cmr_stream stream, long count, size_t max_bytes, size_t cap,
                          live_block *live) {
  if (s->work < 1.0) count = (long)((double)count * s->work) < 100 ? 100 : (long)((double)count * s->work);
  uint64_t rng = 0x9e3779b97f4a7c15u ^ (uint64_t)max_bytes;
  size_t alive = 0, alive_bytes = 0;
  long allocations = 0, operations = 0;
  bool out_of_memory = false;
  double start = bench_now_seconds();
  while (allocations < count && !out_of_memory) {
    size_t bytes = 1 + (size_t)(bench_next_random(&rng) % max_bytes);
    bool allocate = (long)(bench_next_random(&rng) % 100) < ALLOCATE_PERCENT || alive == 0;
    if (allocate && alive_bytes + bytes <= cap) {
      cmr_status status = cmr_allocate(s->ref, bytes, stream, &live[alive].ptr);
      if (status == CMR_ERROR_OUT_OF_MEMORY) {
        out_of_memory = true;
        break;
      }
      bench_check(status, "allocate", s->name);
      live[alive++].bytes = bytes;
      alive_bytes += bytes;
      ++allocations;
    } else if (alive > 0) {
      size_t victim = (size_t)(bench_next_random(&rng) % alive);
      bench_check(cmr_deallocate(s->ref, live[victim].ptr, live[victim].bytes, stream), "deallocate", s->name);
      alive_bytes -= live[victim].bytes;
      live[victim] = live[--alive];
    } else {
      ++allocations; /* a block larger than the cap: nothing to do */
    }
    ++operations;
  }
  for (size_t i = 0; i < alive; ++i) {
    bench_check(cmr_deallocate(s->ref, live[i].ptr, live[i].bytes, stream), "deallocate", s->name);
  }
  operations += (long)alive;
  bench_check(cmr_stream_synchronize(stream), "synchronize", s->name);
  double seconds = bench_now_seconds() - start;
  return out_of_memory ? -1.0 : seconds * 1e9 / (double)operations;
}

static void print_size(char *text, size_t size, size_t bytes) {
  if (bytes >= (1u << 20))
    snprintf(text, size, "%zu MiB", bytes >> 20);
  else if (bytes >= 1024)
    snprintf(text, size, "%zu KiB", bytes >> 10);
  else
    snprintf(text, size, "%zu B", bytes);
}

/* A table: one row per subject taking part, one column per maximum size. */
static void run_table(const char *table, bench_subject *subjects, int count, cmr_stream stream, long operations,
                      const size_t *max_bytes, int columns, size_t cap, live_block *live, FILE *csv) {
  char heading[64], label[32];
  snprintf(heading, sizeof heading, "%s, %ld allocations (ns/op)", table, operations);
  printf("\n%-34s", heading);
  for (int c = 0; c < columns; ++c) {
    print_size(label, sizeof label, max_bytes[c]);
    printf(" %18s", label);
  }
  printf("\n");
  double peer[max_columns];
  for (int i = 0; i < count; ++i) {
    const bench_subject *s = &subjects[i];
    printf("%-34s", s->name);
    for (int c = 0; c < columns; ++c) {
      bool takes_part = strncmp(s->name, "fixed_size", 10) != 0 || max_bytes[c] <= bench_fixed_size_block;
      double ns = takes_part ? random_case(s, stream, operations, max_bytes[c], cap, live) : 0;
      if (i == 0) peer[c] = ns;
      if (!takes_part)
        printf(" %18s", "-");
      else if (ns < 0)
        printf(" %18s", "oom");
      else if (peer[c] > 0)
        printf(" %9.0f (%5.2fx)", ns, peer[c] / ns);
      else
        printf(" %9.0f %8s", ns, "");
      if (csv != NULL && takes_part && ns >= 0) {
        fprintf(csv, "%s,%s,%ld,%zu,%.1f\n", table, s->name, operations, max_bytes[c], ns);
      }
    }
    printf("\n");
    fflush(stdout);
  }
}

int main(int argc, char **argv) {
  bench_options options = bench_parse_options(
      "cmr-bench-random-allocations", "RMM's random_allocations workload over the suballocators and their peers.", true,
      argc, argv);
  bool quick = options.quick;
  FILE *csv = options.csv;
  bool gpu = cmr_built_with_cuda();
  int devices = 0;
  if (gpu && (cmr_device_count(&devices) != CMR_SUCCESS || devices == 0)) {
    printf("a CUDA build without a GPU: skipped\n");
    return 77;
  }
  bench_subject subjects[bench_max_subjects];
  int count = bench_make_subjects(subjects);
  size_t cap = gpu ? (size_t)16 << 30 : (size_t)1 << 30;
  printf(
      "cmr %s random_allocations, %s, at most %zu GiB alive, allocate with p = 0.%d; "
      "(ratio) = the first row's time over the row's\n",
      cmr_version(), gpu ? "CUDA build, device memory" : "host build, host memory", cap >> 30, ALLOCATE_PERCENT);
  long divide = quick ? 100 : 1;
  live_block *live = malloc(100000 * sizeof *live);
  if (live == NULL) return 1;
  cmr_stream stream;
  bench_check(cmr_stream_create(&stream), "stream", "bench");

  const size_t MiB = (size_t)1 << 20;
  size_t large[] = {1 * MiB, 4 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB, 4096 * MiB};
  int large_columns = quick ? 2 : 6;
  if (csv != NULL) fprintf(csv, "table,subject,count,max_bytes,ns_per_op\n");
  long counts[] = {1000, 10000, 100000};
  for (int k = 0; k < 3; ++k) {
    long operations = counts[k] / divide < 10 ? 10 : counts[k] / divide;
    run_table("large", subjects, count, stream, operations, large, large_columns, cap, live, csv);
  }
  size_t small[] = {8, 64, 512, 4096, 16384, 65536};
  run_table("small", subjects, count, stream, 100000 / divide, small, 6, cap, live, csv);

  bench_check(cmr_stream_destroy(stream), "stream", "bench");
  bench_destroy_subjects(subjects, count);
  free(live);
  if (csv != NULL) fclose(csv);
  return 0;
}
