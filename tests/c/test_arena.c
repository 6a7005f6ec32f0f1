/* SPDX-License-Identifier: Apache-2.0 */
/* The arena resource beyond the conformance battery: its parameters, first
 * fit within superblocks, superblocks taken from the global arena and
 * reused, defragmentation, out of memory and the dump, bad frees, the
 * upstream memory given back, per-thread arenas and destroyed streams.
 *
 * The arena's upstream is the tests' foreign resource, which counts the
 * bytes it has handed out, so every test can check that destroy gives all of
 * them back. The host backend counts event and synchronize calls, which shows
 * where the host waited. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "backend.h"
#include "test_util.h"

#define MiB ((size_t)1 << 20)

/* ---- fixture ----------------------------------------------------------------------------- */

typedef struct fixture {
  test_foreign upstream; /* counts the bytes it has handed out */
  cmr_arena_resource *arena;
  cmr_resource_ref ref;
} fixture;

static cmr_resource_ref counted_upstream(fixture *f) {
  f->upstream.properties = CMR_PROPERTY_HOST_ACCESSIBLE;
  return test_foreign_ref(&f->upstream, &test_foreign_ops);
}

static void make_arena(fixture *f, size_t arena_size, bool dump_log_on_failure, const char *dump_path) {
  *f = (fixture){.arena = NULL};
  ck_assert_ok(cmr_arena_resource_create(counted_upstream(f), CMR_SIZE(arena_size), dump_log_on_failure, dump_path,
                                         CMR_ARENA_CAPTURE_SERVE, &f->arena));
  f->ref = cmr_arena_resource_ref(f->arena);
  ck_assert_uint_eq(f->upstream.outstanding, arena_size);
}

/* Every upstream byte must be back once the arena is gone. */
static void destroy_arena(fixture *f) {
  ck_assert_ok(cmr_arena_resource_destroy(f->arena));
  ck_assert_uint_eq(f->upstream.outstanding, 0);
}

static void *take(fixture *f, size_t bytes, cmr_stream stream) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(f->ref, bytes, stream, &ptr));
  ck_assert_ptr_nonnull(ptr);
  return ptr;
}

static void give(fixture *f, void *ptr, size_t bytes, cmr_stream stream) {
  ck_assert_ok(cmr_deallocate(f->ref, ptr, bytes, stream));
}

static size_t global_free(fixture *f) {
  size_t bytes = 0;
  ck_assert_ok(cmr_arena_resource_global_free_bytes(f->arena, &bytes));
  return bytes;
}

static size_t superblocks(fixture *f) {
  size_t count = 0;
  ck_assert_ok(cmr_arena_resource_superblock_count(f->arena, &count));
  return count;
}

static cmr_stream new_stream(void) {
  cmr_stream stream = NULL;
  ck_assert_ok(cmr_stream_create(&stream));
  return stream;
}

/* Times the host has waited for, or made a stream wait for, other work. */
#if !CMR_WITH_CUDA
static unsigned long host_waits(void) {
  cmr_backend_host_counts counts;
  cmr_backend_host_counts_read(&counts);
  return counts.event_synchronizes + counts.device_synchronizes;
}

static unsigned long orderings(void) {
  cmr_backend_host_counts counts;
  cmr_backend_host_counts_read(&counts);
  return counts.stream_waits + counts.event_synchronizes + counts.device_synchronizes;
}
#endif

/* ---- dump files ---------------------------------------------------------------------------- */

