/* SPDX-License-Identifier: Apache-2.0 */
/* The allocation history (cmr/history.h): its options and their checks,
 * what each resource records (allocations, frees, upstream growth and
 * release, out of memory, failure-callback retries), the bounded ring, C
 * stacks, a binding's context and the entry points' context, recording
 * from many threads while others read and restart, and the snapshot
 * writer's forms and checks. */
#include <cmr/pluggable.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define MIB ((size_t)1 << 20)

static cmr_history_options options(size_t capacity, unsigned flags, unsigned depth) {
  return (cmr_history_options){
      .size = sizeof(cmr_history_options), .capacity = capacity, .flags = flags, .stack_depth = depth};
}

/* The events kept, in a buffer the test frees, and their count. */
static cmr_history_event *read_all(size_t *count) {
  size_t kept = 0;
  ck_assert_ok(cmr_history_read(NULL, 0, &kept, NULL));
  cmr_history_event *events = calloc(kept + 1, sizeof *events);
  ck_assert_ptr_nonnull(events);
  for (size_t i = 0; i < kept + 1; ++i) events[i].size = sizeof *events;
  ck_assert_ok(cmr_history_read(events, kept + 1, count, NULL));
  ck_assert_uint_eq(*count, kept);
  return events;
}

/* Stops recording; the events kept, as read_all. */
static cmr_history_event *stop_and_read(size_t *count) {
  ck_assert_ok(cmr_history_stop());
  return read_all(count);
}

static cmr_pool_resource *pool_over(cmr_resource_ref upstream, size_t initial, size_t maximum) {
  cmr_pool_resource *pool = NULL;
  ck_assert_ok(cmr_pool_resource_create(upstream, CMR_SIZE(initial), maximum ? CMR_SIZE(maximum) : CMR_SIZE_DEFAULT,
                                        CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &pool));
  return pool;
}

