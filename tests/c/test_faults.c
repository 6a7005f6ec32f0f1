/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection: every resource that takes an upstream, alone and in small
 * stacks, over an upstream whose Nth allocation fails, for every N from the
 * first (during creation) until a run where the Nth never comes. Each run
 * checks that every call returns success or the upstream's out of memory
 * (with a message), that the top's counters match what is live, that the
 * resource serves the whole workload again once the failure has passed, and
 * that destroying the stack gives every byte back.
 *
 * The resources come from stack expressions, in one table. In them `system`
 * stands for the faulty upstream: the suite links the static library with
 * cmr_system_resource_ref wrapped (see __wrap_cmr_system_resource_ref), so
 * the parser's system leaf becomes the test's foreign resource.
 *
 * Then the host backend's injected failures of the ordering calls (stream
 * ids, event records, waits and synchronizes, device synchronizes) under the
 * suballocators: each is reported or degrades as stream_lists.h says, no
 * block is lost, and the resource works on afterwards. */
#include <stdint.h>

#include "backend.h"
#include "test_util.h"

static test_foreign upstream;

cmr_resource_ref __wrap_cmr_system_resource_ref(cmr_system_resource *handle);

cmr_resource_ref __real_cmr_system_resource_ref(cmr_system_resource *handle);

/* The parser's system leaf: the foreign resource (counted, so the stack's
 * share is seen) takes its place. The parser then hands the handle's share
 * over to the ref it got, the foreign one, so the real resource's share is
 * dropped here first (the handle itself ends at the hand-over). */
cmr_resource_ref __wrap_cmr_system_resource_ref(cmr_system_resource *handle) {
  cmr_ref_release(__real_cmr_system_resource_ref(handle));
  return test_foreign_ref(&upstream, &test_foreign_counted_ops);
}

static const char *const expressions[] = {
    "pool(system, initial_pool_size=16KiB, maximum_pool_size=1MiB)",
    "fixed_size(system, block_size=32KiB, blocks_to_preallocate=2)",
    "binning(system, min_size_exponent=8, max_size_exponent=12)",
    "arena(system, arena_size=1MiB)",
    "statistics(system)",
    "tracking(system)",
    "logging(system, filename=\"/dev/null\")",
    "limiting(system, allocation_limit=1MiB)",
    "aligned(system, allocation_alignment=4096, alignment_threshold=4KiB)",
    "thread_safe(system)",
    "prefetch(system)",
    "statistics(pool(system, initial_pool_size=0))",
    "tracking(binning(pool(system, initial_pool_size=4KiB), min_size_exponent=9, max_size_exponent=11))",
    "limiting(fixed_size(statistics(system), block_size=32KiB, blocks_to_preallocate=1), allocation_limit=1MiB)",
    "thread_safe(arena(tracking(system), arena_size=1MiB))",
    "statistics(logging(aligned(pool(system, initial_pool_size=8KiB)), filename=\"/dev/null\"))",
};

enum { EXPRESSIONS = sizeof expressions / sizeof expressions[0] };

/* Sizes within every resource's reach (fixed_size's block, binning's bins
 * and beyond, a pool's growth past its initial size). */
static const size_t sizes[] = {256, 1000, 8192, 3000, 100, 5000, 64, 8192, 2048, 20000, 7777, 512};

enum { SIZES = sizeof sizes / sizeof sizes[0] };

typedef struct workload {
  cmr_resource_ref ref;
  cmr_stream streams[2];
  void *ptrs[SIZES];
} workload;

static size_t round_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

/* What the top's own counters say is live must be what the workload holds:
 * bytes asked for (statistics, tracking), rounded to 256 (limiting). */
static void check_counters(cmr_resource_ref ref, const workload *work) {
  size_t asked = 0;
  size_t rounded = 0;
  size_t count = 0;
  for (int i = 0; i < SIZES; i++) {
    if (work->ptrs[i] == NULL) continue;
    asked += sizes[i];
    rounded += round_up(sizes[i], CMR_DEFAULT_ALIGNMENT);
    count++;
  }
  size_t got = 0;
  cmr_statistics_resource *statistics = NULL;
  cmr_tracking_resource *tracking = NULL;
  cmr_limiting_resource *limiting = NULL;
  if (cmr_statistics_resource_from_ref(ref, &statistics) == CMR_SUCCESS) {
    ck_assert_ok(cmr_statistics_resource_bytes_current(statistics, &got));
    ck_assert_uint_eq(got, asked);
  } else if (cmr_tracking_resource_from_ref(ref, &tracking) == CMR_SUCCESS) {
    ck_assert_ok(cmr_tracking_resource_allocated_bytes(tracking, &got));
    ck_assert_uint_eq(got, asked);
    ck_assert_ok(cmr_tracking_resource_outstanding_count(tracking, &got));
    ck_assert_uint_eq(got, count);
  } else if (cmr_limiting_resource_from_ref(ref, &limiting) == CMR_SUCCESS) {
    ck_assert_ok(cmr_limiting_resource_allocated_bytes(limiting, &got));
    ck_assert_uint_eq(got, rounded);
  }
  /* Each handle from_ref made owns a share of its own (NULL ones: no-ops). */
  cmr_test_destroy(statistics, tracking, limiting);
}

