/* SPDX-License-Identifier: Apache-2.0 */
/* A resource called again from inside its own upstream's call, on the same
 * thread: where that would wait on a lock the thread holds (a pool's
 * growth, the logging adaptor's free, thread_safe, a binning resource's
 * add_bin from inside a call through it), the inner call is refused with
 * CMR_ERROR_REENTRANT_CALL and a message, and the outer call completes;
 * where it would not (a free into a growing pool, a release, a failure
 * callback freeing into its own adaptor, a call through a binning resource
 * from inside its add_bin), it is served. Without the owner-recording lock
 * each refused case hangs for good (the suite's timeout fails it). */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

/* What the upstream callback does, set by each test. */
typedef enum inner_call {
  INNER_NONE,
  INNER_ALLOCATE,
  INNER_FREE,
  INNER_RELEASE,
  INNER_FLUSH,
  INNER_ADD_BIN,
  INNER_ADD_BIN_RESOURCE
} inner_call;

typedef struct reentry_plan {
  inner_call call;
  cmr_resource_ref through; /* the resource called back into */
  cmr_pool_resource *pool;  /* for INNER_RELEASE */
  cmr_logging_resource *logging;
  cmr_binning_resource *binning; /* for INNER_ADD_BIN and INNER_ADD_BIN_RESOURCE */
  void *to_free;                 /* for INNER_FREE */
  size_t to_free_bytes;
  bool armed; /* only the next upstream call calls back */
  cmr_status inner_status;
  char inner_message[1024];
  int inner_calls;
} reentry_plan;

static reentry_plan reentry;

static void call_back(void) {
  if (!reentry.armed) return;
  reentry.armed = false;
  reentry.inner_calls++;
  void *ptr = NULL;
  switch (reentry.call) {
  case INNER_ALLOCATE:
    reentry.inner_status = cmr_allocate(reentry.through, 512, CMR_DEFAULT_STREAM, &ptr);
    if (reentry.inner_status == CMR_SUCCESS) reentry.to_free = ptr;
    break;
  case INNER_FREE:
    reentry.inner_status = cmr_deallocate(reentry.through, reentry.to_free, reentry.to_free_bytes, CMR_DEFAULT_STREAM);
    break;
  case INNER_RELEASE: reentry.inner_status = cmr_pool_resource_release(reentry.pool); break;
  case INNER_FLUSH: reentry.inner_status = cmr_logging_resource_flush(reentry.logging); break;
  case INNER_ADD_BIN: reentry.inner_status = cmr_binning_resource_add_bin(reentry.binning, 1024); break;
  case INNER_ADD_BIN_RESOURCE:
    reentry.inner_status = cmr_binning_resource_add_bin_resource(reentry.binning, 1024, reentry.through);
    break;
  case INNER_NONE: break;
  }
  snprintf(reentry.inner_message, sizeof reentry.inner_message, "%s", cmr_last_error_message());
}

static void *upstream_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  (void)arg;
  call_back();
  return aligned_alloc(256, (bytes + 255) / 256 * 256);
}

static void upstream_free(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)bytes;
  (void)stream;
  (void)arg;
  call_back();
  free(ptr);
}

static cmr_callback_resource *upstream;

static void setup(void) {
  memset(&reentry, 0, sizeof reentry);
  reentry.inner_status = -1;
  ck_assert_ok(cmr_callback_resource_create(upstream_allocate, upstream_free, NULL, NULL, CMR_PROPERTY_HOST_ACCESSIBLE,
                                            &upstream));
}

static void teardown(void) { ck_assert_ok(cmr_callback_resource_destroy(upstream)); }

static cmr_resource_ref upstream_ref(void) { return cmr_callback_resource_ref(upstream); }

static void assert_refused(void) {
  ck_assert_int_eq(reentry.inner_calls, 1);
  ck_assert_msg(reentry.inner_status == CMR_ERROR_REENTRANT_CALL, "the inner call returned %s (%s)",
                cmr_status_string(reentry.inner_status), reentry.inner_message);
  ck_assert_msg(strstr(reentry.inner_message, "from inside its own call to its upstream") != NULL, "message: %s",
                reentry.inner_message);
}

static void assert_served(void) {
  ck_assert_int_eq(reentry.inner_calls, 1);
  ck_assert_msg(reentry.inner_status == CMR_SUCCESS, "the inner call returned %s (%s)",
                cmr_status_string(reentry.inner_status), reentry.inner_message);
}

/* ---- pool and fixed_size: growth ---------------------------------------------- */

static cmr_pool_resource *empty_pool(void) {
  cmr_pool_resource *pool = cmr_test_pool(upstream_ref(), 0);
  return pool;
}

