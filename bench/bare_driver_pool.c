/* SPDX-License-Identifier: Apache-2.0 */
/* The driver's pool called directly, without cmr: cudaMallocFromPoolAsync +
 * cudaFreeAsync on a given cudaMemPool_t, for the pair table's row that
 * shows what cmr's cuda_async adds around the driver call. CUDA builds
 * only (CMakeLists.txt adds this file and CMR_BENCH_BARE_DRIVER_POOL). */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "bench_subjects.h"

static void require_cuda(cudaError_t error, const char *what) {
  if (error == cudaSuccess) return;
  fprintf(stderr, "bare driver pool: %s: %s\n", what, cudaGetErrorString(error));
  exit(1);
}

static void one_pair(cudaMemPool_t pool, cudaStream_t stream, size_t bytes) {
  void *ptr;
  require_cuda(cudaMallocFromPoolAsync(&ptr, bytes, pool, stream), "cudaMallocFromPoolAsync");
  require_cuda(cudaFreeAsync(ptr, stream), "cudaFreeAsync");
}

double bench_bare_driver_pool_pair_ns(void *pool, cmr_stream stream, long pairs, int sizes) {
  for (int warm = 0; warm < sizes; ++warm) one_pair(pool, stream, (size_t)256 << warm);
  double start = bench_now_seconds();
  for (long i = 0; i < pairs; ++i) one_pair(pool, stream, (size_t)256 << (i % sizes));
  return (bench_now_seconds() - start) * 1e9 / (double)pairs;
}
