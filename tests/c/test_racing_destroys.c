/* SPDX-License-Identifier: Apache-2.0 */
/* Two threads destroying one handle at once: for every kind of handle the
 * API hands out (a resource's, a stack, a device buffer, a stream pool, a
 * stream), exactly one destroy wins and tears it down, once; the other is
 * told it was already destroyed. Run under TSan and ASan, a teardown done
 * twice (a double free of a buffer's memory, a pool's streams ended twice)
 * is a finding even where the statuses happen to look right. */
#include <pthread.h>

#include <cmr/stack.h>
#include <cmr/stream_pool.h>

#include "test_util.h"

enum { rounds = 200 };

typedef cmr_status (*destroy_fn)(void *handle);

typedef struct destroy_race {
  pthread_barrier_t start;
  destroy_fn destroy;
  void *handle;
  cmr_status results[2];
} destroy_race;

typedef struct racer {
  destroy_race *race;
  int index;
} racer;

static void *run_racer(void *arg) {
  racer *self = arg;
  pthread_barrier_wait(&self->race->start);
  self->race->results[self->index] = self->race->destroy(self->race->handle);
  return NULL;
}

/* Destroys `handle` from two threads at once; `lost` is what the loser gets. */
static void race_destroys(destroy_fn destroy, void *handle, cmr_status lost) {
  destroy_race race = {.destroy = destroy, .handle = handle};
  ck_assert_int_eq(pthread_barrier_init(&race.start, NULL, 2), 0);
  racer racers[2] = {{&race, 0}, {&race, 1}};
  ck_assert_ptr_null(cmr_test_threads(2, run_racer, racers, sizeof racers[0]).returned);
  pthread_barrier_destroy(&race.start);
  int won = (race.results[0] == CMR_SUCCESS) + (race.results[1] == CMR_SUCCESS);
  ck_assert_msg(won == 1, "destroys returned %s and %s", cmr_status_string(race.results[0]),
                cmr_status_string(race.results[1]));
  ck_assert_int_eq(race.results[0] == CMR_SUCCESS ? race.results[1] : race.results[0], lost);
}

static cmr_status destroy_system(void *handle) { return cmr_system_resource_destroy(handle); }
static cmr_status destroy_stack(void *handle) { return cmr_stack_destroy(handle); }
static cmr_status destroy_buffer(void *handle) { return cmr_device_buffer_destroy(handle); }
static cmr_status destroy_stream_pool(void *handle) { return cmr_stream_pool_destroy(handle); }
static cmr_status destroy_stream(void *handle) { return cmr_stream_destroy((cmr_stream)handle); }

START_TEST(a_resource_handle) {
  for (int i = 0; i < rounds; ++i) {
    race_destroys(destroy_system, cmr_test_system_resource(), CMR_ERROR_DESTROYED_HANDLE);
  }
}
END_TEST

START_TEST(a_stack) {
  for (int i = 0; i < rounds; ++i) {
    race_destroys(destroy_stack, cmr_test_stack("statistics(system)", NULL), CMR_ERROR_DESTROYED_HANDLE);
  }
}
END_TEST

START_TEST(a_device_buffer) {
  /* A resource that keeps no record of what it handed out: only the count
   * of frees can tell a double free. */
  test_foreign foreign = {0};
  cmr_resource_ref ref = test_foreign_ref(&foreign, &test_foreign_ops);
  for (int i = 0; i < rounds; ++i) {
    cmr_device_buffer *buffer = NULL;
    ck_assert_ok(cmr_device_buffer_create(1000, CMR_DEFAULT_STREAM, ref, &buffer));
    race_destroys(destroy_buffer, buffer, CMR_ERROR_DESTROYED_HANDLE);
  }
  ck_assert_int_eq(foreign.allocations, rounds);
  ck_assert_int_eq(foreign.deallocations, rounds);
  ck_assert_uint_eq(foreign.outstanding, 0);
}
END_TEST

START_TEST(a_stream_pool) {
  for (int i = 0; i < rounds; ++i) {
    cmr_stream_pool *pool = NULL;
    ck_assert_ok(cmr_stream_pool_create(4, CMR_STREAM_FLAGS_SYNC_DEFAULT, &pool));
    race_destroys(destroy_stream_pool, pool, CMR_ERROR_DESTROYED_HANDLE);
  }
}
END_TEST

START_TEST(a_stream) {
  for (int i = 0; i < rounds; ++i) {
    race_destroys(destroy_stream, (void *)cmr_test_stream(), CMR_ERROR_INVALID_ARGUMENT);
  }
}
END_TEST

static void racing_destroys_cases(Suite *suite) {
  cmr_test_case(suite, "two_destroys", NULL, NULL, a_resource_handle, a_stack, a_device_buffer, a_stream_pool,
                a_stream);
}

int main(void) { return cmr_test_main_suite("racing_destroys", CMR_TEST_NEEDS_DEVICE, racing_destroys_cases); }
