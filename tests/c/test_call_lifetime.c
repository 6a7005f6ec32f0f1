/* SPDX-License-Identifier: Apache-2.0 */
/* A call into a resource holds it alive: a resource destroyed from inside
 * its own call (by the callback it runs, from the adaptor above it, from a
 * failure callback) goes when the thread's outermost call returns, never
 * while code of its own still runs; what the call answers, message
 * included, is what the caller gets. And giving memory back on a failure
 * path keeps the first failure's message. Without the hold, each of these
 * reads freed memory (ASan reports it; the plain build may crash). */
#include <stdlib.h>

#include "test_util.h"

/* What the callbacks destroy, set by each test. */
static struct {
  cmr_callback_resource *callback;
  cmr_statistics_resource *statistics;
  cmr_tracking_resource *tracking;
  cmr_failure_callback_resource *failure;
  cmr_device_buffer *buffer;
  cmr_pool_resource *pool;
  bool return_null;
  int destroys;
  cmr_status destroyed_with;
} victim;

/* Destroys the victim `handle` unless it is NULL, recording the status, and forgets it. */
#define DESTROY_ONCE(handle)                                                                 \
  do {                                                                                       \
    if ((handle) != NULL) victim.destroyed_with = cmr_test_destroy_function(handle)(handle); \
    (handle) = NULL;                                                                         \
  } while (0)

/* Destroys whatever handle the test named (each once). */
static void destroy_victims(void) {
  DESTROY_ONCE(victim.callback);
  DESTROY_ONCE(victim.statistics);
  DESTROY_ONCE(victim.tracking);
  DESTROY_ONCE(victim.failure);
  DESTROY_ONCE(victim.buffer);
  DESTROY_ONCE(victim.pool);
  victim.destroys++;
}

static void *allocate_and_destroy(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  (void)arg;
  destroy_victims();
  return victim.return_null ? NULL : aligned_alloc(256, (bytes + 255) / 256 * 256);
}

static void *plain_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  (void)arg;
  return aligned_alloc(256, (bytes + 255) / 256 * 256);
}

static void plain_free(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)bytes;
  (void)stream;
  (void)arg;
  free(ptr);
}

static int frees_recording;

/* Frees, then records a message of its own, as a callback that calls cmr
 * and fails would. */
static void free_and_record(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  plain_free(ptr, bytes, stream, arg);
  frees_recording++;
  (void)cmr_ref_validate((cmr_resource_ref){NULL, NULL});
}

static void free_and_destroy(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  plain_free(ptr, bytes, stream, arg);
  destroy_victims();
}

static cmr_callback_resource *make_callback(cmr_allocate_callback allocate, cmr_deallocate_callback deallocate) {
  cmr_callback_resource *callback = NULL;
  ck_assert_ok(cmr_callback_resource_create(allocate, deallocate, NULL, NULL, CMR_PROPERTY_HOST_ACCESSIBLE, &callback));
  return callback;
}

/* A statistics adaptor over `callback` that holds its last share. */
static cmr_statistics_resource *cmr_test_statistics_taking(cmr_callback_resource *callback) {
  cmr_statistics_resource *statistics = NULL;
  ck_assert_ok(cmr_statistics_resource_create(cmr_callback_resource_ref(callback), &statistics));
  ck_assert_ok(cmr_callback_resource_destroy(callback));
  return statistics;
}

static void setup(void) { memset(&victim, 0, sizeof victim); }

/* ---- destroyed from inside its own call ------------------------------------------ */

