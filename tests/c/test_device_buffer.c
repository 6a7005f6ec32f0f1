/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_device_buffer: RMM's device_buffer semantics over the current
 * device's resource (real device memory in the CUDA build), plus a foreign
 * resource to observe what the buffer asks of it. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_util.h"

static cmr_resource_ref mr; /* the current device's resource */
static cmr_stream stream;   /* a stream of the test's own */
static test_foreign foreign;

static void setup(void) {
  ck_assert_ok(cmr_get_current_device_resource_ref(&mr));
  ck_assert_ok(cmr_stream_create(&stream));
  foreign = (test_foreign){0};
}

static void teardown(void) { ck_assert_ok(cmr_stream_destroy(stream)); }

static cmr_resource_ref foreign_ref(void) { return test_foreign_ref(&foreign, &test_foreign_ops); }

/* A host pattern of `size` bytes that depends on `seed`. */
static unsigned char *pattern(size_t size, unsigned seed) {
  unsigned char *bytes = malloc(size == 0 ? 1 : size);
  ck_assert_ptr_nonnull(bytes);
  for (size_t i = 0; i < size; i++) {
    bytes[i] = (unsigned char)(i * 31u + seed);
  }
  return bytes;
}

/* The buffer's first `size` bytes equal `expected`. */
static void assert_contents(const cmr_device_buffer *buffer, const unsigned char *expected, size_t size) {
  unsigned char *copy = malloc(size == 0 ? 1 : size);
  ck_assert_ptr_nonnull(copy);
  ck_assert_ok(cmr_device_buffer_copy_to_host(buffer, copy, size));
  ck_assert_msg(memcmp(copy, expected, size) == 0, "contents differ");
  free(copy);
}

/* The buffer's first `size` bytes are pattern(size, seed) (a pattern's
 * first bytes are those of any longer one of the same seed). */
static void assert_holds_pattern(const cmr_device_buffer *buffer, size_t size, unsigned seed) {
  unsigned char *expected = pattern(size, seed);
  assert_contents(buffer, expected, size);
  free(expected);
}

CMR_TEST_OUT(size_of, size_t, 0, cmr_device_buffer_size, const cmr_device_buffer *)

CMR_TEST_OUT(capacity_of, size_t, 0, cmr_device_buffer_capacity, const cmr_device_buffer *)

CMR_TEST_OUT(data_of, void *, NULL, cmr_device_buffer_data, const cmr_device_buffer *)

CMR_TEST_OUT(stream_of, cmr_stream, NULL, cmr_device_buffer_stream, const cmr_device_buffer *)

/* The buffer's size and capacity are `size` and `capacity`. */
#define ck_assert_extent(buffer, size, capacity)      \
  do {                                                \
    ck_assert_uint_eq(size_of(buffer), size);         \
    ck_assert_uint_eq(capacity_of(buffer), capacity); \
  } while (0)

/* A buffer holding pattern(size, seed), on the test's stream. */
static cmr_device_buffer *filled(size_t size, unsigned seed, cmr_resource_ref resource) {
  unsigned char *bytes = pattern(size, seed);
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create_copy(bytes, size, stream, resource, &buffer));
  free(bytes);
  return buffer;
}

/* ---- creation ------------------------------------------------------------------------ */

START_TEST(create_reports_what_it_made) {
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(1000, stream, mr, &buffer));
  ck_assert_extent(buffer, 1000, 1000);
  ck_assert_ptr_nonnull(data_of(buffer));
  ck_assert_uint_eq((uintptr_t)data_of(buffer) % CMR_DEFAULT_ALIGNMENT, 0);
  ck_assert_ptr_eq(stream_of(buffer), stream);
  cmr_resource_ref resource = {0};
  ck_assert_ok(cmr_device_buffer_resource(buffer, &resource));
  ck_assert_ptr_eq(resource.self, mr.self);
  ck_assert_ptr_eq(resource.ops, mr.ops);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(an_empty_buffer_has_no_memory) {
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(0, stream, foreign_ref(), &buffer));
  ck_assert_extent(buffer, 0, 0);
  ck_assert_ptr_null(data_of(buffer));
  ck_assert_int_eq(foreign.allocations, 0);
  ck_assert_ok(cmr_device_buffer_copy_to_host(buffer, NULL, 0));
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_int_eq(foreign.deallocations, 0);
}
END_TEST