START_TEST(pool_growth_allocating_from_the_pool_is_refused) {
  cmr_pool_resource *pool = empty_pool();
  reentry = (reentry_plan){.call = INNER_ALLOCATE, .through = cmr_pool_resource_ref(pool), .armed = true};
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_pool_resource_ref(pool), 1000, CMR_DEFAULT_STREAM, &ptr));
  assert_refused();
  ck_assert_ok(cmr_deallocate(cmr_pool_resource_ref(pool), ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

START_TEST(pool_growth_releasing_the_pool_is_served) {
  cmr_pool_resource *pool = empty_pool();
  reentry = (reentry_plan){.call = INNER_RELEASE, .pool = pool, .armed = true};
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_pool_resource_ref(pool), 1000, CMR_DEFAULT_STREAM, &ptr));
  assert_served();
  ck_assert_ok(cmr_deallocate(cmr_pool_resource_ref(pool), ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

START_TEST(pool_growth_freeing_into_the_pool_is_served) {
  cmr_pool_resource *pool = empty_pool();
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *first = NULL, *second = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &first));
  size_t size = 0;
  ck_assert_ok(cmr_pool_resource_pool_size(pool, &size));
  /* A request larger than what the pool holds grows it again. */
  reentry = (reentry_plan){.call = INNER_FREE, .through = ref, .to_free = first, .to_free_bytes = 1000, .armed = true};
  ck_assert_ok(cmr_allocate(ref, 4 * size, CMR_DEFAULT_STREAM, &second));
  assert_served();
  ck_assert_ok(cmr_deallocate(ref, second, 4 * size, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_pool_resource_destroy(pool));
}
END_TEST

START_TEST(fixed_size_growth_allocating_from_it_is_refused) {
  cmr_fixed_size_resource *fixed = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(upstream_ref(), CMR_SIZE(4096), CMR_SIZE(2), CMR_FIXED_SIZE_CAPTURE_SERVE,
                                              &fixed));
  cmr_resource_ref ref = cmr_fixed_size_resource_ref(fixed);
  void *blocks[3] = {NULL, NULL, NULL};
  ck_assert_ok(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &blocks[0]));
  ck_assert_ok(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &blocks[1]));
  reentry = (reentry_plan){.call = INNER_ALLOCATE, .through = ref, .armed = true};
  ck_assert_ok(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &blocks[2])); /* grows */
  assert_refused();
  for (int i = 0; i < 3; ++i) ck_assert_ok(cmr_deallocate(ref, blocks[i], 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_fixed_size_resource_destroy(fixed));
}
END_TEST

/* ---- logging: its lock across the upstream's free --------------------------------- */

static cmr_logging_resource *logging_over_upstream(void) {
  cmr_logging_resource *logging = NULL;
  FILE *sink = tmpfile();
  ck_assert_ptr_nonnull(sink);
  ck_assert_ok(cmr_logging_resource_create(upstream_ref(), "", sink, false, &logging));
  return logging;
}

START_TEST(logging_free_allocating_through_the_logging_adaptor_is_refused) {
  cmr_logging_resource *logging = logging_over_upstream();
  cmr_resource_ref ref = cmr_logging_resource_ref(logging);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  reentry = (reentry_plan){.call = INNER_ALLOCATE, .through = ref, .armed = true};
  ck_assert_ok(cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM));
  assert_refused();
  ck_assert_ptr_null(reentry.to_free);
  ck_assert_ok(cmr_logging_resource_flush(logging)); /* no row was lost */
  ck_assert_ok(cmr_logging_resource_destroy(logging));
}
END_TEST

START_TEST(logging_free_flushing_the_logging_adaptor_is_refused) {
  cmr_logging_resource *logging = logging_over_upstream();
  cmr_resource_ref ref = cmr_logging_resource_ref(logging);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  reentry = (reentry_plan){.call = INNER_FLUSH, .logging = logging, .armed = true};
  ck_assert_ok(cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM));
  assert_refused();
  ck_assert_ok(cmr_logging_resource_destroy(logging));
}
END_TEST

