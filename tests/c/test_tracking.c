/* SPDX-License-Identifier: Apache-2.0 */
/* The tracking adaptor: counters, the report and its backtraces, unknown
 * pointers, size and alignment mismatches, a failing upstream, the retained
 * upstream, and many threads at once. Over the counting foreign resource,
 * so every upstream call is seen. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_adaptor.h"

static test_foreign foreign;
static cmr_tracking_resource *tracking;

static cmr_resource_ref tracked(void) { return cmr_tracking_resource_ref(tracking); }

static void make(bool capture_stacks) {
  foreign = (test_foreign){.properties = CMR_PROPERTY_HOST_ACCESSIBLE};
  ck_assert_ok(cmr_tracking_resource_create(test_foreign_ref(&foreign, &test_foreign_ops), capture_stacks, &tracking));
}

static void setup(void) { make(false); }

static void teardown(void) { ck_assert_ok(cmr_tracking_resource_destroy(tracking)); }

CMR_TEST_OUT(cmr_test_tracked_bytes, size_t, SIZE_MAX, cmr_tracking_resource_allocated_bytes, cmr_tracking_resource *)

CMR_TEST_OUT(cmr_test_tracked_count, size_t, SIZE_MAX, cmr_tracking_resource_outstanding_count, cmr_tracking_resource *)

/* The adaptor `handle` tracks `count` allocations of `bytes` in all. */
#define ck_assert_tracked_by(handle, bytes, count)              \
  do {                                                          \
    ck_assert_uint_eq(cmr_test_tracked_bytes(handle), (bytes)); \
    ck_assert_uint_eq(cmr_test_tracked_count(handle), (count)); \
  } while (0)

/* The fixture's adaptor tracks `count` allocations of `bytes` in all. */
#define ck_assert_tracked(bytes, count) ck_assert_tracked_by(tracking, bytes, count)

static const char *report_now(void) {
  const char *report = NULL;
  ck_assert_ok(cmr_tracking_resource_outstanding_report(tracking, &report));
  ck_assert_ptr_nonnull(report);
  return report;
}

static void *allocate(size_t bytes) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(tracked(), bytes, CMR_DEFAULT_STREAM, &ptr));
  return ptr;
}

static unsigned count_lines_starting(const char *text, const char *prefix) {
  unsigned lines = 0;
  size_t length = strlen(prefix);
  for (const char *line = text; *line != '\0';) {
    if (strncmp(line, prefix, length) == 0) lines++;
    const char *end = strchr(line, '\n');
    if (end == NULL) break;
    line = end + 1;
  }
  return lines;
}

START_TEST(counts_what_is_outstanding) {
  ck_assert_tracked(0, 0);
  void *a = allocate(100);
  void *b = allocate(1000);
  ck_assert_tracked(1100, 2);
  ck_assert_ok(cmr_deallocate(tracked(), a, 100, CMR_DEFAULT_STREAM));
  ck_assert_tracked(1000, 1);
  ck_assert_ok(cmr_deallocate(tracked(), b, 1000, CMR_DEFAULT_STREAM));
  ck_assert_tracked(0, 0);
  ck_assert_int_eq(foreign.allocations, 2);
  ck_assert_int_eq(foreign.deallocations, 2);
  ck_assert_uint_eq(foreign.outstanding, 0);
}
END_TEST

START_TEST(forwards_size_alignment_and_stream) {
  test_adaptor_forwards(tracked(), &foreign, test_adaptor_recorded_stream);
  ck_assert_uint_eq(cmr_test_tracked_count(tracking), 0);
}
END_TEST

