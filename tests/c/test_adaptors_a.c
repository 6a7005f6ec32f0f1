/* SPDX-License-Identifier: Apache-2.0 */
/* The statistics, limiting, aligned and thread_safe adaptors beyond the
 * battery: exact counters (the push/pop merge worked by hand), the limit
 * and its rounding, what the upstream is asked and given back (seen through
 * foreign upstreams), argument checks and refusals with their statuses and
 * messages, upstreams held past their owners' destroy, stacks of adaptors,
 * and threads at once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_counting.h"

#define BOTH_PROPERTIES (CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE)

static test_foreign foreign;

static void setup(void) { foreign = (test_foreign){.properties = BOTH_PROPERTIES}; }

static cmr_resource_ref foreign_ref(void) { return test_foreign_ref(&foreign, &test_foreign_ops); }

static void *take(cmr_resource_ref ref, size_t bytes) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, bytes, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ptr_nonnull(ptr);
  return ptr;
}

static void give(cmr_resource_ref ref, void *ptr, size_t bytes) {
  ck_assert_ok(cmr_deallocate(ref, ptr, bytes, CMR_DEFAULT_STREAM));
}

static bool is_aligned(const void *ptr, size_t alignment) { return (uintptr_t)ptr % alignment == 0; }

static uint64_t next_random(uint64_t *state) {
  /* xorshift64*: fixed seeds make every run ask the same sizes. */
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 2685821657736338717ull;
}

/* Each thread's blocks hold its own byte; a block that reads otherwise was
 * handed to two owners at once. */
static void fill(void *ptr, size_t bytes, unsigned seed) { memset(ptr, (int)(seed * 37u + 11u) & 0xff, bytes); }

static bool holds_fill(const void *ptr, size_t bytes, unsigned seed) {
  const unsigned char *p = ptr, expected = (unsigned char)((seed * 37u + 11u) & 0xff);
  return p[0] == expected && p[bytes / 2] == expected && p[bytes - 1] == expected;
}

/* Runs `body` on `count` threads, each given its index, and fails the test
 * with the first thread's failure. */
typedef struct worker {
  unsigned index;
  cmr_resource_ref ref;
  void *context;
  cmr_status failure;
  unsigned lost;    /* blocks whose fill another thread overwrote */
  unsigned refused; /* allocations refused with CMR_ERROR_OUT_OF_MEMORY */
} worker;

enum { thread_count = 8 };

static void run_threads(void *(*body)(void *), cmr_resource_ref ref, void *context, worker workers[thread_count]) {
  for (unsigned i = 0; i < thread_count; ++i) workers[i] = (worker){.index = i, .ref = ref, .context = context};
  ck_assert_ptr_null(cmr_test_threads(thread_count, body, workers, sizeof *workers).returned);
  for (unsigned i = 0; i < thread_count; ++i) {
    ck_assert_msg(workers[i].failure == CMR_SUCCESS, "thread %u: %s", i, cmr_status_string(workers[i].failure));
    ck_assert_msg(workers[i].lost == 0, "thread %u saw %u blocks overwritten", i, workers[i].lost);
  }
}

/* A pattern of allocations and frees: up to `live` blocks held, sizes from
 * the thread's own seed, every block filled and checked before its free. An
 * out-of-memory refusal is counted, not a failure. */
enum { churn_live = 16, churn_rounds = 400 };

typedef struct churn_shape {
  size_t smallest;
  size_t spread;
} churn_shape;

static void *churn(void *arg) {
  worker *w = arg;
  const churn_shape *shape = w->context;
  struct {
    char *ptr;
    size_t bytes;
  } held[churn_live] = {{0}};
  uint64_t rng = 1000 + w->index;
  for (unsigned i = 0; i < churn_rounds && w->failure == CMR_SUCCESS; ++i) {
    unsigned slot = (unsigned)(next_random(&rng) % churn_live);
    if (held[slot].ptr != NULL) {
      if (!holds_fill(held[slot].ptr, held[slot].bytes, w->index)) w->lost++;
      w->failure = cmr_deallocate(w->ref, held[slot].ptr, held[slot].bytes, CMR_DEFAULT_STREAM);
      held[slot].ptr = NULL;
      continue;
    }
    held[slot].bytes = shape->smallest + (size_t)(next_random(&rng) % shape->spread);
    w->failure = cmr_allocate(w->ref, held[slot].bytes, CMR_DEFAULT_STREAM, (void **)&held[slot].ptr);
    if (w->failure == CMR_ERROR_OUT_OF_MEMORY) {
      w->refused++;
      w->failure = CMR_SUCCESS;
    } else if (w->failure == CMR_SUCCESS) {
      fill(held[slot].ptr, held[slot].bytes, w->index);
    }
  }
  for (unsigned i = 0; i < churn_live && w->failure == CMR_SUCCESS; ++i) {
    if (held[i].ptr != NULL) w->failure = cmr_deallocate(w->ref, held[i].ptr, held[i].bytes, CMR_DEFAULT_STREAM);
  }
  return NULL;
}

/* ==== statistics ============================================================ */

typedef struct counters {
  size_t bytes_current, bytes_peak, bytes_total;
  size_t allocations_current, allocations_peak, allocations_total;
} counters;

static counters read_counters(cmr_statistics_resource *handle) {
  counters c;
  ck_assert_ok(cmr_statistics_resource_bytes_current(handle, &c.bytes_current));
  ck_assert_ok(cmr_statistics_resource_bytes_peak(handle, &c.bytes_peak));
  ck_assert_ok(cmr_statistics_resource_bytes_total(handle, &c.bytes_total));
  ck_assert_ok(cmr_statistics_resource_allocations_current(handle, &c.allocations_current));
  ck_assert_ok(cmr_statistics_resource_allocations_peak(handle, &c.allocations_peak));
  ck_assert_ok(cmr_statistics_resource_allocations_total(handle, &c.allocations_total));
  return c;
}

#define ck_assert_counters(handle, bc, bp, bt, ac, ap, at) \
  do {                                                     \
    counters c_ = read_counters(handle);                   \
    ck_assert_uint_eq(c_.bytes_current, (bc));             \
    ck_assert_uint_eq(c_.bytes_peak, (bp));                \
    ck_assert_uint_eq(c_.bytes_total, (bt));               \
    ck_assert_uint_eq(c_.allocations_current, (ac));       \
    ck_assert_uint_eq(c_.allocations_peak, (ap));          \
    ck_assert_uint_eq(c_.allocations_total, (at));         \
  } while (0)

CMR_TEST_OUT(levels_of, size_t, 0, cmr_statistics_resource_counter_levels, cmr_statistics_resource *)

CMR_TEST_OUT(make_statistics, cmr_statistics_resource *, NULL, cmr_statistics_resource_create, cmr_resource_ref)