START_TEST(options_are_checked) {
  cmr_history_options bad = options(0, 0, 0);
  bad.size = 0;
  ck_assert_status(cmr_history_start(&bad), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("options->size 0 is not the size of any version");
  bad = options((size_t)1 << 27, 0, 0);
  ck_assert_status(cmr_history_start(&bad), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("capacity 134217728 is above the most");
  bad = options(0, 8, 0);
  ck_assert_status(cmr_history_start(&bad), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("unknown flags 0x8");
  bad = options(0, CMR_HISTORY_C_STACKS, CMR_HISTORY_MAX_FRAMES + 1);
  ck_assert_status(cmr_history_start(&bad), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("stack_depth 65 is above the most, 64 frames");
  ck_assert(!cmr_history_recording());
  ck_assert_status(cmr_history_read(NULL, 0, NULL, NULL), CMR_ERROR_NULL_POINTER);
  size_t count = 7;
  ck_assert_status(cmr_history_read(NULL, 3, &count, NULL), CMR_ERROR_NULL_POINTER);
  cmr_history_event event = {.size = 8};
  ck_assert_status(cmr_history_read(&event, 1, &count, NULL), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("events[0].size 8 is not the size of any version");
  ck_assert_str_eq(cmr_history_action_name(CMR_HISTORY_SEGMENT_FREE), "segment_free");
  ck_assert_str_eq(cmr_history_action_name((cmr_history_action)99), "unknown");
}
END_TEST

START_TEST(nothing_is_recorded_while_off) {
  cmr_system_resource *system = cmr_test_system_resource();
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_system_resource_ref(system), 512, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(cmr_system_resource_ref(system), ptr, 512, CMR_DEFAULT_STREAM));
  size_t count = 9;
  uint64_t dropped = 9;
  ck_assert_ok(cmr_history_read(NULL, 0, &count, &dropped));
  ck_assert_uint_eq(count, 0);
  ck_assert_uint_eq(dropped, 0);
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

/* A pool over system: its growth (the upstream's allocation, then the
 * segment), the allocation and free through it, and at destroy the
 * segment's release (then the upstream's free). */
START_TEST(a_pool_records_its_calls_and_its_segments) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref upstream = cmr_system_resource_ref(system);
  cmr_stream stream = cmr_test_stream();
  ck_assert_ok(cmr_history_start(NULL));
  ck_assert(cmr_history_recording());
  cmr_pool_resource *pool = pool_over(upstream, MIB, 0);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, stream, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, 1000, stream));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
  ck_assert_ok(cmr_history_stop());
  ck_assert(!cmr_history_recording());
  size_t count = 0;
  cmr_history_event *events = read_all(&count);
  ck_assert_uint_eq(count, 6);
  cmr_history_action expected[] = {CMR_HISTORY_ALLOCATE, CMR_HISTORY_SEGMENT_ALLOCATE, CMR_HISTORY_ALLOCATE,
                                   CMR_HISTORY_FREE,     CMR_HISTORY_SEGMENT_FREE,     CMR_HISTORY_FREE};
  const char *types[] = {"system", "system", "pool", "pool", "system", "system"};
  for (size_t i = 0; i < count; ++i) {
    ck_assert_int_eq(events[i].action, expected[i]);
    ck_assert_str_eq(events[i].resource_type, types[i]);
    ck_assert_uint_eq(events[i].sequence, i);
    ck_assert_uint_eq(events[i].frame_count, 0);
    ck_assert_uint_eq(events[i].thread, (uint64_t)pthread_self());
    if (i > 0) ck_assert_uint_ge(events[i].time_ns, events[i - 1].time_ns);
  }
  ck_assert_uint_eq(events[0].resource, (uint64_t)(uintptr_t)upstream.self);
  ck_assert_uint_eq(events[1].resource, (uint64_t)(uintptr_t)upstream.self);
  ck_assert_uint_eq(events[1].bytes, MIB);
  ck_assert_uint_eq(events[1].address, events[0].address);
  ck_assert_uint_eq(events[2].resource, (uint64_t)(uintptr_t)ref.self);
  ck_assert_uint_eq(events[2].bytes, 1000);
  ck_assert_uint_eq(events[2].address, (uint64_t)(uintptr_t)ptr);
  ck_assert_uint_eq(events[2].stream, (uint64_t)(uintptr_t)stream);
  ck_assert_uint_ge(events[2].address, events[1].address);
  ck_assert_uint_lt(events[2].address, events[1].address + MIB);
  ck_assert_uint_eq(events[3].address, events[2].address);
  ck_assert_uint_eq(events[4].address, events[1].address);
  ck_assert_uint_eq(events[4].bytes, MIB);
  free(events);
  /* Stopped: nothing more, and what was recorded stays. */
  void *more = NULL;
  ck_assert_ok(cmr_allocate(upstream, 256, CMR_DEFAULT_STREAM, &more));
  ck_assert_ok(cmr_deallocate(upstream, more, 256, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_history_read(NULL, 0, &count, NULL));
  ck_assert_uint_eq(count, 6);
  /* A new start begins an empty history. */
  ck_assert_ok(cmr_history_start(NULL));
  ck_assert_ok(cmr_history_read(NULL, 0, &count, NULL));
  ck_assert_uint_eq(count, 0);
  ck_assert_ok(cmr_history_stop());
  cmr_test_destroy(stream, system);
}
END_TEST

/* Out of memory through a pool at its maximum, and failure_callback's retry. */
START_TEST(out_of_memory_and_retries_are_recorded) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_pool_resource *pool = pool_over(cmr_system_resource_ref(system), MIB, MIB);
  int calls = 0;
  cmr_failure_callback_resource *retrying = NULL;
  ck_assert_ok(
      cmr_failure_callback_resource_create(cmr_pool_resource_ref(pool), cmr_test_retry_once, &calls, &retrying));
  ck_assert_ok(cmr_history_start(NULL));
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(cmr_failure_callback_resource_ref(retrying), 2 * MIB, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_OUT_OF_MEMORY);
  size_t count = 0;
  cmr_history_event *events = stop_and_read(&count);
  /* pool refuses, the callback retries, pool refuses, the callback gives
   * up: failure_callback's own failure is one more. */
  ck_assert_uint_eq(count, 4);
  ck_assert_int_eq(events[0].action, CMR_HISTORY_OUT_OF_MEMORY);
  ck_assert_str_eq(events[0].resource_type, "pool");
  ck_assert_uint_eq(events[0].bytes, 2 * MIB);
  ck_assert_uint_eq(events[0].address, 0);
  ck_assert_int_eq(events[1].action, CMR_HISTORY_RETRY);
  ck_assert_str_eq(events[1].resource_type, "pool"); /* the upstream it retries */
  ck_assert_int_eq(events[2].action, CMR_HISTORY_OUT_OF_MEMORY);
  ck_assert_int_eq(events[3].action, CMR_HISTORY_OUT_OF_MEMORY);
  ck_assert_str_eq(events[3].resource_type, "failure_callback");
  free(events);
  cmr_test_destroy(retrying, pool, system);
}
END_TEST

/* A ring of 8 keeps the newest 8; the others count as dropped. */
START_TEST(the_ring_keeps_the_newest_events) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(system);
  cmr_history_options small = options(8, 0, 0);
  ck_assert_ok(cmr_history_start(&small));
  for (size_t i = 1; i <= 10; ++i) {
    void *ptr = NULL;
    ck_assert_ok(cmr_allocate(ref, i * 256, CMR_DEFAULT_STREAM, &ptr));
    ck_assert_ok(cmr_deallocate(ref, ptr, i * 256, CMR_DEFAULT_STREAM));
  }
  ck_assert_ok(cmr_history_stop());
  size_t count = 0;
  uint64_t dropped = 0;
  cmr_history_event events[3];
  for (int i = 0; i < 3; ++i) events[i].size = sizeof events[i];
  ck_assert_ok(cmr_history_read(events, 3, &count, &dropped));
  ck_assert_uint_eq(count, 3); /* the newest three of the eight */
  ck_assert_uint_eq(dropped, 12);
  ck_assert_uint_eq(events[0].sequence, 17);
  ck_assert_int_eq(events[0].action, CMR_HISTORY_FREE);
  ck_assert_uint_eq(events[0].bytes, 9 * 256);
  ck_assert_uint_eq(events[2].sequence, 19);
  ck_assert_uint_eq(events[2].bytes, 10 * 256);
  /* An older, shorter struct gets the fields it knows. */
  cmr_history_event older;
  memset(&older, 0xab, sizeof older);
  older.size = offsetof(cmr_history_event, frames);
  ck_assert_ok(cmr_history_read(&older, 1, &count, NULL));
  ck_assert_uint_eq(older.sequence, 19);
  ck_assert_uint_eq(older.size, offsetof(cmr_history_event, frames));
  ck_assert_uint_eq(((unsigned char *)&older)[offsetof(cmr_history_event, frames)], 0xab);
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

/* C stacks: the first frame is the recording call (cmr_allocate here),
 * and no more frames than asked. */
START_TEST(c_stacks_are_taken_when_asked) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(system);
  cmr_history_options deep = options(0, CMR_HISTORY_C_STACKS, 4);
  ck_assert_ok(cmr_history_start(&deep));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 256, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, 256, CMR_DEFAULT_STREAM));
  size_t count = 0;
  cmr_history_event *events = stop_and_read(&count);
  ck_assert_uint_eq(count, 2);
  ck_assert_uint_eq(events[0].frame_count, 4);
  ck_assert_ptr_nonnull(events[0].frames[0]);
  /* Symbolised on the way out (the snapshot does): the frame lies in cmr_allocate. */
  char *json = NULL;
  size_t length = 0;
  ck_assert_ok(cmr_history_start(&deep));
  ck_assert_ok(cmr_allocate(ref, 512, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_snapshot_bytes(ref, CMR_SNAPSHOT_JSON, &json, &length));
  ck_assert_ptr_nonnull(strstr(json, "\"name\":\"cmr_allocate\""));
  ck_assert_ptr_nonnull(strstr(json, "libcmr"));
  cmr_snapshot_free(json);
  ck_assert_ok(cmr_deallocate(ref, ptr, 512, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_history_stop());
  free(events);
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

static uint64_t next_token(void *user) { return ++*(uint64_t *)user; }

/* A binding's context function: its token in each event, and in the snapshot. */
START_TEST(a_context_function_tags_each_event) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(system);
  uint64_t tokens = 40;
  cmr_history_options tagged = options(0, 0, 0);
  tagged.context = next_token;
  tagged.context_user = &tokens;
  ck_assert_ok(cmr_history_start(&tagged));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 256, CMR_DEFAULT_STREAM, &ptr));
  char *json = NULL;
  size_t length = 0;
  ck_assert_ok(cmr_snapshot_bytes(ref, CMR_SNAPSHOT_JSON, &json, &length));
  ck_assert_ptr_nonnull(strstr(json, "\"context\":41,\"frames\":[]"));
  cmr_snapshot_free(json);
  ck_assert_ok(cmr_deallocate(ref, ptr, 256, CMR_DEFAULT_STREAM));
  size_t count = 0;
  cmr_history_event *events = stop_and_read(&count);
  ck_assert_uint_eq(count, 2);
  ck_assert_uint_eq(events[0].context, 41);
  ck_assert_uint_eq(events[1].context, 42);
  free(events);
  /* A version older than any (no room for the context) is refused. */
  tagged.size = offsetof(cmr_history_options, context) - 1;
  ck_assert_status(cmr_history_start(&tagged), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

/* ---- the entry points' context ------------------------------------------------ */

#define BOTH_PROPERTIES (CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE)

/* The tokens of a context function (1, 2, ...) and of an entry context
 * (1001, 1002, ...): which one an event has says where its context came from. */
typedef struct tokens {
  uint64_t plain;
  uint64_t entries;
} tokens;

static uint64_t plain_token(void *user) { return ++((tokens *)user)->plain; }

static uint64_t entry_token(void *user) { return 1000 + ++((tokens *)user)->entries; }

static cmr_history_options with_entry_context(tokens *user) {
  cmr_history_options tagged = options(0, 0, 0);
  tagged.context = plain_token;
  tagged.entry_context = entry_token;
  tagged.context_user = user;
  return tagged;
}

/* Through the entry points (the per-device table's pool): every event of
 * one call, the pool's growth from its upstream included, has that call's
 * entry token, and the context function is not called for them; the
 * calls made directly before and after have the context function's. */
START_TEST(the_entry_context_tags_every_event_of_an_entry_points_call) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_pool_resource *pool = pool_over(cmr_system_resource_ref(system), MIB, 0);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  ck_assert_ok(cmr_set_current_device_resource_ref(ref));
  int device = cmr_test_current_device();
  tokens user = {0, 0};
  cmr_history_options tagged = with_entry_context(&user);
  ck_assert_ok(cmr_history_start(&tagged));
  void *direct = NULL;
  ck_assert_ok(cmr_allocate(ref, 256, CMR_DEFAULT_STREAM, &direct));
  void *grown = cmr_pluggable_allocate(2 * MIB, device, CMR_DEFAULT_STREAM); /* more than the pool has */
  ck_assert_ptr_nonnull(grown);
  cmr_pluggable_deallocate(grown, 2 * MIB, device, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_deallocate(ref, direct, 256, CMR_DEFAULT_STREAM));
  size_t count = 0;
  cmr_history_event *events = stop_and_read(&count);
  ck_assert_uint_eq(user.entries, 2);
  ck_assert_uint_eq(user.plain, 2);
  /* The direct allocation; the entry call's upstream allocation, segment
   * and allocation; the entry call's free; the direct free. */
  ck_assert_uint_eq(count, 6);
  cmr_history_action actions[] = {CMR_HISTORY_ALLOCATE, CMR_HISTORY_ALLOCATE, CMR_HISTORY_SEGMENT_ALLOCATE,
                                  CMR_HISTORY_ALLOCATE, CMR_HISTORY_FREE,     CMR_HISTORY_FREE};
  uint64_t contexts[] = {1, 1001, 1001, 1001, 1002, 2};
  for (size_t i = 0; i < count; ++i) {
    ck_assert_int_eq(events[i].action, actions[i]);
    ck_assert_uint_eq(events[i].context, contexts[i]);
  }
  ck_assert_uint_eq(events[3].address, (uint64_t)(uintptr_t)grown);
  ck_assert_uint_eq(events[4].address, (uint64_t)(uintptr_t)grown);
  free(events);
  /* A caller built before entry_context (the options' older size) has the
   * context function's token there too, whatever lies beyond its struct. */
  tagged.size = offsetof(cmr_history_options, entry_context);
  ck_assert_ok(cmr_history_start(&tagged));
  cmr_pluggable_deallocate(cmr_pluggable_allocate(512, device, CMR_DEFAULT_STREAM), 512, device, CMR_DEFAULT_STREAM);
  events = stop_and_read(&count);
  ck_assert_uint_eq(count, 2);
  ck_assert_uint_eq(events[0].context, 3);
  ck_assert_uint_eq(events[1].context, 4);
  ck_assert_uint_eq(user.entries, 2);
  free(events);
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  cmr_test_destroy(pool, system);
}
END_TEST