START_TEST(create_copy_copies) {
  cmr_device_buffer *buffer = filled(5000, 7, mr);
  assert_holds_pattern(buffer, 5000, 7);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));

  ck_assert_ok(cmr_device_buffer_create_copy(NULL, 0, stream, mr, &buffer));
  ck_assert_uint_eq(size_of(buffer), 0);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(create_refuses_bad_input) {
  cmr_device_buffer *buffer = (cmr_device_buffer *)&buffer;
  ck_assert_status(cmr_device_buffer_create(10, stream, mr, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_device_buffer_create(10, stream, (cmr_resource_ref){0}, &buffer), CMR_ERROR_INVALID_REF);
  ck_assert_ptr_null(buffer);
  ck_assert_message_has("cmr_device_buffer_create: ");
  ck_assert_status(cmr_device_buffer_create_copy(NULL, 10, stream, mr, &buffer), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("source");
  ck_assert_status(cmr_device_buffer_create_copy("x", 1, stream, mr, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_device_buffer_create(SIZE_MAX, stream, mr, &buffer), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_ptr_null(buffer);
  ck_assert_message_has("cmr_device_buffer_create(");
}
END_TEST

START_TEST(a_resource_that_misaligns_makes_no_buffer) {
  foreign.misalign = 64;
  cmr_device_buffer *buffer = NULL;
  ck_assert_status(cmr_device_buffer_create(10, stream, foreign_ref(), &buffer), CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_ptr_null(buffer);
  ck_assert_int_eq(foreign.allocations, foreign.deallocations);
}
END_TEST

/* An explicit alignment reaches the resource at creation and at every
 * reallocation, and its free; the default is CMR_DEFAULT_ALIGNMENT. */
START_TEST(an_explicit_alignment_is_kept_for_every_allocation) {
  cmr_device_buffer *buffer = NULL;
  size_t alignment = 0;
  ck_assert_ok(cmr_device_buffer_create_aligned(100, 4096, stream, foreign_ref(), &buffer));
  ck_assert_uint_eq(foreign.last_alignment, 4096);
  ck_assert_uint_eq((uintptr_t)data_of(buffer) % 4096, 0);
  ck_assert_ok(cmr_device_buffer_alignment(buffer, &alignment));
  ck_assert_uint_eq(alignment, 4096);
  ck_assert_ok(cmr_device_buffer_reserve(buffer, 5000, stream));
  ck_assert_uint_eq(foreign.last_alignment, 4096); /* the old memory's free, after the new allocation */
  ck_assert_uint_eq((uintptr_t)data_of(buffer) % 4096, 0);
  ck_assert_ok(cmr_device_buffer_shrink_to_fit(buffer, stream));
  ck_assert_uint_eq((uintptr_t)data_of(buffer) % 4096, 0);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_uint_eq(foreign.last_alignment, 4096);
  ck_assert_int_eq(foreign.allocations, foreign.deallocations);

  /* A copy at an alignment above the default, from a resource that honours
   * it (the device's own honours only the default). */
  cmr_aligned_resource *aligned = NULL;
  ck_assert_ok(cmr_aligned_resource_create(mr, CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, &aligned));
  unsigned char *expected = pattern(300, 9);
  ck_assert_ok(
      cmr_device_buffer_create_copy_aligned(expected, 300, 1024, stream, cmr_aligned_resource_ref(aligned), &buffer));
  ck_assert_uint_eq((uintptr_t)data_of(buffer) % 1024, 0);
  assert_contents(buffer, expected, 300);
  cmr_test_destroy(buffer, aligned);
  free(expected);

  ck_assert_ok(cmr_device_buffer_create_aligned(10, 8, stream, foreign_ref(), &buffer)); /* below the default */
  ck_assert_ok(cmr_device_buffer_alignment(buffer, &alignment));
  ck_assert_uint_eq(alignment, CMR_DEFAULT_ALIGNMENT);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_ok(cmr_device_buffer_create(10, stream, foreign_ref(), &buffer));
  ck_assert_ok(cmr_device_buffer_alignment(buffer, &alignment));
  ck_assert_uint_eq(alignment, CMR_DEFAULT_ALIGNMENT);
  ck_assert_uint_eq(foreign.last_alignment, CMR_DEFAULT_ALIGNMENT);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(a_bad_alignment_makes_no_buffer) {
  cmr_device_buffer *buffer = (cmr_device_buffer *)&buffer;
  ck_assert_status(cmr_device_buffer_create_aligned(10, 3000, stream, mr, &buffer), CMR_ERROR_BAD_ALIGNMENT);
  ck_assert_ptr_null(buffer);
  ck_assert_message_has("cmr_device_buffer_create_aligned");
  ck_assert_status(cmr_device_buffer_create_aligned(0, 0, stream, mr, &buffer), CMR_ERROR_BAD_ALIGNMENT);
  ck_assert_status(cmr_device_buffer_create_copy_aligned("abc", 3, 48, stream, mr, &buffer), CMR_ERROR_BAD_ALIGNMENT);
  ck_assert_message_has("cmr_device_buffer_create_copy_aligned");
  ck_assert_ptr_null(buffer);
  size_t alignment = 1;
  ck_assert_status(cmr_device_buffer_alignment(NULL, &alignment), CMR_ERROR_NULL_POINTER);
  ck_assert_uint_eq(alignment, 0);
}
END_TEST

/* Addresses no mapping backs are refused before a copy touches them (in
 * either build: an address in the first page is never device memory). */
START_TEST(unmapped_addresses_are_refused) {
  void *bad = (void *)(uintptr_t)16;
  cmr_device_buffer *buffer = (cmr_device_buffer *)&buffer;
  ck_assert_status(cmr_device_buffer_create_copy(bad, 8, stream, foreign_ref(), &buffer), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_null(buffer);
  ck_assert_message_has("source 0x10 (8 bytes)");
  ck_assert_int_eq(foreign.allocations, foreign.deallocations); /* the buffer made for it is gone */
  buffer = filled(64, 2, mr);
  ck_assert_status(cmr_device_buffer_copy_from(buffer, bad, 8), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_device_buffer_copy_from: source");
  ck_assert_status(cmr_device_buffer_copy_to_host(buffer, bad, 8), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_device_buffer_copy_to_host: destination");
  ck_assert_status(cmr_memcpy(data_of(buffer), bad, 8, stream), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_memcpy: source");
  ck_assert_status(cmr_memcpy(bad, data_of(buffer), 8, stream), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_memcpy: destination");
  /* A range that starts in mapped memory and runs into the unmapped end of the address space. */
  char host[16] = {0};
  ck_assert_status(cmr_memcpy((void *)(UINTPTR_MAX - 7), host, 16, stream), CMR_ERROR_INVALID_ARGUMENT);
  assert_holds_pattern(buffer, 64, 2); /* nothing was written */
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

/* A range whose middle page is not mapped is refused; its mapped pages alone are memory. */
START_TEST(a_hole_in_a_range_is_found) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *start = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(start, MAP_FAILED);
  ck_assert_int_eq(munmap(start + page, page), 0);
  memset(start, 7, page);
  cmr_device_buffer *buffer = NULL;
  ck_assert_status(cmr_device_buffer_create_copy(start, 3 * page, stream, mr, &buffer), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_device_buffer_create_copy(start + page - 1, 2, stream, mr, &buffer), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_null(buffer);
  ck_assert_ok(cmr_device_buffer_create_copy(start, page, stream, mr, &buffer));
  ck_assert_status(cmr_device_buffer_copy_to_host(buffer, start + page / 2, page), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ok(cmr_device_buffer_copy_to_host(buffer, start + 2 * page, page));
  ck_assert_int_eq(start[2 * page + page - 1], 7);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  munmap(start, page);
  munmap(start + 2 * page, page);
}
END_TEST

/* ---- size and capacity ---------------------------------------------------------------- */

START_TEST(resize_within_the_capacity_keeps_the_memory) {
  cmr_device_buffer *buffer = filled(1000, 1, mr);
  void *data = data_of(buffer);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 400, stream));
  ck_assert_extent(buffer, 400, 1000);
  ck_assert_ptr_eq(data_of(buffer), data);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 1000, stream));
  ck_assert_ptr_eq(data_of(buffer), data);
  assert_holds_pattern(buffer, 1000, 1); /* the bytes past 400 were not touched */
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(resize_past_the_capacity_reallocates_and_keeps_the_contents) {
  cmr_device_buffer *buffer = filled(1000, 2, mr);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 3000, stream));
  ck_assert_extent(buffer, 3000, 3000);
  assert_holds_pattern(buffer, 1000, 2);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 0, stream));
  ck_assert_extent(buffer, 0, 3000);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(reserve_grows_only_the_capacity) {
  cmr_device_buffer *buffer = filled(700, 3, mr);
  ck_assert_ok(cmr_device_buffer_reserve(buffer, 100, stream));
  ck_assert_uint_eq(capacity_of(buffer), 700);
  ck_assert_ok(cmr_device_buffer_reserve(buffer, 9000, stream));
  ck_assert_extent(buffer, 700, 9000);
  assert_holds_pattern(buffer, 700, 3);
  void *data = data_of(buffer);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 9000, stream)); /* fits now */
  ck_assert_ptr_eq(data_of(buffer), data);
  assert_holds_pattern(buffer, 700, 3);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(shrink_to_fit_reallocates_to_the_size) {
  cmr_device_buffer *buffer = filled(2000, 4, mr);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 600, stream));
  ck_assert_ok(cmr_device_buffer_shrink_to_fit(buffer, stream));
  ck_assert_extent(buffer, 600, 600);
  assert_holds_pattern(buffer, 600, 4);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 0, stream));
  ck_assert_ok(cmr_device_buffer_shrink_to_fit(buffer, stream));
  ck_assert_uint_eq(capacity_of(buffer), 0);
  ck_assert_ptr_null(data_of(buffer));
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(shrink_to_fit_of_a_fitting_buffer_does_nothing) {
  cmr_device_buffer *buffer = filled(64, 5, foreign_ref());
  ck_assert_ok(cmr_device_buffer_shrink_to_fit(buffer, stream));
  ck_assert_int_eq(foreign.allocations, 1);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(a_failed_reallocation_leaves_the_buffer_unchanged) {
  cmr_device_buffer *buffer = filled(500, 6, foreign_ref());
  void *data = data_of(buffer);
  cmr_stream other = cmr_test_stream();
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;

  ck_assert_status(cmr_device_buffer_resize(buffer, 5000, other), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("cmr_device_buffer_resize(5000 bytes)");
  ck_assert_status(cmr_device_buffer_reserve(buffer, 5000, other), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("cmr_device_buffer_reserve(5000 bytes)");
  ck_assert_ok(cmr_device_buffer_resize(buffer, 100, stream));
  ck_assert_status(cmr_device_buffer_shrink_to_fit(buffer, other), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("cmr_device_buffer_shrink_to_fit");

  ck_assert_ptr_eq(data_of(buffer), data);
  ck_assert_extent(buffer, 100, 500);
  ck_assert_ptr_eq(stream_of(buffer), stream);
  assert_holds_pattern(buffer, 100, 6);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_int_eq(foreign.deallocations, 1);
  ck_assert_ok(cmr_stream_destroy(other));
}
END_TEST

/* ---- streams ------------------------------------------------------------------------------ */

START_TEST(the_buffer_frees_on_its_stream) {
  cmr_stream other = cmr_test_stream();
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(300, stream, foreign_ref(), &buffer));
  ck_assert_ptr_eq(foreign.last_stream, stream);
  ck_assert_ok(cmr_device_buffer_set_stream(buffer, other));
  ck_assert_ptr_eq(stream_of(buffer), other);
  void *data = data_of(buffer);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_ptr_eq(foreign.last_stream, other);
  ck_assert_ptr_eq(foreign.last_freed, data);
  ck_assert_uint_eq(foreign.last_bytes, 300);
  ck_assert_ok(cmr_stream_destroy(other));
}
END_TEST

START_TEST(resizing_moves_the_buffer_to_the_new_stream) {
  cmr_stream other = cmr_test_stream();
  cmr_device_buffer *buffer = filled(100, 8, foreign_ref());
  void *old = data_of(buffer);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 50, other));
  ck_assert_ptr_eq(stream_of(buffer), other);
  ck_assert_ok(cmr_device_buffer_reserve(buffer, 1000, stream));
  ck_assert_ptr_eq(stream_of(buffer), stream);
  /* The old memory went back, whole, on the stream of the reallocation. */
  ck_assert_ptr_eq(foreign.last_freed, old);
  ck_assert_uint_eq(foreign.last_bytes, 100);
  ck_assert_ptr_eq(foreign.last_stream, stream);
  ck_assert_ok(cmr_device_buffer_shrink_to_fit(buffer, other));
  ck_assert_ptr_eq(stream_of(buffer), other);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_int_eq(foreign.allocations, foreign.deallocations);
  ck_assert_ok(cmr_stream_destroy(other));
}
END_TEST

/* ---- copies ------------------------------------------------------------------------------- */

START_TEST(copy_from_and_to_host) {
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(256, stream, mr, &buffer));
  unsigned char *bytes = pattern(256, 9);
  ck_assert_ok(cmr_device_buffer_copy_from(buffer, bytes, 256));
  assert_contents(buffer, bytes, 256);
  unsigned char *head = pattern(10, 200);
  ck_assert_ok(cmr_device_buffer_copy_from(buffer, head, 10));
  memcpy(bytes, head, 10);
  assert_contents(buffer, bytes, 256);
  free(head);
  free(bytes);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(copies_beyond_the_size_are_refused) {
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(1000, stream, mr, &buffer));
  ck_assert_ok(cmr_device_buffer_resize(buffer, 100, stream)); /* capacity stays 1000 */
  unsigned char host[200] = {0};
  ck_assert_status(cmr_device_buffer_copy_to_host(buffer, host, 101), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("101 bytes");
  ck_assert_message_has("cmr_device_buffer_copy_to_host: ");
  ck_assert_status(cmr_device_buffer_copy_from(buffer, host, 200), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("cmr_device_buffer_copy_from: ");
  ck_assert_status(cmr_device_buffer_copy_to_host(buffer, NULL, 10), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_device_buffer_copy_from(buffer, NULL, 10), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_device_buffer_copy_from(buffer, NULL, 0));
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

START_TEST(prefetch_checks_the_device) {
  cmr_device_buffer *buffer = filled(4096, 12, mr);
  int count = 0;
  ck_assert_ok(cmr_device_count(&count));
  ck_assert_ok(cmr_device_buffer_prefetch(buffer, -1, stream));
  ck_assert_ok(cmr_device_buffer_prefetch(buffer, 0, stream));
  ck_assert_status(cmr_device_buffer_prefetch(buffer, count, stream), CMR_ERROR_UNKNOWN_DEVICE);
  ck_assert_message_has("cmr_device_buffer_prefetch: device ");
  ck_assert_status(cmr_device_buffer_prefetch(NULL, 0, stream), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_stream_synchronize(stream));
  assert_holds_pattern(buffer, 4096, 12); /* prefetching moves memory, never its contents */
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

/* ---- handles that are not live ---------------------------------------------------------------- */

/* Every buffer function answers `expected` for `buffer` and names itself. */
static void assert_every_call_rejects(cmr_device_buffer *buffer, cmr_status expected) {
  void *data = NULL;
  size_t size = 0;
  cmr_stream got_stream = NULL;
  cmr_resource_ref resource = {0};
  char host[8] = {0};
  ck_assert_status(cmr_device_buffer_resize(buffer, 10, stream), expected);
  ck_assert_message_has("cmr_device_buffer_resize: ");
  ck_assert_status(cmr_device_buffer_reserve(buffer, 10, stream), expected);
  ck_assert_status(cmr_device_buffer_shrink_to_fit(buffer, stream), expected);
  ck_assert_status(cmr_device_buffer_set_stream(buffer, stream), expected);
  ck_assert_status(cmr_device_buffer_data(buffer, &data), expected);
  ck_assert_message_has("cmr_device_buffer_data: ");
  ck_assert_status(cmr_device_buffer_size(buffer, &size), expected);
  ck_assert_status(cmr_device_buffer_capacity(buffer, &size), expected);
  ck_assert_status(cmr_device_buffer_alignment(buffer, &size), expected);
  ck_assert_status(cmr_device_buffer_stream(buffer, &got_stream), expected);
  ck_assert_status(cmr_device_buffer_resource(buffer, &resource), expected);
  ck_assert_status(cmr_device_buffer_copy_to_host(buffer, host, 1), expected);
  ck_assert_status(cmr_device_buffer_copy_from(buffer, host, 1), expected);
  ck_assert_status(cmr_device_buffer_prefetch(buffer, 0, stream), expected);
  /* destroy(NULL) is a no-op, as free(NULL) is. */
  ck_assert_status(cmr_device_buffer_destroy(buffer), buffer == NULL ? CMR_SUCCESS : expected);
  if (buffer != NULL) ck_assert_message_has("cmr_device_buffer_destroy: ");
}

START_TEST(a_null_buffer_is_refused) { assert_every_call_rejects(NULL, CMR_ERROR_NULL_POINTER); }
END_TEST

/* Long after a buffer is gone, and after many objects took its slot's place,
 * its handle is still told apart: never read as freed memory. */
START_TEST(a_buffer_destroyed_long_ago_is_refused) {
  cmr_device_buffer *buffer = filled(10, 10, mr);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  for (int i = 0; i < 5000; i++) {
    cmr_device_buffer *other = filled(10, (unsigned char)i, mr);
    ck_assert_ok(cmr_device_buffer_destroy(other));
  }
  assert_every_call_rejects(buffer, CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(a_destroyed_buffer_is_refused) {
  cmr_device_buffer *buffer = filled(10, 10, foreign_ref());
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  assert_every_call_rejects(buffer, CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_message_has("already destroyed");
  ck_assert_int_eq(foreign.deallocations, 1);
}
END_TEST

/* Destroyed buffers' objects are reused (runtime/src/api/device_buffer.c keeps
 * some): waves of buffers, more at once than it keeps, over two resources
 * taking turns; each buffer reports its own resource, size and contents,
 * every allocation is freed once, and the first wave's handles stay dead. */
START_TEST(buffers_made_in_waves_keep_to_their_own) {
  enum { wave = 200 };
  cmr_device_buffer *first[wave], *second[wave];
  for (int i = 0; i < wave; i++) first[i] = filled(8 + (size_t)i, (unsigned)i, i % 2 ? foreign_ref() : mr);
  for (int i = 0; i < wave; i++) ck_assert_ok(cmr_device_buffer_destroy(first[i]));
  ck_assert_int_eq(foreign.allocations, wave / 2);
  ck_assert_int_eq(foreign.deallocations, wave / 2);
  for (int i = 0; i < wave; i++) second[i] = filled(16 + (size_t)i, (unsigned)i + 7, i % 2 ? mr : foreign_ref());
  for (int i = 0; i < wave; i++) {
    cmr_resource_ref resource;
    ck_assert_ok(cmr_device_buffer_resource(second[i], &resource));
    ck_assert_ptr_eq(resource.self, (i % 2 ? mr : foreign_ref()).self);
    ck_assert_uint_eq(size_of(second[i]), 16 + (size_t)i);
    unsigned char *expected = pattern(16 + (size_t)i, (unsigned)i + 7);
    assert_contents(second[i], expected, 16 + (size_t)i);
    free(expected);
    assert_every_call_rejects(first[i], CMR_ERROR_DESTROYED_HANDLE);
  }
  for (int i = 0; i < wave; i++) ck_assert_ok(cmr_device_buffer_destroy(second[i]));
  ck_assert_int_eq(foreign.allocations, wave);
  ck_assert_int_eq(foreign.deallocations, wave);
  ck_assert_uint_eq(foreign.outstanding, 0);
}
END_TEST

/* Threads that make buffers and destroy them, and others' (each thread
 * keeps the objects of those it destroyed, freed when it ends: the leak
 * checkers of CI's ASan and valgrind runs see any left). */
enum { thread_count = 4, per_thread = 50 };
static cmr_device_buffer *made_by[thread_count][per_thread];

static void *make_buffers(void *arg) {
  intptr_t t = (intptr_t)arg;
  for (int i = 0; i < per_thread; i++) {
    if (cmr_device_buffer_create(32, stream, mr, &made_by[t][i]) != CMR_SUCCESS) return (void *)1;
  }
  return NULL;
}

static void *destroy_buffers(void *arg) {
  intptr_t t = (intptr_t)arg;
  for (int i = 0; i < per_thread; i++) {
    if (cmr_device_buffer_destroy(made_by[t][i]) != CMR_SUCCESS) return (void *)1;
    cmr_device_buffer *own = NULL;
    if (cmr_device_buffer_create(64, stream, mr, &own) != CMR_SUCCESS || size_of(own) != 64 ||
        cmr_device_buffer_destroy(own) != CMR_SUCCESS) {
      return (void *)1;
    }
  }
  return NULL;
}

static void run_threads(void *(*work)(void *), bool shifted) {
  pthread_t threads[thread_count];
  for (intptr_t t = 0; t < thread_count; t++) {
    void *arg = (void *)(shifted ? (t + 1) % thread_count : t);
    ck_assert_int_eq(pthread_create(&threads[t], NULL, work, arg), 0);
  }
  for (int t = 0; t < thread_count; t++) {
    void *failed;
    ck_assert_int_eq(pthread_join(threads[t], &failed), 0);
    ck_assert_ptr_null(failed);
  }
}

START_TEST(threads_destroy_each_others_buffers) {
  run_threads(make_buffers, false);
  run_threads(destroy_buffers, true); /* each destroys another's */
  for (int t = 0; t < thread_count; t++) {
    for (int i = 0; i < per_thread; i++) {
      size_t size = 0;
      ck_assert_status(cmr_device_buffer_size(made_by[t][i], &size), CMR_ERROR_DESTROYED_HANDLE);
    }
  }
}
END_TEST

START_TEST(accessors_refuse_null_out_parameters) {
  cmr_device_buffer *buffer = filled(10, 11, mr);
  ck_assert_status(cmr_device_buffer_data(buffer, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_device_buffer_size(buffer, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_device_buffer_capacity(buffer, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_device_buffer_alignment(buffer, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_device_buffer_stream(buffer, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_device_buffer_resource(buffer, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("cmr_device_buffer_resource: out is NULL");
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

/* cmr_memcpy: a device buffer's memory to and from host memory, without the buffer's calls. */
START_TEST(memcpy_copies_between_any_pointers) {
  cmr_device_buffer *buffer = filled(3000, 5, mr);
  unsigned char *expected = pattern(3000, 5);
  unsigned char *host = calloc(3000, 1);
  ck_assert_ok(cmr_memcpy(host, data_of(buffer), 3000, stream));
  ck_assert_ok(cmr_stream_synchronize(stream));
  ck_assert_mem_eq(host, expected, 3000);
  memset(host, 0x5a, 1000);
  ck_assert_ok(cmr_memcpy((unsigned char *)data_of(buffer) + 1000, host, 1000, stream));
  memset(expected + 1000, 0x5a, 1000);
  assert_contents(buffer, expected, 3000);
  ck_assert_ok(cmr_memcpy(NULL, NULL, 0, stream));
  ck_assert_status(cmr_memcpy(NULL, host, 1, stream), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("cmr_memcpy: destination is NULL");
  ck_assert_status(cmr_memcpy(host, NULL, 1, stream), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("source");
  free(host);
  free(expected);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
}
END_TEST

static void device_buffer_cases(Suite *suite) {
  cmr_test_case(suite, "create", setup, teardown, create_reports_what_it_made, an_empty_buffer_has_no_memory,
                create_copy_copies, create_refuses_bad_input, a_resource_that_misaligns_makes_no_buffer,
                an_explicit_alignment_is_kept_for_every_allocation, a_bad_alignment_makes_no_buffer);
  cmr_test_case(suite, "capacity", setup, teardown, resize_within_the_capacity_keeps_the_memory,
                resize_past_the_capacity_reallocates_and_keeps_the_contents, reserve_grows_only_the_capacity,
                shrink_to_fit_reallocates_to_the_size, shrink_to_fit_of_a_fitting_buffer_does_nothing,
                a_failed_reallocation_leaves_the_buffer_unchanged);
  cmr_test_case(suite, "streams", setup, teardown, the_buffer_frees_on_its_stream,
                resizing_moves_the_buffer_to_the_new_stream, threads_destroy_each_others_buffers);
  cmr_test_case(suite, "copies", setup, teardown, copy_from_and_to_host, copies_beyond_the_size_are_refused,
                prefetch_checks_the_device, memcpy_copies_between_any_pointers, unmapped_addresses_are_refused,
                a_hole_in_a_range_is_found);
  cmr_test_case(suite, "handles", setup, teardown, a_null_buffer_is_refused, a_destroyed_buffer_is_refused,
                a_buffer_destroyed_long_ago_is_refused, accessors_refuse_null_out_parameters,
                buffers_made_in_waves_keep_to_their_own);
}

int main(void) { return cmr_test_main_suite("device_buffer", CMR_TEST_NEEDS_DEVICE, device_buffer_cases); }