START_TEST(statistics_counts_exactly_and_forwards) {
  cmr_statistics_resource *handle = make_statistics(foreign_ref());
  cmr_resource_ref ref = cmr_statistics_resource_ref(handle);
  ck_assert_counters(handle, 0, 0, 0, 0, 0, 0);
  cmr_stream stream = (cmr_stream)(uintptr_t)0x5000;
  void *a = NULL;
  ck_assert_ok(cmr_allocate(ref, 1000, stream, &a));
  ck_assert_uint_eq(foreign.last_bytes, 1000);
  ck_assert_uint_eq(foreign.last_alignment, CMR_DEFAULT_ALIGNMENT);
  ck_assert_ptr_eq(foreign.last_stream, stream);
  void *b = take(ref, 3000);
  ck_assert_counters(handle, 4000, 4000, 4000, 2, 2, 2);
  ck_assert_ok(cmr_deallocate(ref, a, 1000, stream));
  ck_assert_ptr_eq(foreign.last_freed, a);
  ck_assert_ptr_eq(foreign.last_stream, stream);
  ck_assert_counters(handle, 3000, 4000, 4000, 1, 2, 2);
  void *c = take(ref, 500);
  ck_assert_counters(handle, 3500, 4000, 4500, 2, 2, 3);
  give(ref, b, 3000);
  give(ref, c, 500);
  ck_assert_counters(handle, 0, 4000, 4500, 0, 2, 3);
  ck_assert_uint_eq(foreign.outstanding, 0);
  ck_assert_ok(cmr_statistics_resource_destroy(handle));
}
END_TEST

