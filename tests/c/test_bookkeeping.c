/* SPDX-License-Identifier: Apache-2.0 */
/* Bookkeeping that must not grow with every thread and stream ever seen
 * (host build): an exited thread's and a destroyed stream's free lists are
 * reclaimed, their memory comes back where others use it, and the stream
 * ordering rules still hold. INTERNAL: it counts the stream lists' records
 * (cmr_stream_ends_list_records, cmr_stream_lists_records_allocated) and
 * the host backend's ordering calls. */
#include <pthread.h>
#include <string.h>

#include "backend.h"
#include "stream_ends.h"
#include "stream_list.h"
#include "test_counting.h"

/* ---- the suballocators, over a counting upstream ---------------------------------------- */

typedef enum kind { POOL, FIXED_SIZE, ARENA, BINNING, KINDS } kind;

static const char *const kind_names[KINDS] = {"pool", "fixed_size", "arena", "binning"};

typedef struct subject {
  kind kind;
  test_counting upstream;
  void *handle;
  cmr_resource_ref ref;
} subject;

enum { request = 1000, arena_bytes = 64 << 20 };

static cmr_resource_ref counted(subject *s, kind k) {
  s->kind = k;
  test_counting_init(&s->upstream, CMR_PROPERTY_HOST_ACCESSIBLE);
  return test_counting_ref(&s->upstream);
}

static void make_pool(subject *s, size_t initial_pool_size) {
  cmr_pool_resource *pool = cmr_test_pool(counted(s, POOL), initial_pool_size);
  s->handle = pool, s->ref = cmr_pool_resource_ref(pool);
}

static void make(subject *s, kind k) {
  if (k == POOL) {
    make_pool(s, 1 << 20);
    return;
  }
  cmr_resource_ref upstream = counted(s, k);
  switch (k) {
  case FIXED_SIZE: {
    cmr_fixed_size_resource *fixed = NULL;
    ck_assert_ok(
        cmr_fixed_size_resource_create(upstream, CMR_SIZE(4096), CMR_SIZE(16), CMR_FIXED_SIZE_CAPTURE_SERVE, &fixed));
    s->handle = fixed, s->ref = cmr_fixed_size_resource_ref(fixed);
    break;
  }
  case ARENA: {
    cmr_arena_resource *arena = NULL;
    ck_assert_ok(
        cmr_arena_resource_create(upstream, CMR_SIZE(arena_bytes), false, "", CMR_ARENA_CAPTURE_SERVE, &arena));
    s->handle = arena, s->ref = cmr_arena_resource_ref(arena);
    break;
  }
  default: {
    ck_assert_int_eq(k, BINNING);
    cmr_binning_resource *binning = NULL; /* fixed_size bins of 256 B to 4 KiB: `request` goes to 1 KiB's */
    ck_assert_ok(cmr_binning_resource_create(upstream, CMR_INT(8), CMR_INT(12), &binning));
    s->handle = binning, s->ref = cmr_binning_resource_ref(binning);
    break;
  }
  }
}

static void unmake(subject *s) {
  switch (s->kind) {
  case POOL: ck_assert_ok(cmr_pool_resource_destroy(s->handle)); break;
  case FIXED_SIZE: ck_assert_ok(cmr_fixed_size_resource_destroy(s->handle)); break;
  case ARENA: ck_assert_ok(cmr_arena_resource_destroy(s->handle)); break;
  default: ck_assert_ok(cmr_binning_resource_destroy(s->handle)); break;
  }
  ck_assert_uint_eq(atomic_load(&s->upstream.live_bytes), 0);
  test_counting_destroy(&s->upstream);
}

/* Allocates, writes and frees `request` bytes on `stream`: the first
 * failure's status, or CMR_SUCCESS (callable from any thread). */
static cmr_status use(cmr_resource_ref ref, cmr_stream stream) {
  void *ptr = NULL;
  cmr_status status = cmr_allocate(ref, request, stream, &ptr);
  if (status != CMR_SUCCESS) return status;
  memset(ptr, 0x5a, request);
  return cmr_deallocate(ref, ptr, request, stream);
}

static cmr_backend_host_counts counts(void) {
  cmr_backend_host_counts now;
  cmr_backend_host_counts_read(&now);
  return now;
}

/* ---- streams -------------------------------------------------------------------------- */

/* 10,000 streams, each made, used and destroyed: the lists of the dead ones
 * are reclaimed (their records stay a handful), and the memory they held is
 * used by the next streams (the resource never grows past the first one). */