START_TEST(callback_destroying_its_last_handle_in_allocate) {
  cmr_callback_resource *callback = make_callback(allocate_and_destroy, plain_free);
  cmr_resource_ref ref = cmr_callback_resource_ref(callback);
  victim.callback = callback;
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_nonnull(ptr);
  ck_assert_int_eq(victim.destroyed_with, CMR_SUCCESS);
  /* Gone once the call returned: the memory is the callback's to free. */
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_status(cmr_deallocate(ref, ptr, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_DESTROYED_HANDLE);
  free(ptr);
}
END_TEST

START_TEST(a_failure_answered_keeps_its_message_over_the_finalize) {
  cmr_callback_resource *callback = make_callback(allocate_and_destroy, plain_free);
  cmr_resource_ref ref = cmr_callback_resource_ref(callback);
  victim.callback = callback;
  victim.return_null = true;
  void *ptr = &ptr;
  ck_assert_status(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("the allocate function returned NULL for 1000 bytes");
  ck_assert_ptr_null(ptr);
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

/* The callback's free destroys the statistics adaptor above it, its last
 * holder: the adaptor counts the free after its upstream's call returns. */
/* The pool's growth runs the callback, which destroys the pool and fails:
 * the pool's finalize, when the call ends, gives its chunk back through a
 * free that records a message of its own; the caller still reads the
 * pool's. */
START_TEST(a_failure_answered_keeps_its_message_over_a_finalize_that_records_one) {
  cmr_callback_resource *callback = make_callback(allocate_and_destroy, free_and_record);
  cmr_pool_resource *pool = cmr_test_pool(cmr_callback_resource_ref(callback), 0); /* grows at its first allocation */
  cmr_resource_ref ref = cmr_pool_resource_ref(pool);
  void *ptr = NULL;
  frees_recording = 0;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr)); /* the pool's first chunk */
  victim.pool = pool;
  victim.return_null = true;
  void *more = &more;
  ck_assert_status(cmr_allocate(ref, 1 << 20, CMR_DEFAULT_STREAM, &more), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(victim.destroyed_with, CMR_SUCCESS);
  ck_assert_int_eq(frees_recording, 1); /* the chunk went back when the call ended */
  ck_assert_message_has("pool: no free block of 1048576 bytes");
  ck_assert_ptr_eq(strstr(cmr_last_error_message(), "cmr_ref_validate"), NULL);
  ck_assert_ptr_null(more);
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_ok(cmr_callback_resource_destroy(callback));
}
END_TEST

START_TEST(callback_destroying_the_adaptor_above_it_in_deallocate) {
  cmr_callback_resource *callback = make_callback(plain_allocate, free_and_destroy);
  cmr_statistics_resource *statistics = cmr_test_statistics_taking(callback);
  cmr_resource_ref ref = cmr_statistics_resource_ref(statistics);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_sync(ref, 512, 256, &ptr));
  victim.statistics = statistics;
  ck_assert_ok(cmr_deallocate_sync(ref, ptr, 512, 256));
  ck_assert_int_eq(victim.destroys, 1);
  ck_assert_int_eq(victim.destroyed_with, CMR_SUCCESS);
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(callback_destroying_the_statistics_adaptor_above_it) {
  cmr_callback_resource *callback = make_callback(allocate_and_destroy, plain_free);
  cmr_statistics_resource *statistics = cmr_test_statistics_taking(callback);
  cmr_resource_ref ref = cmr_statistics_resource_ref(statistics);
  victim.statistics = statistics;
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_nonnull(ptr);
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
  free(ptr);
}
END_TEST

/* pool(callback) under tracking: the pool's growth runs the callback, which
 * destroys the tracking adaptor, the pool's last holder. */
START_TEST(pool_growth_destroying_the_tracking_adaptor_above_it) {
  cmr_callback_resource *callback = make_callback(allocate_and_destroy, plain_free);
  cmr_pool_resource *pool = cmr_test_pool(cmr_callback_resource_ref(callback), 0); /* grows at its first allocation */
  cmr_tracking_resource *tracking = NULL;
  ck_assert_ok(cmr_tracking_resource_create(cmr_pool_resource_ref(pool), false, &tracking));
  cmr_test_destroy(pool, callback);
  cmr_resource_ref ref = cmr_tracking_resource_ref(tracking);
  victim.tracking = tracking;
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_nonnull(ptr);
  ck_assert_int_eq(victim.destroys, 1);
  /* The whole stack went at the end of the call, the chunk back to the callback. */
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

static bool destroy_and_retry(size_t bytes, void *arg) {
  (void)bytes;
  int *calls = arg;
  ++*calls;
  destroy_victims();
  return *calls == 1; /* one retry */
}

START_TEST(failure_callback_destroying_its_adaptor_and_retrying) {
  test_foreign foreign = {.limit = 1024};
  int calls = 0;
  cmr_failure_callback_resource *failure = NULL;
  ck_assert_ok(cmr_failure_callback_resource_create(test_foreign_ref(&foreign, &test_foreign_ops), destroy_and_retry,
                                                    &calls, &failure));
  cmr_resource_ref ref = cmr_failure_callback_resource_ref(failure);
  victim.failure = failure;
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(calls, 2);
  ck_assert_int_eq(victim.destroyed_with, CMR_SUCCESS);
  ck_assert_status(cmr_ref_validate(ref), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(a_buffer_destroyed_from_inside_its_resize) {
  cmr_callback_resource *callback = make_callback(allocate_and_destroy, plain_free);
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(100, CMR_DEFAULT_STREAM, cmr_callback_resource_ref(callback), &buffer));
  ck_assert_ok(cmr_callback_resource_destroy(callback)); /* the buffer holds the last share */
  victim.buffer = buffer;                                /* the next allocate destroys the buffer it grows */
  ck_assert_ok(cmr_device_buffer_resize(buffer, 4096, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(victim.destroyed_with, CMR_SUCCESS);
  size_t size = 0;
  ck_assert_status(cmr_device_buffer_size(buffer, &size), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(the_resource_destroyed_while_a_buffer_is_made_from_it) {
  cmr_callback_resource *callback = make_callback(allocate_and_destroy, plain_free);
  victim.callback = callback;
  cmr_device_buffer *buffer = NULL;
  ck_assert_status(cmr_device_buffer_create(1000, CMR_DEFAULT_STREAM, cmr_callback_resource_ref(callback), &buffer),
                   CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_ptr_null(buffer);
  ck_assert_int_eq(victim.destroyed_with, CMR_SUCCESS);
}
END_TEST

/* ---- giving back on a failure path ----------------------------------------------- */

/* A foreign resource that hands out misaligned pointers and refuses their free. */
static cmr_status misaligned_allocate(void *self, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)self, (void)alignment, (void)stream;
  static _Alignas(512) char arena[8192];
  (void)bytes;
  *out = arena + 16;
  return CMR_SUCCESS;
}

static cmr_status refusing_deallocate(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)self, (void)ptr, (void)bytes, (void)alignment, (void)stream;
  return CMR_ERROR_UNKNOWN_POINTER; /* with no message of its own */
}

static const cmr_resource_ops misaligned_ops = {
    .type_name = "misaligned", .allocate = misaligned_allocate, .deallocate = refusing_deallocate};

START_TEST(a_refused_pointer_whose_give_back_fails_says_both) {
  cmr_resource_ref ref = {(void *)&misaligned_ops, &misaligned_ops};
  void *ptr = &ptr;
  ck_assert_status(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_ptr_null(ptr);
  ck_assert_message_has("returned a pointer aligned to only 16 bytes");
  ck_assert_message_has("giving its 1000 bytes at");
  ck_assert_message_has("failed too: CMR_ERROR_UNKNOWN_POINTER");
  ck_assert_status(cmr_allocate_sync(ref, 1000, 256, &ptr), CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_message_has("returned a pointer aligned to only 16 bytes");
  ck_assert_message_has("failed too: CMR_ERROR_UNKNOWN_POINTER");
}
END_TEST

static int recorded_frees;

/* Takes the pointer back, and records a message of its own on the way (as
 * a resource that calls cmr and sees a failure it handles would). */
static cmr_status recording_deallocate(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)self, (void)ptr, (void)bytes, (void)alignment, (void)stream;
  recorded_frees++;
  (void)cmr_ref_validate((cmr_resource_ref){NULL, NULL});
  return CMR_SUCCESS;
}

static const cmr_resource_ops misaligned_recording_ops = {
    .type_name = "misaligned", .allocate = misaligned_allocate, .deallocate = recording_deallocate};

START_TEST(a_refused_pointer_given_back_keeps_the_first_message) {
  cmr_resource_ref ref = {(void *)&misaligned_recording_ops, &misaligned_recording_ops};
  recorded_frees = 0;
  void *ptr = &ptr;
  ck_assert_status(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(recorded_frees, 1);
  ck_assert_message_has("returned a pointer aligned to only 16 bytes");
  ck_assert_ptr_eq(strstr(cmr_last_error_message(), "giving"), NULL);
  ck_assert_ptr_eq(strstr(cmr_last_error_message(), "cmr_ref_validate"), NULL);
  /* The synchronous path gives back through its own entry. */
  ck_assert_status(cmr_allocate_sync(ref, 1000, 256, &ptr), CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_int_eq(recorded_frees, 2);
  ck_assert_message_has("returned a pointer aligned to only 16 bytes");
  ck_assert_ptr_eq(strstr(cmr_last_error_message(), "cmr_ref_validate"), NULL);
}
END_TEST

static void call_lifetime_cases(Suite *suite) {
  cmr_test_case(
      suite, "destroyed_inside", setup, NULL, callback_destroying_its_last_handle_in_allocate,
      a_failure_answered_keeps_its_message_over_the_finalize,
      a_failure_answered_keeps_its_message_over_a_finalize_that_records_one,
      callback_destroying_the_adaptor_above_it_in_deallocate, callback_destroying_the_statistics_adaptor_above_it,
      pool_growth_destroying_the_tracking_adaptor_above_it, failure_callback_destroying_its_adaptor_and_retrying,
      a_buffer_destroyed_from_inside_its_resize, the_resource_destroyed_while_a_buffer_is_made_from_it);
  cmr_test_case(suite, "give_back", setup, NULL, a_refused_pointer_whose_give_back_fails_says_both,
                a_refused_pointer_given_back_keeps_the_first_message);
}

int main(void) { return cmr_test_main_suite("call_lifetime", CMR_TEST_ANY_MACHINE, call_lifetime_cases); }
