/* SPDX-License-Identifier: Apache-2.0 */
/* Bad frees through every resource stack shape: a foreign heap pointer, a
 * static one, an interior one, a double free and a wrong size (larger and
 * smaller) are each refused with their own status, nothing reaches the
 * leaf's free (a counting callback leaf sees no call), the counters of the
 * adaptors that keep them stay as they were, and the right free afterwards
 * still succeeds. The adaptors and suballocators come from the stack
 * table, so a new resource over an upstream is tested without a change
 * here; each is put over system and over the counting callback. Run under
 * ASan and valgrind, a refused free that still reached free() shows. */
#include <stdio.h>
#include <stdlib.h>

#include "stack_table.h"
#include "test_util.h"

/* ---- the counting leaf ---------------------------------------------------------- */

typedef struct leaf_log {
  size_t allocations;
  size_t deallocations;
  size_t outstanding;
} leaf_log;

static leaf_log counted;

static void *counted_allocate(size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  leaf_log *log = arg;
  void *ptr = NULL;
  if (posix_memalign(&ptr, 256, bytes) != 0) return NULL;
  log->allocations++;
  log->outstanding += bytes;
  return ptr;
}

static void counted_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  (void)stream;
  leaf_log *log = arg;
  free(ptr);
  log->deallocations++;
  log->outstanding -= bytes;
}

typedef enum leaf_kind { LEAF_SYSTEM, LEAF_CALLBACK, LEAF_KINDS } leaf_kind;
static const char *const leaf_names[LEAF_KINDS] = {"system", "callback"};

/* A new share of a leaf of `kind`; the caller drops it with cmr_ref_release. */
static cmr_resource_ref make_leaf(leaf_kind kind) {
  if (kind == LEAF_SYSTEM) {
    cmr_system_resource *system = NULL;
    ck_assert_ok(cmr_system_resource_create(&system));
    return cmr_system_resource_ref(system);
  }
  cmr_callback_resource *callback = NULL;
  ck_assert_ok(cmr_callback_resource_create(counted_allocate, counted_deallocate, &counted, &counted,
                                            CMR_PROPERTY_HOST_ACCESSIBLE | CMR_PROPERTY_DEVICE_ACCESSIBLE, &callback));
  return cmr_callback_resource_ref(callback);
}

/* ---- the checks ------------------------------------------------------------------- */

/* What a stack's counters read (0 where it keeps none); must not change on a refused free. */
typedef size_t (*counter_fn)(void *handle);

typedef struct bad_free_case {
  const char *stack; /* for messages */
  cmr_resource_ref ref;
  size_t bytes;  /* what each allocation asks */
  size_t larger; /* a wrong size above it, and what freeing with it returns */
  cmr_status larger_status;
  size_t smaller; /* and below */
  cmr_status smaller_status;
  /* The larger size goes to a resource that may know the pointer as the
   * start of its own allocation of another size (a bin's chunk): then it is
   * a wrong size there, not an unknown pointer. */
  bool larger_may_be_wrong_size;
  counter_fn counter;
  void *counter_handle;
} bad_free_case;

static _Alignas(4096) char static_block[1 << 20];

static size_t read_counter(const bad_free_case *c) { return c->counter == NULL ? 0 : c->counter(c->counter_handle); }

static void expect_refused_as(const bad_free_case *c, void *ptr, size_t bytes, cmr_status expected, cmr_status also,
                              const char *what) {
  leaf_log before = counted;
  size_t counter = read_counter(c);
  cmr_clear_last_error();
  cmr_status status = cmr_deallocate(c->ref, ptr, bytes, CMR_DEFAULT_STREAM);
  ck_assert_msg(status == expected || status == also,
                "%s: %s (%p, %zu bytes) returned %s, expected %s (message: \"%s\")", c->stack, what, ptr, bytes,
                cmr_status_string(status), cmr_status_string(expected), cmr_last_error_message());
  ck_assert_msg(cmr_last_error_message()[0] != '\0', "%s: %s left no message", c->stack, what);
  ck_assert_msg(counted.deallocations == before.deallocations && counted.outstanding == before.outstanding,
                "%s: %s reached the leaf's deallocate", c->stack, what);
  ck_assert_msg(read_counter(c) == counter, "%s: %s changed the counters (%zu, then %zu)", c->stack, what, counter,
                read_counter(c));
}

static void expect_refused(const bad_free_case *c, void *ptr, size_t bytes, cmr_status expected, const char *what) {
  expect_refused_as(c, ptr, bytes, expected, expected, what);
}

static void *allocate(const bad_free_case *c) {
  void *ptr = NULL;
  cmr_status status = cmr_allocate(c->ref, c->bytes, CMR_DEFAULT_STREAM, &ptr);
  ck_assert_msg(status == CMR_SUCCESS, "%s: allocating %zu bytes: %s", c->stack, c->bytes, cmr_last_error_message());
  return ptr;
}