/* A callback resource that calls the entry points from inside their call
 * (as a Python callback that makes a tensor would), once, before it takes
 * its own memory from `system`. */
typedef struct reentering {
  cmr_resource_ref system;
  int device;
  bool inside;
} reentering;

static void *reentering_allocate(size_t bytes, cmr_stream stream, void *arg) {
  reentering *r = arg;
  if (!r->inside) {
    r->inside = true;
    void *inner = cmr_pluggable_allocate(256, r->device, stream);
    if (inner != NULL) cmr_pluggable_deallocate(inner, 256, r->device, stream);
    r->inside = false;
  }
  void *ptr = NULL;
  return cmr_allocate(r->system, bytes, stream, &ptr) == CMR_SUCCESS ? ptr : NULL;
}

static void reentering_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)cmr_deallocate(((reentering *)arg)->system, ptr, bytes, stream);
}

/* An entry point's call inside another's has its own token, and the outer
 * call's events after it have the outer one's again. */
START_TEST(an_entry_points_call_inside_another_keeps_its_own_token) {
  cmr_system_resource *system = cmr_test_system_resource();
  reentering r = {cmr_system_resource_ref(system), cmr_test_current_device(), false};
  cmr_callback_resource *callback = NULL;
  ck_assert_ok(
      cmr_callback_resource_create(reentering_allocate, reentering_deallocate, &r, &r, BOTH_PROPERTIES, &callback));
  ck_assert_ok(cmr_set_current_device_resource_ref(cmr_callback_resource_ref(callback)));
  tokens user = {0, 0};
  cmr_history_options tagged = with_entry_context(&user);
  ck_assert_ok(cmr_history_start(&tagged));
  void *outer = cmr_pluggable_allocate(1024, r.device, CMR_DEFAULT_STREAM);
  ck_assert_ptr_nonnull(outer);
  size_t count = 0;
  cmr_history_event *events = stop_and_read(&count);
  ck_assert_uint_eq(user.entries, 3);
  ck_assert_uint_eq(user.plain, 0);
  /* The inner allocation (system's, callback's) and free (system's,
   * callback's), then the outer allocation (system's, callback's). */
  ck_assert_uint_eq(count, 6);
  const char *types[] = {"system", "callback", "system", "callback", "system", "callback"};
  uint64_t contexts[] = {1002, 1002, 1003, 1003, 1001, 1001};
  for (size_t i = 0; i < count; ++i) {
    ck_assert_str_eq(events[i].resource_type, types[i]);
    ck_assert_uint_eq(events[i].context, contexts[i]);
  }
  ck_assert_uint_eq(events[5].bytes, 1024);
  free(events);
  cmr_pluggable_deallocate(outer, 1024, r.device, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  cmr_test_destroy(callback, system);
}
END_TEST

/* The deadlock the entry context exists to avoid, played out with a mutex
 * for the GIL. Thread B calls the entry point, whose entry context takes
 * and lets go of the "GIL", and then blocks in its upstream's callback
 * holding the thread_safe adaptor's lock. Thread A takes the "GIL" and
 * calls the adaptor: the blocking hook says when it is about to wait for
 * the lock B holds. Only then is B let go: its call records its events
 * while A holds the "GIL" and waits for B. An entry context called there,
 * inside cmr, would wait for A, which waits for B; called at the entry,
 * before the lock, it never waits for a thread that waits for cmr. The
 * "GIL" is taken with a time limit, so that the deadlock, were it there,
 * fails the test instead of hanging it. */
typedef struct gil_play {
  pthread_mutex_t gil;
  pthread_mutex_t lock;
  pthread_cond_t changed;
  bool b_holds_the_adaptor;
  bool a_waits;
  bool b_may_go;
  bool gil_timed_out;
  cmr_resource_ref system;
  cmr_resource_ref adaptor;
  int device;
} gil_play;

static gil_play play;
static _Thread_local bool is_thread_a;

static void play_set(bool *flag) {
  pthread_mutex_lock(&play.lock);
  *flag = true;
  pthread_cond_broadcast(&play.changed);
  pthread_mutex_unlock(&play.lock);
}

static void play_wait(const bool *flag) {
  pthread_mutex_lock(&play.lock);
  while (!*flag) pthread_cond_wait(&play.changed, &play.lock);
  pthread_mutex_unlock(&play.lock);
}

static uint64_t entry_takes_the_gil(void *user) {
  (void)user;
  struct timespec limit;
  clock_gettime(CLOCK_REALTIME, &limit);
  limit.tv_sec += 1; /* free at once where it is taken at the entry: only a deadlock waits */
  if (pthread_mutex_timedlock(&play.gil, &limit) == ETIMEDOUT) {
    play.gil_timed_out = true;
    return 0;
  }
  pthread_mutex_unlock(&play.gil);
  return 7;
}

static void note_a_waits(void) {
  if (is_thread_a) play_set(&play.a_waits);
}

/* B's allocation, from the adaptor's upstream: held until A waits. */
static void *held_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)arg;
  if (!is_thread_a) {
    play_set(&play.b_holds_the_adaptor);
    play_wait(&play.b_may_go);
  }
  void *ptr = NULL;
  return cmr_allocate(play.system, bytes, stream, &ptr) == CMR_SUCCESS ? ptr : NULL;
}

