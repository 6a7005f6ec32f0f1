// SPDX-License-Identifier: Apache-2.0
// cmr and CCCL's memory resources (libcu++'s cuda::mr, CUDA 13's CCCL 3.0),
// both ways:
//
// - cmr::device_ref, cmr::host_ref and cmr::managed_ref are cmr resource
//   refs that satisfy cuda::mr::async_resource with the properties their
//   names say. A cmr resource's properties are known only at run time, so
//   each checks them when it is made (cmr::error, status
//   CMR_ERROR_PROPERTY_MISSING, when the resource lacks one) and then
//   states them to CCCL:
//
//     cmr::pool_resource pool{cuda, 1 << 30};
//     cmr::device_ref device{pool};
//     cuda::mr::async_resource_ref<cuda::mr::device_accessible> ref{device};
//
//   CCCL's refs point at the object they are made from: `device` (and the
//   pool) must outlive `ref`.
//
// - cmr::from_cuda_mr<R> puts any cuda::mr async resource under cmr, as the
//   upstream of a cmr pool or adaptor; an exception it throws reaches the
//   C++ caller of the cmr call that led to it.
//
// Needs the toolkit's CCCL headers on the include path (nvcc adds them; g++
// wants -I<cuda>/include/cccl -I<cuda>/include).
#ifndef CMR_CCCL_HPP
#define CMR_CCCL_HPP

#ifndef LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#endif

#include <cmr/cmr.hpp>
#include <cuda/memory_resource>
#include <cuda/stream_ref>

namespace cmr {

// A cmr stream for CCCL's stream_ref (a cmr_stream is a cudaStream_t in the
// CUDA build and an opaque token in the host build: either fits).
inline cmr_stream to_cmr_stream(cuda::stream_ref stream) noexcept { return static_cast<cmr_stream>(stream.get()); }

namespace detail {
// A cmr ref checked, once, to have every CMR_PROPERTY_* bit of `Required`.
template <unsigned Required>
class checked_ref {
 public:
  explicit checked_ref(resource_ref ref) : ref_(ref) { check(cmr_ref_require_properties(ref.c(), Required)); }

  void *allocate(std::size_t bytes, std::size_t alignment) { return ref_.allocate(bytes, alignment); }
  void deallocate(void *ptr, std::size_t bytes, std::size_t alignment) { ref_.deallocate(ptr, bytes, alignment); }
  void *allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) {
    return ref_.allocate_async(bytes, alignment, to_cmr_stream(stream));
  }
  void deallocate_async(void *ptr, std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) {
    ref_.deallocate_async(ptr, bytes, alignment, to_cmr_stream(stream));
  }

  resource_ref ref() const noexcept { return ref_; }

  friend bool operator==(const checked_ref &a, const checked_ref &b) { return a.ref_ == b.ref_; }
  friend bool operator!=(const checked_ref &a, const checked_ref &b) { return !(a == b); }

 private:
  resource_ref ref_;
};
} // namespace detail

// Memory the device can use (cuda::mr::device_accessible).
class device_ref : public detail::checked_ref<CMR_PROPERTY_DEVICE_ACCESSIBLE> {
 public:
  using checked_ref::checked_ref;
  friend void get_property(const device_ref &, cuda::mr::device_accessible) noexcept {}
};

// Memory the host can use (cuda::mr::host_accessible).
class host_ref : public detail::checked_ref<CMR_PROPERTY_HOST_ACCESSIBLE> {
 public:
  using checked_ref::checked_ref;
  friend void get_property(const host_ref &, cuda::mr::host_accessible) noexcept {}
};

// Memory both can use (managed, pinned): both properties.
class managed_ref : public detail::checked_ref<CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE> {
 public:
  using checked_ref::checked_ref;
  friend void get_property(const managed_ref &, cuda::mr::device_accessible) noexcept {}
  friend void get_property(const managed_ref &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::async_resource_with<device_ref, cuda::mr::device_accessible>);
static_assert(cuda::mr::async_resource_with<host_ref, cuda::mr::host_accessible>);
static_assert(cuda::mr::async_resource_with<managed_ref, cuda::mr::device_accessible, cuda::mr::host_accessible>);

// A cuda::mr async resource as a cmr resource (a foreign one: cmr does not
// keep it alive, so it must outlive every cmr resource over it and every
// allocation from it). Its properties are the CCCL properties it has.
template <class Resource>
class from_cuda_mr {
  static_assert(cuda::mr::async_resource<Resource>, "from_cuda_mr needs a cuda::mr async resource");

 public:
  explicit from_cuda_mr(Resource &resource) noexcept : resource_(&resource) {}
  from_cuda_mr(const from_cuda_mr &) = delete;
  from_cuda_mr &operator=(const from_cuda_mr &) = delete;

  // The ref lives as long as this object, which it points at.
  resource_ref ref() noexcept { return cmr_resource_ref{this, &ops}; }

 private:
  static from_cuda_mr &of(void *self) noexcept { return *static_cast<from_cuda_mr *>(self); }

  // Runs `call`, turning what it throws into a status: the exception is
  // kept for cmr::check on this thread. std::bad_alloc is out of memory;
  // anything else is a failure of the CUDA resource (CMR_ERROR_CUDA).
  template <class Call>
  static cmr_status guarded(Call &&call) noexcept {
    try {
      call();
      return CMR_SUCCESS;
    } catch (const std::bad_alloc &) {
      detail::pending_exception = std::current_exception();
      return CMR_ERROR_OUT_OF_MEMORY;
    } catch (...) {
      detail::pending_exception = std::current_exception();
      return CMR_ERROR_CUDA;
    }
  }

  static cmr_status allocate(void *self, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
    return guarded([&] {
      *out = of(self).resource_->allocate_async(bytes, alignment, cuda::stream_ref{static_cast<cudaStream_t>(stream)});
    });
  }
  static cmr_status deallocate(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
    return guarded([&] {
      of(self).resource_->deallocate_async(ptr, bytes, alignment, cuda::stream_ref{static_cast<cudaStream_t>(stream)});
    });
  }
  static cmr_status allocate_sync(void *self, size_t bytes, size_t alignment, void **out) {
    return guarded([&] { *out = of(self).resource_->allocate(bytes, alignment); });
  }
  static cmr_status deallocate_sync(void *self, void *ptr, size_t bytes, size_t alignment) {
    return guarded([&] { of(self).resource_->deallocate(ptr, bytes, alignment); });
  }
  static bool is_equal(const void *self, cmr_resource_ref other) {
    return other.ops == &ops && *static_cast<const from_cuda_mr *>(self)->resource_ ==
                                    *static_cast<const from_cuda_mr *>(other.self)->resource_;
  }
  static unsigned properties(const void *) {
    return (cuda::has_property<Resource, cuda::mr::device_accessible> ? CMR_PROPERTY_DEVICE_ACCESSIBLE : 0u) |
           (cuda::has_property<Resource, cuda::mr::host_accessible> ? CMR_PROPERTY_HOST_ACCESSIBLE : 0u);
  }

  static constexpr cmr_resource_ops ops = {
      0u,        "cuda::mr resource", &allocate, &deallocate, &allocate_sync, &deallocate_sync,
      &is_equal, &properties,         nullptr,   nullptr};

  Resource *resource_;
};

} // namespace cmr

#endif // CMR_CCCL_HPP