START_TEST(logging_allocate_calling_back_is_served) {
  /* Its allocate holds no lock across the upstream's call. */
  cmr_logging_resource *logging = logging_over_upstream();
  cmr_resource_ref ref = cmr_logging_resource_ref(logging);
  reentry = (reentry_plan){.call = INNER_ALLOCATE, .through = ref, .armed = true};
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  assert_served();
  ck_assert_ok(cmr_deallocate(ref, reentry.to_free, 512, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_logging_resource_destroy(logging));
}
END_TEST

/* ---- thread_safe: its lock around every upstream call ------------------------------- */

START_TEST(thread_safe_upstream_calling_back_is_refused) {
  cmr_thread_safe_resource *safe = NULL;
  ck_assert_ok(cmr_thread_safe_resource_create(upstream_ref(), &safe));
  cmr_resource_ref ref = cmr_thread_safe_resource_ref(safe);
  reentry = (reentry_plan){.call = INNER_ALLOCATE, .through = ref, .armed = true};
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  assert_refused();
  reentry = (reentry_plan){.call = INNER_ALLOCATE, .through = ref, .armed = true};
  ck_assert_ok(cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM));
  assert_refused();
  ck_assert_ok(cmr_thread_safe_resource_destroy(safe));
}
END_TEST

/* ---- binning: adding a bin, and calls through it ------------------------------------ */

static cmr_binning_resource *binning_without_bins(void) {
  cmr_binning_resource *binning = NULL;
  ck_assert_ok(cmr_binning_resource_create(upstream_ref(), CMR_INT_DEFAULT, CMR_INT_DEFAULT, &binning));
  return binning;
}

CMR_TEST_OUT(bin_count, size_t, 0, cmr_binning_resource_bin_count, cmr_binning_resource *)

/* The new bin takes its first memory from the upstream, whose callback
 * frees through the binning resource what its upstream served. */
START_TEST(binning_add_bin_freeing_through_it_from_the_new_bin_is_served) {
  cmr_binning_resource *binning = binning_without_bins();
  cmr_resource_ref ref = cmr_binning_resource_ref(binning);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  reentry = (reentry_plan){.call = INNER_FREE, .through = ref, .to_free = ptr, .to_free_bytes = 1000, .armed = true};
  /* Nothing is outstanding through the upstream once the callback freed it. */
  ck_assert_ok(cmr_binning_resource_add_bin(binning, 1024));
  assert_served();
  ck_assert_uint_eq(bin_count(binning), 1);
  ck_assert_ok(cmr_binning_resource_destroy(binning));
}
END_TEST

START_TEST(binning_add_bin_allocating_through_it_from_the_new_bin_is_served) {
  cmr_binning_resource *binning = binning_without_bins();
  cmr_resource_ref ref = cmr_binning_resource_ref(binning);
  reentry = (reentry_plan){.call = INNER_ALLOCATE, .through = ref, .armed = true};
  /* The inner allocation, served by the upstream, is outstanding where the
   * bin would take its size: the bin is refused as at any other time. */
  ck_assert_status(cmr_binning_resource_add_bin(binning, 1024), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("1 allocation(s) outstanding");
  assert_served();
  ck_assert_uint_eq(bin_count(binning), 0);
  ck_assert_ok(cmr_deallocate(ref, reentry.to_free, 512, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_binning_resource_add_bin(binning, 1024));
  ck_assert_uint_eq(bin_count(binning), 1);
  ck_assert_ok(cmr_binning_resource_destroy(binning));
}
END_TEST

/* add_bin would wait for the call through the resource it runs inside. */
static void assert_adding_a_bin_inside_a_call_is_refused(inner_call call, const char *owner) {
  cmr_binning_resource *binning = binning_without_bins();
  cmr_resource_ref ref = cmr_binning_resource_ref(binning);
  reentry = (reentry_plan){.call = call, .binning = binning, .through = upstream_ref(), .armed = true};
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  assert_refused();
  ck_assert_msg(strstr(reentry.inner_message, owner) != NULL, "message: %s", reentry.inner_message);
  ck_assert_uint_eq(bin_count(binning), 0);
  ck_assert_ok(cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM));
  /* Outside any call through it, the same bin is added. */
  ck_assert_ok(cmr_binning_resource_add_bin(binning, 1024));
  ck_assert_uint_eq(bin_count(binning), 1);
  ck_assert_ok(cmr_binning_resource_destroy(binning));
}

START_TEST(binning_allocation_adding_a_bin_from_the_upstream_is_refused) {
  assert_adding_a_bin_inside_a_call_is_refused(INNER_ADD_BIN, "binning: add_bin");
}
END_TEST

START_TEST(binning_allocation_adding_a_bin_resource_from_the_upstream_is_refused) {
  assert_adding_a_bin_inside_a_call_is_refused(INNER_ADD_BIN_RESOURCE, "binning: add_bin_resource");
}
END_TEST

/* A bin of one binning resource adds a bin to another: served (only a call
 * through the same resource would wait for itself). */
START_TEST(binning_allocation_adding_a_bin_to_another_binning_is_served) {
  cmr_binning_resource *outer = binning_without_bins();
  cmr_binning_resource *other = binning_without_bins();
  reentry = (reentry_plan){.call = INNER_ADD_BIN, .binning = other, .armed = true};
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_binning_resource_ref(outer), 1000, CMR_DEFAULT_STREAM, &ptr));
  assert_served();
  ck_assert_uint_eq(bin_count(other), 1);
  ck_assert_ok(cmr_deallocate(cmr_binning_resource_ref(outer), ptr, 1000, CMR_DEFAULT_STREAM));
  cmr_test_destroy(outer, other);
}
END_TEST