static void expect_freed(const bad_free_case *c, void *ptr) {
  cmr_status status = cmr_deallocate(c->ref, ptr, c->bytes, CMR_DEFAULT_STREAM);
  ck_assert_msg(status == CMR_SUCCESS, "%s: the right free of %p after the refused ones: %s", c->stack, ptr,
                cmr_last_error_message());
}

static void check_bad_frees(const bad_free_case *c) {
  char *ptr = allocate(c);
  char *other = allocate(c);
  void *foreign = NULL;
  ck_assert_int_eq(posix_memalign(&foreign, 4096, c->bytes), 0);
  expect_refused(c, foreign, c->bytes, CMR_ERROR_UNKNOWN_POINTER, "a foreign heap pointer");
  expect_refused(c, static_block, c->bytes, CMR_ERROR_UNKNOWN_POINTER, "a static pointer");
  expect_refused(c, ptr + 256, c->bytes, CMR_ERROR_UNKNOWN_POINTER, "an interior pointer");
  expect_refused_as(c, ptr, c->larger, c->larger_status,
                    c->larger_may_be_wrong_size ? CMR_ERROR_INVALID_ARGUMENT : c->larger_status, "a larger size");
  expect_refused(c, ptr, c->smaller, c->smaller_status, "a smaller size");
  /* While `ptr` is out: a limiting adaptor refuses a free of more than it
   * counts before asking anyone (CMR_ERROR_INVALID_ARGUMENT, as documented). */
  expect_freed(c, other);
  expect_refused(c, other, c->bytes, CMR_ERROR_UNKNOWN_POINTER, "a double free");
  expect_freed(c, ptr);
  free(foreign);
  /* Still usable: a new allocation and its free. */
  expect_freed(c, allocate(c));
}

/* The usual case: 1000 bytes, wrong sizes refused as such. */
static bad_free_case plain_case(const char *stack, cmr_resource_ref ref) {
  return (bad_free_case){.stack = stack,
                         .ref = ref,
                         .bytes = 1000,
                         .larger = 100000,
                         .larger_status = CMR_ERROR_INVALID_ARGUMENT,
                         .smaller = 999,
                         .smaller_status = CMR_ERROR_INVALID_ARGUMENT};
}

/* ---- every resource over an upstream, from the stack table -------------------------------- */

/* Values for parameters without a default, and smaller ones where a
 * default would take much memory (a test stays small under valgrind). */
typedef struct param_value {
  const char *resource;
  const char *param;
  cmr_stack_value value;
} param_value;

static const param_value chosen_values[] = {
    {"limiting", "allocation_limit", {.size = {(size_t)1 << 30, true}}},
    {"failure_callback", "callback", {.function = (void (*)(void))cmr_test_never_retry}},
    {"pool", "initial_pool_size", {.size = {(size_t)1 << 20, true}}},
    {"arena", "arena_size", {.size = {(size_t)4 << 20, true}}},
    {"fixed_size", "block_size", {.size = {4096, true}}},
    {"fixed_size", "blocks_to_preallocate", {.size = {4, true}}},
    {"logging", "filename", {.string = "/dev/null"}},
};

static cmr_stack_value value_for(const cmr_stack_resource *resource, const cmr_stack_param *param) {
  for (size_t i = 0; i < sizeof chosen_values / sizeof chosen_values[0]; ++i) {
    if (strcmp(chosen_values[i].resource, resource->name) == 0 && strcmp(chosen_values[i].param, param->name) == 0) {
      return chosen_values[i].value;
    }
  }
  ck_assert_msg(param->default_text != NULL, "%s: no value for the required parameter %s: add one to chosen_values",
                resource->name, param->name);
  return param->default_value;
}

static bool over_an_upstream(const cmr_stack_resource *resource) {
  return resource->param_count > 0 && resource->params[0].type == CMR_STACK_RESOURCE;
}

/* `resource` over `upstream` with the values above; false when this build
 * does not have it. */
static bool make_over(const cmr_stack_resource *resource, cmr_resource_ref upstream, cmr_resource_ref *out) {
  cmr_stack_value values[16];
  ck_assert_uint_le(resource->param_count, 16);
  values[0].ref = upstream;
  /* Every other resource parameter (fallback's fallback) is the same upstream. */
  for (size_t i = 1; i < resource->param_count; ++i) {
    if (resource->params[i].type == CMR_STACK_RESOURCE) {
      values[i].ref = upstream;
    } else {
      values[i] = value_for(resource, &resource->params[i]);
    }
  }
  cmr_status status = resource->make(values, out);
  if (status == CMR_ERROR_UNSUPPORTED) return false;
  ck_assert_msg(status == CMR_SUCCESS, "making %s over an upstream: %s", resource->name, cmr_last_error_message());
  return true;
}

