/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-multi-stream: does the allocator serialise streams? RMM's
 * multi_stream_allocations shape: from one host thread, round robin over S
 * streams, each kernel gets a buffer allocated on its stream just before its
 * launch and freed on it just after (stream ordered: the free is ordered
 * after the kernel). The kernels are compute bound and small enough (a few
 * blocks each) for S of them to run at once, so with an allocator that
 * neither blocks the host nor synchronises the device, time stays that of
 * the same kernels on preallocated buffers.
 *
 * Reported per stream count S = 1, 2, 4, 8: kernels per second, and in
 * brackets the fraction of the no-allocation throughput at the same S
 * (1.00 = the allocator costs nothing; cudaMalloc/cudaFree synchronise the
 * device and fall far below).
 *
 *   cmr-bench-multi-stream [--quick]  (CUDA build, on a GPU) */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench_subjects.h"

namespace {

constexpr int max_streams = 8;
constexpr int kernel_blocks = 8;
constexpr int kernel_threads = 256;
constexpr size_t buffer_bytes = size_t{1} << 20; // 1 MiB: pool, arena and binning's pool take it

// Enough arithmetic per element that a kernel runs for tens of microseconds,
// far longer than an allocation should take.
__global__ void compute_bound(float *data, size_t count, int rounds) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    float x = static_cast<float>(i);
    for (int r = 0; r < rounds; ++r) x = x * 0.999f + 0.5f;
    data[i] = x;
  }
}

void require(cudaError_t error, const char *what) {
  if (error == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(error));
  std::exit(1);
}

struct run_shape {
  int streams;
  int kernels; // in all
  int rounds;
};

void launch(float *buffer, cmr_stream stream, int rounds) {
  compute_bound<<<kernel_blocks, kernel_threads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
      buffer, buffer_bytes / sizeof(float), rounds);
  require(cudaGetLastError(), "launch");
}

// Seconds for the run: with `subject`, allocating around every kernel; without
// (NULL), over one preallocated buffer per stream.
double run_seconds(const bench_subject *subject, const cmr_stream *streams, float *const *preallocated,
                   const run_shape &shape) {
  require(cudaDeviceSynchronize(), "synchronize");
  double start = bench_now_seconds();
  for (int k = 0; k < shape.kernels; ++k) {
    int s = k % shape.streams;
    if (subject == nullptr) {
      launch(preallocated[s], streams[s], shape.rounds);
      continue;
    }
    void *ptr = nullptr;
    bench_check(cmr_allocate(subject->ref, buffer_bytes, streams[s], &ptr), "allocate", subject->name);
    launch(static_cast<float *>(ptr), streams[s], shape.rounds);
    bench_check(cmr_deallocate(subject->ref, ptr, buffer_bytes, streams[s]), "deallocate", subject->name);
  }
  require(cudaDeviceSynchronize(), "synchronize");
  return bench_now_seconds() - start;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = bench_parse_options("cmr-bench-multi-stream",
                                   "Does the allocator serialise streams? (CUDA build, on a GPU)", false, argc, argv)
                   .quick;
  int devices = 0;
  if (cmr_device_count(&devices) != CMR_SUCCESS || devices == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  bench_subject subjects[bench_max_subjects];
  int count = bench_make_subjects(subjects);
  cmr_stream streams[max_streams];
  float *preallocated[max_streams];
  for (int s = 0; s < max_streams; ++s) {
    bench_check(cmr_stream_create(&streams[s]), "stream", "bench");
    require(cudaMalloc(&preallocated[s], buffer_bytes), "cudaMalloc");
  }
  const int stream_counts[] = {1, 2, 4, 8};
  const int kernels = quick ? 64 : 2048;
  const int rounds = 500;
  std::printf(
      "cmr %s multi_stream: %d kernels of %d x %d threads over a %zu KiB buffer each, round robin on S "
      "streams; kernels/s (fraction of the same kernels without allocations)\n\n",
      cmr_version(), kernels, kernel_blocks, kernel_threads, buffer_bytes >> 10);
  std::printf("%-28s", "S streams");
  for (int streams_used : stream_counts) std::printf(" %18d", streams_used);
  std::printf("\n");

  double baseline[4];
  std::printf("%-28s", "no allocations");
  for (int i = 0; i < 4; ++i) {
    run_shape shape{stream_counts[i], kernels, rounds};
    run_seconds(nullptr, streams, preallocated, shape); // warm
    baseline[i] = run_seconds(nullptr, streams, preallocated, shape);
    std::printf(" %18.0f", kernels / baseline[i]);
  }
  std::printf("\n");
  for (int j = 0; j < count; ++j) {
    if (std::strncmp(subjects[j].name, "fixed_size", 10) == 0) continue; // its blocks are 64 KiB
    std::printf("%-28s", subjects[j].name);
    for (int i = 0; i < 4; ++i) {
      run_shape shape{stream_counts[i], kernels, rounds};
      run_seconds(&subjects[j], streams, preallocated, run_shape{shape.streams, 2 * shape.streams, rounds});
      double seconds = run_seconds(&subjects[j], streams, preallocated, shape);
      std::printf(" %10.0f (%4.2f)", kernels / seconds, baseline[i] / seconds);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  for (int s = 0; s < max_streams; ++s) {
    bench_check(cmr_stream_destroy(streams[s]), "stream", "bench");
    require(cudaFree(preallocated[s]), "cudaFree");
  }
  bench_destroy_subjects(subjects, count);
  return 0;
}
