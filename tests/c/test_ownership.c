/* SPDX-License-Identifier: Apache-2.0 */
/* The ownership rules under misuse and concurrency (core.h, object.h):
 * - the per-device entry used by many threads while another replaces it;
 * - a retain that comes while the last share is being released fails;
 * - handles and refs dead for any length of time are reported, with the
 *   handle table's memory bounded;
 * - every handle owns exactly one share (from_ref included): a second
 *   destroy is reported and never drops anyone else's share;
 * - a handle of the wrong resource, or no handle at all, is refused;
 * - no resource may come to allocate from itself (cycles).
 * INTERNAL: it reads how many handle slots the table has made. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "object.h"
#include "test_util.h"

static cmr_system_resource *system_handle;
static cmr_resource_ref host;
static long alive_before;

static void setup(void) {
  alive_before = cmr_objects_alive();
  system_handle = cmr_test_system_resource();
  host = cmr_system_resource_ref(system_handle);
}

/* Every case gives back all it made: no share is lost or kept. */
static void teardown(void) {
  ck_assert_ok(cmr_reset_current_device_resource_ref());
  ck_assert_ok(cmr_system_resource_destroy(system_handle));
  ck_assert_int_eq(cmr_objects_alive(), alive_before);
}

static cmr_pool_resource *small_pool(void) {
  cmr_pool_resource *pool = NULL;
  ck_assert_ok(cmr_pool_resource_create(host, CMR_SIZE(64 * 1024), CMR_SIZE(1 << 20), CMR_SIZE_DEFAULT,
                                        CMR_POOL_CAPTURE_SERVE, &pool));
  return pool;
}

/* ---- the per-device entry replaced while in use ------------------------------------------ */

enum { USERS = 8, REPLACEMENTS = 10000 };

static atomic_bool replacing_done;
static atomic_ulong uses;

/* What a user finds must work for the whole use: a share taken with the
 * read (acquire), or a ref read and then retained, which may come too late
 * (then DESTROYED_HANDLE, never a use of freed memory). */
static void *use_the_entry(void *arg) {
  bool acquire = (intptr_t)arg % 2 == 0;
  while (!atomic_load(&replacing_done)) {
    cmr_resource_ref ref;
    cmr_status status =
        acquire ? cmr_acquire_current_device_resource_ref(&ref) : cmr_get_current_device_resource_ref(&ref);
    if (status != CMR_SUCCESS) return (void *)"reading the entry failed";
    if (!acquire) {
      status = cmr_ref_retain(ref);
      if (status == CMR_ERROR_DESTROYED_HANDLE) continue; /* too late: replaced and gone, reported */
      if (status != CMR_SUCCESS) return (void *)"cmr_ref_retain failed otherwise";
    }
    void *ptr = NULL;
    if (cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr) != CMR_SUCCESS) return (void *)"allocate failed";
    unsigned properties = 0;
    if (cmr_ref_properties(ref, &properties) != CMR_SUCCESS) return (void *)"properties failed";
    /* The pools are host memory; the default before the first one may be device memory. */
    if (properties & CMR_PROPERTY_HOST_ACCESSIBLE) ((volatile char *)ptr)[999] = 1;
    if (cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM) != CMR_SUCCESS) return (void *)"deallocate failed";
    if (cmr_ref_release(ref) != CMR_SUCCESS) return (void *)"release failed";
    atomic_fetch_add(&uses, 1);
  }
  return NULL;
}

START_TEST(the_entry_is_used_safely_while_another_thread_replaces_it) {
  atomic_store(&replacing_done, false);
  pthread_t users[USERS];
  for (intptr_t t = 0; t < USERS; t++) {
    ck_assert_int_eq(pthread_create(&users[t], NULL, use_the_entry, (void *)t), 0);
  }
  for (int i = 0; i < REPLACEMENTS; i++) {
    cmr_pool_resource *pool = small_pool();
    ck_assert_ok(cmr_set_current_device_resource_ref(cmr_pool_resource_ref(pool)));
    ck_assert_ok(cmr_pool_resource_destroy(pool)); /* the table's share is the last one */
  }
  atomic_store(&replacing_done, true);
  for (int t = 0; t < USERS; t++) {
    void *failed = NULL;
    ck_assert_int_eq(pthread_join(users[t], &failed), 0);
    ck_assert_msg(failed == NULL, "user %d: %s: %s", t, (const char *)failed, cmr_last_error_message());
  }
  ck_assert_uint_gt(atomic_load(&uses), 0);
}
END_TEST