/* Allocates every size, alternating streams: each call succeeds or is out
 * of memory with a message. With `must_succeed`, every one succeeds. */
static void allocate_all(workload *work, bool must_succeed) {
  for (int i = 0; i < SIZES; i++) {
    cmr_clear_last_error();
    work->ptrs[i] = NULL;
    cmr_status status = cmr_allocate(work->ref, sizes[i], work->streams[i % 2], &work->ptrs[i]);
    if (status != CMR_SUCCESS && !must_succeed) {
      ck_assert_str_eq(cmr_status_string(status), cmr_status_string(CMR_ERROR_OUT_OF_MEMORY));
      ck_assert_str_ne(cmr_last_error_message(), "");
      ck_assert_ptr_null(work->ptrs[i]);
      continue;
    }
    ck_assert_msg(status == CMR_SUCCESS, "allocating %zu: %s (%s)", sizes[i], cmr_status_string(status),
                  cmr_last_error_message());
  }
  check_counters(work->ref, work);
}

static void free_all(workload *work) {
  for (int i = 0; i < SIZES; i++) {
    ck_assert_ok(cmr_deallocate(work->ref, work->ptrs[i], sizes[i], work->streams[i % 2]));
    work->ptrs[i] = NULL;
  }
  check_counters(work->ref, work);
}

/* Ends the injected failure; whether it came (the upstream reached it). */
static bool stop_failures(void) {
  bool met = upstream.allocations >= upstream.fail_at;
  upstream.fail_at = 0;
  return met;
}

/* The workload on `ref` with the upstream failing its `fail_at`th
 * allocation, then once more after the failure has passed; whether the
 * failure came. */
static bool run_workload(cmr_resource_ref ref) {
  workload work = {.ref = ref};
  work.streams[1] = cmr_test_stream();
  allocate_all(&work, false);
  free_all(&work);
  bool met = stop_failures();
  allocate_all(&work, true);
  free_all(&work);
  ck_assert_ok(cmr_stream_destroy(work.streams[1]));
  return met;
}

/* One run of `expression` with the Nth upstream allocation failing; false
 * once the Nth did not come (the runs have covered every allocation). */
static bool run_failing_at(const char *expression, int n) {
  upstream = (test_foreign){.fail_at = n, .properties = CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE};
  cmr_stack *stack = NULL;
  cmr_clear_last_error();
  cmr_status status = cmr_stack_parse(expression, &stack);
  bool met = true;
  if (status != CMR_SUCCESS) {
    ck_assert_msg(status == CMR_ERROR_OUT_OF_MEMORY, "%s failing at %d: %s (%s)", expression, n,
                  cmr_status_string(status), cmr_last_error_message());
    ck_assert_str_ne(cmr_last_error_message(), "");
    ck_assert_int_eq(upstream.allocations, n); /* it failed at the injected fault */
  } else {
    cmr_resource_ref top;
    ck_assert_ok(cmr_stack_ref(stack, &top));
    met = run_workload(top);
    ck_assert_ok(cmr_stack_destroy(stack));
  }
  ck_assert_msg(upstream.outstanding == 0, "%s failing at %d: %zu bytes not given back", expression, n,
                upstream.outstanding);
  /* Every share taken of the upstream was dropped, the creator's too. */
  ck_assert_int_eq(upstream.releases, upstream.retains + 1);
  return met;
}

START_TEST(every_upstream_failure_is_reported_and_survived) {
  const char *expression = expressions[_i];
  int n = 1;
  while (run_failing_at(expression, n)) n++;
  ck_assert_int_gt(n, 1); /* at least one run met its fault */
}
END_TEST

/* failure_callback's callback cannot be written in an expression: made by
 * hand, with a callback that gives up at once. */
static bool give_up(size_t bytes, void *arg) {
  (void)bytes;
  ++*(int *)arg;
  return false;
}

