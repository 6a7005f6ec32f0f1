/* SPDX-License-Identifier: Apache-2.0 */
/* Many threads at once on each suballocator (host build; also run under
 * TSan): every thread allocates and frees random sizes on a stream of its
 * own or on the default stream, fills each block with a pattern of its own
 * and checks it before the free, so a block handed to two owners at once is
 * caught. Then blocks allocated on one thread's stream are freed by another
 * thread on its stream, so they travel between lists. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

enum { thread_count = 8, rounds = 3000, live = 32, max_bytes = 20000, MiB = 1 << 20 };

typedef struct subject {
  const char *name;
  cmr_status (*make)(cmr_resource_ref upstream, cmr_resource_ref *out, void **handle);
  cmr_status (*destroy)(void *handle);
  size_t max_bytes; /* largest request the subject serves */
  /* Bytes it holds from its upstream (NULL: it does not say). */
  cmr_status (*footprint)(void *handle, size_t *out);
} subject;

static cmr_status make_pool(cmr_resource_ref upstream, cmr_resource_ref *out, void **handle) {
  cmr_pool_resource *pool = NULL;
  cmr_status status = cmr_pool_resource_create(upstream, CMR_SIZE(4 * MiB), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT,
                                               CMR_POOL_CAPTURE_SERVE, &pool);
  if (status == CMR_SUCCESS) *out = cmr_pool_resource_ref(pool);
  *handle = pool;
  return status;
}

static cmr_status destroy_pool(void *handle) { return cmr_pool_resource_destroy(handle); }

static cmr_status make_fixed_size(cmr_resource_ref upstream, cmr_resource_ref *out, void **handle) {
  cmr_fixed_size_resource *fixed_size = NULL;
  cmr_status status = cmr_fixed_size_resource_create(upstream, CMR_SIZE(max_bytes), CMR_SIZE(64),
                                                     CMR_FIXED_SIZE_CAPTURE_SERVE, &fixed_size);
  if (status == CMR_SUCCESS) *out = cmr_fixed_size_resource_ref(fixed_size);
  *handle = fixed_size;
  return status;
}

static cmr_status destroy_fixed_size(void *handle) { return cmr_fixed_size_resource_destroy(handle); }

/* Bins of 256 B .. 8 KiB made from exponents, one given (a fixed_size the
 * binning resource alone holds), and the upstream above 12 KiB. */
static cmr_status make_binning(cmr_resource_ref upstream, cmr_resource_ref *out, void **handle) {
  cmr_binning_resource *binning = NULL;
  cmr_fixed_size_resource *bin = NULL;
  cmr_status status = cmr_binning_resource_create(upstream, CMR_INT(8), CMR_INT(13), &binning);
  if (status == CMR_SUCCESS)
    status =
        cmr_fixed_size_resource_create(upstream, CMR_SIZE(12288), CMR_SIZE(64), CMR_FIXED_SIZE_CAPTURE_SERVE, &bin);
  if (status == CMR_SUCCESS)
    status = cmr_binning_resource_add_bin_resource(binning, 12288, cmr_fixed_size_resource_ref(bin));
  if (bin != NULL) cmr_fixed_size_resource_destroy(bin);
  if (status == CMR_SUCCESS) *out = cmr_binning_resource_ref(binning);
  *handle = binning;
  return status;
}

static cmr_status destroy_binning(void *handle) { return cmr_binning_resource_destroy(handle); }

static cmr_status pool_footprint(void *handle, size_t *out) { return cmr_pool_resource_pool_size(handle, out); }

static cmr_status fixed_size_footprint(void *handle, size_t *out) {
  return cmr_fixed_size_resource_upstream_bytes(handle, out);
}

static cmr_status make_arena(cmr_resource_ref upstream, cmr_resource_ref *out, void **handle) {
  cmr_arena_resource *arena = NULL;
  cmr_status status =
      cmr_arena_resource_create(upstream, CMR_SIZE(64 * MiB), false, "", CMR_ARENA_CAPTURE_SERVE, &arena);
  if (status == CMR_SUCCESS) *out = cmr_arena_resource_ref(arena);
  *handle = arena;
  return status;
}

static cmr_status destroy_arena(void *handle) { return cmr_arena_resource_destroy(handle); }

/* The arena never grows: its footprint is arena_size, whatever the threads do. */
static const subject subjects[] = {
    {"pool", make_pool, destroy_pool, max_bytes, pool_footprint},
    {"fixed_size", make_fixed_size, destroy_fixed_size, max_bytes, fixed_size_footprint},
    {"binning", make_binning, destroy_binning, max_bytes, NULL},
    {"arena", make_arena, destroy_arena, max_bytes, NULL},
};

typedef struct held_block {
  unsigned char *ptr;
  size_t bytes;
} held_block;