static void held_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)arg;
  (void)cmr_deallocate(play.system, ptr, bytes, stream);
}

static void *thread_b(void *arg) {
  (void)arg;
  return cmr_pluggable_allocate(4096, play.device, CMR_DEFAULT_STREAM);
}

static void *thread_a(void *arg) {
  (void)arg;
  is_thread_a = true;
  pthread_mutex_lock(&play.gil);
  void *ptr = NULL;
  cmr_status status = cmr_allocate(play.adaptor, 4096, CMR_DEFAULT_STREAM, &ptr);
  pthread_mutex_unlock(&play.gil);
  return status == CMR_SUCCESS ? ptr : NULL;
}

START_TEST(an_entry_context_that_waits_does_not_deadlock_with_cmrs_locks) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_callback_resource *held = NULL;
  ck_assert_ok(cmr_callback_resource_create(held_allocate, held_deallocate, NULL, NULL, BOTH_PROPERTIES, &held));
  cmr_thread_safe_resource *adaptor = NULL;
  ck_assert_ok(cmr_thread_safe_resource_create(cmr_callback_resource_ref(held), &adaptor));
  play = (gil_play){.system = cmr_system_resource_ref(system),
                    .adaptor = cmr_thread_safe_resource_ref(adaptor),
                    .device = cmr_test_current_device()};
  ck_assert_int_eq(pthread_mutex_init(&play.gil, NULL), 0);
  ck_assert_int_eq(pthread_mutex_init(&play.lock, NULL), 0);
  ck_assert_int_eq(pthread_cond_init(&play.changed, NULL), 0);
  ck_assert_ok(cmr_set_current_device_resource_ref(play.adaptor));
  cmr_history_options tagged = options(0, 0, 0);
  tagged.entry_context = entry_takes_the_gil;
  ck_assert_ok(cmr_history_start(&tagged));
  cmr_blocking_hook previous = cmr_set_blocking_hook(note_a_waits);
  pthread_t a, b;
  ck_assert_int_eq(pthread_create(&b, NULL, thread_b, NULL), 0);
  play_wait(&play.b_holds_the_adaptor);
  ck_assert_int_eq(pthread_create(&a, NULL, thread_a, NULL), 0);
  play_wait(&play.a_waits);
  play_set(&play.b_may_go);
  void *b_ptr = NULL, *a_ptr = NULL;
  ck_assert_int_eq(pthread_join(b, &b_ptr), 0);
  ck_assert_int_eq(pthread_join(a, &a_ptr), 0);
  cmr_set_blocking_hook(previous);
  ck_assert_msg(!play.gil_timed_out, "an entry context waited for the GIL under cmr's lock");
  ck_assert_ptr_nonnull(b_ptr);
  ck_assert_ptr_nonnull(a_ptr);
  size_t count = 0;
  cmr_history_event *events = stop_and_read(&count);
  size_t tagged_events = 0;
  for (size_t i = 0; i < count; ++i) tagged_events += events[i].context == 7;
  ck_assert_uint_eq(tagged_events, 3); /* B's: system's, callback's and the adaptor's allocation */
  free(events);
  cmr_pluggable_deallocate(b_ptr, 4096, play.device, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_deallocate(play.adaptor, a_ptr, 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  pthread_cond_destroy(&play.changed);
  pthread_mutex_destroy(&play.lock);
  pthread_mutex_destroy(&play.gil);
  cmr_test_destroy(adaptor, held, system);
}
END_TEST

/* ---- many threads ------------------------------------------------------------- */

enum { recording_threads = 4, pairs_per_thread = 2000 };

typedef struct worker {
  cmr_resource_ref ref;
  _Atomic bool *stop;
} worker;

static void *allocate_and_free(void *arg) {
  worker *w = arg;
  for (int i = 0; i < pairs_per_thread; ++i) {
    void *ptr = NULL;
    if (cmr_allocate(w->ref, 256 + (size_t)(i % 8) * 256, CMR_DEFAULT_STREAM, &ptr) != CMR_SUCCESS) return arg;
    if (cmr_deallocate(w->ref, ptr, 256 + (size_t)(i % 8) * 256, CMR_DEFAULT_STREAM) != CMR_SUCCESS) return arg;
  }
  return NULL;
}

static void *read_and_restart(void *arg) {
  worker *w = arg;
  cmr_history_options restart = options(1024, 0, 0);
  while (!atomic_load(w->stop)) {
    size_t count = 0;
    if (cmr_history_read(NULL, 0, &count, NULL) != CMR_SUCCESS || count > 1024) return arg;
    char *bytes = NULL;
    size_t length = 0;
    if (cmr_snapshot_bytes(w->ref, CMR_SNAPSHOT_PICKLE, &bytes, &length) != CMR_SUCCESS) return arg;
    cmr_snapshot_free(bytes);
    if (cmr_history_start(&restart) != CMR_SUCCESS) return arg;
  }
  return NULL;
}

/* Every event of threads that record at once is kept once, in order. */
static void record_from_threads(bool restarting) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_pool_resource *pool = pool_over(cmr_system_resource_ref(system), 4 * MIB, 0);
  _Atomic bool stop = false;
  worker w = {cmr_pool_resource_ref(pool), &stop};
  cmr_history_options big = options(restarting ? 1024 : 4 * recording_threads * pairs_per_thread, 0, 0);
  ck_assert_ok(cmr_history_start(&big));
  pthread_t threads[recording_threads + 1];
  for (int i = 0; i < recording_threads; ++i)
    ck_assert_int_eq(pthread_create(&threads[i], NULL, allocate_and_free, &w), 0);
  if (restarting) ck_assert_int_eq(pthread_create(&threads[recording_threads], NULL, read_and_restart, &w), 0);
  for (int i = 0; i < recording_threads; ++i) {
    void *failed = (void *)1;
    ck_assert_int_eq(pthread_join(threads[i], &failed), 0);
    ck_assert_ptr_null(failed);
  }
  atomic_store(&stop, true);
  if (restarting) {
    void *failed = (void *)1;
    ck_assert_int_eq(pthread_join(threads[recording_threads], &failed), 0);
    ck_assert_ptr_null(failed);
  }
  ck_assert_ok(cmr_history_stop());
  size_t count = 0;
  uint64_t dropped = 0;
  ck_assert_ok(cmr_history_read(NULL, 0, &count, &dropped));
  if (!restarting) {
    ck_assert_uint_eq(count, 2u * recording_threads * pairs_per_thread);
    ck_assert_uint_eq(dropped, 0);
    cmr_history_event *events = read_all(&count);
    size_t allocations = 0;
    for (size_t i = 0; i < count; ++i) {
      ck_assert_uint_eq(events[i].sequence, i);
      allocations += events[i].action == CMR_HISTORY_ALLOCATE;
    }
    ck_assert_uint_eq(allocations, (size_t)recording_threads * pairs_per_thread);
    free(events);
  } else {
    ck_assert_uint_le(count, 1024);
  }
  cmr_test_destroy(pool, system);
}