START_TEST(failure_callback_reports_the_failure_and_survives) {
  int calls = 0;
  for (int n = 1; n <= SIZES; n++) {
    upstream = (test_foreign){.fail_at = n, .properties = CMR_PROPERTY_HOST_ACCESSIBLE};
    cmr_failure_callback_resource *resource = NULL;
    ck_assert_ok(cmr_failure_callback_resource_create(test_foreign_ref(&upstream, &test_foreign_counted_ops), give_up,
                                                      &calls, &resource));
    ck_assert(run_workload(cmr_failure_callback_resource_ref(resource)));
    ck_assert_ok(cmr_failure_callback_resource_destroy(resource));
    ck_assert_uint_eq(upstream.outstanding, 0);
    ck_assert_int_eq(upstream.releases, upstream.retains);
    ck_assert_int_eq(calls, n); /* one failure per run, each reported to the callback */
  }
}
END_TEST

/* ---- injected backend failures ---------------------------------------------------- */

enum { POOL, FIXED_SIZE, ARENA, SUBALLOCATORS };

/* The suballocators' stream lists, each with one SIZE block that every take
 * below must come back to (fixed_size has exactly one). */
static const char *const suballocators[SUBALLOCATORS] = {
    [POOL] = "pool(system, initial_pool_size=0)",
    [FIXED_SIZE] = "fixed_size(system, block_size=1MiB, blocks_to_preallocate=1)",
    /* One superblock: a stream finding its own arena empty takes from the
     * other's, there being no new superblock to cut. */
    [ARENA] = "arena(system, arena_size=1MiB)",
};

/* A whole superblock of the arena: the only block on its stream's list. */
enum { SIZE = 1024 * 1024 };

typedef struct ordered {
  cmr_stack *stack;
  cmr_resource_ref ref;
  cmr_stream a, b;
  void *block; /* the one block passed between the streams */
  int grown;   /* upstream allocations once the block exists */
} ordered;

static cmr_backend_host_counts counts(void) {
  cmr_backend_host_counts now;
  cmr_backend_host_counts_read(&now);
  return now;
}

static void clear_injections(void) {
  for (int call = 0; call < CMR_BACKEND_HOST_CALLS; call++) cmr_backend_host_fail_call(call, 0);
}

static void *take(const ordered *o, cmr_stream stream) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(o->ref, SIZE, stream, &ptr));
  return ptr;
}

static void give(const ordered *o, cmr_stream stream) { ck_assert_ok(cmr_deallocate(o->ref, o->block, SIZE, stream)); }

/* The block taken on `stream`, and no new memory taken for it. */
static void take_the_block(const ordered *o, cmr_stream stream) {
  ck_assert_ptr_eq(take(o, stream), o->block);
  ck_assert_int_eq(upstream.allocations, o->grown);
}

/* `expression` with streams a and b, nothing allocated yet. */
static ordered open_ordered(const char *expression) {
  clear_injections();
  upstream = (test_foreign){.properties = CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE};
  ordered o = {0};
  ck_assert_ok(cmr_stack_parse(expression, &o.stack));
  ck_assert_ok(cmr_stack_ref(o.stack, &o.ref));
  o.a = cmr_test_stream();
  o.b = cmr_test_stream();
  return o;
}

/* Destroys it all: every byte goes back to the upstream. */
static void close_ordered(const ordered *o) {
  ck_assert_ok(cmr_stack_destroy(o->stack));
  ck_assert_uint_eq(upstream.outstanding, 0);
  cmr_test_destroy(o->a, o->b);
}

/* `expression` with streams a and b and the block freed on a (whose list
 * is not shared yet: unordered). */
static ordered make_ordered(const char *expression) {
  ordered o = open_ordered(expression);
  o.block = take(&o, o.a);
  o.grown = upstream.allocations;
  give(&o, o.a);
  return o;
}

/* Passes the block a -> b -> a so that both lists are shared: from then on
 * a's frees record its event. The block ends freed on a. */
static void share_both_lists(const ordered *o) {
  take_the_block(o, o->b);
  give(o, o->b);
  take_the_block(o, o->a);
  give(o, o->a);
}

/* The resource still orders the block as it should, then gives everything back. */
static void check_and_destroy(ordered *o) {
  share_both_lists(o);
  cmr_backend_host_counts before = counts();
  take_the_block(o, o->b);
  ck_assert_uint_eq(counts().stream_waits, before.stream_waits + 1);
  give(o, o->b);
  close_ordered(o);
}

/* A failed record leaves the list unordered: the next taker synchronizes
 * the device instead of waiting on the event. */