/* ---- retaining during the last release ----------------------------------------------------- */

static cmr_resource_ref dying;
static cmr_status retain_while_dying = CMR_SUCCESS;
static int frees_seen;

static void *forward_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)arg;
  void *ptr = NULL;
  return cmr_allocate(host, bytes, stream, &ptr) == CMR_SUCCESS ? ptr : NULL;
}

/* The pool's upstream, freeing the pool's chunks while the pool is being
 * destroyed: a retain of the pool now must fail. */
static void retain_the_pool_while_freeing(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)arg;
  retain_while_dying = cmr_ref_retain(dying);
  frees_seen++;
  cmr_deallocate(host, ptr, bytes, stream);
}

START_TEST(a_retain_during_the_last_release_fails) {
  cmr_callback_resource *upstream = NULL;
  ck_assert_ok(cmr_callback_resource_create(forward_allocate, retain_the_pool_while_freeing, NULL, NULL,
                                            CMR_PROPERTY_HOST_ACCESSIBLE, &upstream));
  cmr_pool_resource *pool = NULL;
  ck_assert_ok(cmr_pool_resource_create(cmr_callback_resource_ref(upstream), CMR_SIZE(64 * 1024), CMR_SIZE(1 << 20),
                                        CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &pool));
  dying = cmr_pool_resource_ref(pool);
  frees_seen = 0;
  ck_assert_ok(cmr_pool_resource_destroy(pool));
  ck_assert_int_gt(frees_seen, 0);
  ck_assert_int_eq(retain_while_dying, CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_validate(dying), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_ok(cmr_callback_resource_destroy(upstream));
}
END_TEST

/* ---- handles dead for a long time ---------------------------------------------------------------- */

START_TEST(a_pool_destroyed_before_thousands_of_others_is_reported) {
  cmr_pool_resource *pool = small_pool();
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  ck_assert_ok(cmr_pool_resource_destroy(pool));
  for (int i = 0; i < 5000; i++) ck_assert_ok(cmr_pool_resource_destroy(small_pool()));
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_validate(cmr_pool_resource_ref(pool)), CMR_ERROR_DESTROYED_HANDLE);
  size_t size = 0;
  ck_assert_status(cmr_pool_resource_pool_size(pool, &size), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_pool_resource_destroy(pool), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_retain(ref), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_release(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

/* Made and destroyed without end, the table stays the size of what is
 * alive at once (plus its reuse reserve). */
START_TEST(the_handle_table_stays_bounded) {
  for (int i = 0; i < 3000; i++) ck_assert_ok(cmr_pool_resource_destroy(small_pool()));
  uint32_t made = cmr_slots_made();
  for (int i = 0; i < 100000; i++) {
    cmr_system_resource *resource = cmr_test_system_resource();
    cmr_system_resource *again = NULL;
    ck_assert_ok(cmr_system_resource_from_ref(cmr_system_resource_ref(resource), &again));
    cmr_test_destroy(again, resource);
  }
  ck_assert_uint_le(cmr_slots_made(), made + 16);
}
END_TEST

/* ---- one share per handle ------------------------------------------------------------------------ */

/* The case: a handle from a stack top, destroyed twice, and the
 * stack, with a buffer alive on the top: the buffer keeps working. */
START_TEST(a_handle_from_a_ref_owns_its_own_share) {
  cmr_resource_ref top;
  cmr_stack *stack = cmr_test_stack("statistics(pool(system, initial_pool_size=64KiB))", &top);
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(1000, CMR_DEFAULT_STREAM, top, &buffer));
  cmr_statistics_resource *statistics = NULL;
  ck_assert_ok(cmr_statistics_resource_from_ref(top, &statistics));
  ck_assert_ok(cmr_statistics_resource_destroy(statistics));
  ck_assert_status(cmr_statistics_resource_destroy(statistics), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_message_has("already destroyed");
  ck_assert_ok(cmr_stack_destroy(stack));
  ck_assert_status(cmr_stack_destroy(stack), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_ok(cmr_device_buffer_resize(buffer, 50000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  ck_assert_status(cmr_device_buffer_destroy(buffer), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_ref_validate(top), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

/* Destroying an owner twice never takes an adaptor's upstream away. */
START_TEST(a_second_destroy_of_an_owner_keeps_the_adaptors_share) {
  cmr_pool_resource *pool = small_pool();
  cmr_statistics_resource *statistics = NULL;
  ck_assert_ok(cmr_statistics_resource_create(cmr_pool_resource_ref(pool), &statistics));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
  ck_assert_status(cmr_pool_resource_destroy(pool), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_pool_resource_destroy(pool), CMR_ERROR_DESTROYED_HANDLE);
  void *ptr = NULL;
  cmr_resource_ref ref = cmr_statistics_resource_ref(statistics);
  ck_assert_ok(cmr_allocate(ref, 5000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(ref, ptr, 5000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_statistics_resource_destroy(statistics));
}
END_TEST

/* Many threads destroying the same handle: exactly one wins. */
static void *destroy_it(void *arg) { return (void *)(intptr_t)cmr_pool_resource_destroy(arg); }

START_TEST(concurrent_destroys_of_one_handle_release_once) {
  for (int round = 0; round < 200; round++) {
    cmr_pool_resource *pool = small_pool();
    cmr_pool_resource *other = NULL;
    ck_assert_ok(cmr_pool_resource_from_ref(cmr_pool_resource_ref(pool), &other));
    pthread_t threads[4];
    for (int t = 0; t < 4; t++) ck_assert_int_eq(pthread_create(&threads[t], NULL, destroy_it, pool), 0);
    int wins = 0;
    for (int t = 0; t < 4; t++) {
      void *status = NULL;
      ck_assert_int_eq(pthread_join(threads[t], &status), 0);
      if ((intptr_t)status == CMR_SUCCESS)
        wins++;
      else
        ck_assert_int_eq((intptr_t)status, CMR_ERROR_DESTROYED_HANDLE);
    }
    ck_assert_int_eq(wins, 1);
    ck_assert_ok(cmr_ref_validate(cmr_pool_resource_ref(other))); /* its share is untouched */
    ck_assert_ok(cmr_pool_resource_destroy(other));
  }
}
END_TEST

/* ---- handles that are not what they claim ------------------------------------------------------- */

START_TEST(a_handle_of_another_resource_is_refused) {
  cmr_pool_resource *pool = small_pool();
  cmr_statistics_resource *statistics = NULL;
  ck_assert_ok(cmr_statistics_resource_create(cmr_pool_resource_ref(pool), &statistics));
  size_t size = 0;
  ck_assert_status(cmr_pool_resource_pool_size((cmr_pool_resource *)(void *)statistics, &size),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("is a \"statistics\", not a \"pool\"");
  /* A ref made of it through the wrong constructor is refused at use. */
  cmr_resource_ref wrong = cmr_pool_resource_ref((cmr_pool_resource *)(void *)statistics);
  ck_assert_status(cmr_ref_validate(wrong), CMR_ERROR_INVALID_ARGUMENT);
  /* A ref's self is not a handle either. */
  ck_assert_status(cmr_pool_resource_destroy((cmr_pool_resource *)cmr_pool_resource_ref(pool).self),
                   CMR_ERROR_DESTROYED_HANDLE);
  cmr_test_destroy(statistics, pool);
}
END_TEST

START_TEST(addresses_that_are_no_handles_are_refused) {
  int local = 0;
  static char global[64];
  void *heap = malloc(64);
  void *addresses[] = {&local, global, heap, (void *)1, (void *)(uintptr_t)UINT64_MAX};
  for (size_t i = 0; i < sizeof addresses / sizeof *addresses; i++) {
    cmr_pool_resource *fake = addresses[i];
    size_t size = 0;
    ck_assert_status(cmr_pool_resource_pool_size(fake, &size), CMR_ERROR_DESTROYED_HANDLE);
    ck_assert_status(cmr_pool_resource_destroy(fake), CMR_ERROR_DESTROYED_HANDLE);
    ck_assert_status(cmr_ref_validate(cmr_pool_resource_ref(fake)), CMR_ERROR_DESTROYED_HANDLE);
    ck_assert_status(cmr_stack_destroy((cmr_stack *)fake), CMR_ERROR_DESTROYED_HANDLE);
    ck_assert_status(cmr_device_buffer_destroy((cmr_device_buffer *)fake), CMR_ERROR_DESTROYED_HANDLE);
  }
  free(heap);
}
END_TEST

/* ---- cycles ------------------------------------------------------------------------------------------- */

START_TEST(a_bin_that_reaches_its_binning_resource_is_refused) {
  cmr_binning_resource *binning = NULL;
  ck_assert_ok(cmr_binning_resource_create(host, CMR_INT(8), CMR_INT(12), &binning));
  cmr_resource_ref self = cmr_binning_resource_ref(binning);
  ck_assert_status(cmr_binning_resource_add_bin_resource(binning, 512, self), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("would then allocate from itself");
  /* Through adaptors. */
  cmr_statistics_resource *statistics = NULL;
  ck_assert_ok(cmr_statistics_resource_create(self, &statistics));
  cmr_tracking_resource *tracking = NULL;
  ck_assert_ok(cmr_tracking_resource_create(cmr_statistics_resource_ref(statistics), false, &tracking));
  ck_assert_status(cmr_binning_resource_add_bin_resource(binning, 512, cmr_tracking_resource_ref(tracking)),
                   CMR_ERROR_INVALID_ARGUMENT);
  /* Through another binning resource's bin. */
  cmr_binning_resource *outer = NULL;
  ck_assert_ok(cmr_binning_resource_create(host, CMR_INT_DEFAULT, CMR_INT_DEFAULT, &outer));
  ck_assert_ok(cmr_binning_resource_add_bin_resource(outer, 1024, cmr_tracking_resource_ref(tracking)));
  ck_assert_status(cmr_binning_resource_add_bin_resource(binning, 2048, cmr_binning_resource_ref(outer)),
                   CMR_ERROR_INVALID_ARGUMENT);
  /* Nothing changed: the resource still works at every size. */
  size_t bins = 0;
  ck_assert_ok(cmr_binning_resource_bin_count(binning, &bins));
  ck_assert_uint_eq(bins, 5);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(self, 512, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(self, ptr, 512, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_allocate(self, 100000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(self, ptr, 100000, CMR_DEFAULT_STREAM));
  /* A resource that does not reach it is taken. */
  cmr_pool_resource *pool = small_pool();
  ck_assert_ok(cmr_binning_resource_add_bin_resource(binning, 8192, cmr_pool_resource_ref(pool)));
  cmr_test_destroy(pool, outer, tracking, statistics, binning);
}
END_TEST

/* Two binning resources given each other from two threads at once: at most
 * one of the two changes goes through. */
typedef struct adoption {
  cmr_binning_resource *holder;
  cmr_resource_ref child;
} adoption;

static void *adopt(void *arg) {
  const adoption *a = arg;
  return (void *)(intptr_t)cmr_binning_resource_add_bin_resource(a->holder, 4096, a->child);
}

START_TEST(two_changes_cannot_close_a_cycle_between_them) {
  for (int round = 0; round < 100; round++) {
    cmr_binning_resource *a = NULL, *b = NULL;
    ck_assert_ok(cmr_binning_resource_create(host, CMR_INT_DEFAULT, CMR_INT_DEFAULT, &a));
    ck_assert_ok(cmr_binning_resource_create(host, CMR_INT_DEFAULT, CMR_INT_DEFAULT, &b));
    adoption both[2] = {{a, cmr_binning_resource_ref(b)}, {b, cmr_binning_resource_ref(a)}};
    pthread_t threads[2];
    for (int t = 0; t < 2; t++) ck_assert_int_eq(pthread_create(&threads[t], NULL, adopt, &both[t]), 0);
    int accepted = 0;
    for (int t = 0; t < 2; t++) {
      void *status = NULL;
      ck_assert_int_eq(pthread_join(threads[t], &status), 0);
      if ((intptr_t)status == CMR_SUCCESS) accepted++;
    }
    ck_assert_int_eq(accepted, 1);
    cmr_test_destroy(a, b);
  }
}
END_TEST

static void ownership_cases(Suite *suite) {
  TCase *cases[] = {
      cmr_test_case(suite, "per_device", setup, teardown, the_entry_is_used_safely_while_another_thread_replaces_it,
                    a_retain_during_the_last_release_fails),
      cmr_test_case(suite, "dead_handles", setup, teardown, a_pool_destroyed_before_thousands_of_others_is_reported,
                    the_handle_table_stays_bounded),
      cmr_test_case(suite, "shares", setup, teardown, a_handle_from_a_ref_owns_its_own_share,
                    a_second_destroy_of_an_owner_keeps_the_adaptors_share,
                    concurrent_destroys_of_one_handle_release_once),
      cmr_test_case(suite, "impostors", setup, teardown, a_handle_of_another_resource_is_refused,
                    addresses_that_are_no_handles_are_refused),
      cmr_test_case(suite, "cycles", setup, teardown, a_bin_that_reaches_its_binning_resource_is_refused,
                    two_changes_cannot_close_a_cycle_between_them),
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) tcase_set_timeout(cases[c], 600);
}

int main(void) { return cmr_test_main_suite("ownership", CMR_TEST_NEEDS_DEVICE, ownership_cases); }