START_TEST(statistics_failed_upstream_calls_change_no_counter) {
  cmr_statistics_resource *handle = make_statistics(foreign_ref());
  cmr_resource_ref ref = cmr_statistics_resource_ref(handle);
  void *kept = take(ref, 700);
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(ref, 5000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ptr_null(ptr);
  ck_assert_counters(handle, 700, 700, 700, 1, 1, 1);
  foreign.fail_with = CMR_SUCCESS;
  give(ref, kept, 700);
  ck_assert_ok(cmr_statistics_resource_destroy(handle));

  /* A refused free (here: an aligned adaptor that never saw the pointer)
   * leaves the counters too. */
  cmr_aligned_resource *aligned = NULL;
  ck_assert_ok(cmr_aligned_resource_create(foreign_ref(), CMR_SIZE(4096), CMR_SIZE(0), &aligned));
  handle = make_statistics(cmr_aligned_resource_ref(aligned));
  ref = cmr_statistics_resource_ref(handle);
  kept = take(ref, 300);
  ck_assert_status(cmr_deallocate(ref, (char *)kept + 256, 300, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_counters(handle, 300, 300, 300, 1, 1, 1);
  give(ref, kept, 300);
  cmr_test_destroy(handle, aligned);
  ck_assert_uint_eq(foreign.outstanding, 0);
}
END_TEST

/* The merge rule, worked by hand. Each level is {value, peak, total};
 * "current" below is what the methods report: the sum of every level's
 * value, i.e. what is outstanding through the adaptor.
 *
 *   base    allocate A 1000, X 3000, free X   bytes {1000, 4000, 4000}  allocations {1, 2, 2}
 *   push 1  allocate B 500                    bytes { 500,  500,  500}  allocations {1, 1, 1}
 *           free A 1000 (allocated in base)   bytes {-500,  500,  500}  allocations {0, 1, 1}
 *           allocate C 2000                   bytes {1500, 1500, 2500}  allocations {1, 1, 2}
 *           current = 1000 + 1500 = 2500 bytes (B + C), 1 + 1 = 2 allocations
 *   push 2  allocate D 4000, free D           bytes {   0, 4000, 4000}  allocations {0, 1, 1}
 *   pop 2 into 1: peak = max(1500, 1500 + 4000) = 5500, value 1500 + 0, total 2500 + 4000
 *                                             bytes {1500, 5500, 6500}  allocations {1, max(1, 1+1) = 2, 3}
 *   pop 1 into base: peak = max(4000, 1000 + 5500) = 6500, value 1000 + 1500, total 4000 + 6500
 *                                             bytes {2500, 6500, 10500} allocations {2, max(2, 1+2) = 3, 5}
 *
 * Checked against the history: the most bytes out at once was B + C + D =
 * 6500 (3 allocations), and 1000 + 3000 + 500 + 2000 + 4000 = 10500 bytes
 * in 5 allocations were made in all. */
/* What was outstanding when the top level was pushed: *_current minus it is RMM's current. */
static void ck_assert_at_push(cmr_statistics_resource *handle, size_t bytes, size_t allocations) {
  size_t got = SIZE_MAX;
  ck_assert_ok(cmr_statistics_resource_bytes_at_push(handle, &got));
  ck_assert_uint_eq(got, bytes);
  ck_assert_ok(cmr_statistics_resource_allocations_at_push(handle, &got));
  ck_assert_uint_eq(got, allocations);
}

START_TEST(statistics_push_pop_merges_as_rmm) {
  cmr_statistics_resource *handle = make_statistics(foreign_ref());
  cmr_resource_ref ref = cmr_statistics_resource_ref(handle);
  ck_assert_uint_eq(levels_of(handle), 1);
  void *a = take(ref, 1000);
  give(ref, take(ref, 3000), 3000);
  ck_assert_counters(handle, 1000, 4000, 4000, 1, 2, 2);
  ck_assert_at_push(handle, 0, 0);

  ck_assert_ok(cmr_statistics_resource_push_counters(handle));
  ck_assert_uint_eq(levels_of(handle), 2);
  ck_assert_counters(handle, 1000, 0, 0, 1, 0, 0);
  ck_assert_at_push(handle, 1000, 1);
  void *b = take(ref, 500);
  give(ref, a, 1000);
  ck_assert_counters(handle, 500, 500, 500, 1, 1, 1);
  void *c = take(ref, 2000);
  ck_assert_counters(handle, 2500, 1500, 2500, 2, 1, 2);

  ck_assert_ok(cmr_statistics_resource_push_counters(handle));
  give(ref, take(ref, 4000), 4000);
  ck_assert_counters(handle, 2500, 4000, 4000, 2, 1, 1);
  ck_assert_at_push(handle, 2500, 2);

  ck_assert_ok(cmr_statistics_resource_pop_counters(handle));
  ck_assert_uint_eq(levels_of(handle), 2);
  ck_assert_counters(handle, 2500, 5500, 6500, 2, 2, 3);
  ck_assert_at_push(handle, 1000, 1); /* level 1's own current: 2500 - 1000 = 1500 bytes, as in the table */
  ck_assert_ok(cmr_statistics_resource_pop_counters(handle));
  ck_assert_uint_eq(levels_of(handle), 1);
  ck_assert_counters(handle, 2500, 6500, 10500, 2, 3, 5);
  ck_assert_at_push(handle, 0, 0);

  ck_assert_status(cmr_statistics_resource_pop_counters(handle), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("only the base level is left");
  ck_assert_uint_eq(levels_of(handle), 1);
  ck_assert_counters(handle, 2500, 6500, 10500, 2, 3, 5);
  give(ref, b, 500);
  give(ref, c, 2000);
  ck_assert_ok(cmr_statistics_resource_destroy(handle));
}
END_TEST

START_TEST(statistics_deep_stack_grows) {
  cmr_statistics_resource *handle = make_statistics(foreign_ref());
  cmr_resource_ref ref = cmr_statistics_resource_ref(handle);
  enum { depth = 100 };
  void *held[depth];
  /* Level i allocates 256 * (i + 1) bytes and keeps it: popping everything
   * leaves all of it counted once in the base. */
  size_t sum = 0;
  for (unsigned i = 0; i < depth; ++i) {
    ck_assert_ok(cmr_statistics_resource_push_counters(handle));
    held[i] = take(ref, 256 * (i + 1));
    sum += 256 * (i + 1);
  }
  ck_assert_uint_eq(levels_of(handle), depth + 1);
  ck_assert_counters(handle, sum, 256 * depth, 256 * depth, depth, 1, 1);
  for (unsigned i = 0; i < depth; ++i) ck_assert_ok(cmr_statistics_resource_pop_counters(handle));
  ck_assert_counters(handle, sum, sum, sum, depth, depth, depth);
  for (unsigned i = 0; i < depth; ++i) give(ref, held[i], 256 * (i + 1));
  ck_assert_counters(handle, 0, sum, sum, 0, depth, depth);
  ck_assert_ok(cmr_statistics_resource_destroy(handle));
}
END_TEST

START_TEST(statistics_method_checks) {
  size_t value = 0;
  ck_assert_status(cmr_statistics_resource_bytes_current(NULL, &value), CMR_ERROR_NULL_POINTER);
  cmr_statistics_resource *handle = make_statistics(foreign_ref());
  ck_assert_status(cmr_statistics_resource_bytes_peak(handle, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("out is NULL");
  ck_assert_status(cmr_statistics_resource_push_counters(NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_statistics_resource_destroy(handle));
  ck_assert_status(cmr_statistics_resource_pop_counters(handle), CMR_ERROR_DESTROYED_HANDLE);
  cmr_resource_ref zero = {0};
  ck_assert_status(cmr_statistics_resource_create(zero, &handle), CMR_ERROR_INVALID_REF);
}
END_TEST

/* What threads first, first + step, ... asked in all, replaying their
 * fixed-seed patterns alone: the exact totals an adaptor must have seen. */
static void replay_totals(const churn_shape *shape, unsigned first, unsigned step, size_t *bytes, size_t *allocations) {
  *bytes = 0;
  *allocations = 0;
  for (unsigned t = first; t < thread_count; t += step) {
    bool held[churn_live] = {false};
    uint64_t rng = 1000 + t;
    for (unsigned i = 0; i < churn_rounds; ++i) {
      unsigned slot = (unsigned)(next_random(&rng) % churn_live);
      if (!held[slot]) {
        *bytes += shape->smallest + (size_t)(next_random(&rng) % shape->spread);
        ++*allocations;
      }
      held[slot] = !held[slot];
    }
  }
}

/* Runs churn with `shape` through `ref` on every thread, and gives what all
 * of them asked: the bytes and the allocations replay_totals counts. */
static void churn_on_every_thread(cmr_resource_ref ref, churn_shape shape, size_t *bytes, size_t *allocations) {
  worker workers[thread_count];
  run_threads(churn, ref, &shape, workers);
  replay_totals(&shape, 0, 1, bytes, allocations);
}

START_TEST(statistics_threads_count_every_call) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_statistics_resource *handle = make_statistics(cmr_system_resource_ref(system));
  size_t bytes, allocations;
  churn_on_every_thread(cmr_statistics_resource_ref(handle), (churn_shape){1, 65536}, &bytes, &allocations);
  counters c = read_counters(handle);
  ck_assert_uint_eq(c.bytes_current, 0);
  ck_assert_uint_eq(c.allocations_current, 0);
  ck_assert_uint_eq(c.bytes_total, bytes);
  ck_assert_uint_eq(c.allocations_total, allocations);
  /* At most every thread's every slot at once, at least one thread's. */
  ck_assert_uint_le(c.allocations_peak, thread_count * churn_live);
  ck_assert_uint_ge(c.allocations_peak, 1);
  ck_assert_uint_le(c.bytes_peak, bytes);
  cmr_test_destroy(handle, system);
}
END_TEST

/* Even threads push and pop while odd ones churn: every level pushed is
 * popped, so the base ends with the exact totals of the churning threads. */
typedef struct racing {
  churn_shape shape; /* first: churn reads the context as its shape */
  cmr_statistics_resource *handle;
} racing;

static void *churn_or_push_pop(void *arg) {
  worker *w = arg;
  if (w->index % 2 == 1) return churn(arg);
  cmr_statistics_resource *handle = ((racing *)w->context)->handle;
  for (unsigned i = 0; i < 200 && w->failure == CMR_SUCCESS; ++i) {
    w->failure = cmr_statistics_resource_push_counters(handle);
    if (w->failure == CMR_SUCCESS) w->failure = cmr_statistics_resource_pop_counters(handle);
  }
  return NULL;
}

START_TEST(statistics_threads_push_and_pop_while_counting) {
  cmr_system_resource *system = cmr_test_system_resource();
  racing context = {{1, 4096}, make_statistics(cmr_system_resource_ref(system))};
  worker workers[thread_count];
  run_threads(churn_or_push_pop, cmr_statistics_resource_ref(context.handle), &context, workers);
  ck_assert_uint_eq(levels_of(context.handle), 1);
  size_t bytes, allocations;
  replay_totals(&context.shape, 1, 2, &bytes, &allocations);
  counters c = read_counters(context.handle);
  ck_assert_uint_eq(c.bytes_current, 0);
  ck_assert_uint_eq(c.allocations_current, 0);
  ck_assert_uint_eq(c.bytes_total, bytes);
  ck_assert_uint_eq(c.allocations_total, allocations);
  cmr_test_destroy(context.handle, system);
}
END_TEST

/* ==== limiting ================================================================= */

static cmr_limiting_resource *make_limiting(cmr_resource_ref upstream, size_t limit, cmr_optional_size alignment) {
  cmr_limiting_resource *handle = NULL;
  ck_assert_ok(cmr_limiting_resource_create(upstream, limit, alignment, &handle));
  return handle;
}

CMR_TEST_OUT(allocated_of, size_t, SIZE_MAX, cmr_limiting_resource_allocated_bytes, cmr_limiting_resource *)

START_TEST(limiting_counts_rounded_and_refuses_past_the_limit) {
  cmr_limiting_resource *handle = make_limiting(foreign_ref(), 4096, CMR_SIZE_DEFAULT);
  cmr_resource_ref ref = cmr_limiting_resource_ref(handle);
  size_t limit = 0;
  ck_assert_ok(cmr_limiting_resource_allocation_limit(handle, &limit));
  ck_assert_uint_eq(limit, 4096);
  void *a = take(ref, 100); /* counted 256 */
  ck_assert_uint_eq(foreign.last_bytes, 100);
  void *b = take(ref, 1000); /* counted 1024 */
  ck_assert_uint_eq(allocated_of(handle), 256 + 1024);
  /* 3000 counts 3072: 1280 + 3072 = 4352 > 4096, refused before the upstream. */
  int calls = foreign.allocations;
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(ref, 3000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("allocation_limit of 4096");
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(foreign.allocations, calls);
  ck_assert_uint_eq(allocated_of(handle), 1280);
  void *c = take(ref, 2816); /* exactly up to the limit */
  ck_assert_uint_eq(allocated_of(handle), 4096);
  ck_assert_status(cmr_allocate(ref, 1, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  give(ref, a, 100);
  ck_assert_ptr_eq(foreign.last_freed, a);
  ck_assert_uint_eq(allocated_of(handle), 3840);
  void *d = take(ref, 256);
  give(ref, b, 1000);
  give(ref, c, 2816);
  give(ref, d, 256);
  ck_assert_uint_eq(allocated_of(handle), 0);
  ck_assert_uint_eq(foreign.outstanding, 0);
  ck_assert_ok(cmr_limiting_resource_destroy(handle));
}
END_TEST

START_TEST(limiting_alignment_sets_the_rounding) {
  cmr_limiting_resource *exact = make_limiting(foreign_ref(), 1000, CMR_SIZE(1));
  cmr_resource_ref ref = cmr_limiting_resource_ref(exact);
  void *a = take(ref, 999);
  ck_assert_uint_eq(allocated_of(exact), 999);
  void *b = take(ref, 1);
  ck_assert_uint_eq(allocated_of(exact), 1000);
  give(ref, a, 999);
  give(ref, b, 1);
  ck_assert_ok(cmr_limiting_resource_destroy(exact));

  cmr_limiting_resource *coarse = make_limiting(foreign_ref(), 1 << 20, CMR_SIZE(65536));
  ref = cmr_limiting_resource_ref(coarse);
  a = take(ref, 1);
  ck_assert_uint_eq(allocated_of(coarse), 65536);
  ck_assert_uint_eq(foreign.last_bytes, 1); /* the upstream is asked what the caller asked */
  give(ref, a, 1);
  ck_assert_ok(cmr_limiting_resource_destroy(coarse));
}
END_TEST

START_TEST(limiting_upstream_failure_gives_the_count_back) {
  cmr_limiting_resource *handle = make_limiting(foreign_ref(), 1 << 20, CMR_SIZE_DEFAULT);
  cmr_resource_ref ref = cmr_limiting_resource_ref(handle);
  foreign.limit = 10000; /* the upstream runs out first */
  void *a = take(ref, 8000);
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(ref, 8000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_uint_eq(allocated_of(handle), 8192);
  give(ref, a, 8000);
  ck_assert_uint_eq(allocated_of(handle), 0);
  ck_assert_ok(cmr_limiting_resource_destroy(handle));
}
END_TEST

START_TEST(limiting_refuses_to_free_more_than_counted) {
  cmr_limiting_resource *handle = make_limiting(foreign_ref(), 1 << 20, CMR_SIZE_DEFAULT);
  cmr_resource_ref ref = cmr_limiting_resource_ref(handle);
  void *a = take(ref, 1000);
  int frees = foreign.deallocations;
  ck_assert_status(cmr_deallocate(ref, a, 5000, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("only 1024 bytes are allocated");
  ck_assert_int_eq(foreign.deallocations, frees);
  ck_assert_uint_eq(allocated_of(handle), 1024);
  give(ref, a, 1000);
  ck_assert_ok(cmr_limiting_resource_destroy(handle));
}
END_TEST

START_TEST(limiting_refused_upstream_free_keeps_the_count) {
  /* An aligned adaptor refuses a pointer it never aligned. */
  cmr_aligned_resource *aligned = NULL;
  ck_assert_ok(cmr_aligned_resource_create(foreign_ref(), CMR_SIZE(4096), CMR_SIZE(0), &aligned));
  cmr_limiting_resource *handle = make_limiting(cmr_aligned_resource_ref(aligned), 1 << 20, CMR_SIZE_DEFAULT);
  cmr_resource_ref ref = cmr_limiting_resource_ref(handle);
  void *ptr = take(ref, 1000);
  ck_assert_status(cmr_deallocate(ref, (char *)ptr + 4096, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_uint_eq(allocated_of(handle), 1024);
  give(ref, ptr, 1000);
  ck_assert_uint_eq(allocated_of(handle), 0);
  cmr_test_destroy(handle, aligned);
  ck_assert_uint_eq(foreign.outstanding, 0);
}
END_TEST

START_TEST(limiting_create_checks) {
  cmr_limiting_resource *handle = NULL;
  ck_assert_status(cmr_limiting_resource_create(foreign_ref(), 4096, CMR_SIZE(3000), &handle),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("allocation_alignment");
  ck_assert_status(cmr_limiting_resource_create(foreign_ref(), 4096, CMR_SIZE(0), &handle), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("allocation_alignment");
  ck_assert_status(cmr_limiting_resource_create(foreign_ref(), 4096, CMR_SIZE(256), NULL), CMR_ERROR_NULL_POINTER);
  cmr_resource_ref zero = {0};
  ck_assert_status(cmr_limiting_resource_create(zero, 4096, CMR_SIZE(256), &handle), CMR_ERROR_INVALID_REF);
  ck_assert_ptr_null(handle);
}
END_TEST

/* An upstream that records the most bytes (rounded to 256, as the limit
 * counts them) it ever had out at once. */
typedef struct peak_upstream {
  _Atomic size_t live;
  _Atomic size_t peak;
} peak_upstream;

static void *peak_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  peak_upstream *p = arg;
  size_t rounded = (bytes + 255) / 256 * 256;
  size_t live = atomic_fetch_add(&p->live, rounded) + rounded;
  size_t peak = atomic_load(&p->peak);
  while (live > peak && !atomic_compare_exchange_weak(&p->peak, &peak, live)) {
  }
  return aligned_alloc(256, rounded);
}

static void peak_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  peak_upstream *p = arg;
  atomic_fetch_sub(&p->live, (bytes + 255) / 256 * 256);
  free(ptr);
}

START_TEST(limiting_threads_never_pass_the_limit) {
  peak_upstream p = {0};
  cmr_callback_resource *upstream = NULL;
  ck_assert_ok(cmr_callback_resource_create(peak_allocate, peak_deallocate, &p, &p, BOTH_PROPERTIES, &upstream));
  /* One thread alone wants up to 16 * 64 KiB: twice the limit, so refusals
   * happen whatever the interleaving. */
  enum { limit = 512 * 1024 };
  cmr_limiting_resource *handle = make_limiting(cmr_callback_resource_ref(upstream), limit, CMR_SIZE_DEFAULT);
  churn_shape shape = {1, 65536};
  worker workers[thread_count];
  run_threads(churn, cmr_limiting_resource_ref(handle), &shape, workers);
  unsigned refused = 0;
  for (unsigned i = 0; i < thread_count; ++i) refused += workers[i].refused;
  ck_assert_uint_gt(refused, 0);
  ck_assert_uint_le(atomic_load(&p.peak), limit);
  ck_assert_uint_eq(atomic_load(&p.live), 0);
  ck_assert_uint_eq(allocated_of(handle), 0);
  cmr_test_destroy(handle, upstream);
}
END_TEST

/* ==== aligned ==================================================================== */

/* The foreign upstream, also remembering every pointer it handed out, and
 * refusing frees on demand. */
typedef struct recorder {
  test_foreign foreign;
  void *handed[64];
  unsigned count;
  bool refuse_frees; /* deallocate fails with CMR_ERROR_INVALID_ARGUMENT, freeing nothing */
} recorder;

static cmr_status recorder_allocate(void *self, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  recorder *r = self;
  ck_assert_uint_lt(r->count, sizeof r->handed / sizeof *r->handed);
  cmr_status status = test_foreign_ops.allocate(&r->foreign, bytes, alignment, stream, out);
  if (status == CMR_SUCCESS) r->handed[r->count++] = *out;
  return status;
}

static cmr_status recorder_deallocate(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  recorder *r = self;
  if (r->refuse_frees) return CMR_ERROR_INVALID_ARGUMENT; /* dispatch words the message */
  return test_foreign_ops.deallocate(&r->foreign, ptr, bytes, alignment, stream);
}

static unsigned recorder_properties(const void *self) {
  (void)self;
  return BOTH_PROPERTIES;
}

static const cmr_resource_ops recorder_ops = {
    .type_name = "recorder",
    .allocate = recorder_allocate,
    .deallocate = recorder_deallocate,
    .properties = recorder_properties,
};

static recorder rec;

/* The aligned adaptor aligned_over_recorder made, which aligned_teardown destroys. */
static cmr_aligned_resource *over_recorder;

static void aligned_setup(void) {
  rec = (recorder){.foreign = {.properties = BOTH_PROPERTIES}};
  over_recorder = NULL;
}

static void aligned_teardown(void) {
  if (over_recorder != NULL) cmr_test_destroy(over_recorder);
}

static cmr_aligned_resource *make_aligned(size_t alignment, size_t threshold) {
  cmr_aligned_resource *handle = NULL;
  ck_assert_ok(cmr_aligned_resource_create((cmr_resource_ref){&rec, &recorder_ops}, CMR_SIZE(alignment),
                                           CMR_SIZE(threshold), &handle));
  return handle;
}

/* An aligned adaptor over the recorder, for the test's teardown to destroy. */
static cmr_resource_ref aligned_over_recorder(size_t alignment, size_t threshold) {
  over_recorder = make_aligned(alignment, threshold);
  return cmr_aligned_resource_ref(over_recorder);
}

START_TEST(aligned_small_requests_pass_through) {
  cmr_resource_ref ref = aligned_over_recorder(4096, 65536);
  void *ptr = take(ref, 65535);
  ck_assert_ptr_eq(ptr, rec.handed[0]);
  ck_assert_uint_eq(rec.foreign.last_bytes, 65535);
  ck_assert_uint_eq(rec.foreign.last_alignment, 256);
  give(ref, ptr, 65535);
  ck_assert_ptr_eq(rec.foreign.last_freed, ptr);
  ck_assert_uint_eq(rec.foreign.last_bytes, 65535);
}
END_TEST

START_TEST(aligned_large_requests_are_aligned_and_given_back_exactly) {
  cmr_resource_ref ref = aligned_over_recorder(4096, 65536);
  /* Upstream pointers 256 bytes past malloc's: 256-aligned, seldom
   * 4096-aligned, so the adaptor moves inside most allocations. */
  rec.foreign.misalign = 256;
  enum { count = 16 };
  void *ptrs[count];
  for (unsigned i = 0; i < count; ++i) {
    ptrs[i] = take(ref, 65536 + i);
    ck_assert_msg(is_aligned(ptrs[i], 4096), "%p is not 4096-aligned", ptrs[i]);
    ck_assert_uint_eq(rec.foreign.last_bytes, 65536 + i + 4096 - 256);
    ck_assert_uint_eq(rec.foreign.last_alignment, 256);
    char *base = rec.handed[i];
    ck_assert((char *)ptrs[i] >= base && (char *)ptrs[i] - base <= 4096 - 256);
    memset(ptrs[i], 0x5a, 65536 + i); /* all of it lies inside the upstream's */
  }
  for (unsigned i = count; i-- > 0;) {
    give(ref, ptrs[i], 65536 + i);
    ck_assert_ptr_eq(rec.foreign.last_freed, rec.handed[i]);
    ck_assert_uint_eq(rec.foreign.last_bytes, 65536 + i + 4096 - 256);
  }
  ck_assert_uint_eq(rec.foreign.outstanding, 0);
  ck_assert_int_eq(rec.foreign.deallocations, count);
}
END_TEST

START_TEST(aligned_caller_alignment_wins_when_larger) {
  cmr_resource_ref ref = aligned_over_recorder(4096, 65536);
  rec.foreign.misalign = 256;
  /* Below the threshold a caller's 16 KiB still gets 16 KiB. */
  void *small = NULL;
  ck_assert_ok(cmr_allocate_aligned(ref, 1000, 16384, CMR_DEFAULT_STREAM, &small));
  ck_assert(is_aligned(small, 16384));
  ck_assert_uint_eq(rec.foreign.last_bytes, 1000 + 16384 - 256);
  /* Above it, 16 KiB beats the adaptor's 4096. */
  void *large = NULL;
  ck_assert_ok(cmr_allocate_aligned(ref, 100000, 16384, CMR_DEFAULT_STREAM, &large));
  ck_assert(is_aligned(large, 16384));
  ck_assert_uint_eq(rec.foreign.last_bytes, 100000 + 16384 - 256);
  ck_assert_ok(cmr_deallocate_aligned(ref, small, 1000, 16384, CMR_DEFAULT_STREAM));
  ck_assert_ptr_eq(rec.foreign.last_freed, rec.handed[0]);
  ck_assert_ok(cmr_deallocate_aligned(ref, large, 100000, 16384, CMR_DEFAULT_STREAM));
  ck_assert_ptr_eq(rec.foreign.last_freed, rec.handed[1]);
  ck_assert_uint_eq(rec.foreign.outstanding, 0);
}
END_TEST

START_TEST(aligned_honours_more_than_its_upstream_can) {
  /* fixed_size honours 256 at most; the aligned adaptor over it asks only
   * 256 of it and still hands out 1 MiB-aligned memory. */
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_fixed_size_resource *blocks = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(cmr_system_resource_ref(system), CMR_SIZE(2 << 20), CMR_SIZE(2),
                                              CMR_FIXED_SIZE_CAPTURE_SERVE, &blocks));
  void *ptr = NULL;
  ck_assert_status(cmr_allocate_aligned(cmr_fixed_size_resource_ref(blocks), 64, 512, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  cmr_aligned_resource *handle = NULL;
  ck_assert_ok(
      cmr_aligned_resource_create(cmr_fixed_size_resource_ref(blocks), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, &handle));
  cmr_resource_ref ref = cmr_aligned_resource_ref(handle);
  ck_assert_ok(cmr_allocate_aligned(ref, 64, 1 << 20, CMR_DEFAULT_STREAM, &ptr));
  ck_assert(is_aligned(ptr, 1 << 20));
  ck_assert_ok(cmr_deallocate_aligned(ref, ptr, 64, 1 << 20, CMR_DEFAULT_STREAM));
  cmr_test_destroy(handle, blocks, system);
}
END_TEST

START_TEST(forwarding_adaptors_honour_what_their_upstream_does) {
  /* max_alignment = "upstream": thread_safe passes 4096 on to a pool, which
   * honours it; over fixed_size, which does not, the upstream's refusal
   * comes back unchanged. */
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_pool_resource *pool = cmr_test_pool(cmr_system_resource_ref(system), 1 << 20);
  cmr_thread_safe_resource *serial = NULL;
  ck_assert_ok(cmr_thread_safe_resource_create(cmr_pool_resource_ref(pool), &serial));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate_aligned(cmr_thread_safe_resource_ref(serial), 64, 4096, CMR_DEFAULT_STREAM, &ptr));
  ck_assert(is_aligned(ptr, 4096));
  ck_assert_ok(cmr_deallocate_aligned(cmr_thread_safe_resource_ref(serial), ptr, 64, 4096, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_thread_safe_resource_destroy(serial));
  cmr_fixed_size_resource *blocks = NULL;
  ck_assert_ok(cmr_fixed_size_resource_create(cmr_system_resource_ref(system), CMR_SIZE(4096), CMR_SIZE(2),
                                              CMR_FIXED_SIZE_CAPTURE_SERVE, &blocks));
  ck_assert_ok(cmr_thread_safe_resource_create(cmr_fixed_size_resource_ref(blocks), &serial));
  ck_assert_status(cmr_allocate_aligned(cmr_thread_safe_resource_ref(serial), 64, 512, CMR_DEFAULT_STREAM, &ptr),
                   CMR_ERROR_UNSUPPORTED_ALIGNMENT);
  ck_assert_message_has("fixed_size");
  cmr_test_destroy(serial, blocks, pool, system);
}
END_TEST

START_TEST(aligned_unknown_pointer_reaches_no_upstream) {
  cmr_resource_ref ref = aligned_over_recorder(4096, 65536);
  void *ptr = take(ref, 100000);
  ck_assert_status(cmr_deallocate(ref, (char *)ptr + 4096, 100000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_message_has("is not a pointer this adaptor aligned");
  ck_assert_status(cmr_deallocate(ref, (char *)ptr - 4096, 100000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_int_eq(rec.foreign.deallocations, 0);
  give(ref, ptr, 100000);
  /* Freed once: a second free is unknown too. */
  ck_assert_status(cmr_deallocate(ref, ptr, 100000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_int_eq(rec.foreign.deallocations, 1);
}
END_TEST

START_TEST(aligned_refused_free_can_be_retried) {
  cmr_resource_ref ref = aligned_over_recorder(4096, 65536);
  void *ptr = take(ref, 100000);
  rec.refuse_frees = true;
  ck_assert_status(cmr_deallocate(ref, ptr, 100000, CMR_DEFAULT_STREAM), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("resource recorder failed");
  /* The upstream kept the memory, so the adaptor still knows the pointer. */
  rec.refuse_frees = false;
  give(ref, ptr, 100000);
  ck_assert_ptr_eq(rec.foreign.last_freed, rec.handed[0]);
  ck_assert_uint_eq(rec.foreign.outstanding, 0);
}
END_TEST

START_TEST(aligned_failures) {
  cmr_resource_ref ref = aligned_over_recorder(4096, 0);
  void *ptr = (void *)1;
  /* Dispatch accepts SIZE_MAX - 300 at 256; the 3840 extra bytes overflow. */
  ck_assert_status(cmr_allocate(ref, SIZE_MAX - 300, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_SIZE_OVERFLOW);
  ck_assert_message_has("overflow");
  ck_assert_ptr_null(ptr);
  ck_assert_int_eq(rec.foreign.allocations, 0);
  rec.foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  ck_assert_status(cmr_allocate(ref, 1000, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ptr_null(ptr);
}
END_TEST

START_TEST(aligned_create_checks_and_methods) {
  cmr_aligned_resource *handle = NULL;
  cmr_resource_ref upstream = {&rec, &recorder_ops};
  ck_assert_status(cmr_aligned_resource_create(upstream, CMR_SIZE(128), CMR_SIZE(0), &handle),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("allocation_alignment");
  ck_assert_status(cmr_aligned_resource_create(upstream, CMR_SIZE(3072), CMR_SIZE(0), &handle),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("power of two");
  ck_assert_ptr_null(handle);
  ck_assert_ok(cmr_aligned_resource_create(upstream, CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, &handle));
  size_t value = 0;
  ck_assert_ok(cmr_aligned_resource_allocation_alignment(handle, &value));
  ck_assert_uint_eq(value, 256);
  ck_assert_ok(cmr_aligned_resource_alignment_threshold(handle, &value));
  ck_assert_uint_eq(value, 65536);
  /* With the default 256 everything at 256 passes through, however large. */
  void *ptr = take(cmr_aligned_resource_ref(handle), 1 << 20);
  ck_assert_ptr_eq(ptr, rec.handed[0]);
  ck_assert_uint_eq(rec.foreign.last_bytes, 1 << 20);
  give(cmr_aligned_resource_ref(handle), ptr, 1 << 20);
  ck_assert_ok(cmr_aligned_resource_destroy(handle));
}
END_TEST

START_TEST(aligned_threads) {
  test_counting counting;
  test_counting_init(&counting, BOTH_PROPERTIES);
  cmr_aligned_resource *handle = NULL;
  ck_assert_ok(cmr_aligned_resource_create(test_counting_ref(&counting), CMR_SIZE(8192), CMR_SIZE(4096), &handle));
  churn_shape shape = {1, 16384}; /* about three quarters aligned here */
  worker workers[thread_count];
  run_threads(churn, cmr_aligned_resource_ref(handle), &shape, workers);
  ck_assert_uint_eq(atomic_load(&counting.live_bytes), 0);
  ck_assert_uint_eq(atomic_load(&counting.allocations), atomic_load(&counting.deallocations));
  ck_assert_ok(cmr_aligned_resource_destroy(handle));
  test_counting_destroy(&counting);
}
END_TEST

/* ==== thread_safe ================================================================= */

START_TEST(thread_safe_forwards_exactly) {
  cmr_thread_safe_resource *handle = NULL;
  ck_assert_ok(cmr_thread_safe_resource_create(foreign_ref(), &handle));
  cmr_resource_ref ref = cmr_thread_safe_resource_ref(handle);
  cmr_stream stream = (cmr_stream)(uintptr_t)0x7000;
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, 777, stream, &ptr));
  ck_assert_uint_eq(foreign.last_bytes, 777);
  ck_assert_uint_eq(foreign.last_alignment, 256);
  ck_assert_ptr_eq(foreign.last_stream, stream);
  ck_assert_ok(cmr_deallocate(ref, ptr, 777, stream));
  ck_assert_ptr_eq(foreign.last_freed, ptr);
  foreign.fail_with = CMR_ERROR_OUT_OF_MEMORY;
  ck_assert_status(cmr_allocate(ref, 777, stream, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(foreign.allocations, 2);
  ck_assert_int_eq(foreign.deallocations, 1);
  ck_assert_ok(cmr_thread_safe_resource_destroy(handle));
}
END_TEST

START_TEST(thread_safe_equality_follows_the_upstream) {
  test_foreign other = {.properties = BOTH_PROPERTIES};
  cmr_thread_safe_resource *a = NULL, *b = NULL, *c = NULL;
  ck_assert_ok(cmr_thread_safe_resource_create(foreign_ref(), &a));
  ck_assert_ok(cmr_thread_safe_resource_create(foreign_ref(), &b));
  ck_assert_ok(cmr_thread_safe_resource_create(test_foreign_ref(&other, &test_foreign_ops), &c));
  bool equal = false;
  ck_assert_ok(cmr_ref_equal(cmr_thread_safe_resource_ref(a), cmr_thread_safe_resource_ref(b), &equal));
  ck_assert(equal);
  ck_assert_ok(cmr_ref_equal(cmr_thread_safe_resource_ref(a), cmr_thread_safe_resource_ref(c), &equal));
  ck_assert(!equal);
  void *ptr = take(cmr_thread_safe_resource_ref(a), 512);
  give(cmr_thread_safe_resource_ref(b), ptr, 512);
  ck_assert_uint_eq(foreign.outstanding, 0);
  cmr_test_destroy(a, b, c);
}
END_TEST

/* An upstream that is not thread-safe at all: plain counters, and a count of
 * calls in progress whose high-water mark shows any overlap. Under TSan an
 * unserialized call is also a reported race. */
typedef struct unsafe_upstream {
  int inside;
  int most_inside;
  unsigned long allocations;
  unsigned long deallocations;
} unsafe_upstream;

static void unsafe_enter(unsafe_upstream *u) {
  if (++u->inside > u->most_inside) u->most_inside = u->inside;
}

static void *unsafe_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  unsafe_upstream *u = arg;
  unsafe_enter(u);
  void *ptr = aligned_alloc(256, (bytes + 255) / 256 * 256);
  u->allocations++;
  u->inside--;
  return ptr;
}

static void unsafe_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)bytes, (void)stream;
  unsafe_upstream *u = arg;
  unsafe_enter(u);
  free(ptr);
  u->deallocations++;
  u->inside--;
}

START_TEST(thread_safe_serializes_every_call) {
  unsafe_upstream u = {0};
  cmr_callback_resource *upstream = NULL;
  ck_assert_ok(cmr_callback_resource_create(unsafe_allocate, unsafe_deallocate, &u, &u, BOTH_PROPERTIES, &upstream));
  cmr_thread_safe_resource *handle = NULL;
  ck_assert_ok(cmr_thread_safe_resource_create(cmr_callback_resource_ref(upstream), &handle));
  size_t bytes, allocations;
  churn_on_every_thread(cmr_thread_safe_resource_ref(handle), (churn_shape){1, 8192}, &bytes, &allocations);
  ck_assert_int_eq(u.most_inside, 1);
  ck_assert_uint_eq(u.allocations, allocations);
  ck_assert_uint_eq(u.deallocations, allocations);
  cmr_test_destroy(handle, upstream);
}
END_TEST

/* ==== every adaptor: the upstream outlives its owner's destroy ==================== */

typedef cmr_status (*make_adaptor_fn)(cmr_resource_ref upstream, cmr_resource_ref *out);

static cmr_status make_statistics_ref(cmr_resource_ref upstream, cmr_resource_ref *out) {
  cmr_statistics_resource *h = NULL;
  cmr_status status = cmr_statistics_resource_create(upstream, &h);
  *out = cmr_statistics_resource_ref(h);
  return status;
}

static cmr_status make_limiting_ref(cmr_resource_ref upstream, cmr_resource_ref *out) {
  cmr_limiting_resource *h = NULL;
  cmr_status status = cmr_limiting_resource_create(upstream, 1 << 20, CMR_SIZE_DEFAULT, &h);
  *out = cmr_limiting_resource_ref(h);
  return status;
}

static cmr_status make_aligned_ref(cmr_resource_ref upstream, cmr_resource_ref *out) {
  cmr_aligned_resource *h = NULL;
  cmr_status status = cmr_aligned_resource_create(upstream, CMR_SIZE(4096), CMR_SIZE(0), &h);
  *out = cmr_aligned_resource_ref(h);
  return status;
}

static cmr_status make_thread_safe_ref(cmr_resource_ref upstream, cmr_resource_ref *out) {
  cmr_thread_safe_resource *h = NULL;
  cmr_status status = cmr_thread_safe_resource_create(upstream, &h);
  *out = cmr_thread_safe_resource_ref(h);
  return status;
}

static const make_adaptor_fn adaptors[] = {make_statistics_ref, make_limiting_ref, make_aligned_ref,
                                           make_thread_safe_ref};

START_TEST(adaptor_retains_its_upstream) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_resource_ref adaptor;
  ck_assert_ok(adaptors[_i](cmr_system_resource_ref(system), &adaptor));
  ck_assert_ok(cmr_system_resource_destroy(system));
  /* The caller's share is gone; the adaptor's keeps the system resource. */
  void *ptr = take(adaptor, 5000);
  memset(ptr, 1, 5000);
  unsigned properties = 0;
  ck_assert_ok(cmr_ref_properties(adaptor, &properties));
  ck_assert_uint_ne(properties & CMR_PROPERTY_HOST_ACCESSIBLE, 0);
  give(adaptor, ptr, 5000);
  ck_assert_ok(cmr_ref_release(adaptor));
  /* With the adaptor's share gone too, the upstream's handle is dead. */
  ck_assert_status(cmr_system_resource_destroy(system), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(adaptor_counts_its_share_of_a_counted_upstream) {
  cmr_resource_ref adaptor;
  ck_assert_ok(adaptors[_i](test_foreign_ref(&foreign, &test_foreign_counted_ops), &adaptor));
  ck_assert_int_eq(foreign.retains, 1);
  ck_assert_int_eq(foreign.releases, 0);
  ck_assert_ok(cmr_ref_release(adaptor));
  ck_assert_int_eq(foreign.releases, 1);
}
END_TEST

/* ==== stacks ===================================================================== */

/* statistics -> limiting -> pool -> system: the statistics see what the
 * caller asked, the limiter refuses past 64 KiB (so the statistics never see
 * that request), the pool carves its chunk, and destroying every handle but
 * the top leaves a working stack. */
START_TEST(stack_statistics_limiting_pool_system) {
  cmr_system_resource *system = cmr_test_system_resource();
  cmr_pool_resource *pool = cmr_test_pool(cmr_system_resource_ref(system), 1 << 20);
  cmr_limiting_resource *limiting = make_limiting(cmr_pool_resource_ref(pool), 65536, CMR_SIZE_DEFAULT);
  cmr_statistics_resource *statistics = make_statistics(cmr_limiting_resource_ref(limiting));
  cmr_test_destroy(limiting, pool, system);
  cmr_resource_ref ref = cmr_statistics_resource_ref(statistics);

  void *a = take(ref, 30000); /* limiting counts 30208 */
  void *b = take(ref, 30000); /* 60416 */
  void *c = (void *)1;
  ck_assert_status(cmr_allocate(ref, 5200, CMR_DEFAULT_STREAM, &c), CMR_ERROR_OUT_OF_MEMORY); /* +5376 > 65536 */
  ck_assert_message_has("limiting");
  ck_assert_counters(statistics, 60000, 60000, 60000, 2, 2, 2);
  c = take(ref, 5000); /* 60416 + 5120 = 65536: exactly the limit */
  memset(a, 1, 30000);
  memset(b, 2, 30000);
  memset(c, 3, 5000);
  ck_assert_counters(statistics, 65000, 65000, 65000, 3, 3, 3);
  give(ref, a, 30000);
  give(ref, b, 30000);
  give(ref, c, 5000);
  ck_assert_counters(statistics, 0, 65000, 65000, 0, 3, 3);
  ck_assert_ok(cmr_statistics_resource_destroy(statistics));
}
END_TEST

/* thread_safe over a non-thread-safe upstream, aligned and statistics over
 * it, all from threads at once. */
START_TEST(stack_of_adaptors_from_threads) {
  unsafe_upstream u = {0};
  cmr_callback_resource *upstream = NULL;
  ck_assert_ok(cmr_callback_resource_create(unsafe_allocate, unsafe_deallocate, &u, &u, BOTH_PROPERTIES, &upstream));
  cmr_thread_safe_resource *serial = NULL;
  ck_assert_ok(cmr_thread_safe_resource_create(cmr_callback_resource_ref(upstream), &serial));
  cmr_aligned_resource *aligned = NULL;
  ck_assert_ok(
      cmr_aligned_resource_create(cmr_thread_safe_resource_ref(serial), CMR_SIZE(4096), CMR_SIZE(4096), &aligned));
  cmr_statistics_resource *statistics = make_statistics(cmr_aligned_resource_ref(aligned));
  size_t bytes, allocations;
  churn_on_every_thread(cmr_statistics_resource_ref(statistics), (churn_shape){1, 8192}, &bytes, &allocations);
  counters c = read_counters(statistics);
  ck_assert_uint_eq(c.bytes_current, 0);
  ck_assert_uint_eq(c.bytes_total, bytes);
  ck_assert_uint_eq(c.allocations_current, 0);
  ck_assert_uint_eq(c.allocations_total, allocations);
  ck_assert_int_eq(u.most_inside, 1);
  ck_assert_uint_eq(u.allocations, allocations);
  ck_assert_uint_eq(u.deallocations, allocations);
  cmr_test_destroy(statistics, aligned, serial, upstream);
}
END_TEST

/* The same stacks written as text (cmr_stack_parse reads the specs' params). */
START_TEST(stack_expression_of_adaptors) {
  cmr_resource_ref ref;
  cmr_stack *stack = cmr_test_stack(
      "statistics(limiting(pool(system, initial_pool_size=1MiB), allocation_limit=64KiB, allocation_alignment=1KiB))",
      &ref);
  cmr_statistics_resource *statistics = NULL;
  ck_assert_ok(cmr_statistics_resource_from_ref(ref, &statistics));
  void *a = take(ref, 40000); /* limiting counts 40960 */
  void *b = (void *)1;
  ck_assert_status(cmr_allocate(ref, 25000, CMR_DEFAULT_STREAM, &b), CMR_ERROR_OUT_OF_MEMORY); /* 25600 */
  b = take(ref, 24000); /* 24576: 65536 exactly */
  ck_assert_counters(statistics, 64000, 64000, 64000, 2, 2, 2);
  give(ref, a, 40000);
  give(ref, b, 24000);
  cmr_test_destroy(statistics, stack);

  ck_assert_ok(
      cmr_stack_parse("thread_safe(aligned(system, allocation_alignment=4KiB, alignment_threshold=1KiB))", &stack));
  ck_assert_ok(cmr_stack_ref(stack, &ref));
  a = take(ref, 1024);
  ck_assert(is_aligned(a, 4096));
  give(ref, a, 1024);
  ck_assert_ok(cmr_stack_destroy(stack));

  cmr_test_stack_refused("limiting(system)", CMR_ERROR_INVALID_ARGUMENT, "allocation_limit");
  cmr_test_stack_refused("aligned(system, allocation_alignment=100)", CMR_ERROR_INVALID_ARGUMENT,
                         "allocation_alignment");
}
END_TEST

static void adaptors_a_cases(Suite *suite) {
  cmr_test_case(suite, "statistics", setup, NULL, statistics_counts_exactly_and_forwards,
                statistics_failed_upstream_calls_change_no_counter, statistics_push_pop_merges_as_rmm,
                statistics_deep_stack_grows, statistics_method_checks, statistics_threads_count_every_call,
                statistics_threads_push_and_pop_while_counting);

  cmr_test_case(suite, "limiting", setup, NULL, limiting_counts_rounded_and_refuses_past_the_limit,
                limiting_alignment_sets_the_rounding, limiting_upstream_failure_gives_the_count_back,
                limiting_refuses_to_free_more_than_counted, limiting_refused_upstream_free_keeps_the_count,
                limiting_create_checks, limiting_threads_never_pass_the_limit);

  cmr_test_case(suite, "aligned", aligned_setup, aligned_teardown, aligned_small_requests_pass_through,
                aligned_large_requests_are_aligned_and_given_back_exactly, aligned_caller_alignment_wins_when_larger,
                aligned_honours_more_than_its_upstream_can, forwarding_adaptors_honour_what_their_upstream_does,
                aligned_unknown_pointer_reaches_no_upstream, aligned_refused_free_can_be_retried, aligned_failures,
                aligned_create_checks_and_methods, aligned_threads);

  cmr_test_case(suite, "thread_safe", setup, NULL, thread_safe_forwards_exactly,
                thread_safe_equality_follows_the_upstream, thread_safe_serializes_every_call);

  cmr_test_loop_case(suite, "every_adaptor", setup, NULL, (int)(sizeof adaptors / sizeof *adaptors),
                     adaptor_retains_its_upstream, adaptor_counts_its_share_of_a_counted_upstream);

  cmr_test_case(suite, "stacks", NULL, NULL, stack_statistics_limiting_pool_system, stack_of_adaptors_from_threads,
                stack_expression_of_adaptors);
}

int main(void) { return cmr_test_main_suite("adaptors_a", CMR_TEST_NEEDS_DEVICE, adaptors_a_cases); }