START_TEST(a_failed_event_record_makes_the_taker_synchronize) {
  ordered o = make_ordered(suballocators[_i]);
  share_both_lists(&o);
  take_the_block(&o, o.a);
  cmr_backend_host_fail_call(CMR_BACKEND_HOST_EVENT_RECORD, 1);
  cmr_backend_host_counts before = counts();
  give(&o, o.a); /* the free itself succeeds */
  ck_assert_uint_eq(counts().event_records, before.event_records + 1);
  take_the_block(&o, o.b);
  cmr_backend_host_counts after = counts();
  ck_assert_uint_eq(after.device_synchronizes, before.device_synchronizes + 1);
  ck_assert_uint_eq(after.stream_waits, before.stream_waits);
  give(&o, o.b);
  check_and_destroy(&o);
}
END_TEST

/* A failed wait or synchronize fails the allocation with the CUDA error,
 * and the block stays where it was: the retry gets it. */
static void check_failed_ordering(ordered *o, cmr_backend_host_call call) {
  cmr_backend_host_fail_call(call, 1);
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(o->ref, SIZE, o->b, &ptr), CMR_ERROR_CUDA);
  ck_assert_message_has("injected failure");
  ck_assert_ptr_null(ptr);
  take_the_block(o, o->b);
  give(o, o->b);
  check_and_destroy(o);
}

START_TEST(a_failed_device_synchronize_fails_the_take_and_keeps_the_block) {
  ordered o = make_ordered(suballocators[_i]);
  check_failed_ordering(&o, CMR_BACKEND_HOST_DEVICE_SYNCHRONIZE);
}
END_TEST

START_TEST(a_failed_stream_wait_fails_the_take_and_keeps_the_block) {
  ordered o = make_ordered(suballocators[_i]);
  share_both_lists(&o);
  check_failed_ordering(&o, CMR_BACKEND_HOST_STREAM_WAIT);
}
END_TEST

/* Without the stream's id no list can be found: allocate and deallocate
 * fail with the CUDA error, and a block whose free failed is still the
 * caller's, to free again. */
START_TEST(a_failed_stream_id_fails_the_call_and_changes_nothing) {
  ordered o = make_ordered(suballocators[_i]);
  take_the_block(&o, o.a);
  cmr_backend_host_fail_call(CMR_BACKEND_HOST_STREAM_ID, 1);
  ck_assert_status(cmr_deallocate(o.ref, o.block, SIZE, o.a), CMR_ERROR_CUDA);
  ck_assert_message_has("cudaStreamGetId");
  give(&o, o.a);
  cmr_backend_host_fail_call(CMR_BACKEND_HOST_STREAM_ID, 1);
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(o.ref, SIZE, o.a, &ptr), CMR_ERROR_CUDA);
  ck_assert_ptr_null(ptr);
  take_the_block(&o, o.a);
  give(&o, o.a);
  check_and_destroy(&o);
}
END_TEST

/* The arena's defragmenting waits on the host for each list's event before
 * a superblock goes back to the global arena: a failed wait fails the
 * allocation with the CUDA error and keeps the superblock in its list. */
START_TEST(a_failed_event_synchronize_fails_the_defragment_and_keeps_the_superblock) {
  /* Two superblocks, the second held on the default stream while a and b
   * share the first, and then freed there: the request of both at once
   * finds the global arena empty and no list with a fit. */
  ordered o = make_ordered("arena(system, arena_size=2MiB)");
  void *filler = take(&o, CMR_DEFAULT_STREAM);
  share_both_lists(&o);
  ck_assert_ok(cmr_deallocate(o.ref, filler, SIZE, CMR_DEFAULT_STREAM));
  cmr_backend_host_fail_call(CMR_BACKEND_HOST_EVENT_SYNCHRONIZE, 1);
  /* Both superblocks at once: only after a's one is back in the global arena. */
  void *whole = NULL;
  cmr_backend_host_counts before = counts();
  ck_assert_status(cmr_allocate(o.ref, 2 * SIZE, o.a, &whole), CMR_ERROR_CUDA);
  ck_assert_message_has("cudaEventSynchronize");
  ck_assert_uint_eq(counts().event_synchronizes, before.event_synchronizes + 1);
  take_the_block(&o, o.b); /* still in a's list */
  give(&o, o.b);
  ck_assert_ok(cmr_allocate(o.ref, 2 * SIZE, o.a, &whole));
  ck_assert_ok(cmr_deallocate(o.ref, whole, 2 * SIZE, o.a));
  close_ordered(&o);
}
END_TEST

