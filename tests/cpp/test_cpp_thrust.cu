// SPDX-License-Identifier: Apache-2.0
// The C++ layer on a device (CUDA build, nvcc): a Thrust sort and a CUB
// reduction whose temporary memory comes from a cmr pool (counted by a
// statistics adaptor under it), each checked against a plain run, and a
// CCCL cuda::mr consumer given a cmr stack. Exits 77 without a device.
#include <cmr/cccl.hpp>
#include <cmr/thrust.hpp>
#include <cub/device/device_reduce.cuh>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "expect.hpp"

namespace {

#define CUDA_OK(call) EXPECT((call) == cudaSuccess)

constexpr int count = 1 << 20;

// Keys in a scrambled order, the same every run.
thrust::host_vector<unsigned> scrambled_keys() {
  thrust::host_vector<unsigned> keys(count);
  unsigned state = 12345u;
  for (int i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    keys[i] = state;
  }
  return keys;
}

// `counted` is a statistics adaptor over the pool: what Thrust asks for
// shows in its counts.
void thrust_sorts_with_temporaries_from_a_cmr_pool(cmr::statistics_resource &counted, cmr::pool_resource &pool,
                                                   cudaStream_t stream) {
  thrust::host_vector<unsigned> host_keys = scrambled_keys();
  thrust::device_vector<unsigned> with_cmr = host_keys, plain = host_keys;
  thrust::sort(cmr::thrust_policy(stream, counted), with_cmr.begin(), with_cmr.end());
  CUDA_OK(cudaStreamSynchronize(stream));
  thrust::sort(plain.begin(), plain.end());
  thrust::host_vector<unsigned> a = with_cmr, b = plain;
  EXPECT(a == b);
  EXPECT(std::is_sorted(a.begin(), a.end()));
  // A radix sort of a million keys needs temporary storage of more than
  // the keys: it came through the adaptor, from the pool, and went back.
  EXPECT(counted.allocations_total() >= 1);
  EXPECT(counted.bytes_peak() >= count * sizeof(unsigned));
  EXPECT(counted.bytes_current() == 0);
  EXPECT(pool.pool_size() > (1u << 20)); // it grew for them
  EXPECT(pool.free_size() == pool.pool_size());
}

void cub_reduces_with_temporaries_from_a_cmr_pool(cmr::pool_resource &pool, cudaStream_t stream) {
  thrust::device_vector<long long> values(count);
  thrust::sequence(values.begin(), values.end(), 1LL);
  long long *sum = static_cast<long long *>(pool.ref().allocate_async(sizeof(long long), stream));
  std::size_t temporary_bytes = 0;
  CUDA_OK(
      cub::DeviceReduce::Sum(nullptr, temporary_bytes, thrust::raw_pointer_cast(values.data()), sum, count, stream));
  EXPECT(temporary_bytes > 0);
  std::size_t free_before = pool.free_size();
  void *temporary = pool.ref().allocate_async(temporary_bytes, stream);
  EXPECT(pool.free_size() < free_before); // the temporary is the pool's
  CUDA_OK(
      cub::DeviceReduce::Sum(temporary, temporary_bytes, thrust::raw_pointer_cast(values.data()), sum, count, stream));
  pool.ref().deallocate_async(temporary, temporary_bytes, stream);
  long long result = 0;
  CUDA_OK(cudaMemcpyAsync(&result, sum, sizeof result, cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT(result == static_cast<long long>(count) * (count + 1) / 2);
  pool.ref().deallocate_async(sum, sizeof(long long), stream);
}

__global__ void fill(int *data, int n, int value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}

// Written for CCCL, knowing nothing of cmr.
int consume(cuda::mr::async_resource_ref<cuda::mr::device_accessible> resource, cuda::stream_ref stream) {
  constexpr int n = 4096;
  int *data = static_cast<int *>(resource.allocate_async(n * sizeof(int), 256, stream));
  fill<<<(n + 255) / 256, 256, 0, stream.get()>>>(data, n, 3);
  std::vector<int> host(n);
  cudaMemcpyAsync(host.data(), data, n * sizeof(int), cudaMemcpyDeviceToHost, stream.get());
  resource.deallocate_async(data, n * sizeof(int), 256, stream);
  cudaStreamSynchronize(stream.get());
  int sum = 0;
  for (int v : host) sum += v;
  return sum;
}

void a_cmr_stack_serves_a_cuda_mr_consumer(cudaStream_t stream) {
  cmr_stack *stack = nullptr;
  cmr::check(cmr_stack_parse("statistics(pool(cuda_async, initial_pool_size=64MiB))", &stack));
  cmr_resource_ref ref{};
  cmr::check(cmr_stack_ref(stack, &ref));
  cmr::device_ref device{ref};
  EXPECT(consume(device, cuda::stream_ref{stream}) == 3 * 4096);
  cmr::statistics_resource counts = cmr::statistics_resource::from_ref(ref);
  EXPECT(counts.allocations_total() == 1); // the consumer's block went through the stack
  EXPECT(counts.bytes_current() == 0);
  counts.reset();
  cmr::check(cmr_stack_destroy(stack));
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("cpp.thrust: no CUDA device: skipped\n");
    return 77;
  }
  try {
    cudaStream_t stream = nullptr;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
      cmr::cuda_async_resource driver_pool;
      cmr::pool_resource pool{driver_pool, 1 << 20}; // small: the sort's temporaries make it grow
      cmr::statistics_resource counted{pool};
      thrust_sorts_with_temporaries_from_a_cmr_pool(counted, pool, stream);
      cub_reduces_with_temporaries_from_a_cmr_pool(pool, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
    }
    a_cmr_stack_serves_a_cuda_mr_consumer(stream);
    CUDA_OK(cudaStreamDestroy(stream));
  } catch (const std::exception &failure) {
    std::fprintf(stderr, "cpp.thrust: %s\n", failure.what());
    return 1;
  }
  return cmr_test::finish("cpp.thrust");
}