/* The replaced bin, a pool whose last share the binning resource held,
 * goes when add_bin_resource returns: giving its chunk back runs the
 * upstream's callback, which adds a bin to another binning resource (that
 * takes the lock add_bin_resource holds while it checks for a cycle). */
START_TEST(binning_replaced_bin_whose_teardown_adds_a_bin_is_served) {
  cmr_binning_resource *binning = binning_without_bins();
  cmr_binning_resource *other = binning_without_bins();
  cmr_pool_resource *pool = empty_pool();
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(cmr_pool_resource_ref(pool), 1000, CMR_DEFAULT_STREAM, &ptr)); /* a chunk */
  ck_assert_ok(cmr_deallocate(cmr_pool_resource_ref(pool), ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_binning_resource_add_bin_resource(binning, 1024, cmr_pool_resource_ref(pool)));
  ck_assert_ok(cmr_pool_resource_destroy(pool)); /* the bin table holds the last share */
  reentry = (reentry_plan){.call = INNER_ADD_BIN_RESOURCE, .binning = other, .through = upstream_ref(), .armed = true};
  ck_assert_ok(cmr_binning_resource_add_bin_resource(binning, 1024, upstream_ref()));
  assert_served();
  ck_assert_uint_eq(bin_count(other), 1);
  cmr_test_destroy(binning, other);
}
END_TEST

/* ---- re-entry that does not deadlock keeps working ------------------------------------ */

static cmr_resource_ref failure_ref;
static void *held_block;

/* As Python's gc would: frees a block into the adaptor that ran out, then retries. */
static bool free_into_the_adaptor(size_t bytes, void *arg) {
  (void)bytes;
  (void)arg;
  if (held_block == NULL) return false;
  ck_assert_ok(cmr_deallocate(failure_ref, held_block, 768, CMR_DEFAULT_STREAM));
  held_block = NULL;
  return true;
}

START_TEST(a_failure_callback_freeing_into_its_adaptor_retries) {
  test_foreign foreign = {.limit = 1024};
  cmr_failure_callback_resource *failure = NULL;
  ck_assert_ok(cmr_failure_callback_resource_create(test_foreign_ref(&foreign, &test_foreign_ops),
                                                    free_into_the_adaptor, NULL, &failure));
  failure_ref = cmr_failure_callback_resource_ref(failure);
  ck_assert_ok(cmr_allocate(failure_ref, 768, CMR_DEFAULT_STREAM, &held_block));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(failure_ref, 768, CMR_DEFAULT_STREAM, &ptr)); /* served after the callback's free */
  ck_assert_ptr_null(held_block);
  ck_assert_int_eq(foreign.deallocations, 1);
  ck_assert_ok(cmr_deallocate(failure_ref, ptr, 768, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_failure_callback_resource_destroy(failure));
}
END_TEST

static void reentry_cases(Suite *suite) {
  cmr_test_case(suite, "suballocators", setup, teardown, pool_growth_allocating_from_the_pool_is_refused,
                pool_growth_releasing_the_pool_is_served, pool_growth_freeing_into_the_pool_is_served,
                fixed_size_growth_allocating_from_it_is_refused);
  cmr_test_case(suite, "adaptors", setup, teardown, logging_free_allocating_through_the_logging_adaptor_is_refused,
                logging_free_flushing_the_logging_adaptor_is_refused, logging_allocate_calling_back_is_served,
                thread_safe_upstream_calling_back_is_refused, a_failure_callback_freeing_into_its_adaptor_retries);
  cmr_test_case(suite, "binning", setup, teardown, binning_add_bin_freeing_through_it_from_the_new_bin_is_served,
                binning_add_bin_allocating_through_it_from_the_new_bin_is_served,
                binning_allocation_adding_a_bin_from_the_upstream_is_refused,
                binning_allocation_adding_a_bin_resource_from_the_upstream_is_refused,
                binning_allocation_adding_a_bin_to_another_binning_is_served,
                binning_replaced_bin_whose_teardown_adds_a_bin_is_served);
}

int main(void) { return cmr_test_main_suite("reentry", CMR_TEST_ANY_MACHINE, reentry_cases); }
