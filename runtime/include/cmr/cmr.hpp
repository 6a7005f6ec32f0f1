// SPDX-License-Identifier: Apache-2.0
// cmr's C++ layer: header-only C++17 over the C ABI (libcmr holds no C++).
//
//   #include <cmr/cmr.hpp>
//   cmr::system_resource system;
//   cmr::pool_resource pool{system, 1 << 20};   // upstream, initial_pool_size
//   void *p = pool.ref().allocate(1000);
//   pool.ref().deallocate(p, 1000);
//
// Every resource of spec/ has an owner class (generated: cmr/resources.hpp)
// that holds one share of the resource (ownership rule 1: the resource goes
// when its last holder lets go), moves but does not copy, and throws
// cmr::error (cmr::out_of_memory, a std::bad_alloc, for out of memory) with
// cmr's status and message when a call fails. cmr::resource_ref is the
// non-owning ref every owner gives; <cmr/cccl.hpp> makes it a CCCL
// cuda::mr resource, and <cmr/thrust.hpp> gives Thrust and CUB their
// temporary memory from it.
#ifndef CMR_HPP
#define CMR_HPP

#include <cmr/cmr.h>

#include <cstddef>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace cmr {

// A cmr call that failed: its status and the message cmr recorded.
class error : public std::runtime_error {
 public:
  error(cmr_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
  cmr_status status() const noexcept { return status_; }

 private:
  cmr_status status_;
};

// Out of memory, as code written for std::allocator and CCCL expects it.
class out_of_memory : public std::bad_alloc {
 public:
  explicit out_of_memory(const std::string &message) : message_(message) {}
  const char *what() const noexcept override { return message_.c_str(); }
  cmr_status status() const noexcept { return CMR_ERROR_OUT_OF_MEMORY; }

 private:
  std::string message_;
};

namespace detail {
// An exception a C++ resource under cmr (cmr/cccl.hpp's from_cuda_mr) threw
// on this thread, kept while the failure travels back through the C ABI,
// so that the call that asked gets it rather than a bare status.
inline thread_local std::exception_ptr pending_exception;
} // namespace detail

// Throws for a failed status: the C++ exception that caused it when a C++
// resource below raised one on this thread, else cmr::out_of_memory or
// cmr::error with cmr's message.
inline void check(cmr_status status) {
  if (status == CMR_SUCCESS) return;
  if (detail::pending_exception) {
    std::exception_ptr cause = std::exchange(detail::pending_exception, nullptr);
    std::rethrow_exception(cause);
  }
  std::string message = cmr_last_error_message();
  if (status == CMR_ERROR_OUT_OF_MEMORY) throw out_of_memory(message);
  throw error(status, message);
}

// A non-owning reference to a resource, copied freely. It does not keep
// the resource alive: its owner must outlive it (ownership rule 2).
class resource_ref {
 public:
  // cmr's default alignment (core.h).
  static constexpr std::size_t default_alignment = 256;

  resource_ref(cmr_resource_ref ref) noexcept : ref_(ref) {} // NOLINT: implicit, as a view

  // The ref of any owner (anything with a ref() member giving one).
  template <class Owner, class = std::enable_if_t<
                             !std::is_same_v<std::decay_t<Owner>, resource_ref> &&
                             std::is_convertible_v<decltype(std::declval<const Owner &>().ref()), resource_ref>>>
  resource_ref(const Owner &owner) : resource_ref(owner.ref()) {} // NOLINT: implicit, as a view

  // Memory ready for use when it returns / no longer used by queued work.
  void *allocate(std::size_t bytes, std::size_t alignment = default_alignment) const {
    void *out = nullptr;
    check(cmr_allocate_sync(ref_, bytes, alignment, &out));
    return out;
  }
  void deallocate(void *ptr, std::size_t bytes, std::size_t alignment = default_alignment) const {
    check(cmr_deallocate_sync(ref_, ptr, bytes, alignment));
  }

