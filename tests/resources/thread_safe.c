/* SPDX-License-Identifier: Apache-2.0 */
/* thread_safe beyond the battery: while one call is inside the upstream, a
 * second call from another thread waits for the adaptor's lock instead of
 * entering the upstream too, for allocations and frees alike. Decided without
 * timing: the upstream holds the first call until the second one has either
 * waited for a lock (cmr's blocking hook says so) or entered the upstream. */
#include <pthread.h>
#include <stdlib.h>

#include "test_util.h"

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_changed = PTHREAD_COND_INITIALIZER;
typedef struct gate_state {
  bool closed;         /* calls into the upstream are held at the gate */
  int inside;          /* calls inside the upstream now */
  int most_inside;     /* the most at once */
  bool other_waited;   /* a caller waited for a lock (the blocking hook ran) */
  bool first_released; /* the first call inside may leave */
} gate_state;
static gate_state gate;

static void on_blocking(void) {
  pthread_mutex_lock(&gate_lock);
  gate.other_waited = true;
  pthread_cond_broadcast(&gate_changed);
  pthread_mutex_unlock(&gate_lock);
}

/* Entered by every upstream call: the first one waits there, while the gate
 * is closed, until the test releases it. */
static void pass_gate(void) {
  pthread_mutex_lock(&gate_lock);
  if (gate.closed) {
    int me = ++gate.inside;
    if (gate.inside > gate.most_inside) gate.most_inside = gate.inside;
    pthread_cond_broadcast(&gate_changed);
    while (me == 1 && !gate.first_released) pthread_cond_wait(&gate_changed, &gate_lock);
    gate.inside--;
  }
  pthread_mutex_unlock(&gate_lock);
}

static void *gated_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream, (void)arg;
  pass_gate();
  return aligned_alloc(256, (bytes + 255) / 256 * 256);
}

static void gated_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)bytes, (void)stream, (void)arg;
  pass_gate();
  free(ptr);
}

typedef struct call {
  cmr_resource_ref ref;
  bool allocate; /* else free `ptr` */
  void *ptr;
  cmr_status status;
} call;

static void *run_call(void *arg) {
  call *c = arg;
  if (c->allocate) {
    c->status = cmr_allocate(c->ref, 1000, CMR_DEFAULT_STREAM, &c->ptr);
  } else {
    c->status = cmr_deallocate(c->ref, c->ptr, 1000, CMR_DEFAULT_STREAM);
  }
  return NULL;
}

static void wait_until(bool (*reached)(void)) {
  pthread_mutex_lock(&gate_lock);
  while (!reached()) pthread_cond_wait(&gate_changed, &gate_lock);
  pthread_mutex_unlock(&gate_lock);
}

static bool first_inside(void) { return gate.inside == 1; }
static bool second_waited_or_entered(void) { return gate.other_waited || gate.inside == 2; }

/* Two calls of one kind (_i: 0 allocations, 1 frees) from two threads. */
START_TEST(test_second_call_waits_for_the_first) {
  cmr_callback_resource *upstream = NULL;
  ck_assert_ok(cmr_callback_resource_create(gated_allocate, gated_deallocate, NULL, NULL,
                                            CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE, &upstream));
  cmr_thread_safe_resource *handle = NULL;
  ck_assert_ok(cmr_thread_safe_resource_create(cmr_callback_resource_ref(upstream), &handle));
  cmr_resource_ref ref = cmr_thread_safe_resource_ref(handle);
  bool allocations = _i == 0;
  call first = {ref, allocations, NULL, CMR_SUCCESS}, second = first;
  if (!allocations) {
    ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &first.ptr));
    ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &second.ptr));
  }
  gate = (gate_state){.closed = true}; /* each case afresh: CK_FORK=no runs both in one process */
  cmr_blocking_hook previous = cmr_set_blocking_hook(on_blocking);
  pthread_t a, b;
  ck_assert_int_eq(pthread_create(&a, NULL, run_call, &first), 0);
  wait_until(first_inside);
  ck_assert_int_eq(pthread_create(&b, NULL, run_call, &second), 0);
  wait_until(second_waited_or_entered);
  pthread_mutex_lock(&gate_lock);
  gate.first_released = true;
  pthread_cond_broadcast(&gate_changed);
  pthread_mutex_unlock(&gate_lock);
  ck_assert_int_eq(pthread_join(a, NULL), 0);
  ck_assert_int_eq(pthread_join(b, NULL), 0);
  cmr_set_blocking_hook(previous);
  gate.closed = false;
  ck_assert_msg(gate.most_inside == 1, "%d calls were inside the upstream at once", gate.most_inside);
  ck_assert(gate.other_waited);
  ck_assert_int_eq(first.status, CMR_SUCCESS);
  ck_assert_int_eq(second.status, CMR_SUCCESS);
  if (allocations) {
    ck_assert_ok(cmr_deallocate(ref, first.ptr, 1000, CMR_DEFAULT_STREAM));
    ck_assert_ok(cmr_deallocate(ref, second.ptr, 1000, CMR_DEFAULT_STREAM));
  }
  cmr_test_destroy(handle, upstream);
}
END_TEST

static void thread_safe_cases(Suite *suite) {
  TCase *tcase = tcase_create("serialized");
  tcase_add_loop_test(tcase, test_second_call_waits_for_the_first, 0, 2);
  suite_add_tcase(suite, tcase);
}

int main(void) { return cmr_test_main_suite("thread_safe", CMR_TEST_ANY_MACHINE, thread_safe_cases); }