typedef struct worker {
  const subject *subject;
  cmr_resource_ref ref;
  unsigned index;
  cmr_stream stream;
  held_block held[live];
  cmr_status failure;
  size_t corrupted;
  char message[256];
} worker;

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

static unsigned char pattern(unsigned owner, size_t offset) { return (unsigned char)(owner * 151u + offset * 7u + 1u); }

static void fill(held_block *block, unsigned owner) {
  for (size_t i = 0; i < block->bytes; ++i) block->ptr[i] = pattern(owner, i);
}

static size_t damage(const held_block *block, unsigned owner) {
  size_t wrong = 0;
  for (size_t i = 0; i < block->bytes; ++i) wrong += block->ptr[i] != pattern(owner, i);
  return wrong;
}

static void note_failure(worker *w, cmr_status status) {
  if (status == CMR_SUCCESS || w->failure != CMR_SUCCESS) return;
  w->failure = status;
  snprintf(w->message, sizeof w->message, "%s", cmr_last_error_message());
}

static void release(worker *w, held_block *block, unsigned owner) {
  w->corrupted += damage(block, owner);
  note_failure(w, cmr_deallocate(w->ref, block->ptr, block->bytes, w->stream));
  block->ptr = NULL;
}

static void *churn(void *arg) {
  worker *w = arg;
  uint64_t rng = 0x9E3779B97F4A7C15u ^ w->index;
  for (unsigned round = 0; round < rounds && w->failure == CMR_SUCCESS; ++round) {
    held_block *block = &w->held[next_random(&rng) % live];
    if (block->ptr != NULL) {
      release(w, block, w->index);
      continue;
    }
    block->bytes = 1 + (size_t)(next_random(&rng) % w->subject->max_bytes);
    cmr_status status = cmr_allocate(w->ref, block->bytes, w->stream, (void **)&block->ptr);
    note_failure(w, status);
    if (status == CMR_SUCCESS) fill(block, w->index);
  }
  return NULL;
}

/* Frees the blocks the neighbouring worker still holds, on this worker's stream. */
static void *free_neighbours(void *arg) {
  worker *w = arg;
  worker *neighbour = w - w->index + (w->index + 1) % thread_count;
  for (unsigned i = 0; i < live; ++i) {
    if (neighbour->held[i].ptr != NULL) release(w, &neighbour->held[i], neighbour->index);
  }
  return NULL;
}

static void run_all(worker *workers, void *(*body)(void *)) {
  pthread_t threads[thread_count];
  for (unsigned i = 0; i < thread_count; ++i) ck_assert_int_eq(pthread_create(&threads[i], NULL, body, &workers[i]), 0);
  for (unsigned i = 0; i < thread_count; ++i) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  for (unsigned i = 0; i < thread_count; ++i) {
    ck_assert_msg(workers[i].failure == CMR_SUCCESS, "%s, thread %u: %s: %s", workers[i].subject->name, i,
                  cmr_status_string(workers[i].failure), workers[i].message);
    ck_assert_msg(workers[i].corrupted == 0, "%s, thread %u: %zu bytes of its blocks were overwritten",
                  workers[i].subject->name, i, workers[i].corrupted);
  }
}

START_TEST(threads_on_their_own_streams) {
  const subject *s = &subjects[_i];
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref ref;
  void *handle = NULL;
  ck_assert_ok(s->make(cmr_system_resource_ref(system), &ref, &handle));
  static worker workers[thread_count];
  for (unsigned i = 0; i < thread_count; ++i) {
    workers[i] = (worker){.subject = s, .ref = ref, .index = i};
    /* Odd threads share the default stream; even ones have their own. */
    if (i % 2 == 0) workers[i].stream = cmr_test_stream();
  }
  run_all(workers, churn);
  run_all(workers, free_neighbours);
  if (s->footprint != NULL) {
    /* Threads missing memory that is only moving between lists must not
     * make the resource grow again and again: it stays near the live set. */
    size_t held = 0, most_live = (size_t)thread_count * live * max_bytes;
    ck_assert_ok(s->footprint(handle, &held));
    ck_assert_msg(held <= 8 * most_live, "%s holds %zu bytes for at most %zu live", s->name, held, most_live);
  }
  for (unsigned i = 0; i < thread_count; ++i) {
    if (workers[i].stream != CMR_DEFAULT_STREAM) ck_assert_ok(cmr_stream_destroy(workers[i].stream));
  }
  ck_assert_ok(s->destroy(handle));
  ck_assert_ok(cmr_system_resource_destroy(system));
}
END_TEST

static void suballocators_cases(Suite *suite) {
  TCase *threads = cmr_test_loop_case(suite, "threads", NULL, NULL, (int)(sizeof subjects / sizeof subjects[0]),
                                      threads_on_their_own_streams);
  tcase_set_timeout(threads, 300);
}

int main(void) { return cmr_test_main_suite("suballocators", CMR_TEST_ANY_MACHINE, suballocators_cases); }