START_TEST(destroyed_streams_leave_no_lists) {
  enum { streams = 10000 };
  subject s;
  size_t records_before = cmr_stream_ends_list_records();
  make(&s, (kind)_i);
  size_t grown = 0;
  for (int i = 0; i < streams; ++i) {
    cmr_stream stream = cmr_test_stream();
    ck_assert_ok(use(s.ref, stream));
    ck_assert_ok(cmr_stream_destroy(stream));
    if (i == 0) grown = atomic_load(&s.upstream.allocations);
  }
  size_t records = cmr_stream_ends_list_records() - records_before;
  ck_assert_msg(records <= 16, "%s: %zu list records after %d streams", kind_names[_i], records, (int)streams);
  ck_assert_uint_eq(atomic_load(&s.upstream.allocations), grown);
  unmake(&s);
}
END_TEST

/* Streams cmr did not make, never destroyed through it (as a stream
 * destroyed with cudaStreamDestroy): nobody says they are gone, yet their
 * empty lists go once the lists have doubled in number, so the records stay
 * within a bound (twice the 64 lists at which eviction starts, and the
 * spares). Host streams are tokens: any distinct addresses will do. */
START_TEST(unannounced_streams_stay_bounded) {
  enum { streams = 10000 };
  subject s;
  size_t records_before = cmr_stream_ends_list_records();
  make(&s, (kind)_i);
  for (uintptr_t i = 0; i < streams; ++i) ck_assert_ok(use(s.ref, (cmr_stream)(0x40000000 + 256 * i)));
  size_t records = cmr_stream_ends_list_records() - records_before;
  ck_assert_msg(records <= 160, "%s: %zu list records after %d streams", kind_names[_i], records, (int)streams);
  unmake(&s);
}
END_TEST

/* 1,000 streams live at once, each used again after every 60 new ones (so
 * that none looks cold: an eviction comes 64 new lists after the last at
 * the earliest), then all destroyed, four times. While they live
 * the resource keeps a list record for each; once they are gone it keeps a
 * few spares and frees the rest, so its bookkeeping follows the streams in
 * use, not the most there ever were. Left after each round, for each
 * stream_lists: the spares (8), the shared and default streams' lists;
 * and the records this thread's cache still names (8, freed as the cache
 * moves on). */
/* Records allocated since `before`, 0 when fewer (an earlier test's left in
 * this thread's cache are freed as the cache moves on). */
static size_t allocated_since(size_t before) {
  size_t now = cmr_stream_lists_records_allocated();
  return now > before ? now - before : 0;
}

START_TEST(streams_live_at_once_leave_few_records) {
  enum { streams = 1000, batch = 60, rounds = 4 };
  static cmr_stream live[streams];
  subject s;
  size_t allocated_before = cmr_stream_lists_records_allocated();
  size_t records_before = cmr_stream_ends_list_records();
  make(&s, (kind)_i);
  size_t kept = (_i == BINNING ? 5 : 1) * (8 + 2); /* binning: a fixed_size resource for each of its 5 bins */
  size_t grown = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int made = 0; made < streams; made += batch) {
      for (int i = made; i < made + batch && i < streams; ++i) live[i] = cmr_test_stream();
      for (int i = 0; i < made + batch && i < streams; ++i) ck_assert_ok(use(s.ref, live[i]));
    }
    size_t at_peak = cmr_stream_ends_list_records() - records_before;
    ck_assert_msg(at_peak >= streams, "%s: %zu records with %d streams live", kind_names[_i], at_peak, (int)streams);
    for (int i = 0; i < streams; ++i) ck_assert_ok(cmr_stream_destroy(live[i]));
    size_t allocated = allocated_since(allocated_before);
    size_t records = cmr_stream_ends_list_records() - records_before;
    ck_assert_msg(allocated <= 8 + kept, "%s, round %d: %zu records allocated after its streams went", kind_names[_i],
                  round, allocated);
    ck_assert_msg(records <= kept, "%s, round %d: %zu records held after its streams went", kind_names[_i], round,
                  records);
    if (round == 0) grown = atomic_load(&s.upstream.allocations);
  }
  ck_assert_uint_eq(atomic_load(&s.upstream.allocations), grown);
  unmake(&s);
  ck_assert_uint_le(allocated_since(allocated_before), 8);
}
END_TEST

/* A block freed on stream a, which is then destroyed, is reused by stream b
 * only in order after a's work: while a's work is pending (the host
 * backend's event query is made to say so), b waits on the event recorded on
 * a as it was destroyed; once done, a's blocks are idle memory, which b
 * takes without waiting. */
