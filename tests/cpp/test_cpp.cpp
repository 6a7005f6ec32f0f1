// SPDX-License-Identifier: Apache-2.0
// The C++ layer (<cmr/cmr.hpp>, and <cmr/cccl.hpp> when CMR_TEST_CCCL is
// defined): owners, moves, errors, refs, and CCCL's cuda::mr both ways.
// Runs on the host build's memory; each case returns whether it held.
#include <cmr/cmr.hpp>
#ifdef CMR_TEST_CCCL
#include <cmr/cccl.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "expect.hpp"

#ifdef CMR_TEST_CCCL
// In a named namespace: CCCL finds its get_property only in unevaluated
// checks, which clang would call unneeded in an anonymous one.
namespace cmr_test {
// A cuda::mr resource of host memory that can be told to fail.
struct counting_host_resource {
  int live = 0;
  bool refuse = false;
  bool throw_logic_error = false;
  void *allocate(std::size_t bytes, std::size_t alignment) {
    if (throw_logic_error) throw std::logic_error("counting_host_resource was told to fail");
    if (refuse) throw std::bad_alloc();
    void *memory = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    if (memory == nullptr) throw std::bad_alloc();
    ++live;
    return memory;
  }
  void deallocate(void *ptr, std::size_t, std::size_t) noexcept {
    std::free(ptr);
    --live;
  }
  void *allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref) {
    return allocate(bytes, alignment);
  }
  void deallocate_async(void *ptr, std::size_t bytes, std::size_t alignment, cuda::stream_ref) {
    deallocate(ptr, bytes, alignment);
  }
  bool operator==(const counting_host_resource &other) const { return this == &other; }
  bool operator!=(const counting_host_resource &other) const { return this != &other; }
  friend void get_property(const counting_host_resource &, cuda::mr::host_accessible) noexcept {}
};
} // namespace cmr_test
using cmr_test::counting_host_resource;
#endif