/* A new empty file for dumps; `path` receives its name. */
static void temporary_dump_file(char path[64]) {
  snprintf(path, 64, "/tmp/cmr_arena_dump_XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

/* The file's whole content (at most 64 KiB), for strstr. */
static char *read_dump(const char *path) {
  static char text[1 << 16];
  FILE *file = fopen(path, "r");
  ck_assert_ptr_nonnull(file);
  size_t length = fread(text, 1, sizeof text - 1, file);
  text[length] = '\0';
  fclose(file);
  return text;
}

#define ck_assert_dump_has(text, part) \
  ck_assert_msg(strstr((text), (part)) != NULL, "the dump does not say \"%s\":\n%s", (part), (text))

/* ---- parameters ------------------------------------------------------------------------------ */

START_TEST(arena_size_defaults_to_half_of_free_memory) {
  fixture f = {.upstream = {.fail_with = CMR_ERROR_OUT_OF_MEMORY}};
  size_t free_bytes = 0, total_bytes = 0;
  ck_assert_ok(cmr_device_memory_info(&free_bytes, &total_bytes));
  /* The upstream refuses, so the default is seen without taking it. */
  ck_assert_status(
      cmr_arena_resource_create(counted_upstream(&f), CMR_SIZE_DEFAULT, false, "", CMR_ARENA_CAPTURE_SERVE, &f.arena),
      CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("taking arena_size");
  ck_assert_ptr_null(f.arena);
  ck_assert_int_eq(f.upstream.allocations, 1);
  ck_assert_uint_gt(f.upstream.last_bytes, 0);
  ck_assert_uint_eq(f.upstream.last_bytes % 256, 0);
  ck_assert_uint_le(f.upstream.last_bytes, total_bytes / 2);
  ck_assert_uint_eq(f.upstream.outstanding, 0);
}
END_TEST

START_TEST(arena_size_minimum_and_multiple) {
  fixture f = {.arena = NULL};
  cmr_resource_ref upstream = counted_upstream(&f);
  cmr_arena_resource *arena = (cmr_arena_resource *)&arena;
  ck_assert_status(cmr_arena_resource_create(upstream, CMR_SIZE(MiB - 256), false, "", CMR_ARENA_CAPTURE_SERVE, &arena),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("arena_size 1048320 is below the minimum 1048576");
  ck_assert_ptr_null(arena);
  ck_assert_status(cmr_arena_resource_create(upstream, CMR_SIZE(0), false, "", CMR_ARENA_CAPTURE_SERVE, &arena),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("arena_size 0 is below the minimum");
  ck_assert_status(cmr_arena_resource_create(upstream, CMR_SIZE(MiB + 1), false, "", CMR_ARENA_CAPTURE_SERVE, &arena),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("arena_size 1048577 is not a multiple of 256");
  ck_assert_int_eq(f.upstream.allocations, 0);
  ck_assert_ok(cmr_arena_resource_create(upstream, CMR_SIZE(MiB), false, "", CMR_ARENA_CAPTURE_SERVE, &arena));
  size_t size = 0;
  ck_assert_ok(cmr_arena_resource_arena_size(arena, &size));
  ck_assert_uint_eq(size, MiB);
  ck_assert_uint_eq(f.upstream.outstanding, MiB);
  ck_assert_ok(cmr_arena_resource_destroy(arena));
  ck_assert_uint_eq(f.upstream.outstanding, 0);
}
END_TEST

START_TEST(other_bad_arguments) {
  fixture f = {.arena = NULL};
  cmr_resource_ref upstream = counted_upstream(&f);
  cmr_arena_resource *arena = NULL;
  ck_assert_status(cmr_arena_resource_create(upstream, CMR_SIZE(MiB), false, NULL, CMR_ARENA_CAPTURE_SERVE, &arena),
                   CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("dump_path is NULL");
  ck_assert_status(cmr_arena_resource_create(upstream, CMR_SIZE(MiB), true, "/nonexistent/cmr/dump.log",
                                             CMR_ARENA_CAPTURE_SERVE, &arena),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("dump_path \"/nonexistent/cmr/dump.log\" cannot be opened");
  ck_assert_status(
      cmr_arena_resource_create((cmr_resource_ref){0}, CMR_SIZE(MiB), false, "", CMR_ARENA_CAPTURE_SERVE, &arena),
      CMR_ERROR_INVALID_REF);
  ck_assert_status(cmr_arena_resource_create(upstream, CMR_SIZE(MiB), false, "", CMR_ARENA_CAPTURE_SERVE, NULL),
                   CMR_ERROR_NULL_POINTER);
  ck_assert_int_eq(f.upstream.allocations, 0);
  f.upstream.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  ck_assert_status(cmr_arena_resource_create(upstream, CMR_SIZE(4 * MiB), false, "", CMR_ARENA_CAPTURE_SERVE, &arena),
                   CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("taking arena_size 4194304 bytes: arena: growing by 4194304 bytes");
  ck_assert_uint_eq(f.upstream.outstanding, 0);
}
END_TEST

/* ---- superblocks ------------------------------------------------------------------------------- */

static size_t largest_free_block(fixture *f) {
  size_t size = SIZE_MAX;
  ck_assert_ok(cmr_arena_resource_largest_free_block(f->arena, &size));
  return size;
}

/* The global arena's ranges count as much as the streams' arenas. */
START_TEST(largest_free_block_covers_the_global_arena_and_the_superblocks) {
  fixture f;
  make_arena(&f, 4 * MiB, false, "");
  ck_assert_uint_eq(largest_free_block(&f), 4 * MiB);
  void *small = take(&f, 1000, CMR_DEFAULT_STREAM); /* cuts a 1 MiB superblock */
  ck_assert_uint_eq(largest_free_block(&f), 3 * MiB);
  give(&f, small, 1000, CMR_DEFAULT_STREAM);
  void *large = take(&f, 2 * MiB + MiB / 2, CMR_DEFAULT_STREAM); /* its own superblock, from the global arena */
  ck_assert_uint_eq(largest_free_block(&f), 1 * MiB);            /* the first superblock, whole again */
  void *rest = take(&f, largest_free_block(&f), CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(largest_free_block(&f), MiB / 2); /* the global arena's last range */
  give(&f, rest, 1 * MiB, CMR_DEFAULT_STREAM);
  give(&f, large, 2 * MiB + MiB / 2, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(largest_free_block(&f), 2 * MiB + MiB / 2);
  destroy_arena(&f);
}
END_TEST

START_TEST(first_fit_within_a_superblock) {
  fixture f;
  make_arena(&f, 8 * MiB, false, "");
  char *a = take(&f, 2048, CMR_DEFAULT_STREAM);
  char *b = take(&f, 1024, CMR_DEFAULT_STREAM);
  char *c = take(&f, 1024, CMR_DEFAULT_STREAM);
  char *d = take(&f, 1024, CMR_DEFAULT_STREAM);
  /* Carved one after the other from the start of one superblock. */
  ck_assert_ptr_eq(b, a + 2048);
  ck_assert_ptr_eq(c, b + 1024);
  ck_assert_ptr_eq(d, c + 1024);
  ck_assert_uint_eq(superblocks(&f), 1);
  give(&f, a, 2048, CMR_DEFAULT_STREAM);
  give(&f, c, 1024, CMR_DEFAULT_STREAM);
  /* c, freed last with the very size, is reused whole; then a's hole
   * comes first, before the superblock's rest. */
  ck_assert_ptr_eq(take(&f, 1024, CMR_DEFAULT_STREAM), c);
  ck_assert_ptr_eq(take(&f, 1024, CMR_DEFAULT_STREAM), a);
  ck_assert_ptr_eq(take(&f, 1000, CMR_DEFAULT_STREAM), a + 1024);
  ck_assert_uint_eq(superblocks(&f), 1);
  destroy_arena(&f);
}
END_TEST

START_TEST(superblock_taken_from_the_global_arena_then_reused) {
  fixture f;
  make_arena(&f, 8 * MiB, false, "");
  ck_assert_uint_eq(global_free(&f), 8 * MiB);
  ck_assert_uint_eq(superblocks(&f), 0);
  void *first = take(&f, 256, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(global_free(&f), 7 * MiB);
  ck_assert_uint_eq(superblocks(&f), 1);
  give(&f, first, 256, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(take(&f, 4096, CMR_DEFAULT_STREAM), first);
  void *rest = take(&f, MiB - 4096, CMR_DEFAULT_STREAM); /* all the superblock has left */
  ck_assert_ptr_eq(rest, (char *)first + 4096);
  ck_assert_uint_eq(global_free(&f), 7 * MiB);
  /* Full: the next request takes a second superblock, right after the first. */
  ck_assert_ptr_eq(take(&f, 256, CMR_DEFAULT_STREAM), (char *)first + MiB);
  ck_assert_uint_eq(global_free(&f), 6 * MiB);
  ck_assert_uint_eq(superblocks(&f), 2);
  destroy_arena(&f);
}
END_TEST

START_TEST(large_request_gets_a_superblock_of_its_size) {
  fixture f;
  make_arena(&f, 8 * MiB, false, "");
  size_t large = 3 * MiB + 1000, rounded = 3 * MiB + 1024;
  void *ptr = take(&f, large, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(global_free(&f), 8 * MiB - rounded);
  ck_assert_uint_eq(superblocks(&f), 1);
  give(&f, ptr, large, CMR_DEFAULT_STREAM);
  /* It stays in the stream's arena, whole, and serves the same size again. */
  ck_assert_uint_eq(superblocks(&f), 1);
  ck_assert_ptr_eq(take(&f, large, CMR_DEFAULT_STREAM), ptr);
  ck_assert_uint_eq(global_free(&f), 8 * MiB - rounded);
  destroy_arena(&f);
}
END_TEST

START_TEST(large_alignment_is_honoured) {
  fixture f;
  make_arena(&f, 8 * MiB, false, "");
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_aligned(f.ref, 1000, 2 * MiB, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_uint_eq((uintptr_t)ptr % (2 * MiB), 0);
  /* Its superblock had room for the block wherever it began. */
  ck_assert_uint_eq(global_free(&f), 8 * MiB - (2 * MiB + 1024 - 256));
  ck_assert_ok(cmr_deallocate_aligned(f.ref, ptr, 1000, 2 * MiB, CMR_DEFAULT_STREAM));
  /* Not 1000 again: the block just freed, kept whole, may happen to lie at
   * an 8 MiB boundary and would serve it. */
  ck_assert_status(cmr_allocate_aligned(f.ref, 4096, 8 * MiB, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("more than the arena_size");
  destroy_arena(&f);
}
END_TEST

/* ---- defragmentation and out of memory ----------------------------------------------------------- */

START_TEST(defragment_returns_whole_superblocks_to_the_global_arena) {
  fixture f;
  make_arena(&f, 4 * MiB, false, "");
  cmr_stream a = new_stream(), b = new_stream();
  char *blocks[4];
  for (int i = 0; i < 4; i++) blocks[i] = take(&f, MiB, a);
  ck_assert_uint_eq(global_free(&f), 0);
  ck_assert_uint_eq(superblocks(&f), 4);
  for (int i = 0; i < 4; i++) give(&f, blocks[i], MiB, a);
#if !CMR_WITH_CUDA
  unsigned long waits = host_waits();
#endif
  /* a's arena holds 4 MiB, but in superblocks of 1 MiB that never merge;
   * only the global arena can join them. */
  char *joined = take(&f, 2 * MiB, b);
#if !CMR_WITH_CUDA
  ck_assert_uint_gt(host_waits(), waits); /* before handing a's memory to b */
#endif
  ck_assert_ptr_eq(joined, blocks[0]);
  ck_assert_uint_eq(global_free(&f), 2 * MiB);
  ck_assert_uint_eq(superblocks(&f), 1);
  give(&f, joined, 2 * MiB, b);
  cmr_test_destroy(a, b);
  destroy_arena(&f);
}
END_TEST

START_TEST(defragment_joins_a_superblock_freed_on_several_streams) {
  fixture f;
  make_arena(&f, 2 * MiB, false, "");
  cmr_stream a = new_stream(), b = new_stream(), c = new_stream();
  char *low = take(&f, MiB / 2, a), *high = take(&f, MiB / 2, a), *other = take(&f, MiB, a);
  ck_assert_uint_eq(superblocks(&f), 2);
  give(&f, low, MiB / 2, a);
  give(&f, high, MiB / 2, b); /* the first superblock is now split over two arenas */
  give(&f, other, MiB, a);
  char *all = take(&f, 2 * MiB, c);
  ck_assert_ptr_eq(all, low);
  ck_assert_uint_eq(global_free(&f), 0);
  ck_assert_uint_eq(superblocks(&f), 1);
  give(&f, all, 2 * MiB, c);
  cmr_test_destroy(a, b, c);
  destroy_arena(&f);
}
END_TEST

typedef struct freeing_on_default {
  fixture *f;
  void *piece;
  pthread_barrier_t *freed, *served;
} freeing_on_default;

/* Frees its piece on the default stream (into its own thread's arena) and
 * stays alive until the main thread has been served. */
static void *free_on_default_and_wait(void *arg) {
  freeing_on_default *work = arg;
  give(work->f, work->piece, MiB / 2, CMR_DEFAULT_STREAM);
  pthread_barrier_wait(work->freed);
  pthread_barrier_wait(work->served);
  return NULL;
}

/* The same with the superblock's halves freed on the default stream by two
 * live threads, each into its thread's own arena: the whole arena still
 * serves one request, and the first superblock is whole in it. */
START_TEST(defragment_joins_a_superblock_freed_by_threads_on_the_default_stream) {
  fixture f;
  make_arena(&f, 2 * MiB, false, "");
  cmr_stream a = new_stream(), c = new_stream();
  char *low = take(&f, MiB / 2, a), *high = take(&f, MiB / 2, a), *other = take(&f, MiB, a);
  ck_assert_uint_eq(superblocks(&f), 2);
  pthread_barrier_t freed, served;
  ck_assert_int_eq(pthread_barrier_init(&freed, NULL, 3), 0);
  ck_assert_int_eq(pthread_barrier_init(&served, NULL, 3), 0);
  freeing_on_default work[2] = {{&f, low, &freed, &served}, {&f, high, &freed, &served}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i)
    ck_assert_int_eq(pthread_create(&threads[i], NULL, free_on_default_and_wait, &work[i]), 0);
  pthread_barrier_wait(&freed);
  give(&f, other, MiB, a);
  char *all = take(&f, 2 * MiB, c);
  ck_assert_ptr_eq(all, low);
  ck_assert_uint_eq(global_free(&f), 0);
  ck_assert_uint_eq(superblocks(&f), 1);
  pthread_barrier_wait(&served);
  for (int i = 0; i < 2; ++i) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  give(&f, all, 2 * MiB, c);
  ck_assert_int_eq(pthread_barrier_destroy(&freed), 0);
  ck_assert_int_eq(pthread_barrier_destroy(&served), 0);
  cmr_test_destroy(a, c);
  destroy_arena(&f);
}
END_TEST

/* The arena's last free bytes, fewer than a superblock of the minimum
 * size (1 MiB), still serve a request they hold: once defragmenting finds
 * no range of 1 MiB, a superblock of just the request's needs is cut. */
START_TEST(last_free_bytes_below_a_superblock_serve_requests) {
  fixture f;
  make_arena(&f, 2 * MiB, false, "");
  char *held = take(&f, MiB + MiB / 2, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(global_free(&f), MiB / 2);
  char *last = take(&f, MiB / 4, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(last, held + MiB + MiB / 2);
  ck_assert_uint_eq(global_free(&f), MiB / 4);
  char *rest = take(&f, MiB / 4, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(rest, last + MiB / 4);
  ck_assert_uint_eq(global_free(&f), 0);
  ck_assert_uint_eq(superblocks(&f), 3);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(f.ref, 256, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("(0 of 2097152 bytes free) has no superblock of 256 bytes, even after defragmenting");
  ck_assert_ptr_null(ptr);
  give(&f, rest, MiB / 4, CMR_DEFAULT_STREAM);
  give(&f, last, MiB / 4, CMR_DEFAULT_STREAM);
  give(&f, held, MiB + MiB / 2, CMR_DEFAULT_STREAM);
  /* Free again, the three superblocks merge in the global arena. */
  char *all = take(&f, 2 * MiB, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(all, held);
  ck_assert_uint_eq(superblocks(&f), 1);
  give(&f, all, 2 * MiB, CMR_DEFAULT_STREAM);
  destroy_arena(&f);
}
END_TEST

START_TEST(out_of_memory_after_defragmenting_writes_the_dump) {
  char path[64];
  temporary_dump_file(path);
  fixture f;
  make_arena(&f, 2 * MiB, true, path);
  void *held = take(&f, MiB, CMR_DEFAULT_STREAM);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(f.ref, MiB + MiB / 2, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("1572864 bytes");
  ck_assert_message_has("(1048576 of 2097152 bytes free) has no superblock of 1572864 bytes, even after defragmenting");
  ck_assert_ptr_null(ptr);
  const char *dump = read_dump(path);
  ck_assert_dump_has(dump, "out of memory: 1572864 bytes at alignment 256");
  ck_assert_dump_has(dump, "arena_size 2097152 bytes");
  ck_assert_dump_has(dump, "global arena: 1 free ranges, 1048576 bytes");
  char range[96];
  snprintf(range, sizeof range, "free [%p, %p) 1048576 bytes", (void *)((char *)held + MiB),
           (void *)((char *)held + 2 * MiB));
  ck_assert_dump_has(dump, range);
  ck_assert_dump_has(dump, "1 superblocks, 0 free blocks, 0 free bytes");
  ck_assert_dump_has(dump, "allocated: 1 blocks, 1048576 bytes");
  /* Once the held block is freed, defragmenting makes room. */
  give(&f, held, MiB, CMR_DEFAULT_STREAM);
  ptr = take(&f, MiB + MiB / 2, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(ptr, held);
  give(&f, ptr, MiB + MiB / 2, CMR_DEFAULT_STREAM);
  destroy_arena(&f);
  unlink(path);
}
END_TEST

START_TEST(out_of_memory_without_dump_log_writes_nothing) {
  char path[64];
  temporary_dump_file(path);
  fixture f;
  make_arena(&f, 2 * MiB, false, path);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(f.ref, 3 * MiB, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("it needs 3145728 bytes, more than the arena_size 2097152");
  ck_assert_ptr_null(ptr);
  ck_assert_str_eq(read_dump(path), "");
  destroy_arena(&f);
  unlink(path);
}
END_TEST

START_TEST(dump_lists_every_arena) {
  char path[64];
  temporary_dump_file(path);
  fixture f;
  make_arena(&f, 4 * MiB, false, path);
  cmr_stream stream = new_stream();
  void *on_default = take(&f, 4096, CMR_DEFAULT_STREAM), *on_stream = take(&f, 2 * MiB, stream);
  give(&f, on_stream, 2 * MiB, stream);
  ck_assert_ok(cmr_arena_resource_dump(f.arena));
  const char *dump = read_dump(path);
  ck_assert_dump_has(dump, "dump requested");
  ck_assert_dump_has(dump, "global arena: 1 free ranges, 1048576 bytes");
  ck_assert_dump_has(dump, "2 arenas, 2 superblocks, 2 free blocks, 3141632 free bytes");
  ck_assert_dump_has(dump, "2097152 bytes (a whole superblock)");
  ck_assert_dump_has(dump, "1044480 bytes\n");
  ck_assert_dump_has(dump, "allocated: 1 blocks, 4096 bytes");
  give(&f, on_default, 4096, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_stream_destroy(stream));
  destroy_arena(&f);
  unlink(path);
}
END_TEST

START_TEST(dump_that_cannot_be_written_is_reported) {
  fixture f;
  make_arena(&f, MiB, true, "/dev/full");
  ck_assert_status(cmr_arena_resource_dump(f.arena), CMR_ERROR_IO);
  ck_assert_message_has("writing the dump to /dev/full failed: No space left on device");
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(f.ref, 2 * MiB, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("more than the arena_size 1048576 (arena: writing the dump to /dev/full failed");
  destroy_arena(&f);
}
END_TEST

/* ---- bad frees ------------------------------------------------------------------------------------- */

START_TEST(unknown_pointer_is_an_error) {
  fixture f, g;
  make_arena(&f, MiB, false, "");
  make_arena(&g, MiB, false, "");
  char *ptr = take(&f, 1024, CMR_DEFAULT_STREAM);
  char *foreign = take(&g, 1024, CMR_DEFAULT_STREAM);
  int on_stack;
  ck_assert_status(cmr_deallocate(f.ref, ptr + 256, 768, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("was not allocated by this resource");
  ck_assert_status(cmr_deallocate(f.ref, &on_stack, 4, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_status(cmr_deallocate(f.ref, foreign, 1024, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  give(&f, ptr, 1024, CMR_DEFAULT_STREAM);
  ck_assert_status(cmr_deallocate(f.ref, ptr, 1024, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("or is already free");
  give(&g, foreign, 1024, CMR_DEFAULT_STREAM);
  destroy_arena(&f);
  destroy_arena(&g);
}
END_TEST

START_TEST(size_mismatch_changes_nothing) {
  fixture f;
  make_arena(&f, MiB, false, "");
  char *ptr = take(&f, 1000, CMR_DEFAULT_STREAM);
  ck_assert_status(cmr_deallocate(f.ref, ptr, 4096, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("was allocated with 1000 bytes, not 4096: nothing was freed");
  ck_assert_status(cmr_deallocate(f.ref, ptr, 1025, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_deallocate(f.ref, ptr, 1001, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  /* Still allocated: the next block comes after it. */
  ck_assert_ptr_eq(take(&f, 256, CMR_DEFAULT_STREAM), ptr + 1024);
  give(&f, ptr, 1000, CMR_DEFAULT_STREAM);
  ck_assert_ptr_eq(take(&f, 1024, CMR_DEFAULT_STREAM), ptr);
  give(&f, ptr, 1024, CMR_DEFAULT_STREAM); /* the same size once rounded */
  destroy_arena(&f);
}
END_TEST

/* ---- lifetime ------------------------------------------------------------------------------------------ */

START_TEST(destroy_gives_the_upstream_memory_back) {
  fixture f;
  make_arena(&f, 16 * MiB, false, "");
  cmr_stream stream = new_stream();
  take(&f, 5000, CMR_DEFAULT_STREAM); /* left allocated on purpose */
  take(&f, 3 * MiB, stream);
  give(&f, take(&f, 70000, stream), 70000, stream);
  ck_assert_int_eq(f.upstream.allocations, 1); /* the arena never grows */
  cmr_test_destroy(stream, f.arena);
  ck_assert_int_eq(f.upstream.deallocations, 1);
  ck_assert_uint_eq(f.upstream.outstanding, 0);
}
END_TEST

START_TEST(destroyed_stream_memory_is_reusable) {
  fixture f;
  make_arena(&f, MiB, false, ""); /* one superblock: b has nothing new to cut */
  /* b first, so that it cannot be a's handle recycled. */
  cmr_stream a = new_stream(), b = new_stream();
  void *ptr = take(&f, MiB / 2, a);
  give(&f, ptr, MiB / 2, a);
  ck_assert_ok(cmr_stream_destroy(a));
  ck_assert_ptr_eq(take(&f, MiB / 2, b), ptr);
  ck_assert_uint_eq(superblocks(&f), 1);
  ck_assert_uint_eq(global_free(&f), 0);
  give(&f, ptr, MiB / 2, b);
  ck_assert_ok(cmr_stream_destroy(b));
  destroy_arena(&f);
}
END_TEST

/* Streams that each free what they allocate (a buffer per kernel, round
 * robin: bench/RESULTS.md, multi_stream) do not pass one block round,
 * waiting on each other: a stream finding its own arena empty cuts a new,
 * idle superblock while the global arena has one. */
START_TEST(an_empty_arena_cuts_a_superblock_before_waiting_on_another_stream) {
  fixture f;
  make_arena(&f, 4 * MiB, false, "");
  cmr_stream a = new_stream(), b = new_stream();
  void *on_a = take(&f, MiB, a);
  give(&f, on_a, MiB, a);
#if !CMR_WITH_CUDA
  unsigned long before = orderings();
#endif
  void *on_b = take(&f, MiB, b);
  ck_assert_ptr_ne(on_b, on_a);
  ck_assert_uint_eq(superblocks(&f), 2);
#if !CMR_WITH_CUDA
  ck_assert_uint_eq(orderings(), before); /* b waited for nothing */
#endif
  give(&f, on_b, MiB, b);
  /* Each stream then keeps to its own. */
  ck_assert_ptr_eq(take(&f, MiB, a), on_a);
  ck_assert_ptr_eq(take(&f, MiB, b), on_b);
  give(&f, on_a, MiB, a);
  give(&f, on_b, MiB, b);
  cmr_test_destroy(a, b);
  destroy_arena(&f);
}
END_TEST

/* ---- threads ---------------------------------------------------------------------------------------------- */

#if !CMR_WITH_CUDA
typedef struct reuse {
  fixture *f;
  void *got;
  cmr_status failure;
  unsigned long orderings_before;
  unsigned long orderings_after;
} reuse;

static void *take_on_another_thread(void *arg) {
  reuse *r = arg;
  r->orderings_before = orderings();
  r->failure = cmr_allocate(r->f->ref, 256, CMR_DEFAULT_STREAM, &r->got);
  r->orderings_after = orderings();
  if (r->failure == CMR_SUCCESS) r->failure = cmr_deallocate(r->f->ref, r->got, 256, CMR_DEFAULT_STREAM);
  return NULL;
}

START_TEST(threads_on_the_default_stream_have_their_own_arenas) {
  fixture f;
  make_arena(&f, MiB, false, ""); /* one superblock: the other thread has nothing new to cut */
  void *ptr = take(&f, 256, CMR_DEFAULT_STREAM);
  give(&f, ptr, 256, CMR_DEFAULT_STREAM);
  /* The same thread reuses its free block at once, waiting for nothing. */
  unsigned long before = orderings();
  ck_assert_ptr_eq(take(&f, 256, CMR_DEFAULT_STREAM), ptr);
  ck_assert_uint_eq(orderings(), before);
  give(&f, ptr, 256, CMR_DEFAULT_STREAM);
  /* Another thread's default stream is another arena: it takes the block
   * only in order after this thread's work. */
  reuse r = {.f = &f};
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, take_on_another_thread, &r), 0);
  ck_assert_int_eq(pthread_join(thread, NULL), 0);
  ck_assert_int_eq(r.failure, CMR_SUCCESS);
  ck_assert_ptr_eq(r.got, ptr);
  ck_assert_uint_gt(r.orderings_after, r.orderings_before);
  ck_assert_uint_eq(superblocks(&f), 1);
  destroy_arena(&f);
}
END_TEST
#endif

typedef struct churner {
  fixture *f;
  unsigned index;
  unsigned lost;
  cmr_status failure;
  char message[256];
} churner;

typedef struct held_block {
  unsigned char *ptr;
  size_t bytes;
} held_block;

static void fill(held_block *b, unsigned index) { memset(b->ptr, (int)(index * 29u + 7u) & 0xff, b->bytes); }

static bool intact(const held_block *b, unsigned index) {
  unsigned char expected = (unsigned char)((index * 29u + 7u) & 0xff);
  for (size_t i = 0; i < b->bytes; i += 61) {
    if (b->ptr[i] != expected) return false;
  }
  return b->ptr[b->bytes - 1] == expected;
}

static void churn_step(churner *c, held_block *slot, unsigned *seed) {
  if (slot->ptr != NULL) {
    if (!intact(slot, c->index)) c->lost++;
    c->failure = cmr_deallocate(c->f->ref, slot->ptr, slot->bytes, CMR_DEFAULT_STREAM);
    slot->ptr = NULL;
    return;
  }
  size_t r = (size_t)rand_r(seed);
  /* Mostly small, now and then larger than a superblock. */
  slot->bytes = 1 + (size_t)(r % (r % 64 == 0 ? 2 * MiB : 16384));
  c->failure = cmr_allocate(c->f->ref, slot->bytes, CMR_DEFAULT_STREAM, (void **)&slot->ptr);
  if (c->failure == CMR_SUCCESS) fill(slot, c->index);
}

static void *churn(void *arg) {
  churner *c = arg;
  enum { live = 24, rounds = 3000 };
  held_block held[live] = {{0}};
  unsigned seed = 77 + c->index;
  for (unsigned i = 0; i < rounds && c->failure == CMR_SUCCESS; i++) {
    churn_step(c, &held[(unsigned)rand_r(&seed) % live], &seed);
  }
  for (unsigned i = 0; i < live && c->failure == CMR_SUCCESS; i++) {
    if (held[i].ptr != NULL) churn_step(c, &held[i], &seed);
  }
  if (c->failure != CMR_SUCCESS) snprintf(c->message, sizeof c->message, "%s", cmr_last_error_message());
  return NULL;
}

START_TEST(threads_on_the_default_stream_allocate_at_once) {
  enum { count = 8 };
  fixture f;
  make_arena(&f, 128 * MiB, false, "");
  churner churners[count];
  for (unsigned i = 0; i < count; i++) churners[i] = (churner){.f = &f, .index = i};
  ck_assert_ptr_null(cmr_test_threads(count, churn, churners, sizeof *churners).returned);
  for (unsigned i = 0; i < count; i++) {
    ck_assert_msg(churners[i].failure == CMR_SUCCESS, "thread %u: %s: %s", i, cmr_status_string(churners[i].failure),
                  churners[i].message);
    ck_assert_msg(churners[i].lost == 0, "thread %u found %u of its blocks overwritten", i, churners[i].lost);
  }
  /* Everything is free again: defragmenting gives the whole arena back. */
  void *all = take(&f, 128 * MiB, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(superblocks(&f), 1);
  give(&f, all, 128 * MiB, CMR_DEFAULT_STREAM);
  destroy_arena(&f);
}
END_TEST

/* Threads each leave a whole superblock in their own arena (of their
 * thread, or of a stream of their own), together the whole arena; then some
 * of them at once ask for more than any one superblock holds, as much as
 * the arena holds in all at most, and hold it until every one has its
 * answer. Only a defragmentation (by any of them) can make that room, and
 * every one must be served, whichever defragments first and however the
 * others interleave with it.
 *
 * Every thread stays until all are answered. A thread's exit (or its
 * stream's end) gives its arena's superblocks back to the global arena at
 * once; when two threads whose superblocks lay side by side in the middle
 * left early, the first 4 MiB request was cut there, [2, 6) MiB of 8,
 * without a defragmentation, and the second found its 4 MiB free in two
 * pieces (about one run in 100 under load). That is where a request is
 * placed, not a race: first fit in the global arena while other superblocks
 * wait free in the threads' arenas, which the arena does not promise to
 * avoid (RMM's neither). */
typedef struct defragmenter {
  fixture *f;
  pthread_barrier_t *everyone, *askers;
  unsigned index;
  bool own_stream;      /* else the default stream: the thread's arena */
  size_t first, second; /* bytes; second 0: the thread does not ask */
  cmr_stream stream;
  cmr_status failure;
  char message[512]; /* the failure's */
  bool intact;
} defragmenter;

/* Allocates, fills and checks `bytes`; frees them after `between`. */
static void use(defragmenter *d, size_t bytes, pthread_barrier_t *between) {
  unsigned char *ptr = NULL;
  cmr_status status = cmr_allocate(d->f->ref, bytes, d->stream, (void **)&ptr);
  if (status == CMR_SUCCESS) {
    memset(ptr, (int)d->index + 1, bytes);
    pthread_barrier_wait(between);
    d->intact = d->intact && ptr[0] == d->index + 1 && ptr[bytes - 1] == d->index + 1;
    status = cmr_deallocate(d->f->ref, ptr, bytes, d->stream);
  } else {
    pthread_barrier_wait(between);
  }
  if (d->failure == CMR_SUCCESS && status != CMR_SUCCESS) {
    d->failure = status;
    snprintf(d->message, sizeof d->message, "%s", cmr_last_error_message());
  }
}

static void *fill_then_defragment(void *arg) {
  defragmenter *d = arg;
  d->stream = d->own_stream ? new_stream() : CMR_DEFAULT_STREAM;
  use(d, d->first, d->everyone);     /* every superblock is out at once */
  pthread_barrier_wait(d->everyone); /* and all free, each in its own arena */
  if (d->second != 0) use(d, d->second, d->askers);
  pthread_barrier_wait(d->everyone); /* no arena ends before every request is answered */
  if (d->own_stream) ck_assert_ok(cmr_stream_destroy(d->stream));
  return NULL;
}

/* Runs `count` defragmenters (first, second and own_stream set) over an
 * arena of the sum of their first sizes and checks that every request was
 * served, nothing was overwritten and, once their arenas have ended, the
 * arena is whole again. */
static void defragment_at_once(defragmenter *defragmenters, unsigned count) {
  size_t arena_size = 0;
  unsigned askers = 0;
  for (unsigned i = 0; i < count; i++) {
    arena_size += defragmenters[i].first;
    askers += defragmenters[i].second != 0;
  }
  fixture f;
  make_arena(&f, arena_size, true, ""); /* a refusal dumps the arena to stderr */
  pthread_barrier_t everyone, asking;
  ck_assert_int_eq(pthread_barrier_init(&everyone, NULL, count), 0);
  ck_assert_int_eq(pthread_barrier_init(&asking, NULL, askers), 0);
  for (unsigned i = 0; i < count; i++) {
    defragmenter *d = &defragmenters[i];
    *d = (defragmenter){.f = &f,
                        .everyone = &everyone,
                        .askers = &asking,
                        .index = i,
                        .own_stream = d->own_stream,
                        .first = d->first,
                        .second = d->second,
                        .intact = true};
  }
  ck_assert_ptr_null(cmr_test_threads(count, fill_then_defragment, defragmenters, sizeof *defragmenters).returned);
  for (unsigned i = 0; i < count; i++) {
    ck_assert_msg(defragmenters[i].failure == CMR_SUCCESS, "thread %u (%zu then %zu bytes): %s: %s", i,
                  defragmenters[i].first, defragmenters[i].second, cmr_status_string(defragmenters[i].failure),
                  defragmenters[i].message);
    ck_assert_msg(defragmenters[i].intact, "thread %u lost its contents", i);
  }
  /* The first superblocks went back in the defragmentation; the second ones
   * as their arenas ended: the global arena is whole again. */
  ck_assert_uint_eq(superblocks(&f), 0);
  ck_assert_uint_eq(global_free(&f), arena_size);
  ck_assert_int_eq(pthread_barrier_destroy(&asking), 0);
  ck_assert_int_eq(pthread_barrier_destroy(&everyone), 0);
  destroy_arena(&f);
}

/* Four 2 MiB superblocks in an 8 MiB arena; two threads ask for 4 MiB. */
START_TEST(threads_defragment_at_once) {
  defragmenter defragmenters[4];
  for (unsigned i = 0; i < 4; i++) {
    defragmenters[i] = (defragmenter){.first = 2 * MiB, .second = i % 2 == 0 ? 4 * MiB : 0};
  }
  defragment_at_once(defragmenters, 4);
}
END_TEST

/* The same with eight threads, some on streams of their own: superblocks of
 * 1 to 2 MiB, and one to four of the threads asking for 2 MiB or more each,
 * together as much as the arena at most. */
START_TEST(threads_of_random_sizes_defragment_at_once) {
  enum { count = 8, rounds = 16 };
  unsigned seed = 20261204;
  for (unsigned round = 0; round < rounds; round++) {
    defragmenter defragmenters[count];
    size_t arena_size = 0;
    for (unsigned i = 0; i < count; i++) {
      size_t first = MiB + 256 * ((size_t)rand_r(&seed) % (MiB / 256)); /* [1, 2) MiB */
      defragmenters[i] = (defragmenter){.first = first, .own_stream = rand_r(&seed) % 3 == 0};
      arena_size += first;
    }
    unsigned askers = 1 + (unsigned)rand_r(&seed) % 4, from = (unsigned)rand_r(&seed) % count;
    size_t spare_granules = (arena_size - askers * 2 * MiB) / 256 / askers; /* each asker's share of the rest */
    for (unsigned k = 0; k < askers; k++) {
      defragmenters[(from + k) % count].second = 2 * MiB + 256 * ((size_t)rand_r(&seed) % (spare_granules + 1));
    }
    defragment_at_once(defragmenters, count);
  }
}
END_TEST

/* Many threads on streams of their own, needing new superblocks at once:
 * each must get the room of the superblock it cut. (Given to its arena
 * first and taken after, another thread could take it in between, twice in
 * a row, and the allocation failed with most of the arena free.) */
typedef struct contender {
  cmr_resource_ref ref;
  unsigned index;
  unsigned long failures;
  char message[256];
} contender;

/* Failures are counted on the thread and asserted on the main one. */
static void note(contender *c, cmr_status status) {
  if (status != CMR_SUCCESS && c->failures++ == 0) {
    snprintf(c->message, sizeof c->message, "%s: %s", cmr_status_string(status), cmr_last_error_message());
  }
}

static void *contend(void *arg) {
  enum { slots = 16, operations = 60000 };
  contender *c = arg;
  cmr_stream streams[3];
  for (int k = 0; k < 3; ++k) note(c, cmr_stream_create(&streams[k]));
  void *ptrs[slots] = {0};
  size_t sizes[slots] = {0};
  uint64_t rng = 0x9E3779B97F4A7C15u ^ (c->index + 1);
  for (int i = 0; i < operations; ++i) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int slot = (int)(rng % slots);
    cmr_stream stream = streams[(rng >> 8) % 3];
    if (ptrs[slot] != NULL) {
      note(c, cmr_deallocate(c->ref, ptrs[slot], sizes[slot], stream));
      ptrs[slot] = NULL;
      continue;
    }
    sizes[slot] = 256 + (size_t)((rng >> 16) % (MiB - 256));
    cmr_status status = cmr_allocate(c->ref, sizes[slot], stream, &ptrs[slot]);
    if (status != CMR_SUCCESS) ptrs[slot] = NULL;
    note(c, status);
  }
  for (int i = 0; i < slots; ++i) {
    if (ptrs[i] != NULL) note(c, cmr_deallocate(c->ref, ptrs[i], sizes[i], streams[0]));
  }
  for (int k = 0; k < 3; ++k) note(c, cmr_stream_destroy(streams[k]));
  return NULL;
}

START_TEST(threads_on_their_own_streams_get_the_superblocks_they_cut) {
  enum { count = 16 };
  fixture f;
  /* 16 threads x 16 blocks of up to 1 MiB pin at most 256 superblocks. */
  make_arena(&f, 512 * MiB, false, "");
  contender contenders[count];
  for (unsigned i = 0; i < count; i++) contenders[i] = (contender){.ref = f.ref, .index = i};
  ck_assert_ptr_null(cmr_test_threads(count, contend, contenders, sizeof *contenders).returned);
  for (unsigned i = 0; i < count; i++) {
    ck_assert_msg(contenders[i].failures == 0, "thread %u: %lu calls failed; the first: %s", i, contenders[i].failures,
                  contenders[i].message);
  }
  destroy_arena(&f);
}
END_TEST

/* ---- runner ----------------------------------------------------------------------------------------------- */

static void arena_cases(Suite *suite) {
  cmr_test_case(suite, "parameters", NULL, NULL, arena_size_defaults_to_half_of_free_memory,
                arena_size_minimum_and_multiple, other_bad_arguments);
  cmr_test_case(suite, "superblocks", NULL, NULL, first_fit_within_a_superblock,
                superblock_taken_from_the_global_arena_then_reused, large_request_gets_a_superblock_of_its_size,
                large_alignment_is_honoured, largest_free_block_covers_the_global_arena_and_the_superblocks);
  cmr_test_case(suite, "exhaustion", NULL, NULL, defragment_returns_whole_superblocks_to_the_global_arena,
                defragment_joins_a_superblock_freed_on_several_streams,
                defragment_joins_a_superblock_freed_by_threads_on_the_default_stream,
                last_free_bytes_below_a_superblock_serve_requests, out_of_memory_after_defragmenting_writes_the_dump,
                out_of_memory_without_dump_log_writes_nothing, dump_lists_every_arena,
                dump_that_cannot_be_written_is_reported);
  cmr_test_case(suite, "bad_frees", NULL, NULL, unknown_pointer_is_an_error, size_mismatch_changes_nothing);
  cmr_test_case(suite, "lifetime", NULL, NULL, destroy_gives_the_upstream_memory_back,
                destroyed_stream_memory_is_reusable, an_empty_arena_cuts_a_superblock_before_waiting_on_another_stream);
  TCase *threads = cmr_test_case(suite, "threads", NULL, NULL, threads_on_the_default_stream_allocate_at_once,
                                 threads_on_their_own_streams_get_the_superblocks_they_cut);
  tcase_set_timeout(threads, 120);
#if !CMR_WITH_CUDA
  tcase_add_test(threads, threads_on_the_default_stream_have_their_own_arenas);
#endif
  tcase_set_timeout(cmr_test_case(suite, "defragment_at_once", NULL, NULL, threads_defragment_at_once,
                                  threads_of_random_sizes_defragment_at_once),
                    120);
}

int main(void) { return cmr_test_main_suite("arena", CMR_TEST_NEEDS_DEVICE, arena_cases); }