static void reuse_after_destroy(bool pending) {
  subject s;
  make_pool(&s, 0); /* all its memory comes on stream a, into a's list */
  cmr_stream a = cmr_test_stream(), b = cmr_test_stream();
  void *on_a = NULL;
  ck_assert_ok(cmr_allocate(s.ref, request, a, &on_a));
  ck_assert_ok(cmr_deallocate(s.ref, on_a, request, a));
  cmr_backend_host_counts before = counts();
  if (pending) cmr_backend_host_fail_call(CMR_BACKEND_HOST_EVENT_QUERY, 1);
  ck_assert_ok(cmr_stream_destroy(a));
  cmr_backend_host_counts destroyed = counts();
  /* a's list had never been taken from, so its free recorded no event: the
   * event is recorded as a is destroyed, and asked about. */
  ck_assert_uint_eq(destroyed.event_records - before.event_records, 1);
  ck_assert_uint_eq(destroyed.event_queries - before.event_queries, 1);
  if (pending) cmr_backend_host_fail_call(CMR_BACKEND_HOST_EVENT_QUERY, 1); /* still running when b looks */
  void *on_b = NULL;
  ck_assert_ok(cmr_allocate(s.ref, request, b, &on_b));
  cmr_backend_host_counts taken = counts();
  ck_assert_ptr_eq(on_b, on_a);
  ck_assert_uint_eq(taken.stream_waits - destroyed.stream_waits, pending ? 1 : 0);
  ck_assert_uint_eq(taken.device_synchronizes - destroyed.device_synchronizes, 0);
  ck_assert_uint_eq(taken.event_synchronizes - destroyed.event_synchronizes, 0);
  ck_assert_ok(cmr_deallocate(s.ref, on_b, request, b));
  ck_assert_ok(cmr_stream_destroy(b));
  unmake(&s);
}

START_TEST(destroyed_stream_block_waits_for_pending_work) { reuse_after_destroy(true); }
END_TEST

START_TEST(destroyed_stream_block_is_idle_once_its_work_is_done) { reuse_after_destroy(false); }
END_TEST

/* ---- threads ------------------------------------------------------------------------------ */

typedef struct one_shot {
  cmr_resource_ref arena;
  cmr_resource_ref pool;
  cmr_status failure;
} one_shot;

/* Through the arena on the default stream (its own thread arena), then
 * through the pool on a stream of its own. */
static void *use_once(void *arg) {
  one_shot *shot = arg;
  shot->failure = use(shot->arena, CMR_DEFAULT_STREAM);
  cmr_stream stream = NULL;
  if (shot->failure == CMR_SUCCESS) shot->failure = cmr_stream_create(&stream);
  if (shot->failure == CMR_SUCCESS) shot->failure = use(shot->pool, stream);
  if (stream != NULL && shot->failure == CMR_SUCCESS) shot->failure = cmr_stream_destroy(stream);
  return NULL;
}

/* 4,000 one-shot threads, 8 at a time: each exited thread's arena gives its
 * superblock back to the global arena, so none stays parked (the arena has
 * 64) and one allocation of the whole arena succeeds afterwards; neither
 * resource keeps lists for the dead threads and streams. */
START_TEST(one_shot_threads_leave_nothing_behind) {
  enum { total = 4000, batch = 8 };
  size_t records_before = cmr_stream_ends_list_records();
  subject arena, pool;
  make(&arena, ARENA);
  make(&pool, POOL);
  for (int done = 0; done < total; done += batch) {
    pthread_t threads[batch];
    one_shot shots[batch];
    for (int i = 0; i < batch; ++i) {
      shots[i] = (one_shot){arena.ref, pool.ref, CMR_SUCCESS};
      ck_assert_int_eq(pthread_create(&threads[i], NULL, use_once, &shots[i]), 0);
    }
    for (int i = 0; i < batch; ++i) {
      ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
      ck_assert_msg(shots[i].failure == CMR_SUCCESS, "thread %d: %s", done + i, cmr_status_string(shots[i].failure));
    }
  }
  size_t count = 0, global = 0;
  ck_assert_ok(cmr_arena_resource_superblock_count(arena.handle, &count));
  ck_assert_ok(cmr_arena_resource_global_free_bytes(arena.handle, &global));
  ck_assert_uint_eq(count, 0);
  ck_assert_uint_eq(global, arena_bytes);
  size_t records = cmr_stream_ends_list_records() - records_before;
  ck_assert_msg(records <= 2 * batch + 4, "%zu list records after %d threads", records, (int)total);
  void *all = NULL;
  ck_assert_ok(cmr_allocate(arena.ref, arena_bytes, CMR_DEFAULT_STREAM, &all));
  ck_assert_ok(cmr_deallocate(arena.ref, all, arena_bytes, CMR_DEFAULT_STREAM));
  unmake(&pool);
  unmake(&arena);
}
END_TEST

typedef struct lingering {
  one_shot shot;
  pthread_barrier_t *used;
} lingering;

