/* SPDX-License-Identifier: Apache-2.0 */
/* The pool's algorithm on the host build: coalescing, best fit, growth and
 * its limits, the stream-ordered paths (counted by the host backend), bad
 * frees, alignment, and full coalescing after many blocks. The upstream is
 * the tests' foreign resource, which counts what it hands out. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend.h"
#include "test_util.h"

enum { KiB = 1024, MiB = 1024 * 1024 };

static test_foreign upstream;
static cmr_pool_resource *pool;
static cmr_resource_ref ref;

static void make_growing_pool(cmr_optional_size initial, cmr_optional_size maximum, cmr_optional_size growth) {
  ck_assert_ok(cmr_pool_resource_create(test_foreign_ref(&upstream, &test_foreign_ops), initial, maximum, growth,
                                        CMR_POOL_CAPTURE_SERVE, &pool));
  ref = cmr_pool_resource_ref(pool);
}

static void make_pool(cmr_optional_size initial, cmr_optional_size maximum) {
  make_growing_pool(initial, maximum, CMR_SIZE_DEFAULT);
}

static void setup(void) { upstream = (test_foreign){.properties = CMR_PROPERTY_HOST_ACCESSIBLE}; }

static size_t pool_size(void);

static void destroy_pool_and_check_upstream(void) {
  size_t held = pool_size();
  ck_assert_ok(cmr_pool_resource_destroy(pool));
  ck_assert_uint_eq(upstream.outstanding, 0); /* every chunk went back */
  ck_assert(held == 0 || upstream.deallocations > 0);
}

/* The end of a test on two streams of its own. */
static void destroy_pool_and_streams(cmr_stream a, cmr_stream b) {
  destroy_pool_and_check_upstream();
  cmr_test_destroy(a, b);
}

static void *take(size_t bytes, cmr_stream stream) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, bytes, stream, &ptr));
  return ptr;
}

static void give(void *ptr, size_t bytes, cmr_stream stream) { ck_assert_ok(cmr_deallocate(ref, ptr, bytes, stream)); }

static size_t pool_size(void) {
  size_t size = 0;
  ck_assert_ok(cmr_pool_resource_pool_size(pool, &size));
  return size;
}

static size_t free_size(void) {
  size_t size = 0;
  ck_assert_ok(cmr_pool_resource_free_size(pool, &size));
  return size;
}

static size_t largest_free_block(void) {
  size_t size = SIZE_MAX;
  ck_assert_ok(cmr_pool_resource_largest_free_block(pool, &size));
  return size;
}

static cmr_backend_host_counts counts(void) {
  cmr_backend_host_counts now;
  cmr_backend_host_counts_read(&now);
  return now;
}