  // Stream-ordered: usable by work queued on `stream` after this call.
  void *allocate_async(std::size_t bytes, std::size_t alignment, cmr_stream stream) const {
    void *out = nullptr;
    check(cmr_allocate_aligned(ref_, bytes, alignment, stream, &out));
    return out;
  }
  void *allocate_async(std::size_t bytes, cmr_stream stream) const {
    return allocate_async(bytes, default_alignment, stream);
  }
  void deallocate_async(void *ptr, std::size_t bytes, std::size_t alignment, cmr_stream stream) const {
    check(cmr_deallocate_aligned(ref_, ptr, bytes, alignment, stream));
  }
  void deallocate_async(void *ptr, std::size_t bytes, cmr_stream stream) const {
    deallocate_async(ptr, bytes, default_alignment, stream);
  }

  // The CMR_PROPERTY_* mask.
  unsigned properties() const {
    unsigned out = 0;
    check(cmr_ref_properties(ref_, &out));
    return out;
  }
  std::string type_name() const {
    const char *out = nullptr;
    check(cmr_ref_type_name(ref_, &out));
    return out;
  }

  // Whether memory of one can be freed through the other.
  friend bool operator==(const resource_ref &a, const resource_ref &b) {
    bool out = false;
    check(cmr_ref_equal(a.ref_, b.ref_, &out));
    return out;
  }
  friend bool operator!=(const resource_ref &a, const resource_ref &b) { return !(a == b); }

  cmr_resource_ref c() const noexcept { return ref_; }

 private:
  cmr_resource_ref ref_;
};

// The resource set for the current device (RMM's get_current_device_resource_ref).
inline resource_ref current_device_resource() {
  cmr_resource_ref out{};
  check(cmr_get_current_device_resource_ref(&out));
  return out;
}

// Sets the current device's resource; the table keeps a share of it (and
// drops its share of the one it replaces).
inline void set_current_device_resource(resource_ref ref) { check(cmr_set_current_device_resource_ref(ref.c())); }

// Puts the current device's default resource back.
inline void reset_current_device_resource() { check(cmr_reset_current_device_resource_ref()); }

// An optional creation parameter: a value, or (default-constructed) the
// spec's default. `Optional` is the C struct (cmr_optional_size, cmr_optional_int).
template <class Optional>
class optional_arg {
 public:
  using value_type = decltype(Optional::value);
  optional_arg() noexcept : value_{} {}
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  optional_arg(T value) noexcept : value_{static_cast<value_type>(value), true} {} // NOLINT: implicit
  Optional c() const noexcept { return value_; }

 private:
  Optional value_;
};

namespace detail {
// What every owner class shares: one share of a resource of the C handle
// type `Handle`, given back by `Destroy`.
template <class Handle, cmr_status (*Destroy)(Handle *), cmr_resource_ref (*Ref)(Handle *)>
class owner {
 public:
  owner(const owner &) = delete;
  owner &operator=(const owner &) = delete;
  owner(owner &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  owner &operator=(owner &&other) noexcept {
    if (this != &other) {
      drop();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  // A destructor cannot throw: a failed destroy is left in
  // cmr_last_error_message. Call reset() to have it thrown.
  ~owner() { drop(); }

  // Gives the share back now, throwing if that fails; the owner is then empty.
  void reset() {
    Handle *handle = std::exchange(handle_, nullptr);
    if (handle != nullptr) check(Destroy(handle));
  }

  resource_ref ref() const noexcept { return Ref(handle_); }
  Handle *get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  // Hands the share to the caller, who destroys it through the C API.
  Handle *release() noexcept { return std::exchange(handle_, nullptr); }

 protected:
  owner() noexcept = default;
  explicit owner(Handle *handle) noexcept : handle_(handle) {}
  Handle **out() noexcept { return &handle_; }

 private:
  void drop() noexcept {
    if (handle_ != nullptr) (void)Destroy(std::exchange(handle_, nullptr));
  }
  Handle *handle_ = nullptr;
};
} // namespace detail

} // namespace cmr

#include <cmr/resources.hpp>

#endif // CMR_HPP