static void *use_then_linger(void *arg) {
  lingering *l = arg;
  use_once(&l->shot);
  pthread_barrier_wait(l->used);
  return NULL; /* exits (its lists end) while the main thread destroys the resources */
}

/* Threads exiting while, or after, their resources are destroyed: a thread's
 * end never reaches a destroyed resource (ASan and TSan watch). */
START_TEST(threads_exit_as_their_resources_are_destroyed) {
  enum { count = 8 };
  subject arena, pool;
  make(&arena, ARENA);
  make(&pool, POOL);
  pthread_barrier_t used;
  ck_assert_int_eq(pthread_barrier_init(&used, NULL, count + 1), 0);
  pthread_t threads[count];
  lingering lingerers[count];
  for (int i = 0; i < count; ++i) {
    lingerers[i] = (lingering){{arena.ref, pool.ref, CMR_SUCCESS}, &used};
    ck_assert_int_eq(pthread_create(&threads[i], NULL, use_then_linger, &lingerers[i]), 0);
  }
  pthread_barrier_wait(&used);
  unmake(&pool);
  unmake(&arena);
  for (int i = 0; i < count; ++i) {
    ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
    ck_assert_msg(lingerers[i].shot.failure == CMR_SUCCESS, "thread %d: %s", i,
                  cmr_status_string(lingerers[i].shot.failure));
  }
  ck_assert_int_eq(pthread_barrier_destroy(&used), 0);
}
END_TEST

typedef struct caching {
  cmr_resource_ref pool;
  pthread_barrier_t *used, *destroyed;
  cmr_status failure;
} caching;

/* Uses 20 streams live at once, then destroys them (its cache ends up
 * naming records the pool has let go), then waits for the pool's
 * destruction before it exits. */
static void *use_streams_then_wait(void *arg) {
  enum { streams = 20 };
  caching *c = arg;
  cmr_stream live[streams];
  int made = 0;
  for (; made < streams && c->failure == CMR_SUCCESS; ++made) c->failure = cmr_stream_create(&live[made]);
  for (int i = 0; i < made && c->failure == CMR_SUCCESS; ++i) c->failure = use(c->pool, live[i]);
  for (int i = 0; i < made; ++i) {
    cmr_status status = cmr_stream_destroy(live[i]);
    if (c->failure == CMR_SUCCESS) c->failure = status;
  }
  pthread_barrier_wait(c->used);
  pthread_barrier_wait(c->destroyed);
  return NULL;
}

/* The records a thread's cache names outlive the pool while the thread
 * does, and go with it: once both are gone, none is left. */
START_TEST(cached_records_go_with_their_thread) {
  size_t before = cmr_stream_lists_records_allocated();
  subject s;
  make_pool(&s, 0); /* this thread never looks a list up */
  pthread_barrier_t used, destroyed;
  ck_assert_int_eq(pthread_barrier_init(&used, NULL, 2), 0);
  ck_assert_int_eq(pthread_barrier_init(&destroyed, NULL, 2), 0);
  caching c = {s.ref, &used, &destroyed, CMR_SUCCESS};
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, use_streams_then_wait, &c), 0);
  pthread_barrier_wait(&used);
  ck_assert_uint_ge(cmr_stream_lists_records_allocated() - before, 8); /* the spares, at least */
  unmake(&s);
  ck_assert_uint_gt(cmr_stream_lists_records_allocated() - before, 0); /* named by the thread's cache */
  pthread_barrier_wait(&destroyed);
  ck_assert_int_eq(pthread_join(thread, NULL), 0);
  ck_assert_msg(c.failure == CMR_SUCCESS, "%s", cmr_status_string(c.failure));
  ck_assert_uint_eq(cmr_stream_lists_records_allocated(), before);
  ck_assert_int_eq(pthread_barrier_destroy(&used), 0);
  ck_assert_int_eq(pthread_barrier_destroy(&destroyed), 0);
}
END_TEST

static void bookkeeping_cases(Suite *suite) {
  TCase *streams = cmr_test_loop_case(suite, "streams", NULL, NULL, KINDS, destroyed_streams_leave_no_lists,
                                      unannounced_streams_stay_bounded, streams_live_at_once_leave_few_records);
  cmr_test_add(streams, 1, destroyed_stream_block_waits_for_pending_work,
               destroyed_stream_block_is_idle_once_its_work_is_done);
  tcase_set_timeout(streams, 300);
  TCase *threads = cmr_test_case(suite, "threads", NULL, NULL, one_shot_threads_leave_nothing_behind,
                                 threads_exit_as_their_resources_are_destroyed, cached_records_go_with_their_thread);
  tcase_set_timeout(threads, 300);
}

int main(void) { return cmr_test_main_suite("bookkeeping", CMR_TEST_ANY_MACHINE, bookkeeping_cases); }
