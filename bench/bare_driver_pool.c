/* SPDX-License-Identifier: Apache-2.0 */
/* The driver called directly, without cmr: cudaMallocFromPoolAsync +
 * cudaFreeAsync on a given cudaMemPool_t, for the pair table's row that
 * shows what cmr's cuda_async adds around the driver call, and the stream
 * queries a suballocator's warm pair makes, through the runtime and the
 * driver. CUDA builds only (CMakeLists.txt adds this file and
 * CMR_BENCH_BARE_DRIVER_POOL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
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

const char *const bench_stream_query_names[bench_stream_queries] = {"cudaStreamIsCapturing", "cuStreamIsCapturing",
                                                                    "cudaStreamGetId", "cuStreamGetId"};

static void *driver_function(const char *name) {
  void *function = NULL;
  enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  require_cuda(cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found), name);
  if (found != cudaDriverEntryPointSuccess || function == NULL) {
    fprintf(stderr, "bare driver: the driver has no %s\n", name);
    exit(1);
  }
  return function;
}

static void require_driver(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS) return;
  fprintf(stderr, "bare driver: %s failed (%d)\n", what, (int)result);
  exit(1);
}

void bench_stream_query_ns(cmr_stream stream, long calls, double *out) {
  __typeof__(&cuStreamIsCapturing) driver_is_capturing;
  __typeof__(&cuStreamGetId) driver_get_id;
  void *function = driver_function("cuStreamIsCapturing");
  memcpy(&driver_is_capturing, &function, sizeof driver_is_capturing);
  function = driver_function("cuStreamGetId");
  memcpy(&driver_get_id, &function, sizeof driver_get_id);
  enum cudaStreamCaptureStatus status;
  CUstreamCaptureStatus driver_status;
  unsigned long long id;
  for (int query = 0; query < bench_stream_queries; ++query) {
    double start = bench_now_seconds();
    for (long i = 0; i < calls; ++i) {
      switch (query) {
      case 0: require_cuda(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing"); break;
      case 1: require_driver(driver_is_capturing(stream, &driver_status), "cuStreamIsCapturing"); break;
      case 2: require_cuda(cudaStreamGetId(stream, &id), "cudaStreamGetId"); break;
      default: require_driver(driver_get_id(stream, &id), "cuStreamGetId"); break;
      }
    }
    out[query] = (bench_now_seconds() - start) * 1e9 / (double)calls;
  }
}