START_TEST(report_lists_each_allocation_by_address) {
  ck_assert_str_eq(report_now(), "tracking: 0 outstanding allocations, 0 bytes\n");
  void *a = allocate(100);
  void *b = allocate(5000);
  void *low = (uintptr_t)a < (uintptr_t)b ? a : b;
  void *high = low == a ? b : a;
  char expected[256];
  snprintf(expected, sizeof expected,
           "tracking: 2 outstanding allocations, 5100 bytes\n%p: %zu bytes, alignment 256\n%p: %zu bytes, "
           "alignment 256\n",
           low, low == a ? (size_t)100 : (size_t)5000, high, high == a ? (size_t)100 : (size_t)5000);
  ck_assert_str_eq(report_now(), expected);
  ck_assert_ok(cmr_deallocate(tracked(), a, 100, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate(tracked(), b, 5000, CMR_DEFAULT_STREAM));
  ck_assert_str_eq(report_now(), "tracking: 0 outstanding allocations, 0 bytes\n");
}
END_TEST

START_TEST(report_stays_valid_until_the_next) {
  void *a = allocate(256);
  const char *first = report_now();
  char copy[256];
  snprintf(copy, sizeof copy, "%s", first);
  ck_assert_ok(cmr_deallocate(tracked(), a, 256, CMR_DEFAULT_STREAM));
  ck_assert_str_eq(first, copy); /* a free does not touch the text handed out */
  ck_assert_str_eq(report_now(), "tracking: 0 outstanding allocations, 0 bytes\n");
}
END_TEST

static void *allocate_from_a_named_caller(size_t bytes) { return allocate(bytes); }

START_TEST(captures_backtraces_when_asked) {
  teardown();
  make(true);
  void *ptr = allocate_from_a_named_caller(4096);
  const char *report = report_now();
  char header[128];
  snprintf(header, sizeof header, "tracking: 1 outstanding allocations, 4096 bytes\n%p: 4096 bytes, alignment 256\n",
           ptr);
  ck_assert_msg(strncmp(report, header, strlen(header)) == 0, "report:\n%s", report);
  /* Frames inside cmr, this test and libc at least: each "  #<i> <where> [<address>]". */
  ck_assert_uint_ge(count_lines_starting(report, "  #"), 3);
  ck_assert_msg(strstr(report, "  #0 ") != NULL && strstr(report, "  #2 ") != NULL, "report:\n%s", report);
  ck_assert_msg(strstr(report, "[0x") != NULL, "no frame address in:\n%s", report);
  ck_assert_ok(cmr_deallocate(tracked(), ptr, 4096, CMR_DEFAULT_STREAM));
}
END_TEST

START_TEST(no_backtraces_unless_asked) {
  void *ptr = allocate(4096);
  ck_assert_uint_eq(count_lines_starting(report_now(), "  #"), 0);
  ck_assert_ok(cmr_deallocate(tracked(), ptr, 4096, CMR_DEFAULT_STREAM));
}
END_TEST

/* The snapshot's record at `index`, every field read through its method. */
typedef struct snapshot_record {
  void *pointer;
  size_t bytes;
  size_t alignment;
  void *stream;
  const char *stack;
} snapshot_record;

static snapshot_record snapshot_at(size_t index) {
  snapshot_record record = {0};
  ck_assert_ok(cmr_tracking_resource_snapshot_pointer(tracking, index, &record.pointer));
  ck_assert_ok(cmr_tracking_resource_snapshot_bytes(tracking, index, &record.bytes));
  ck_assert_ok(cmr_tracking_resource_snapshot_alignment(tracking, index, &record.alignment));
  ck_assert_ok(cmr_tracking_resource_snapshot_stream(tracking, index, &record.stream));
  ck_assert_ok(cmr_tracking_resource_snapshot_stack(tracking, index, &record.stack));
  return record;
}

static size_t snapshot_now(void) {
  size_t count = SIZE_MAX;
  ck_assert_ok(cmr_tracking_resource_outstanding_snapshot(tracking, &count));
  return count;
}

START_TEST(snapshot_holds_each_allocation_by_address) {
  ck_assert_uint_eq(snapshot_now(), 0);
  cmr_stream stream = (cmr_stream)(uintptr_t)0x5678; /* the foreign upstream only records it */
  void *a = allocate(1000);
  void *b = NULL;
  ck_assert_ok(cmr_allocate_aligned(tracked(), 5000, 512, stream, &b));
  ck_assert_uint_eq(snapshot_now(), 2);
  bool a_first = (uintptr_t)a < (uintptr_t)b;
  snapshot_record ra = snapshot_at(a_first ? 0 : 1), rb = snapshot_at(a_first ? 1 : 0);
  ck_assert_ptr_eq(ra.pointer, a);
  ck_assert_uint_eq(ra.bytes, 1000);
  ck_assert_uint_eq(ra.alignment, 256);
  ck_assert_ptr_eq(ra.stream, CMR_DEFAULT_STREAM);
  ck_assert_str_eq(ra.stack, ""); /* stacks are not captured */
  ck_assert_ptr_eq(rb.pointer, b);
  ck_assert_uint_eq(rb.bytes, 5000);
  ck_assert_uint_eq(rb.alignment, 512);
  ck_assert_ptr_eq(rb.stream, stream);
  ck_assert_ok(cmr_deallocate(tracked(), a, 1000, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_deallocate_aligned(tracked(), b, 5000, 512, stream));
  /* A snapshot is what was outstanding when it was taken. */
  ck_assert_ptr_eq(snapshot_at(a_first ? 0 : 1).pointer, a);
  ck_assert_uint_eq(snapshot_now(), 0);
}
END_TEST

START_TEST(snapshot_index_past_its_end_is_refused) {
  void *ptr = allocate(100);
  ck_assert_uint_eq(snapshot_now(), 1);
  void *pointer = &pointer;
  size_t value = 7;
  const char *stack = "kept";
  ck_assert_status(cmr_tracking_resource_snapshot_pointer(tracking, 1, &pointer), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("snapshot_pointer: index 1 is past the snapshot's 1 allocations");
  ck_assert_status(cmr_tracking_resource_snapshot_bytes(tracking, SIZE_MAX, &value), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("snapshot_bytes");
  ck_assert_status(cmr_tracking_resource_snapshot_stack(tracking, 5, &stack), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_str_eq(stack, "kept");
  ck_assert_uint_eq(value, 7);
  ck_assert_ok(cmr_deallocate(tracked(), ptr, 100, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(snapshot_now(), 0);
  ck_assert_status(cmr_tracking_resource_snapshot_alignment(tracking, 0, &value), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_tracking_resource_snapshot_stream(tracking, 0, &pointer), CMR_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(snapshot_carries_the_stack_when_captured) {
  teardown();
  make(true);
  bool captures = false;
  ck_assert_ok(cmr_tracking_resource_capture_stacks(tracking, &captures));
  ck_assert(captures);
  void *ptr = allocate_from_a_named_caller(4096);
  ck_assert_uint_eq(snapshot_now(), 1);
  snapshot_record record = snapshot_at(0);
  ck_assert_ptr_eq(record.pointer, ptr);
  /* Frames inside cmr, this test and libc at least, each "#<i> in <where>". */
  ck_assert_msg(strncmp(record.stack, "#0 in ", 6) == 0 && strstr(record.stack, "\n#2 in ") != NULL, "stack:\n%s",
                record.stack);
  ck_assert_ok(cmr_deallocate(tracked(), ptr, 4096, CMR_DEFAULT_STREAM));
}
END_TEST

START_TEST(unknown_pointer_is_refused_and_changes_nothing) {
  void *ptr = allocate(512);
  char elsewhere[1];
  ck_assert_status(cmr_deallocate(tracked(), elsewhere, 512, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("tracking: ");
  ck_assert_message_has("was not allocated here or is already freed");
  ck_assert_int_eq(foreign.deallocations, 0);
  ck_assert_tracked(512, 1);
  ck_assert_ok(cmr_deallocate(tracked(), ptr, 512, CMR_DEFAULT_STREAM));
  /* A second free of the same pointer is unknown too. */
  ck_assert_status(cmr_deallocate(tracked(), ptr, 512, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_int_eq(foreign.deallocations, 1);
  ck_assert_tracked(0, 0);
}
END_TEST

/* A free with another size or alignment is refused whole: nothing reaches
 * the upstream, the allocation stays tracked, and the right free works. */
START_TEST(size_mismatch_is_refused) {
  void *ptr = allocate(1000);
  ck_assert_status(cmr_deallocate(tracked(), ptr, 600, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  char expected[200];
  snprintf(expected, sizeof expected,
           "tracking: %p was freed as 600 bytes at alignment 256 but allocated as 1000 bytes at alignment 256: "
           "nothing was freed",
           ptr);
  ck_assert_str_eq(cmr_last_error_message(), expected);
  ck_assert_int_eq(foreign.deallocations, 0);
  ck_assert_tracked(1000, 1);
  ck_assert_ok(cmr_deallocate(tracked(), ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(foreign.deallocations, 1);
  ck_assert_uint_eq(foreign.last_bytes, 1000);
  ck_assert_uint_eq(foreign.outstanding, 0);
  ck_assert_tracked(0, 0);
}
END_TEST

START_TEST(alignment_mismatch_is_refused) {
  void *ptr = allocate(1000);
  ck_assert_status(cmr_deallocate_aligned(tracked(), ptr, 1000, 4096, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("freed as 1000 bytes at alignment 4096 but allocated as 1000 bytes at alignment 256");
  ck_assert_int_eq(foreign.deallocations, 0);
  ck_assert_uint_eq(cmr_test_tracked_count(tracking), 1);
  ck_assert_ok(cmr_deallocate(tracked(), ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_int_eq(foreign.deallocations, 1);
  ck_assert_uint_eq(foreign.last_alignment, 256);
  ck_assert_uint_eq(cmr_test_tracked_count(tracking), 0);
}
END_TEST

/* max_alignment = "upstream". */
START_TEST(larger_alignments_go_to_the_upstream) { test_adaptor_passes_alignment_up(tracked(), &foreign); }
END_TEST

START_TEST(upstream_failure_records_nothing) {
  foreign.limit = 1024;
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(tracked(), 2048, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ptr_null(ptr);
  ck_assert_tracked(0, 0);
  ck_assert_str_eq(report_now(), "tracking: 0 outstanding allocations, 0 bytes\n");
}
END_TEST

/* ---- an upstream whose frees fail ------------------------------------------------ */

static cmr_status refuse_free(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)self, (void)ptr, (void)bytes, (void)alignment, (void)stream;
  return CMR_ERROR_CUDA; /* dispatch gives it a message */
}

START_TEST(failed_upstream_free_stays_tracked) {
  cmr_resource_ops ops = test_foreign_ops;
  ops.deallocate = refuse_free;
  cmr_tracking_resource *refusing = NULL;
  ck_assert_ok(cmr_tracking_resource_create(test_foreign_ref(&foreign, &ops), false, &refusing));
  cmr_resource_ref ref = cmr_tracking_resource_ref(refusing);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 700, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_status(cmr_deallocate(ref, ptr, 700, CMR_DEFAULT_STREAM), CMR_ERROR_CUDA);
  char expected[160];
  snprintf(expected, sizeof expected,
           "tracking: freeing %p: cmr_deallocate_aligned: resource foreign failed with CMR_ERROR_CUDA for 700 bytes",
           ptr);
  ck_assert_str_eq(cmr_last_error_message(), expected);
  ck_assert_tracked_by(refusing, 700, 1);
  ck_assert_ok(cmr_tracking_resource_destroy(refusing));
  free(ptr); /* the foreign resource's memory, which it never took back */
}
END_TEST

/* ---- lifetime and arguments ---------------------------------------------------------- */

static cmr_status make_over(cmr_resource_ref upstream, cmr_resource_ref *out) {
  cmr_tracking_resource *handle = NULL;
  cmr_status status = cmr_tracking_resource_create(upstream, false, &handle);
  *out = cmr_tracking_resource_ref(handle);
  return status;
}

START_TEST(keeps_its_upstream_alive) { ck_assert_ok(cmr_ref_release(test_adaptor_over_released_system(make_over))); }
END_TEST

START_TEST(bad_arguments) {
  const char *report = NULL;
  size_t value = 0;
  ck_assert_status(cmr_tracking_resource_outstanding_report(tracking, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_tracking_resource_allocated_bytes(NULL, &value), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_tracking_resource_outstanding_report(NULL, &report), CMR_ERROR_NULL_POINTER);
  cmr_tracking_resource *none = NULL;
  ck_assert_status(cmr_tracking_resource_create((cmr_resource_ref){0}, false, &none), CMR_ERROR_INVALID_REF);
  ck_assert_ptr_null(none);
}
END_TEST

/* ---- stacks ------------------------------------------------------------------------------ */

/* prefetch over failure_callback over tracking over the counting resource,
 * each handle destroyed once the next is made: the top one keeps the chain
 * alive, and tracking sees what comes down through the other two. */
START_TEST(a_stack_of_adaptors) {
  cmr_failure_callback_resource *retry = NULL;
  ck_assert_ok(cmr_failure_callback_resource_create(tracked(), cmr_test_never_retry, NULL, &retry));
  cmr_prefetch_resource *top = NULL;
  ck_assert_ok(cmr_prefetch_resource_create(cmr_failure_callback_resource_ref(retry), &top));
  ck_assert_ok(cmr_failure_callback_resource_destroy(retry));
  cmr_resource_ref stack = cmr_prefetch_resource_ref(top);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(stack, 1000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_tracked(1000, 1);
  foreign.limit = 2000;
  void *too_much = (void *)1;
  ck_assert_status(cmr_allocate(stack, 1500, CMR_DEFAULT_STREAM, &too_much), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("failure_callback: the callback gave up on 1500 bytes: ");
  ck_assert_uint_eq(cmr_test_tracked_count(tracking), 1);
  ck_assert_ok(cmr_deallocate(stack, ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_uint_eq(cmr_test_tracked_bytes(tracking), 0);
  ck_assert_ok(cmr_prefetch_resource_destroy(top));
  ck_assert_int_eq(foreign.allocations, 2);
  ck_assert_int_eq(foreign.deallocations, 1);
}
END_TEST

START_TEST(made_from_an_expression) {
  cmr_resource_ref ref;
  cmr_stack *stack = cmr_test_stack("prefetch(tracking(system, capture_stacks=true))", &ref);
  ck_assert_str_eq(cmr_test_expression(stack), "prefetch(tracking(system, capture_stacks=true))");
  cmr_test_use(ref, 4096, 0x11);
  ck_assert_ok(cmr_stack_destroy(stack));
  /* The default is written out. */
  stack = cmr_test_stack("tracking(system)", NULL);
  ck_assert_str_eq(cmr_test_expression(stack), "tracking(system, capture_stacks=false)");
  ck_assert_ok(cmr_stack_destroy(stack));
}
END_TEST

/* ---- threads ------------------------------------------------------------------------------ */

enum { thread_count = 8, rounds = 2000, live = 16 };

typedef struct worker {
  cmr_resource_ref ref;
  unsigned seed;
  bool intact;
} worker;

/* Keeps `live` blocks of varying sizes, each filled with a pattern of its
 * own, and checks the pattern before each free. */
static void *churn(void *arg) {
  worker *w = arg;
  unsigned char *blocks[live] = {0};
  size_t sizes[live] = {0};
  w->intact = true;
  for (unsigned i = 0; i < rounds; ++i) {
    unsigned slot = i % live;
    unsigned char pattern = (unsigned char)(w->seed * 31u + slot);
    if (blocks[slot] != NULL) {
      w->intact = w->intact && blocks[slot][0] == pattern && blocks[slot][sizes[slot] - 1] == pattern;
      if (cmr_deallocate(w->ref, blocks[slot], sizes[slot], CMR_DEFAULT_STREAM) != CMR_SUCCESS) w->intact = false;
    }
    sizes[slot] = 1 + (w->seed * 7919u + i * 104729u) % 20000u;
    void *ptr = NULL;
    if (cmr_allocate(w->ref, sizes[slot], CMR_DEFAULT_STREAM, &ptr) != CMR_SUCCESS) {
      w->intact = false;
      blocks[slot] = NULL;
      continue;
    }
    blocks[slot] = ptr;
    memset(ptr, pattern, sizes[slot]);
  }
  for (unsigned slot = 0; slot < live; ++slot) {
    if (blocks[slot] != NULL) cmr_deallocate(w->ref, blocks[slot], sizes[slot], CMR_DEFAULT_STREAM);
  }
  return NULL;
}

/* Reports taken while the workers run must stay well formed. */
static void *keep_reporting(void *arg) {
  cmr_tracking_resource *resource = arg;
  for (int i = 0; i < 200; ++i) {
    const char *report = NULL;
    if (cmr_tracking_resource_outstanding_report(resource, &report) != CMR_SUCCESS ||
        strncmp(report, "tracking: ", 10) != 0) {
      return (void *)1;
    }
  }
  return NULL;
}

START_TEST(threads_keep_patterns_and_counts) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_tracking_resource *adaptor = NULL;
  ck_assert_ok(cmr_tracking_resource_create(cmr_system_resource_ref(system), true, &adaptor));
  ck_assert_ok(cmr_system_resource_destroy(system));
  pthread_t threads[thread_count], reporter;
  worker workers[thread_count];
  for (unsigned i = 0; i < thread_count; ++i) {
    workers[i] = (worker){cmr_tracking_resource_ref(adaptor), i + 1, false};
    ck_assert_int_eq(pthread_create(&threads[i], NULL, churn, &workers[i]), 0);
  }
  ck_assert_int_eq(pthread_create(&reporter, NULL, keep_reporting, adaptor), 0);
  for (unsigned i = 0; i < thread_count; ++i) {
    ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
    ck_assert_msg(workers[i].intact, "worker %u saw a failure or a pattern overwritten", i);
  }
  void *reporter_failed = (void *)1;
  ck_assert_int_eq(pthread_join(reporter, &reporter_failed), 0);
  ck_assert_ptr_null(reporter_failed);
  ck_assert_tracked_by(adaptor, 0, 0);
  ck_assert_ok(cmr_tracking_resource_destroy(adaptor));
}
END_TEST

static void tracking_cases(Suite *suite) {
  cmr_test_case(suite, "basics", setup, teardown, counts_what_is_outstanding, forwards_size_alignment_and_stream,
                report_lists_each_allocation_by_address, report_stays_valid_until_the_next,
                captures_backtraces_when_asked, no_backtraces_unless_asked, snapshot_holds_each_allocation_by_address,
                snapshot_index_past_its_end_is_refused, snapshot_carries_the_stack_when_captured,
                unknown_pointer_is_refused_and_changes_nothing, size_mismatch_is_refused, alignment_mismatch_is_refused,
                larger_alignments_go_to_the_upstream, upstream_failure_records_nothing,
                failed_upstream_free_stays_tracked, bad_arguments, a_stack_of_adaptors);
  cmr_test_case(suite, "lifetime", NULL, NULL, keeps_its_upstream_alive, threads_keep_patterns_and_counts,
                made_from_an_expression);
}

/* The suite needs a device: the CUDA build's system resource synchronizes streams. */
int main(void) { return cmr_test_main_suite("tracking", CMR_TEST_NEEDS_DEVICE, tracking_cases); }