START_TEST(threads_record_at_once) { record_from_threads(false); }
END_TEST

START_TEST(threads_record_while_others_read_and_restart) { record_from_threads(true); }
END_TEST

static void *record_until_stopped(void *arg) {
  worker *w = arg;
  while (!atomic_load(w->stop)) {
    void *ptr = NULL;
    if (cmr_allocate(w->ref, 256, CMR_DEFAULT_STREAM, &ptr) != CMR_SUCCESS) return arg;
    if (cmr_deallocate(w->ref, ptr, 256, CMR_DEFAULT_STREAM) != CMR_SUCCESS) return arg;
  }
  return NULL;
}

/* A child forked while a thread records starts without a history (the
 * parent's writers are not in it) and records its own. */
START_TEST(a_forked_child_starts_without_a_history) {
  cmr_system_resource *system = cmr_test_system_resource();
  _Atomic bool stop = false;
  worker w = {cmr_system_resource_ref(system), &stop};
  ck_assert_ok(cmr_history_start(NULL));
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, record_until_stopped, &w), 0);
  for (int round = 0; round < 20; ++round) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      /* The exit status says what the child found: 0 all well, 1 a history
       * left from the parent, 2 no start, 3 no event of its own. */
      size_t count = 1;
      if (cmr_history_recording() || cmr_history_read(NULL, 0, &count, NULL) != CMR_SUCCESS || count != 0) _exit(1);
      if (cmr_history_start(NULL) != CMR_SUCCESS) _exit(2);
      /* A CUDA child cannot use the device (CUDA does not survive fork): the host build allocates. */
      cmr_system_resource *own = NULL;
      void *ptr = NULL;
      if (!cmr_built_with_cuda() &&
          (cmr_system_resource_create(&own) != CMR_SUCCESS ||
           cmr_allocate(cmr_system_resource_ref(own), 256, CMR_DEFAULT_STREAM, &ptr) != CMR_SUCCESS ||
           cmr_history_read(NULL, 0, &count, NULL) != CMR_SUCCESS || count != 1)) {
        _exit(3);
      }
      /* Passed: the exit is an exec, which a leak checker does not follow,
       * since the blocks the parent's recording thread had in hand at the
       * fork are unreachable here (that thread is gone) and valgrind would
       * call them lost. */
      execl("/bin/true", "true", (char *)NULL);
      _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's history (round %d): exit %d, signal %d",
                  round, WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  atomic_store(&stop, true);
  void *failed = (void *)1;
  ck_assert_int_eq(pthread_join(thread, &failed), 0);
  ck_assert_ptr_null(failed);
  ck_assert_ok(cmr_history_stop());
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