START_TEST(every_resource_over_each_leaf) {
  size_t tested = 0;
  for (size_t i = 0; i < cmr_stack_resource_count; ++i) {
    const cmr_stack_resource *resource = &cmr_stack_resources[i];
    if (!over_an_upstream(resource)) continue;
    for (int kind = 0; kind < LEAF_KINDS; ++kind) {
      cmr_resource_ref leaf = make_leaf((leaf_kind)kind);
      cmr_resource_ref top;
      if (make_over(resource, leaf, &top)) {
        char stack[64];
        snprintf(stack, sizeof stack, "%s(%s)", resource->name, leaf_names[kind]);
        bad_free_case c = plain_case(stack, top);
        check_bad_frees(&c);
        ck_assert_ok(cmr_ref_release(top));
        tested++;
      }
      ck_assert_ok(cmr_ref_release(leaf));
    }
  }
  ck_assert_uint_eq(counted.outstanding, 0);
  /* aligned binning failure_callback fixed_size limiting logging pool prefetch
   * statistics thread_safe tracking arena, each over two leaves. */
  ck_assert_uint_ge(tested, 2 * 12);
}
END_TEST

START_TEST(the_leaves) {
  for (int kind = 0; kind < LEAF_KINDS; ++kind) {
    cmr_resource_ref leaf = make_leaf((leaf_kind)kind);
    bad_free_case c = plain_case(leaf_names[kind], leaf);
    check_bad_frees(&c);
    ck_assert_ok(cmr_ref_release(leaf));
  }
  cmr_simulated_resource *simulated = NULL;
  ck_assert_ok(cmr_simulated_resource_create(CMR_SIZE_DEFAULT, &simulated));
  bad_free_case c = plain_case("simulated", cmr_simulated_resource_ref(simulated));
  check_bad_frees(&c);
  ck_assert_ok(cmr_simulated_resource_destroy(simulated));
  ck_assert_uint_eq(counted.outstanding, 0);
}
END_TEST

/* Two system resources are interchangeable: one takes back what the other
 * handed out, and neither takes it twice. */
