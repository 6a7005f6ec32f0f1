// SPDX-License-Identifier: Apache-2.0
// Thrust's and CUB's temporary memory from a cmr resource (CUDA build, nvcc):
//
//   cmr::pool_resource pool{cuda, 1 << 30};
//   thrust::sort(cmr::thrust_policy(stream, pool), keys.begin(), keys.end());
//
// cmr::thrust_allocator<T> is a Thrust allocator over a cmr resource and a
// stream (RMM's thrust_allocator): device memory, allocated and freed in
// that stream's order. cmr::thrust_policy(stream, resource) is
// thrust::cuda::par_nosync with it, on `stream`: every temporary buffer of
// the algorithms run with it comes from the resource.
#ifndef CMR_THRUST_HPP
#define CMR_THRUST_HPP

#include <cmr/cmr.hpp>
#include <thrust/device_malloc_allocator.h>
#include <thrust/execution_policy.h>

#include <cstdio>

namespace cmr {

template <class T>
class thrust_allocator : public thrust::device_malloc_allocator<T> {
  using base = thrust::device_malloc_allocator<T>;

 public:
  using value_type = T;
  using pointer = typename base::pointer;
  using size_type = typename base::size_type;

  template <class U>
  struct rebind {
    using other = thrust_allocator<U>;
  };

  thrust_allocator(cmr_stream stream, resource_ref resource) noexcept : stream_(stream), resource_(resource) {}
  template <class U>
  thrust_allocator(const thrust_allocator<U> &other) noexcept // NOLINT: rebinding, as Thrust does
      : stream_(other.stream()), resource_(other.resource()) {}

  pointer allocate(size_type count) {
    void *memory = resource_.allocate_async(count * sizeof(T), stream_);
    return thrust::device_pointer_cast(static_cast<T *>(memory));
  }

  // Thrust frees temporaries from destructors, where nothing may throw: a
  // failed free (a cmr bug or a misused resource) is written to stderr.
  void deallocate(pointer ptr, size_type count) noexcept {
    try {
      resource_.deallocate_async(thrust::raw_pointer_cast(ptr), count * sizeof(T), stream_);
    } catch (const std::exception &failure) {
      std::fprintf(stderr, "cmr::thrust_allocator: freeing %zu bytes failed: %s\n", count * sizeof(T), failure.what());
    }
  }

  cmr_stream stream() const noexcept { return stream_; }
  resource_ref resource() const noexcept { return resource_; }

  friend bool operator==(const thrust_allocator &a, const thrust_allocator &b) {
    return a.stream_ == b.stream_ && a.resource_ == b.resource_;
  }
  friend bool operator!=(const thrust_allocator &a, const thrust_allocator &b) { return !(a == b); }

 private:
  cmr_stream stream_;
  resource_ref resource_;
};

// thrust::cuda::par_nosync on `stream`, its temporaries from `resource`.
inline auto thrust_policy(cmr_stream stream, resource_ref resource) {
  return thrust::cuda::par_nosync(thrust_allocator<char>(stream, resource)).on(static_cast<cudaStream_t>(stream));
}

} // namespace cmr

#endif // CMR_THRUST_HPP