START_TEST(bad_arguments) {
  cmr_resource_ref up = test_foreign_ref(&upstream, &test_foreign_ops);
  cmr_pool_resource *bad = NULL;
  ck_assert_status(cmr_pool_resource_create(up, CMR_SIZE(2 * MiB), CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT,
                                            CMR_POOL_CAPTURE_SERVE, &bad),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("initial_pool_size 2097152 is larger than maximum_pool_size 1048576");
  ck_assert_status(
      cmr_pool_resource_create(up, CMR_SIZE(1000), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &bad),
      CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("initial_pool_size");
  ck_assert_status(
      cmr_pool_resource_create(up, CMR_SIZE(0), CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &bad),
      CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("maximum_pool_size");
  ck_assert_status(
      cmr_pool_resource_create(up, CMR_SIZE(0), CMR_SIZE(1 * MiB + 1), CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &bad),
      CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_pool_resource_create((cmr_resource_ref){0}, CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                            CMR_POOL_CAPTURE_SERVE, &bad),
                   CMR_ERROR_INVALID_REF);
  ck_assert_status(
      cmr_pool_resource_create(up, CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, NULL),
      CMR_ERROR_NULL_POINTER);
  ck_assert_ptr_null(bad);
  ck_assert_int_eq(upstream.allocations, 0);
}
END_TEST

START_TEST(initial_pool_size_taken_at_creation) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  ck_assert_int_eq(upstream.allocations, 1);
  ck_assert_uint_eq(upstream.outstanding, 1 * MiB);
  ck_assert_uint_eq(pool_size(), 1 * MiB);
  ck_assert_uint_eq(free_size(), 1 * MiB);
  void *ptr = take(1000, CMR_DEFAULT_STREAM);
  ck_assert_int_eq(upstream.allocations, 1); /* served from the chunk */
  ck_assert_uint_eq(free_size(), 1 * MiB - 1024);
  give(ptr, 1000, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(free_size(), 1 * MiB);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(upstream_failure_at_creation_is_reported) {
  upstream.limit = 512 * KiB;
  cmr_pool_resource *bad = NULL;
  ck_assert_status(cmr_pool_resource_create(test_foreign_ref(&upstream, &test_foreign_ops), CMR_SIZE(1 * MiB),
                                            CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &bad),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("initial_pool_size 1048576");
  ck_assert_uint_eq(upstream.outstanding, 0);
}
END_TEST

START_TEST(neighbours_coalesce) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE(1 * MiB));
  char *a = take(1 * KiB, CMR_DEFAULT_STREAM);
  char *b = take(1 * KiB, CMR_DEFAULT_STREAM);
  char *c = take(1 * KiB, CMR_DEFAULT_STREAM);
  char *rest = take(1 * MiB - 3 * KiB, CMR_DEFAULT_STREAM); /* the pool is full: it cannot grow */
  ck_assert_ptr_eq(b, a + 1 * KiB);
  ck_assert_ptr_eq(c, b + 1 * KiB);
  ck_assert_ptr_eq(rest, c + 1 * KiB);
  /* Kept whole as recent blocks, a and b merge once a request finds no
   * other fit: no out of memory while their bytes wait there. */
  give(b, 1 * KiB, CMR_DEFAULT_STREAM);
  give(a, 1 * KiB, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(take(2 * KiB, CMR_DEFAULT_STREAM), a);
  give(a, 2 * KiB, CMR_DEFAULT_STREAM);
  give(c, 1 * KiB, CMR_DEFAULT_STREAM);
  give(rest, 1 * MiB - 3 * KiB, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(take(1 * MiB, CMR_DEFAULT_STREAM), a); /* all one block again */
  give(a, 1 * MiB, CMR_DEFAULT_STREAM);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(a_freed_block_serves_the_next_request_of_its_size) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  char *a = take(1 * KiB, CMR_DEFAULT_STREAM);
  char *b = take(1 * KiB, CMR_DEFAULT_STREAM);
  give(a, 1 * KiB, CMR_DEFAULT_STREAM);
  give(b, 1 * KiB, CMR_DEFAULT_STREAM);
  /* b, the latest free, comes back as it is, though a and b and the rest
   * would merge into one block; then a, and nothing was split or merged. */
  size_t free_bytes = 0;
  ck_assert_ptr_eq(take(1 * KiB, CMR_DEFAULT_STREAM), b);
  ck_assert_ptr_eq(take(1 * KiB, CMR_DEFAULT_STREAM), a);
  ck_assert_ok(cmr_pool_resource_free_size(pool, &free_bytes));
  ck_assert_uint_eq(free_bytes, 1 * MiB - 2 * KiB);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(best_fit_is_chosen) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  size_t sizes[] = {2 * KiB, 1 * KiB, 3 * KiB, 1536};
  char *holes[4], *fences[4];
  for (int i = 0; i < 4; ++i) {
    holes[i] = take(sizes[i], CMR_DEFAULT_STREAM);
    fences[i] = take(256, CMR_DEFAULT_STREAM);
  }
  /* The rest taken, the holes are the only free memory once freed. */
  take(1 * MiB - 8 * KiB - 512, CMR_DEFAULT_STREAM);
  for (int i = 0; i < 4; ++i) give(holes[i], sizes[i], CMR_DEFAULT_STREAM);
  /* 1 KiB fits exactly in hole 1; 1.2 KiB best in hole 3 (1.5 KiB); 2 KiB in hole 0. */
  ck_assert_ptr_eq(take(1 * KiB, CMR_DEFAULT_STREAM), holes[1]);
  ck_assert_ptr_eq(take(1200, CMR_DEFAULT_STREAM), holes[3]);
  ck_assert_ptr_eq(take(2 * KiB, CMR_DEFAULT_STREAM), holes[0]);
  ck_assert_ptr_eq(take(2 * KiB, CMR_DEFAULT_STREAM), holes[2]); /* then the 3 KiB hole */
  destroy_pool_and_check_upstream();
  (void)fences;
}
END_TEST

START_TEST(growth_doubles_and_covers_the_request) {
  make_pool(CMR_SIZE(0), CMR_SIZE_DEFAULT);
  ck_assert_int_eq(upstream.allocations, 0);
  void *first = take(1000, CMR_DEFAULT_STREAM);
  ck_assert_int_eq(upstream.allocations, 1);
  ck_assert_uint_eq(upstream.last_bytes, 1 * KiB); /* the request, as nothing is held */
  void *big = take(64 * KiB, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(upstream.last_bytes, 64 * KiB); /* the request beats doubling */
  void *small = take(256, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(upstream.last_bytes, 65 * KiB); /* doubling: as much as is held */
  ck_assert_uint_eq(pool_size(), 130 * KiB);
  give(first, 1000, CMR_DEFAULT_STREAM);
  give(big, 64 * KiB, CMR_DEFAULT_STREAM);
  give(small, 256, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(free_size(), 130 * KiB);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(maximum_growth_caps_the_doubling) {
  make_growing_pool(CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_SIZE(64 * KiB));
  void *first = take(1000, CMR_DEFAULT_STREAM);
  void *big = take(96 * KiB, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(upstream.last_bytes, 96 * KiB); /* the request beats the cap */
  void *small = take(256, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(upstream.last_bytes, 64 * KiB); /* doubling would be 97 KiB */
  ck_assert_uint_eq(pool_size(), 161 * KiB);
  give(first, 1000, CMR_DEFAULT_STREAM);
  give(big, 96 * KiB, CMR_DEFAULT_STREAM);
  give(small, 256, CMR_DEFAULT_STREAM);
  ck_assert_status(
      cmr_pool_resource_create(test_foreign_ref(&upstream, &test_foreign_ops), CMR_SIZE(0), CMR_SIZE_DEFAULT,
                               CMR_SIZE(1000), CMR_POOL_CAPTURE_SERVE, &(cmr_pool_resource *){NULL}),
      CMR_ERROR_INVALID_ARGUMENT); /* not a multiple of 256 */
  ck_assert_message_has("maximum_growth");
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(largest_free_block_follows_the_free_blocks) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  ck_assert_uint_eq(largest_free_block(), 1 * MiB);
  void *a = take(256 * KiB, CMR_DEFAULT_STREAM);
  void *b = take(1000, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(largest_free_block(), 1 * MiB - 256 * KiB - 1 * KiB);
  give(a, 256 * KiB, CMR_DEFAULT_STREAM); /* b keeps it apart from the rest */
  ck_assert_uint_eq(largest_free_block(), 1 * MiB - 257 * KiB);
  give(b, 1000, CMR_DEFAULT_STREAM); /* all of it merges back */
  ck_assert_uint_eq(largest_free_block(), 1 * MiB);
  ck_assert_uint_eq(largest_free_block(), pool_size());
  /* As much as it says, it hands out without growing. */
  int grown = upstream.allocations;
  void *all = take(largest_free_block(), CMR_DEFAULT_STREAM);
  ck_assert_int_eq(upstream.allocations, grown);
  ck_assert_uint_eq(largest_free_block(), 0);
  give(all, 1 * MiB, CMR_DEFAULT_STREAM);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(release_returns_only_wholly_free_chunks) {
  make_pool(CMR_SIZE(0), CMR_SIZE_DEFAULT);
  void *x = take(1 * MiB, CMR_DEFAULT_STREAM);
  void *y = take(256, CMR_DEFAULT_STREAM); /* a second chunk, of 1 MiB */
  ck_assert_uint_eq(pool_size(), 2 * MiB);
  ck_assert_ok(cmr_pool_resource_release(pool)); /* both chunks in use: nothing goes */
  ck_assert_uint_eq(pool_size(), 2 * MiB);
  ck_assert_int_eq(upstream.deallocations, 0);
  give(x, 1 * MiB, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_pool_resource_release(pool));
  ck_assert_uint_eq(pool_size(), 1 * MiB);
  ck_assert_uint_eq(upstream.outstanding, 1 * MiB);
  ck_assert_ptr_eq(upstream.last_freed, x);
  ck_assert_uint_eq(free_size(), 1 * MiB - 256);
  give(y, 256, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_pool_resource_release(pool));
  ck_assert_uint_eq(pool_size(), 0);
  ck_assert_uint_eq(upstream.outstanding, 0);
  ck_assert_uint_eq(largest_free_block(), 0);
  void *again = take(1000, CMR_DEFAULT_STREAM); /* it grows again as new */
  ck_assert_uint_eq(pool_size(), 1 * KiB);
  give(again, 1000, CMR_DEFAULT_STREAM);
  destroy_pool_and_check_upstream();
}
END_TEST

/* A chunk freed on a stream goes back only after the host waits for that
 * stream's work: the event when the list records one, else the device. */
START_TEST(release_waits_for_the_work_on_freed_chunks) {
  make_pool(CMR_SIZE(0), CMR_SIZE_DEFAULT);
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  void *on_a = take(64 * KiB, a);
  give(on_a, 64 * KiB, a); /* a's list records no event yet */
  cmr_backend_host_counts before = counts();
  ck_assert_ok(cmr_pool_resource_release(pool));
  cmr_backend_host_counts after = counts();
  ck_assert_uint_eq(after.device_synchronizes, before.device_synchronizes + 1);
  ck_assert_uint_eq(pool_size(), 0);
  /* Shared (b took from a's list), a's frees record its event: the release
   * waits on that event alone. */
  on_a = take(64 * KiB, a);
  give(on_a, 64 * KiB, a);
  ck_assert_ptr_eq(take(64 * KiB, b), on_a);
  give(on_a, 64 * KiB, b);
  ck_assert_ptr_eq(take(64 * KiB, a), on_a);
  give(on_a, 64 * KiB, a);
  before = counts();
  ck_assert_ok(cmr_pool_resource_release(pool));
  after = counts();
  ck_assert_uint_eq(after.event_synchronizes, before.event_synchronizes + 1);
  ck_assert_uint_eq(after.device_synchronizes, before.device_synchronizes);
  ck_assert_uint_eq(pool_size(), 0);
  ck_assert_uint_eq(upstream.outstanding, 0);
  destroy_pool_and_streams(a, b);
}
END_TEST

/* A chunk whose pieces were freed on two streams, the rest of it never
 * taken from the default stream's list, goes back whole: release gathers
 * every list before it looks for whole chunks. */
START_TEST(release_gathers_pieces_freed_on_two_streams) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  void *on_a = take(256 * KiB, a), *on_b = take(256 * KiB, b);
  give(on_a, 256 * KiB, a);
  give(on_b, 256 * KiB, b);
  ck_assert_uint_eq(free_size(), 1 * MiB); /* in three lists: the default stream's, a's and b's */
  ck_assert_ok(cmr_pool_resource_release(pool));
  ck_assert_uint_eq(pool_size(), 0);
  ck_assert_uint_eq(free_size(), 0);
  ck_assert_uint_eq(upstream.outstanding, 0);
  /* The pool grows again as new, on either stream. */
  void *again = take(1000, b);
  ck_assert_uint_eq(pool_size(), 1 * KiB);
  give(again, 1000, a);
  destroy_pool_and_streams(a, b);
}
END_TEST

/* A piece allocated on a stream and freed on the default stream leaves its
 * chunk in two lists (the rest of it in the stream's): both chunks go back. */
START_TEST(release_gathers_a_piece_freed_on_the_default_stream) {
  make_pool(CMR_SIZE(0), CMR_SIZE_DEFAULT);
  cmr_stream a = cmr_test_stream();
  void *x = take(64 * KiB, a); /* a chunk of its own */
  void *y = take(1000, a);     /* a second chunk, of 64 KiB, its rest in a's list */
  ck_assert_uint_eq(pool_size(), 128 * KiB);
  give(y, 1000, CMR_DEFAULT_STREAM);
  give(x, 64 * KiB, a);
  ck_assert_ok(cmr_pool_resource_release(pool));
  ck_assert_uint_eq(pool_size(), 0);
  ck_assert_uint_eq(upstream.outstanding, 0);
  ck_assert_int_eq(upstream.deallocations, 2);
  destroy_pool_and_check_upstream();
  ck_assert_ok(cmr_stream_destroy(a));
}
END_TEST

/* What a chunk keeps while still partly in use stays: the pieces freed on
 * other streams are not lost by the gathering, and serve the next request
 * without growth. */
START_TEST(release_keeps_chunks_partly_in_use_and_their_free_pieces) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE(1 * MiB));
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  void *kept = take(256 * KiB, a), *on_b = take(256 * KiB, b);
  give(on_b, 256 * KiB, b);
  ck_assert_ok(cmr_pool_resource_release(pool));
  ck_assert_uint_eq(pool_size(), 1 * MiB);
  ck_assert_uint_eq(free_size(), 768 * KiB);
  ck_assert_uint_eq(largest_free_block(), 768 * KiB); /* b's piece merged with the rest */
  void *rest = take(768 * KiB, a);
  ck_assert_int_eq(upstream.allocations, 1);
  give(rest, 768 * KiB, a);
  give(kept, 256 * KiB, b);
  ck_assert_ok(cmr_pool_resource_release(pool));
  ck_assert_uint_eq(pool_size(), 0);
  ck_assert_uint_eq(upstream.outstanding, 0);
  destroy_pool_and_streams(a, b);
}
END_TEST

enum { freeing_threads = 8, pieces_per_thread = 16, piece_bytes = 16 * KiB };

typedef struct freeing_thread {
  cmr_stream stream;
  cmr_status failure;
} freeing_thread;

/* Allocates its pieces on its stream, then frees them there. */
static void *allocate_and_free_on_own_stream(void *arg) {
  freeing_thread *thread = arg;
  void *pieces[pieces_per_thread];
  for (int i = 0; i < pieces_per_thread && thread->failure == CMR_SUCCESS; ++i) {
    thread->failure = cmr_allocate(ref, piece_bytes, thread->stream, &pieces[i]);
  }
  for (int i = 0; i < pieces_per_thread && thread->failure == CMR_SUCCESS; ++i) {
    thread->failure = cmr_deallocate(ref, pieces[i], piece_bytes, thread->stream);
  }
  return NULL;
}

/* Threads on streams of their own cut their pieces from the one chunk and
 * free them there, at once: the chunk ends in nine lists, and still goes
 * back whole while the streams live. */
START_TEST(release_gathers_what_threads_freed_on_their_own_streams) {
  make_pool(CMR_SIZE(4 * MiB), CMR_SIZE(4 * MiB)); /* never grows: the upstream is not thread-safe */
  freeing_thread threads[freeing_threads];
  pthread_t ids[freeing_threads];
  for (int i = 0; i < freeing_threads; ++i) {
    threads[i] = (freeing_thread){cmr_test_stream(), CMR_SUCCESS};
    ck_assert_int_eq(pthread_create(&ids[i], NULL, allocate_and_free_on_own_stream, &threads[i]), 0);
  }
  for (int i = 0; i < freeing_threads; ++i) {
    ck_assert_int_eq(pthread_join(ids[i], NULL), 0);
    ck_assert_msg(threads[i].failure == CMR_SUCCESS, "thread %d: %s", i, cmr_status_string(threads[i].failure));
  }
  ck_assert_uint_eq(free_size(), 4 * MiB);
  ck_assert_ok(cmr_pool_resource_release(pool));
  ck_assert_uint_eq(pool_size(), 0);
  ck_assert_uint_eq(upstream.outstanding, 0);
  destroy_pool_and_check_upstream();
  for (int i = 0; i < freeing_threads; ++i) ck_assert_ok(cmr_stream_destroy(threads[i].stream));
}
END_TEST

START_TEST(growth_retries_smaller_when_the_upstream_is_short) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  upstream.limit = 1 * MiB + 300 * KiB;
  void *all = take(1 * MiB, CMR_DEFAULT_STREAM);
  void *more = take(256, CMR_DEFAULT_STREAM); /* 1 MiB and 512 KiB refused, 256 KiB given */
  ck_assert_uint_eq(upstream.last_bytes, 256 * KiB);
  ck_assert_uint_eq(pool_size(), 1 * MiB + 256 * KiB);
  give(all, 1 * MiB, CMR_DEFAULT_STREAM);
  give(more, 256, CMR_DEFAULT_STREAM);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(maximum_is_never_passed) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE(2 * MiB));
  void *a = take(1 * MiB, CMR_DEFAULT_STREAM);
  void *b = take(1 * MiB, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(pool_size(), 2 * MiB);
  void *c = (void *)1;
  ck_assert_status(cmr_allocate(ref, 256, CMR_DEFAULT_STREAM, &c), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("maximum of 2097152");
  ck_assert_ptr_null(c);
  ck_assert_uint_eq(pool_size(), 2 * MiB);
  give(a, 1 * MiB, CMR_DEFAULT_STREAM);
  c = take(256, CMR_DEFAULT_STREAM); /* usable again once memory is back */
  give(c, 256, CMR_DEFAULT_STREAM);
  give(b, 1 * MiB, CMR_DEFAULT_STREAM);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(upstream_exhausted_reports_out_of_memory) {
  make_pool(CMR_SIZE(0), CMR_SIZE_DEFAULT);
  upstream.limit = 1 * MiB;
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(ref, 2 * MiB, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("pool: no free block of 2097152 bytes");
  ck_assert_ptr_null(ptr);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(same_stream_reuses_at_once) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  cmr_stream a = cmr_test_stream();
  void *first = take(4 * KiB, a);
  give(first, 4 * KiB, a);
  cmr_backend_host_counts before = counts();
  ck_assert_ptr_eq(take(4 * KiB, a), first);
  cmr_backend_host_counts after = counts();
  ck_assert_uint_eq(after.stream_waits, before.stream_waits); /* no waiting on its own stream */
  ck_assert_uint_eq(after.device_synchronizes, before.device_synchronizes);
  give(first, 4 * KiB, a);
  destroy_pool_and_check_upstream();
  ck_assert_ok(cmr_stream_destroy(a));
}
END_TEST

START_TEST(other_stream_waits_on_the_event) {
  make_pool(CMR_SIZE(0), CMR_SIZE_DEFAULT);
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  void *on_a = take(64 * KiB, a);
  give(on_a, 64 * KiB, a); /* a's list is its own alone: no event */
  /* b's first take from a's list synchronizes the device and shares it... */
  cmr_backend_host_counts before = counts();
  ck_assert_ptr_eq(take(64 * KiB, b), on_a);
  cmr_backend_host_counts first = counts();
  ck_assert_uint_eq(first.device_synchronizes, before.device_synchronizes + 1);
  ck_assert_uint_eq(first.stream_waits, before.stream_waits);
  give(on_a, 64 * KiB, b);
  ck_assert_ptr_eq(take(64 * KiB, a), on_a); /* (b's list, taken the same way) */
  /* ...so from now on a's frees record its event, and b waits on it. */
  before = counts();
  give(on_a, 64 * KiB, a);
  cmr_backend_host_counts freed = counts();
  ck_assert_uint_eq(freed.event_records, before.event_records + 1);
  ck_assert_ptr_eq(take(64 * KiB, b), on_a);
  cmr_backend_host_counts taken = counts();
  ck_assert_uint_eq(taken.stream_waits, freed.stream_waits + 1);
  ck_assert_uint_eq(taken.device_synchronizes, freed.device_synchronizes);
  ck_assert_uint_eq(taken.event_records, freed.event_records); /* only the block moved, to the caller */
  ck_assert_int_eq(upstream.allocations, 1);
  give(on_a, 64 * KiB, b);
  destroy_pool_and_streams(a, b);
}
END_TEST

START_TEST(lone_stream_frees_are_ordered_by_a_device_synchronize) {
  make_pool(CMR_SIZE(0), CMR_SIZE_DEFAULT);
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  cmr_backend_host_counts before = counts();
  void *ptr = take(4 * KiB, a);
  give(ptr, 4 * KiB, a); /* a's list is the only one: no event is recorded */
  cmr_backend_host_counts freed = counts();
  ck_assert_uint_eq(freed.event_records, before.event_records);
  ck_assert_ptr_eq(take(4 * KiB, b), ptr);
  cmr_backend_host_counts taken = counts();
  ck_assert_uint_eq(taken.device_synchronizes, freed.device_synchronizes + 1);
  ck_assert_uint_eq(taken.stream_waits, freed.stream_waits);
  give(ptr, 4 * KiB, b);
  destroy_pool_and_streams(a, b);
}
END_TEST

START_TEST(exhaustion_gathers_every_stream_free_memory) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE(1 * MiB));
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  char *low = take(512 * KiB, a);
  char *high = take(512 * KiB, a);
  ck_assert_ptr_eq(high, low + 512 * KiB);
  give(low, 512 * KiB, a);
  give(high, 512 * KiB, b);
  /* Neither list alone holds 1 MiB and the maximum is reached: the pool
   * gathers b's half into a's list, where the halves coalesce (b's list
   * was never shared, so a synchronizes the device rather than waiting). */
  cmr_backend_host_counts before = counts();
  ck_assert_ptr_eq(take(1 * MiB, a), low);
  cmr_backend_host_counts after = counts();
  ck_assert_uint_eq(after.device_synchronizes, before.device_synchronizes + 1);
  ck_assert_int_eq(upstream.allocations, 1);
  give(low, 1 * MiB, a);
  destroy_pool_and_streams(a, b);
}
END_TEST

START_TEST(destroyed_stream_memory_stays_usable) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE(1 * MiB));
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  void *all = take(1 * MiB, a);
  give(all, 1 * MiB, a);
  ck_assert_ok(cmr_stream_destroy(a));
  ck_assert_ptr_eq(take(1 * MiB, b), all);
  give(all, 1 * MiB, b);
  destroy_pool_and_check_upstream();
  ck_assert_ok(cmr_stream_destroy(b));
}
END_TEST

/* A block handed out again from its stream's recent ones is remembered by
 * that list, not the block map: freed on another stream, twice, with the
 * wrong size, or after its list has more hand-outs than it remembers, it
 * is still told apart exactly as a block in the map. */
START_TEST(recent_hand_outs_are_taken_back_from_anywhere) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  enum { count = 40 }; /* more than a list remembers */
  void *blocks[count];
  for (int i = 0; i < count; ++i) blocks[i] = take(1 * KiB, a);
  for (int i = 0; i < count; ++i) give(blocks[i], 1 * KiB, a);
  for (int i = 0; i < count; ++i) blocks[i] = take(1 * KiB, a); /* the recent ones first */
  ck_assert_status(cmr_deallocate(ref, blocks[count - 1], 2 * KiB, b), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("allocated with 1024 bytes, not 2048");
  cmr_backend_host_counts before = counts();
  give(blocks[count - 1], 1 * KiB, b); /* freed on b: found in a's list */
  ck_assert_uint_eq(counts().stream_waits, before.stream_waits);
  ck_assert_status(cmr_deallocate(ref, blocks[count - 1], 1 * KiB, b), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_status(cmr_deallocate(ref, blocks[count - 1], 1 * KiB, a), CMR_ERROR_UNKNOWN_POINTER);
  for (int i = 0; i < count - 1; ++i) give(blocks[i], 1 * KiB, i % 2 ? a : b);
  ck_assert_status(cmr_deallocate(ref, blocks[0], 1 * KiB, a), CMR_ERROR_UNKNOWN_POINTER);
  size_t free_bytes = free_size();
  ck_assert_uint_eq(free_bytes, pool_size()); /* every block came back */
  destroy_pool_and_streams(a, b);
}
END_TEST

START_TEST(bad_frees_change_nothing) {
  make_pool(CMR_SIZE(1 * MiB), CMR_SIZE_DEFAULT);
  char *ptr = take(1000, CMR_DEFAULT_STREAM);
  ck_assert_status(cmr_deallocate(ref, ptr + 256, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("pool: ");
  ck_assert_message_has("was not allocated by this resource");
  int local;
  ck_assert_status(cmr_deallocate(ref, &local, 4, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_status(cmr_deallocate(ref, ptr, 4000, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("allocated with 1000 bytes, not 4000");
  ck_assert_status(cmr_deallocate(ref, ptr, 1001, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_deallocate(ref, ptr, 999, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_uint_eq(free_size(), 1 * MiB - 1024);
  give(ptr, 1000, CMR_DEFAULT_STREAM);
  ck_assert_status(cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER); /* twice */
  ck_assert_uint_eq(free_size(), 1 * MiB);
  destroy_pool_and_check_upstream();
}
END_TEST

START_TEST(large_alignments_are_honoured) {
  make_pool(CMR_SIZE(4 * MiB), CMR_SIZE_DEFAULT);
  void *small = take(256, CMR_DEFAULT_STREAM); /* so the free rest starts unaligned */
  for (size_t alignment = 512; alignment <= 1 * MiB; alignment *= 2) {
    void *ptr = NULL;
    ck_assert_ok(cmr_allocate_aligned(ref, 3000, alignment, CMR_DEFAULT_STREAM, &ptr));
    ck_assert_uint_eq((uintptr_t)ptr % alignment, 0);
    ck_assert_ok(cmr_deallocate_aligned(ref, ptr, 3000, alignment, CMR_DEFAULT_STREAM));
  }
  give(small, 256, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(free_size(), 4 * MiB); /* every prefix cut off went back and merged */
  ck_assert_int_eq(upstream.allocations, 1);
  destroy_pool_and_check_upstream();
}
END_TEST

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

START_TEST(ten_thousand_blocks_coalesce_back_into_one) {
  enum { count = 10000 };
  make_pool(CMR_SIZE(64 * MiB), CMR_SIZE_DEFAULT);
  static void *blocks[count];
  static size_t sizes[count];
  uint64_t rng = 42;
  for (int i = 0; i < count; ++i) {
    sizes[i] = 1 + next_random(&rng) % 4096;
    blocks[i] = take(sizes[i], CMR_DEFAULT_STREAM);
  }
  for (int i = count - 1; i > 0; --i) { /* free in shuffled order */
    int j = (int)(next_random(&rng) % (uint64_t)(i + 1));
    void *p = blocks[i];
    size_t s = sizes[i];
    blocks[i] = blocks[j], sizes[i] = sizes[j];
    blocks[j] = p, sizes[j] = s;
  }
  for (int i = 0; i < count; ++i) give(blocks[i], sizes[i], CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(free_size(), 64 * MiB);
  void *all = take(64 * MiB, CMR_DEFAULT_STREAM);
  ck_assert_int_eq(upstream.allocations, 1);
  give(all, 64 * MiB, CMR_DEFAULT_STREAM);
  destroy_pool_and_check_upstream();
}
END_TEST

static void pool_cases(Suite *suite) {
  cmr_test_case(suite, "pool", setup, NULL, bad_arguments, initial_pool_size_taken_at_creation,
                upstream_failure_at_creation_is_reported, neighbours_coalesce,
                a_freed_block_serves_the_next_request_of_its_size, best_fit_is_chosen,
                growth_doubles_and_covers_the_request, growth_retries_smaller_when_the_upstream_is_short,
                maximum_growth_caps_the_doubling, largest_free_block_follows_the_free_blocks,
                release_returns_only_wholly_free_chunks, release_waits_for_the_work_on_freed_chunks,
                release_gathers_pieces_freed_on_two_streams, release_gathers_a_piece_freed_on_the_default_stream,
                release_keeps_chunks_partly_in_use_and_their_free_pieces,
                release_gathers_what_threads_freed_on_their_own_streams, maximum_is_never_passed,
                upstream_exhausted_reports_out_of_memory, same_stream_reuses_at_once, other_stream_waits_on_the_event,
                lone_stream_frees_are_ordered_by_a_device_synchronize, exhaustion_gathers_every_stream_free_memory,
                destroyed_stream_memory_stays_usable, recent_hand_outs_are_taken_back_from_anywhere,
                bad_frees_change_nothing, large_alignments_are_honoured, ten_thousand_blocks_coalesce_back_into_one);
}

int main(void) { return cmr_test_main_suite("pool", CMR_TEST_ANY_MACHINE, pool_cases); }