START_TEST(system_resources_share_what_they_vouch_for) {
  cmr_resource_ref a = make_leaf(LEAF_SYSTEM), b = make_leaf(LEAF_SYSTEM);
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(a, 1000, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(b, ptr, 1000, CMR_DEFAULT_STREAM));
  ck_assert_status(cmr_deallocate(a, ptr, 1000, CMR_DEFAULT_STREAM), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_ok(cmr_ref_release(a));
  ck_assert_ok(cmr_ref_release(b));
}
END_TEST

/* ---- counters ------------------------------------------------------------------------ */

static size_t statistics_counter(void *handle) {
  size_t bytes = 0, allocations = 0, total = 0;
  ck_assert_ok(cmr_statistics_resource_bytes_current(handle, &bytes));
  ck_assert_ok(cmr_statistics_resource_allocations_current(handle, &allocations));
  ck_assert_ok(cmr_statistics_resource_bytes_total(handle, &total));
  return bytes * 1000003 + allocations * 31 + total;
}

CMR_TEST_OUT(limiting_counter, size_t, 0, cmr_limiting_resource_allocated_bytes, void *)

static size_t tracking_counter(void *handle) {
  size_t bytes = 0, count = 0;
  ck_assert_ok(cmr_tracking_resource_allocated_bytes(handle, &bytes));
  ck_assert_ok(cmr_tracking_resource_outstanding_count(handle, &count));
  return bytes * 1000003 + count;
}

START_TEST(counting_adaptors_count_only_accepted_frees) {
  for (int kind = 0; kind < LEAF_KINDS; ++kind) {
    cmr_resource_ref leaf = make_leaf((leaf_kind)kind);
    cmr_statistics_resource *statistics = NULL;
    cmr_limiting_resource *limiting = NULL;
    cmr_tracking_resource *tracking = NULL;
    ck_assert_ok(cmr_statistics_resource_create(leaf, &statistics));
    ck_assert_ok(cmr_limiting_resource_create(leaf, (size_t)1 << 30, CMR_SIZE_DEFAULT, &limiting));
    ck_assert_ok(cmr_tracking_resource_create(leaf, false, &tracking));
    bad_free_case cases[] = {plain_case("statistics", cmr_statistics_resource_ref(statistics)),
                             plain_case("limiting", cmr_limiting_resource_ref(limiting)),
                             plain_case("tracking", cmr_tracking_resource_ref(tracking))};
    cases[0].counter = statistics_counter, cases[0].counter_handle = statistics;
    cases[1].counter = limiting_counter, cases[1].counter_handle = limiting;
    cases[2].counter = tracking_counter, cases[2].counter_handle = tracking;
    for (size_t i = 0; i < 3; ++i) check_bad_frees(&cases[i]);
    ck_assert_uint_eq(limiting_counter(limiting), 0);
    ck_assert_uint_eq(tracking_counter(tracking), 0);
    size_t bytes = 1;
    ck_assert_ok(cmr_statistics_resource_bytes_current(statistics, &bytes));
    ck_assert_uint_eq(bytes, 0);
    cmr_test_destroy(statistics, limiting, tracking);
    ck_assert_ok(cmr_ref_release(leaf));
  }
  ck_assert_uint_eq(counted.outstanding, 0);
}
END_TEST

/* A stack of counting adaptors: none counts a free the bottom refuses. */
START_TEST(a_stack_of_counting_adaptors) {
  cmr_resource_ref top;
  cmr_stack *stack = cmr_test_stack(
      "statistics(limiting(tracking(logging(thread_safe(system), filename=\"/dev/null\")), allocation_limit=1GiB))",
      &top);
  bad_free_case c = plain_case("statistics(limiting(tracking(logging(thread_safe(system)))))", top);
  check_bad_frees(&c);
  ck_assert_ok(cmr_stack_destroy(stack));
}
END_TEST

/* ---- shapes with sizes of their own ------------------------------------------------------- */

/* binning with bins of 256..4096: a size that maps to another bin or to no
 * bin goes where the pointer was never handed out (unknown there); a size
 * of the same bin is the bin's wrong size. Issue 15's reproducer: 1000
 * bytes freed as 100000 went to the upstream's free(). */
START_TEST(binning_with_bins) {
  for (int kind = 0; kind < LEAF_KINDS; ++kind) {
    cmr_resource_ref leaf = make_leaf((leaf_kind)kind);
    cmr_binning_resource *binning = NULL;
    ck_assert_ok(cmr_binning_resource_create(leaf, CMR_INT(8), CMR_INT(12), &binning));
    bad_free_case c = plain_case("binning(8..12)", cmr_binning_resource_ref(binning));
    c.larger_status = CMR_ERROR_UNKNOWN_POINTER; /* no bin: the upstream */
    c.larger_may_be_wrong_size = true;
    check_bad_frees(&c);
    c.larger = 2000; /* the bin of 2048 */
    check_bad_frees(&c);
    c.bytes = 10000, c.larger = 20000, c.smaller = 9999; /* from the upstream, freed as another size of it */
    c.larger_status = CMR_ERROR_INVALID_ARGUMENT, c.larger_may_be_wrong_size = false;
    check_bad_frees(&c);
    c.smaller = 1000, c.smaller_status = CMR_ERROR_UNKNOWN_POINTER; /* to a bin */
    check_bad_frees(&c);
    ck_assert_ok(cmr_binning_resource_destroy(binning));
    ck_assert_ok(cmr_ref_release(leaf));
  }
  ck_assert_uint_eq(counted.outstanding, 0);
}
END_TEST

/* aligned at 4096 from 4096 bytes: its own entries, and the pass-through
 * sizes below the threshold (issue 15's reproducer: aligned(pool, 4096,
 * 4096), 5000 bytes freed as 100000, returned SUCCESS). */
START_TEST(aligned_over_a_threshold) {
  const char *const expressions[] = {
      "aligned(system, allocation_alignment=4096, alignment_threshold=4096)",
      "aligned(pool(system, initial_pool_size=1MiB), allocation_alignment=4096, alignment_threshold=4096)",
      ("statistics(aligned(fixed_size(system, block_size=16KiB, blocks_to_preallocate=4), "
       "allocation_alignment=4096, alignment_threshold=4096))"), /* one element: clang asks for the parentheses */
  };
  for (size_t i = 0; i < sizeof expressions / sizeof expressions[0]; ++i) {
    cmr_resource_ref top;
    cmr_stack *stack = cmr_test_stack(expressions[i], &top);
    bad_free_case c = plain_case(expressions[i], top);
    c.bytes = 5000, c.larger = 100000, c.smaller = 4999;
    check_bad_frees(&c);
    c.smaller = 100; /* below the threshold: passed through, and still refused as a wrong size */
    check_bad_frees(&c);
    ck_assert_ok(cmr_stack_destroy(stack));
  }
}
END_TEST

static void frees_cases(Suite *suite) {
  TCase *shapes = cmr_test_case(suite, "shapes", NULL, NULL, the_leaves, system_resources_share_what_they_vouch_for,
                                every_resource_over_each_leaf, counting_adaptors_count_only_accepted_frees,
                                a_stack_of_counting_adaptors, binning_with_bins, aligned_over_a_threshold);
  tcase_set_timeout(shapes, 60);
}

int main(void) { return cmr_test_main_suite("frees", CMR_TEST_ANY_MACHINE, frees_cases); }