namespace {

using cmr_test::failures;

// Runs `body`, expecting it to throw E; returns the exception's text.
template <class E, class Body>
std::string expect_throw(Body body, int line) {
  try {
    body();
  } catch (const E &caught) {
    return caught.what();
  } catch (const std::exception &other) {
    std::fprintf(stderr, "line %d: the wrong exception: %s\n", line, other.what());
    ++failures;
    return "";
  }
  std::fprintf(stderr, "line %d: nothing was thrown\n", line);
  ++failures;
  return "";
}

static_assert(!std::is_copy_constructible_v<cmr::pool_resource>, "owners do not copy");
static_assert(std::is_nothrow_move_constructible_v<cmr::pool_resource>, "owners move");
static_assert(std::is_nothrow_move_assignable_v<cmr::pool_resource>, "owners move");
static_assert(std::is_base_of_v<std::bad_alloc, cmr::out_of_memory>, "out of memory is a bad_alloc");

void owners_allocate_and_report_their_state() {
  cmr::system_resource system;
  cmr::pool_resource pool{system, 1 << 20}; // upstream, initial_pool_size; the rest defaulted
  EXPECT(pool.pool_size() == (1u << 20));
  void *block = pool.ref().allocate(1000);
  std::memset(block, 0x5a, 1000);
  EXPECT(pool.free_size() == (1u << 20) - 1024); // 1000 rounded up to the pool's 256
  pool.ref().deallocate(block, 1000);
  EXPECT(pool.free_size() == (1u << 20));
  EXPECT(pool.ref().type_name() == "pool");
  EXPECT(pool.ref() == cmr::resource_ref(pool));
  EXPECT(pool.ref() != system.ref());
}

void a_moved_owner_is_empty_and_the_resource_lives_on() {
  cmr::system_resource system;
  cmr::statistics_resource first{system};
  void *block = first.ref().allocate_async(512, CMR_DEFAULT_STREAM);
  cmr::statistics_resource second{std::move(first)};
  EXPECT(!first); // NOLINT: read after move on purpose
  EXPECT(second.bytes_current() == 512);
  second.ref().deallocate_async(block, 512, CMR_DEFAULT_STREAM);
  cmr::statistics_resource third{system};
  third = std::move(second); // third's own resource is given back here
  EXPECT(third.bytes_total() == 512);
  EXPECT(!second); // NOLINT
}

void an_upstream_outlives_its_owner_while_used() {
  // The pool keeps a share of its upstream (ownership rule 1), so the
  // upstream's owner may go first.
  std::vector<cmr::pool_resource> pools;
  {
    cmr::system_resource system;
    pools.emplace_back(system, 1 << 16);
  }
  void *block = pools[0].ref().allocate(100);
  pools[0].ref().deallocate(block, 100);
  pools[0].reset();
  EXPECT(!pools[0]);
}

void failures_throw_with_cmr_status_and_message() {
  cmr::system_resource system;
  std::string text = expect_throw<cmr::error>([&] { cmr::pool_resource bad{system, 1000, 500}; }, __LINE__);
  EXPECT(text.find("pool") != std::string::npos);
  try {
    cmr::pool_resource bad{system, 1000, 500}; // a maximum below the initial size
  } catch (const cmr::error &caught) {
    EXPECT(caught.status() == CMR_ERROR_INVALID_ARGUMENT);
  }
  cmr::limiting_resource limited{system, 4096};
  void *held = limited.ref().allocate(4096);
  text = expect_throw<std::bad_alloc>([&] { (void)limited.ref().allocate(1); }, __LINE__);
  EXPECT(text.find("limiting") != std::string::npos);
  limited.ref().deallocate(held, 4096);
  // A free of what was never allocated: cmr's status, not a crash.
  char local[256];
  try {
    cmr::pool_resource pool{system, 1 << 16};
    pool.ref().deallocate(local, sizeof local);
    EXPECT(!"a free of foreign memory was accepted");
  } catch (const cmr::error &caught) {
    EXPECT(caught.status() == CMR_ERROR_UNKNOWN_POINTER);
  }
}

void from_ref_is_a_share_of_its_own() {
  cmr::system_resource system;
  cmr::pool_resource pool{system, 1 << 16};
  cmr::pool_resource again = cmr::pool_resource::from_ref(pool.ref());
  pool.reset();
  EXPECT(again.pool_size() == (1u << 16)); // still alive through the other share
  expect_throw<cmr::error>([&] { (void)cmr::statistics_resource::from_ref(again.ref()); }, __LINE__);
}

void the_current_device_resource_is_set_and_read() {
  cmr::resource_ref system_ref = cmr_resource_ref{};
  {
    cmr::system_resource system;
    system_ref = system.ref();
    cmr::set_current_device_resource(system);
  }
  // The table's share keeps it alive after its owner went.
  EXPECT(cmr::current_device_resource().c().self == system_ref.c().self);
  EXPECT(cmr::current_device_resource().type_name() == "system");
  cmr::reset_current_device_resource();
  expect_throw<cmr::error>([&] { (void)system_ref.type_name(); }, __LINE__); // gone with the table's share
}

void the_other_handles_are_owners_too() {
  static_assert(!std::is_copy_constructible_v<cmr::device_buffer>, "handles do not copy");
  cmr::stack stack{"pool(system, initial_pool_size=1MiB)"};
  EXPECT(stack.expression().find("pool(system") == 0);
  cmr::stream stream;
  {
    const char text[] = "through a device buffer";
    cmr::device_buffer buffer{text, sizeof text, stream, stack.ref()};
    EXPECT(buffer.size() == sizeof text);
    buffer.resize(4096, stream);
    EXPECT(buffer.capacity() >= 4096);
    char back[sizeof text] = {};
    buffer.copy_to_host(back, sizeof back);
    EXPECT(std::strcmp(back, text) == 0);
    expect_throw<cmr::error>([&] { buffer.copy_to_host(back, 8192); }, __LINE__); // past its size
  }
  stream.synchronize();
  cmr::stream_pool streams{4};
  EXPECT(streams.size() == 4);
  EXPECT(streams.get_stream(1) == streams.get_stream(5));
  expect_throw<cmr::error>([] { cmr::stack bad{"pool(nothing)"}; }, __LINE__);
}

#ifdef CMR_TEST_CCCL
// A consumer written for CCCL, knowing nothing of cmr.
std::size_t fill_through(cuda::mr::async_resource_ref<cuda::mr::host_accessible> resource, cuda::stream_ref stream) {
  auto *bytes = static_cast<unsigned char *>(resource.allocate_async(4096, 256, stream));
  std::memset(bytes, 7, 4096);
  std::size_t sum = 0;
  for (int i = 0; i < 4096; ++i) sum += bytes[i];
  resource.deallocate_async(bytes, 4096, 256, stream);
  return sum;
}

void a_cmr_stack_serves_a_cuda_mr_consumer() {
  cmr::system_resource system;
  cmr::statistics_resource counted{system};
  cmr::pool_resource pool{counted, 1 << 20};
  cmr::host_ref host{pool};
  EXPECT(fill_through(host, cuda::stream_ref{static_cast<cudaStream_t>(CMR_DEFAULT_STREAM)}) == 7u * 4096);
  EXPECT(counted.allocations_total() == 1); // the pool's one chunk: the block came from cmr's pool
  EXPECT(pool.free_size() == (1u << 20));
}

void a_ref_lacking_a_property_is_refused() {
  cmr::system_resource system;
  unsigned properties = system.ref().properties();
  if ((properties & CMR_PROPERTY_DEVICE_ACCESSIBLE) == 0) {
    try {
      cmr::device_ref device{system};
      EXPECT(!"a host-only resource was taken as device accessible");
    } catch (const cmr::error &caught) {
      EXPECT(caught.status() == CMR_ERROR_PROPERTY_MISSING);
    }
  } else {
    cmr::device_ref device{system}; // the host build's system memory stands in for the device's
    EXPECT(device.ref() == system.ref());
  }
}

void a_cuda_mr_resource_is_a_cmr_upstream() {
  counting_host_resource host;
  cmr::from_cuda_mr<counting_host_resource> upstream{host};
  EXPECT(upstream.ref().properties() == CMR_PROPERTY_HOST_ACCESSIBLE);
  {
    cmr::pool_resource pool{upstream.ref(), 1 << 16};
    EXPECT(host.live == 1);
    void *block = pool.ref().allocate_async(1000, CMR_DEFAULT_STREAM);
    pool.ref().deallocate_async(block, 1000, CMR_DEFAULT_STREAM);
    // Growth past the chunk asks the upstream, which refuses: its bad_alloc arrives.
    host.refuse = true;
    expect_throw<std::bad_alloc>([&] { (void)pool.ref().allocate(1 << 17); }, __LINE__);
    host.throw_logic_error = true;
    std::string text = expect_throw<std::logic_error>([&] { (void)pool.ref().allocate(1 << 17); }, __LINE__);
    EXPECT(text == "counting_host_resource was told to fail");
    host.refuse = host.throw_logic_error = false;
  }
  EXPECT(host.live == 0); // the pool gave its chunk back
}
#endif

} // namespace

int main() {
  // The CUDA build's current-device table needs a device: the whole layer
  // runs in the host build, and here only where a device is.
  int devices = 0;
  if (cmr_built_with_cuda() && (cmr_device_count(&devices) != CMR_SUCCESS || devices == 0)) {
    std::printf("cpp.layer: a CUDA build without a device: skipped\n");
    return 77;
  }
  owners_allocate_and_report_their_state();
  a_moved_owner_is_empty_and_the_resource_lives_on();
  an_upstream_outlives_its_owner_while_used();
  failures_throw_with_cmr_status_and_message();
  from_ref_is_a_share_of_its_own();
  the_current_device_resource_is_set_and_read();
  the_other_handles_are_owners_too();
#ifdef CMR_TEST_CCCL
  a_cmr_stack_serves_a_cuda_mr_consumer();
  a_ref_lacking_a_property_is_refused();
  a_cuda_mr_resource_is_a_cmr_upstream();
#endif
  return cmr_test::finish("cpp",
#ifdef CMR_TEST_CCCL
                          " (CCCL's cuda::mr included)"
#else
                          " (without CCCL's headers: cuda::mr not tested)"
#endif
  );
}