/* ---- snapshots ------------------------------------------------------------------ */

START_TEST(snapshot_arguments_are_checked) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref ref = cmr_system_resource_ref(system);
  char *bytes = (char *)1;
  size_t length = 9;
  ck_assert_status(cmr_snapshot_bytes(ref, (cmr_snapshot_format)9, &bytes, &length), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("unknown snapshot format 9");
  ck_assert_ptr_null(bytes);
  ck_assert_status(cmr_snapshot_bytes((cmr_resource_ref){0}, CMR_SNAPSHOT_JSON, &bytes, &length),
                   CMR_ERROR_INVALID_REF);
  ck_assert_status(cmr_snapshot_bytes(ref, CMR_SNAPSHOT_JSON, NULL, &length), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_snapshot_write(ref, CMR_SNAPSHOT_JSON, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_snapshot_write(ref, CMR_SNAPSHOT_JSON, "/nonexistent/dir/snapshot.json"), CMR_ERROR_IO);
  ck_assert_message_has("cannot be opened for writing");
  ck_assert_status(cmr_snapshot_report("[1, 2]", 6, "/tmp/never.html"), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("the snapshot is not a JSON object");
  ck_assert_status(cmr_snapshot_report(NULL, 0, "/tmp/never.html"), CMR_ERROR_NULL_POINTER);
  /* A leaf has no segments: an empty list, and the history's part. */
  ck_assert_ok(cmr_snapshot_bytes(ref, CMR_SNAPSHOT_JSON, &bytes, &length));
  ck_assert_ptr_nonnull(strstr(bytes, "{\"segments\":[],\"device_traces\":[[]],\"cmr\":{"));
  ck_assert_uint_eq(strlen(bytes), length);
  cmr_snapshot_free(bytes);
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

/* A pool with one block out: one segment of the whole chunk, its blocks
 * tiling it, in each form. */
START_TEST(a_pool_snapshot_has_its_segment) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_pool_resource *pool = pool_over(cmr_system_resource_ref(system), MIB, 0);
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  ck_assert_ok(cmr_history_start(NULL));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  char *json = NULL, *pickle = NULL, *pickle2 = NULL, *html = NULL;
  size_t length = 0, pickle_length = 0, pickle2_length = 0, html_length = 0;
  ck_assert_ok(cmr_snapshot_bytes(ref, CMR_SNAPSHOT_JSON, &json, &length));
  char expected[256];
  snprintf(expected, sizeof expected, "\"total_size\":%zu,", MIB);
  ck_assert_ptr_nonnull(strstr(json, expected));
  snprintf(expected, sizeof expected,
           "\"blocks\":[{\"address\":%llu,\"size\":1024,\"requested_size\":1000,\"state\":\"active_allocated\"",
           (unsigned long long)(uintptr_t)ptr);
  ck_assert_ptr_nonnull(strstr(json, expected));
  ck_assert_ptr_nonnull(strstr(json, "\"allocated_size\":1024,\"active_size\":1024,\"requested_size\":1000,"));
  ck_assert_ptr_nonnull(strstr(json, "\"size\":1047552,\"requested_size\":0,\"state\":\"inactive\""));
  snprintf(expected, sizeof expected, "{\"action\":\"alloc\",\"addr\":%llu,\"size\":1000,",
           (unsigned long long)(uintptr_t)ptr);
  ck_assert_ptr_nonnull(strstr(json, expected));
  ck_assert_ok(cmr_snapshot_bytes(ref, CMR_SNAPSHOT_PICKLE, &pickle, &pickle_length));
  ck_assert_int_eq(pickle[0], '\x80');
  ck_assert_int_eq(pickle[1], 4);
  ck_assert_int_eq(pickle[pickle_length - 1], '.');
  ck_assert_ok(cmr_snapshot_bytes(ref, CMR_SNAPSHOT_PICKLE_2, &pickle2, &pickle2_length));
  ck_assert_int_eq(pickle2[1], 2);
  ck_assert_ok(cmr_snapshot_bytes(ref, CMR_SNAPSHOT_HTML, &html, &html_length));
  ck_assert_ptr_nonnull(strstr(html, "<!DOCTYPE html>"));
  ck_assert_ptr_nonnull(strstr(html, expected));
  ck_assert_ptr_null(strstr(html, "__CMR_SNAPSHOT_JSON__"));
  cmr_snapshot_free(json);
  cmr_snapshot_free(pickle);
  cmr_snapshot_free(pickle2);
  cmr_snapshot_free(html);
  ck_assert_ok(cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_history_stop());
  cmr_test_destroy(pool, system);
}
END_TEST

static void history_cases(Suite *suite) {
  cmr_test_case(suite, "history", NULL, NULL, options_are_checked, nothing_is_recorded_while_off,
                a_pool_records_its_calls_and_its_segments, out_of_memory_and_retries_are_recorded,
                the_ring_keeps_the_newest_events, c_stacks_are_taken_when_asked, a_context_function_tags_each_event);
  cmr_test_case(suite, "entry_points", NULL, NULL, the_entry_context_tags_every_event_of_an_entry_points_call,
                an_entry_points_call_inside_another_keeps_its_own_token,
                an_entry_context_that_waits_does_not_deadlock_with_cmrs_locks);
  cmr_test_case(suite, "threads", NULL, NULL, threads_record_at_once, threads_record_while_others_read_and_restart,
                a_forked_child_starts_without_a_history);
  cmr_test_case(suite, "snapshots", NULL, NULL, snapshot_arguments_are_checked, a_pool_snapshot_has_its_segment);
}

/* The suite needs a device: the CUDA build's system resource synchronizes streams. */
int main(void) { return cmr_test_main_suite("history", CMR_TEST_NEEDS_DEVICE, history_cases); }