/* A first allocation looks its stream up more than once (before and after
 * growing): whichever lookup fails, the call reports it or succeeds, the
 * next one succeeds, and destroy gives everything back (memory obtained
 * for a list that could not be found waits for destroy, as the
 * suballocators document for a block they cannot record). */
START_TEST(any_failed_stream_id_of_a_growing_allocation_is_survived) {
  for (unsigned long nth = 1; nth <= 4; nth++) {
    ordered o = open_ordered(suballocators[_i]);
    cmr_backend_host_fail_call(CMR_BACKEND_HOST_STREAM_ID, nth);
    cmr_clear_last_error();
    cmr_status status = cmr_allocate(o.ref, SIZE, o.a, &o.block);
    clear_injections();
    ck_assert_msg(status == CMR_SUCCESS || status == CMR_ERROR_CUDA, "failing stream id %lu: %s", nth,
                  cmr_status_string(status));
    if (status == CMR_SUCCESS)
      give(&o, o.a);
    else
      ck_assert_message_has("cudaStreamGetId");
    o.block = take(&o, o.a);
    give(&o, o.a);
    close_ordered(&o);
  }
}
END_TEST

/* Regression: a pool at its maximum whose growth could not give the new
 * chunk to the stream's list (its id failing after the upstream answered)
 * kept the chunk until destroy, unusable, so the retry found the maximum
 * reached and failed. The chunk now goes back to the upstream at once. */
START_TEST(a_chunk_the_pool_cannot_list_goes_back_to_the_upstream) {
  ordered o = open_ordered("pool(system, initial_pool_size=0, maximum_pool_size=1MiB)");
  /* The lookups before growing, and the one after it. */
  cmr_backend_host_fail_call(CMR_BACKEND_HOST_STREAM_ID, 3);
  ck_assert_status(cmr_allocate(o.ref, SIZE, o.a, &o.block), CMR_ERROR_CUDA);
  ck_assert_message_has("cudaStreamGetId");
  ck_assert_int_eq(upstream.allocations, 1); /* the failure came after the growth */
  ck_assert_uint_eq(upstream.outstanding, 0);
  o.block = take(&o, o.a);
  give(&o, o.a);
  close_ordered(&o);
}
END_TEST

/* The same for fixed_size, whose growth then succeeded on a second chunk
 * while the first, none of whose blocks was listed, sat unused until
 * destroy: whichever lookup fails, it holds no more than the two blocks. */
START_TEST(a_chunk_fixed_size_cannot_list_goes_back_to_the_upstream) {
  for (unsigned long nth = 1; nth <= 4; nth++) {
    ordered o = open_ordered(suballocators[FIXED_SIZE]); /* one block preallocated */
    void *first = take(&o, o.a);
    cmr_backend_host_fail_call(CMR_BACKEND_HOST_STREAM_ID, nth);
    cmr_status status = cmr_allocate(o.ref, SIZE, o.a, &o.block);
    clear_injections();
    if (status != CMR_SUCCESS) o.block = take(&o, o.a);
    ck_assert_msg(upstream.outstanding == 2 * SIZE, "failing stream id %lu: %zu bytes held for two blocks", nth,
                  upstream.outstanding);
    give(&o, o.a);
    ck_assert_ok(cmr_deallocate(o.ref, first, SIZE, o.a));
    close_ordered(&o);
  }
}
END_TEST

static void faults_cases(Suite *suite) {
  TCase *upstream_failures = cmr_test_loop_case(suite, "upstream_failures", NULL, NULL, EXPRESSIONS,
                                                every_upstream_failure_is_reported_and_survived);
  cmr_test_add(upstream_failures, 1, failure_callback_reports_the_failure_and_survives);
  /* An injection a failed test left pending must not reach the next. */
  TCase *backend_failures = cmr_test_loop_case(
      suite, "backend_failures", NULL, clear_injections, SUBALLOCATORS,
      a_failed_event_record_makes_the_taker_synchronize, a_failed_device_synchronize_fails_the_take_and_keeps_the_block,
      a_failed_stream_wait_fails_the_take_and_keeps_the_block, a_failed_stream_id_fails_the_call_and_changes_nothing,
      any_failed_stream_id_of_a_growing_allocation_is_survived);
  cmr_test_add(backend_failures, 1, a_failed_event_synchronize_fails_the_defragment_and_keeps_the_superblock,
               a_chunk_the_pool_cannot_list_goes_back_to_the_upstream,
               a_chunk_fixed_size_cannot_list_goes_back_to_the_upstream);
}

int main(void) { return cmr_test_main_suite("faults", CMR_TEST_ANY_MACHINE, faults_cases); }
