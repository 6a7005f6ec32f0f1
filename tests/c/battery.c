/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance battery: what every resource must do, whatever its
 * algorithm. Each case runs in its own forked process (Check's default), on
 * a fresh resource made by the checked fixture. */
#include "battery.h"

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const cmr_battery_subject *subject_info;
static const char *upstream_name;
static cmr_resource_ref upstream;
static cmr_resource_ref subject;

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t next_random(uint64_t *state) {
  /* xorshift64*: fixed seeds make every run allocate the same sizes. */
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 2685821657736338717ull;
}

static bool host_accessible(void) {
  unsigned properties = 0;
  ck_assert_int_eq(cmr_ref_properties(subject, &properties), CMR_SUCCESS);
  return (properties & CMR_PROPERTY_HOST_ACCESSIBLE) != 0;
}

static bool is_aligned(const void *ptr, size_t alignment) { return (uintptr_t)ptr % alignment == 0; }

#define ck_assert_status(call, expected)                                                                       \
  do {                                                                                                         \
    cmr_status status_ = (call);                                                                               \
    ck_assert_msg(status_ == (expected), "%s returned %s, expected %s: %s", #call, cmr_status_string(status_), \
                  cmr_status_string(expected), cmr_last_error_message());                                      \
  } while (0)

#define ck_assert_failed_with_message(call, expected)                                         \
  do {                                                                                        \
    ck_assert_status(call, expected);                                                         \
    ck_assert_msg(cmr_last_error_message()[0] != '\0', "%s failed without a message", #call); \
  } while (0)

/* Fill with a pattern derived from the block's index, and check it. */
static void fill(void *ptr, size_t bytes, unsigned seed) { memset(ptr, (int)(seed * 37u + 11u) & 0xff, bytes); }

static bool holds_fill(const void *ptr, size_t bytes, unsigned seed) {
  const unsigned char *p = ptr, expected = (unsigned char)((seed * 37u + 11u) & 0xff);
  return p[0] == expected && p[bytes / 2] == expected && p[bytes - 1] == expected;
}

static bool skipped(const char *name) {
  for (const char *const *s = subject_info->skipped; s != NULL && *s != NULL; ++s) {
    if (strcmp(*s, name) == 0) return true;
  }
  return false;
}

/* ---- fixture ------------------------------------------------------------------ */

/* The largest alignment the subject honours over this upstream (0: any). */
static size_t max_alignment;

static void setup(void) {
  upstream = (cmr_resource_ref){0};
  max_alignment = subject_info->max_alignment;
  if (subject_info->make_upstream != NULL) {
    size_t upstream_max = 0;
    cmr_status status = subject_info->make_upstream(upstream_name, &upstream, &upstream_max);
    if (subject_info->max_alignment_from_upstream) max_alignment = upstream_max;
    ck_assert_msg(status == CMR_SUCCESS, "making upstream %s: %s: %s", upstream_name, cmr_status_string(status),
                  cmr_last_error_message());
  }
  cmr_status status = subject_info->make(upstream, &subject);
  ck_assert_msg(status == CMR_SUCCESS, "making %s: %s: %s", subject_info->name, cmr_status_string(status),
                cmr_last_error_message());
}

static void teardown(void) {
  cmr_ref_release(subject);
  if (upstream.ops != NULL) cmr_ref_release(upstream);
}

/* ---- cases ------------------------------------------------------------------------ */

START_TEST(case_zero_size) {
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(subject, 0, CMR_DEFAULT_STREAM, &ptr), CMR_SUCCESS);
  ck_assert_ptr_null(ptr);
  ptr = (void *)1;
  ck_assert_status(cmr_allocate_aligned(subject, 0, 4096, CMR_DEFAULT_STREAM, &ptr), CMR_SUCCESS);
  ck_assert_ptr_null(ptr);
  ck_assert_status(cmr_deallocate(subject, NULL, 0, CMR_DEFAULT_STREAM), CMR_SUCCESS);
  ck_assert_status(cmr_deallocate(subject, NULL, 128, CMR_DEFAULT_STREAM), CMR_SUCCESS);
}
END_TEST

typedef struct block {
  char *ptr;
  size_t bytes;
} block;

static int by_address(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const block *)a)->ptr, y = (uintptr_t)((const block *)b)->ptr;
  return (x > y) - (x < y);
}

START_TEST(case_random_sizes) {
  enum { count = 256 };
  block blocks[count];
  uint64_t rng = 42;
  bool writable = host_accessible();
  for (unsigned i = 0; i < count; ++i) {
    uint64_t r = next_random(&rng);
    blocks[i].bytes = 1 + (size_t)(r % ((r >> 32) % 2 ? 4096u : 1u << 20));
    ck_assert_status(cmr_allocate(subject, blocks[i].bytes, CMR_DEFAULT_STREAM, (void **)&blocks[i].ptr), CMR_SUCCESS);
    ck_assert_ptr_nonnull(blocks[i].ptr);
    ck_assert_msg(is_aligned(blocks[i].ptr, CMR_DEFAULT_ALIGNMENT), "%p is not 256-aligned", (void *)blocks[i].ptr);
    if (writable) fill(blocks[i].ptr, blocks[i].bytes, i);
  }
  if (writable) {
    for (unsigned i = 0; i < count; ++i) {
      ck_assert_msg(holds_fill(blocks[i].ptr, blocks[i].bytes, i), "block %u lost its contents", i);
    }
  }
  block sorted[count];
  memcpy(sorted, blocks, sizeof sorted);
  qsort(sorted, count, sizeof *sorted, by_address);
  for (unsigned i = 1; i < count; ++i) {
    ck_assert_msg(sorted[i - 1].ptr + sorted[i - 1].bytes <= sorted[i].ptr, "blocks at %p (+%zu) and %p overlap",
                  (void *)sorted[i - 1].ptr, sorted[i - 1].bytes, (void *)sorted[i].ptr);
  }
  for (unsigned i = count; i > 0; --i) { /* shuffle the order of frees */
    unsigned j = (unsigned)(next_random(&rng) % i);
    block t = blocks[i - 1];
    blocks[i - 1] = blocks[j];
    blocks[j] = t;
  }
  for (unsigned i = 0; i < count; ++i) {
    ck_assert_status(cmr_deallocate(subject, blocks[i].ptr, blocks[i].bytes, CMR_DEFAULT_STREAM), CMR_SUCCESS);
  }
}
END_TEST

START_TEST(case_alignments) {
  size_t limit = max_alignment != 0 ? max_alignment : (size_t)1 << 16;
  for (size_t alignment = 1; alignment <= limit; alignment <<= 1) {
    size_t sizes[] = {1, 1000, alignment + 1};
    for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
      void *ptr = NULL;
      ck_assert_status(cmr_allocate_aligned(subject, sizes[i], alignment, CMR_DEFAULT_STREAM, &ptr), CMR_SUCCESS);
      ck_assert_msg(is_aligned(ptr, alignment), "%p is not aligned to %zu", ptr, alignment);
      ck_assert_msg(is_aligned(ptr, CMR_DEFAULT_ALIGNMENT), "%p is below the default alignment", ptr);
      ck_assert_status(cmr_deallocate_aligned(subject, ptr, sizes[i], alignment, CMR_DEFAULT_STREAM), CMR_SUCCESS);
    }
  }
  void *ptr = (void *)1;
  if (max_alignment != 0) {
    ck_assert_failed_with_message(cmr_allocate_aligned(subject, 64, max_alignment * 2, CMR_DEFAULT_STREAM, &ptr),
                                  CMR_ERROR_UNSUPPORTED_ALIGNMENT);
    ck_assert_ptr_null(ptr);
  }
  size_t bad[] = {0, 3, 48, 257, 4097};
  for (unsigned i = 0; i < sizeof bad / sizeof *bad; ++i) {
    ck_assert_failed_with_message(cmr_allocate_aligned(subject, 64, bad[i], CMR_DEFAULT_STREAM, &ptr),
                                  CMR_ERROR_BAD_ALIGNMENT);
  }
}
END_TEST

static cmr_status foreign_allocate(void *self, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)self, (void)bytes, (void)alignment, (void)stream;
  *out = NULL;
  return CMR_ERROR_OUT_OF_MEMORY;
}

static cmr_status foreign_deallocate(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)self, (void)ptr, (void)bytes, (void)alignment, (void)stream;
  return CMR_SUCCESS;
}

cmr_resource_ref cmr_battery_foreign_ref(void) {
  static const cmr_resource_ops foreign_ops = {
      .type_name = "foreign", .allocate = foreign_allocate, .deallocate = foreign_deallocate};
  static int foreign_state;
  return (cmr_resource_ref){&foreign_state, &foreign_ops};
}

START_TEST(case_equality) {
  bool equal = false;
  ck_assert_status(cmr_ref_equal(subject, subject, &equal), CMR_SUCCESS);
  ck_assert(equal);
  cmr_resource_ref copy = subject;
  ck_assert_status(cmr_ref_equal(subject, copy, &equal), CMR_SUCCESS);
  ck_assert(equal);

  ck_assert_status(cmr_ref_equal(subject, cmr_battery_foreign_ref(), &equal), CMR_SUCCESS);
  ck_assert(!equal);
  if (upstream.ops != NULL) {
    ck_assert_status(cmr_ref_equal(subject, upstream, &equal), CMR_SUCCESS);
    ck_assert_msg(!equal, "a resource compares equal to its upstream");
  }

  /* A second resource made the same way: equal unless equality is identity,
   * and then memory from one may be freed through the other. */
  cmr_resource_ref twin;
  ck_assert_status(subject_info->make(upstream, &twin), CMR_SUCCESS);
  ck_assert_status(cmr_ref_equal(subject, twin, &equal), CMR_SUCCESS);
  ck_assert_msg(equal == !subject_info->equal_by_identity, "a second %s resource compares %s", subject_info->name,
                equal ? "equal" : "unequal");
  if (equal) {
    void *ptr;
    ck_assert_status(cmr_allocate(subject, 512, CMR_DEFAULT_STREAM, &ptr), CMR_SUCCESS);
    ck_assert_status(cmr_deallocate(twin, ptr, 512, CMR_DEFAULT_STREAM), CMR_SUCCESS);
  }
  ck_assert_status(cmr_ref_release(twin), CMR_SUCCESS);
}
END_TEST

START_TEST(case_properties) {
  unsigned properties = 0;
  const unsigned all = CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE;
  ck_assert_status(cmr_ref_properties(subject, &properties), CMR_SUCCESS);
  switch (subject_info->properties_rule) {
  case CMR_BATTERY_PROPERTIES_FIXED: ck_assert_uint_eq(properties, subject_info->properties); break;
  case CMR_BATTERY_PROPERTIES_UPSTREAM: ck_assert_uint_eq(properties, cmr_battery_upstream_properties(upstream)); break;
  case CMR_BATTERY_PROPERTIES_DYNAMIC:
    ck_assert_uint_ne(properties, 0);
    ck_assert_uint_eq(properties & ~all, 0);
    break;
  }
  ck_assert_status(cmr_ref_require_properties(subject, properties), CMR_SUCCESS);
  if ((properties & all) != all) {
    ck_assert_failed_with_message(cmr_ref_require_properties(subject, all), CMR_ERROR_PROPERTY_MISSING);
  }
  const char *name = NULL;
  ck_assert_status(cmr_ref_type_name(subject, &name), CMR_SUCCESS);
  ck_assert_str_eq(name, subject_info->name);
}
END_TEST

START_TEST(case_out_of_memory) {
  void *ptr = (void *)1;
  ck_assert_failed_with_message(cmr_allocate(subject, (size_t)1 << 62, CMR_DEFAULT_STREAM, &ptr),
                                CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ptr_null(ptr);
  /* Still usable afterwards. */
  ck_assert_status(cmr_allocate(subject, 4096, CMR_DEFAULT_STREAM, &ptr), CMR_SUCCESS);
  ck_assert_status(cmr_deallocate(subject, ptr, 4096, CMR_DEFAULT_STREAM), CMR_SUCCESS);
}
END_TEST

START_TEST(case_sync_pair) {
  size_t alignment = max_alignment == CMR_DEFAULT_ALIGNMENT ? CMR_DEFAULT_ALIGNMENT : 512;
  void *ptr = NULL;
  ck_assert_status(cmr_allocate_sync(subject, 10000, alignment, &ptr), CMR_SUCCESS);
  ck_assert(is_aligned(ptr, alignment));
  if (host_accessible()) {
    fill(ptr, 10000, 3);
    ck_assert(holds_fill(ptr, 10000, 3));
  }
  ck_assert_status(cmr_deallocate_sync(subject, ptr, 10000, alignment), CMR_SUCCESS);
}
END_TEST

START_TEST(case_streams) {
  cmr_stream a, b;
  ck_assert_status(cmr_stream_create(&a), CMR_SUCCESS);
  ck_assert_status(cmr_stream_create(&b), CMR_SUCCESS);
  void *ptr;
  /* Freed on the stream it was allocated on, then reused there. */
  ck_assert_status(cmr_allocate(subject, 1 << 16, a, &ptr), CMR_SUCCESS);
  ck_assert_status(cmr_deallocate(subject, ptr, 1 << 16, a), CMR_SUCCESS);
  ck_assert_status(cmr_allocate(subject, 1 << 16, a, &ptr), CMR_SUCCESS);
  /* Handed to another stream after the first has finished with it. */
  ck_assert_status(cmr_stream_synchronize(a), CMR_SUCCESS);
  ck_assert_status(cmr_deallocate(subject, ptr, 1 << 16, b), CMR_SUCCESS);
  ck_assert_status(cmr_allocate(subject, 300, b, &ptr), CMR_SUCCESS);
  ck_assert_status(cmr_deallocate(subject, ptr, 300, b), CMR_SUCCESS);
  ck_assert_status(cmr_stream_synchronize(b), CMR_SUCCESS);
  ck_assert_status(cmr_stream_destroy(a), CMR_SUCCESS);
  ck_assert_status(cmr_stream_destroy(b), CMR_SUCCESS);
}
END_TEST

typedef struct worker {
  unsigned index;
  bool writable;
  cmr_status failure;
  unsigned lost;
  char message[256];
} worker;

static void *churn(void *arg) {
  worker *w = arg;
  enum { live = 16, rounds = 400 };
  block held[live] = {{0}};
  uint64_t rng = 1000 + w->index;
  for (unsigned i = 0; i < rounds && w->failure == CMR_SUCCESS; ++i) {
    block *slot = &held[next_random(&rng) % live];
    if (slot->ptr != NULL) {
      if (w->writable && !holds_fill(slot->ptr, slot->bytes, w->index)) w->lost++;
      w->failure = cmr_deallocate(subject, slot->ptr, slot->bytes, CMR_DEFAULT_STREAM);
      slot->ptr = NULL;
      continue;
    }
    slot->bytes = 1 + (size_t)(next_random(&rng) % 65536);
    w->failure = cmr_allocate(subject, slot->bytes, CMR_DEFAULT_STREAM, (void **)&slot->ptr);
    if (w->failure == CMR_SUCCESS && w->writable) fill(slot->ptr, slot->bytes, w->index);
  }
  for (unsigned i = 0; i < live && w->failure == CMR_SUCCESS; ++i) {
    if (held[i].ptr != NULL) w->failure = cmr_deallocate(subject, held[i].ptr, held[i].bytes, CMR_DEFAULT_STREAM);
  }
  if (w->failure != CMR_SUCCESS) snprintf(w->message, sizeof w->message, "%s", cmr_last_error_message());
  return NULL;
}

START_TEST(case_threads) {
  enum { count = 8 };
  pthread_t threads[count];
  worker workers[count];
  bool writable = host_accessible();
  for (unsigned i = 0; i < count; ++i) {
    workers[i] = (worker){.index = i, .writable = writable};
    ck_assert_int_eq(pthread_create(&threads[i], NULL, churn, &workers[i]), 0);
  }
  for (unsigned i = 0; i < count; ++i) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  for (unsigned i = 0; i < count; ++i) {
    ck_assert_msg(workers[i].failure == CMR_SUCCESS, "thread %u: %s: %s", i, cmr_status_string(workers[i].failure),
                  workers[i].message);
    ck_assert_msg(workers[i].lost == 0, "thread %u saw %u blocks overwritten by another", i, workers[i].lost);
  }
}
END_TEST

typedef struct handoff {
  block blocks[64];
  cmr_status failure;
} handoff;

static void *free_all(void *arg) {
  handoff *h = arg;
  for (unsigned i = 0; i < 64 && h->failure == CMR_SUCCESS; ++i) {
    h->failure = cmr_deallocate(subject, h->blocks[i].ptr, h->blocks[i].bytes, CMR_DEFAULT_STREAM);
  }
  return NULL;
}

START_TEST(case_free_on_other_thread) {
  handoff h = {.failure = CMR_SUCCESS};
  for (unsigned i = 0; i < 64; ++i) {
    h.blocks[i].bytes = 256 * (i + 1);
    ck_assert_status(cmr_allocate(subject, h.blocks[i].bytes, CMR_DEFAULT_STREAM, (void **)&h.blocks[i].ptr),
                     CMR_SUCCESS);
  }
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, free_all, &h), 0);
  ck_assert_int_eq(pthread_join(thread, NULL), 0);
  ck_assert_msg(h.failure == CMR_SUCCESS, "freeing on another thread: %s", cmr_status_string(h.failure));
}
END_TEST

START_TEST(case_destroyed_handle) {
  cmr_resource_ref doomed;
  ck_assert_status(subject_info->make(upstream, &doomed), CMR_SUCCESS);
  ck_assert_status(cmr_ref_release(doomed), CMR_SUCCESS);
  void *ptr = (void *)1;
  ck_assert_failed_with_message(cmr_allocate(doomed, 256, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_ptr_null(ptr);
  ck_assert_failed_with_message(cmr_ref_validate(doomed), CMR_ERROR_DESTROYED_HANDLE);
  ck_assert_failed_with_message(cmr_ref_release(doomed), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

/* ---- bad inputs ---------------------------------------------------------------- */

/* The matrix's case running now, named in every failure. */
static const char *bad_case = "";

_Alignas(CMR_DEFAULT_ALIGNMENT) char cmr_battery_marker[CMR_DEFAULT_ALIGNMENT];

void cmr_battery_expect(cmr_status got, cmr_status expected, const char *named, const char *call) {
  const char *message = cmr_last_error_message();
  ck_assert_msg(got == expected, "%s: %s returned %s, expected %s (message: \"%s\")", bad_case, call,
                cmr_status_string(got), cmr_status_string(expected), message);
  ck_assert_msg(message[0] != '\0', "%s: %s failed with %s but left no message", bad_case, call,
                cmr_status_string(got));
  ck_assert_msg(strstr(message, named) != NULL, "%s: %s: message \"%s\" does not name \"%s\"", bad_case, call, message,
                named);
}

void cmr_battery_expect_ok(cmr_status got, const char *call) {
  ck_assert_msg(got == CMR_SUCCESS, "%s: %s returned %s: %s", bad_case, call, cmr_status_string(got),
                cmr_last_error_message());
}

void cmr_battery_expect_null(const void *out, const char *function) {
  ck_assert_msg(out == NULL, "%s: %s failed but set its out-parameter to %p", bad_case, function, out);
}

static void expect_usable(cmr_resource_ref ref, const char *which) {
  void *ptr = NULL;
  ck_assert_msg(cmr_allocate(ref, 4096, CMR_DEFAULT_STREAM, &ptr) == CMR_SUCCESS && ptr != NULL,
                "%s: the %s cannot allocate any more: %s", bad_case, which, cmr_last_error_message());
  ck_assert_msg(cmr_deallocate(ref, ptr, 4096, CMR_DEFAULT_STREAM) == CMR_SUCCESS, "%s: the %s cannot free: %s",
                bad_case, which, cmr_last_error_message());
}

void cmr_battery_expect_unchanged(cmr_resource_ref up, cmr_resource_ref of, const double *before, const double *after,
                                  size_t count) {
  for (size_t i = 0; i < count; ++i) {
    ck_assert_msg(before[i] == after[i], "%s: getter %zu of the subject moved from %g to %g", bad_case, i, before[i],
                  after[i]);
  }
  expect_usable(of, "subject");
  if (up.ops != NULL) expect_usable(up, "upstream");
}

cmr_resource_ref cmr_battery_destroyed_ref(void) {
  cmr_system_resource *doomed = NULL;
  cmr_battery_expect_ok(cmr_system_resource_create(&doomed), "cmr_system_resource_create");
  cmr_battery_expect_ok(cmr_system_resource_destroy(doomed), "cmr_system_resource_destroy");
  return cmr_system_resource_ref(doomed);
}

cmr_resource_ref cmr_battery_destroyed_subject(cmr_resource_ref over) {
  cmr_resource_ref doomed;
  cmr_battery_expect_ok(subject_info->make(over, &doomed), "making a second subject");
  cmr_battery_expect_ok(cmr_ref_release(doomed), "cmr_ref_release");
  return doomed;
}

START_TEST(case_typed_bad_input) {
  const cmr_battery_bad_input *input = &subject_info->bad_inputs[_i];
  bad_case = input->name;
  input->run(upstream, subject);
}
END_TEST

/* A refusal of the dispatch names the entry point; one of the resource
 * (`resource` not NULL) is the resource's own message, "<name>: ...". */
static void expect_refused_by(cmr_status got, cmr_status expected, const char *entry, const char *resource,
                              const char *call) {
  cmr_battery_expect(got, expected, resource != NULL ? resource : entry, call);
  if (resource == NULL) return;
  const char *message = cmr_last_error_message();
  size_t length = strlen(resource);
  ck_assert_msg(strncmp(message, resource, length) == 0 && message[length] == ':',
                "%s: %s: message \"%s\" is not the %s resource's own", bad_case, call, message, resource);
}

#define EXPECT_REFUSED(call, expected, entry, resource) \
  (cmr_clear_last_error(), expect_refused_by((call), (expected), (entry), (resource), #call))

/* Each allocate entry point refuses what it is given in the same way;
 * `null_out` passes a NULL out-parameter. */
static void expect_allocates_refused(cmr_resource_ref ref, size_t bytes, size_t alignment, cmr_status expected,
                                     bool null_out, const char *resource) {
  void *ptr = cmr_battery_marker;
  void **out = null_out ? NULL : &ptr;
  if (alignment == CMR_DEFAULT_ALIGNMENT) {
    EXPECT_REFUSED(cmr_allocate(ref, bytes, CMR_DEFAULT_STREAM, out), expected, "cmr_allocate", resource);
    if (!null_out) cmr_battery_expect_null(ptr, "cmr_allocate");
  }
  ptr = cmr_battery_marker;
  EXPECT_REFUSED(cmr_allocate_aligned(ref, bytes, alignment, CMR_DEFAULT_STREAM, out), expected, "cmr_allocate_aligned",
                 resource);
  if (!null_out) cmr_battery_expect_null(ptr, "cmr_allocate_aligned");
  ptr = cmr_battery_marker;
  EXPECT_REFUSED(cmr_allocate_sync(ref, bytes, alignment, out), expected, "cmr_allocate_sync", resource);
  if (!null_out) cmr_battery_expect_null(ptr, "cmr_allocate_sync");
}

static void expect_deallocates_refused(cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment,
                                       cmr_status expected, const char *resource) {
  if (alignment == CMR_DEFAULT_ALIGNMENT) {
    EXPECT_REFUSED(cmr_deallocate(ref, ptr, bytes, CMR_DEFAULT_STREAM), expected, "cmr_deallocate", resource);
  }
  EXPECT_REFUSED(cmr_deallocate_aligned(ref, ptr, bytes, alignment, CMR_DEFAULT_STREAM), expected,
                 "cmr_deallocate_aligned", resource);
  EXPECT_REFUSED(cmr_deallocate_sync(ref, ptr, bytes, alignment), expected, "cmr_deallocate_sync", resource);
}

static const double nothing_observed[1] = {0};

START_TEST(case_ref_null_out) {
  bad_case = "ref.null_out";
  expect_allocates_refused(subject, 256, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_NULL_POINTER, true, NULL);
  cmr_battery_expect_unchanged(upstream, subject, nothing_observed, nothing_observed, 1);
}
END_TEST

START_TEST(case_ref_dead_refs) {
  bad_case = "ref.zeroed_ref";
  cmr_resource_ref zeroed = {0};
  expect_allocates_refused(zeroed, 256, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_INVALID_REF, false, NULL);
  expect_deallocates_refused(zeroed, cmr_battery_marker, 256, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_INVALID_REF, NULL);
  bad_case = "ref.destroyed_ref";
  cmr_resource_ref doomed = cmr_battery_destroyed_subject(upstream);
  expect_allocates_refused(doomed, 256, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_DESTROYED_HANDLE, false, NULL);
  expect_deallocates_refused(doomed, cmr_battery_marker, 256, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_DESTROYED_HANDLE, NULL);
  cmr_battery_expect_unchanged(upstream, subject, nothing_observed, nothing_observed, 1);
}
END_TEST

START_TEST(case_ref_bad_alignment) {
  bad_case = "ref.bad_alignment";
  const size_t bad[] = {0, 3, 48, 257, 4097, SIZE_MAX};
  for (unsigned i = 0; i < sizeof bad / sizeof *bad; ++i) {
    expect_allocates_refused(subject, 256, bad[i], CMR_ERROR_BAD_ALIGNMENT, false, NULL);
    expect_deallocates_refused(subject, cmr_battery_marker, 256, bad[i], CMR_ERROR_BAD_ALIGNMENT, NULL);
  }
  cmr_battery_expect_unchanged(upstream, subject, nothing_observed, nothing_observed, 1);
}
END_TEST

START_TEST(case_ref_unsupported_alignment) {
  bad_case = "ref.unsupported_alignment";
  if (max_alignment == 0) return; /* forwarded to an upstream that honours any */
  /* The resource refuses it, or (forwarding the alignment) its upstream. */
  const char *refuser = subject_info->max_alignment_from_upstream ? upstream_name : subject_info->name;
  expect_allocates_refused(subject, 256, max_alignment * 2, CMR_ERROR_UNSUPPORTED_ALIGNMENT, false, refuser);
  cmr_battery_expect_unchanged(upstream, subject, nothing_observed, nothing_observed, 1);
}
END_TEST

START_TEST(case_ref_size_overflow) {
  bad_case = "ref.size_overflow";
  expect_allocates_refused(subject, SIZE_MAX, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_SIZE_OVERFLOW, false, NULL);
  expect_allocates_refused(subject, SIZE_MAX - 100, 4096, CMR_ERROR_SIZE_OVERFLOW, false, NULL);
  expect_deallocates_refused(subject, cmr_battery_marker, SIZE_MAX, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_SIZE_OVERFLOW,
                             NULL);
  expect_deallocates_refused(subject, cmr_battery_marker, SIZE_MAX - 100, 4096, CMR_ERROR_SIZE_OVERFLOW, NULL);
  bad_case = "ref.zero_size_free";
  expect_deallocates_refused(subject, cmr_battery_marker, 0, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_INVALID_ARGUMENT, NULL);
  cmr_battery_expect_unchanged(upstream, subject, nothing_observed, nothing_observed, 1);
}
END_TEST

START_TEST(case_ref_unknown_pointer) {
  bad_case = "ref.unknown_pointer";
  expect_deallocates_refused(subject, cmr_battery_marker, 256, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_UNKNOWN_POINTER,
                             subject_info->name);
  cmr_battery_expect_unchanged(upstream, subject, nothing_observed, nothing_observed, 1);
}
END_TEST

START_TEST(case_ref_wrong_size) {
  bad_case = "ref.wrong_size";
  void *ptr = NULL;
  cmr_battery_expect_ok(cmr_allocate(subject, 1000, CMR_DEFAULT_STREAM, &ptr), "cmr_allocate");
  expect_deallocates_refused(subject, ptr, (size_t)4 << 20, CMR_DEFAULT_ALIGNMENT, CMR_ERROR_INVALID_ARGUMENT,
                             subject_info->name);
  cmr_battery_expect_ok(cmr_deallocate(subject, ptr, 1000, CMR_DEFAULT_STREAM), "cmr_deallocate as allocated");
  cmr_battery_expect_unchanged(upstream, subject, nothing_observed, nothing_observed, 1);
}
END_TEST

/* ---- runner ---------------------------------------------------------------------- */

/* ---- the spec's expectations ([[expect]]) ----------------------------------------- */

/* The expectations' upstream: a statistics adaptor over system, so that
 * they can read what reached it (upstream.<getter>). */
static cmr_statistics_resource *counted;

static cmr_status make_counted_upstream(cmr_statistics_resource **out) {
  cmr_system_resource *system = NULL;
  cmr_status status = cmr_system_resource_create(&system);
  if (status != CMR_SUCCESS) return status;
  status = cmr_statistics_resource_create(cmr_system_resource_ref(system), out);
  cmr_system_resource_destroy(system); /* the adaptor holds its own share */
  return status;
}

static void expect_setup(void) {
  upstream = (cmr_resource_ref){0};
  counted = NULL;
  if (!subject_info->expect_upstream) return;
  cmr_status status = make_counted_upstream(&counted);
  ck_assert_msg(status == CMR_SUCCESS, "making statistics(system): %s: %s", cmr_status_string(status),
                cmr_last_error_message());
  upstream = cmr_statistics_resource_ref(counted);
}

static void expect_teardown(void) {
  if (counted != NULL) cmr_statistics_resource_destroy(counted);
}

START_TEST(case_expectation) {
  bad_case = subject_info->expectations[_i].name;
  subject_info->expectations[_i].run(upstream, counted);
}
END_TEST

void *cmr_battery_expect_block(cmr_resource_ref of, size_t bytes, size_t aligned_to, const char *where) {
  void *ptr = NULL;
  cmr_status status = cmr_allocate(of, bytes, CMR_DEFAULT_STREAM, &ptr);
  ck_assert_msg(status == CMR_SUCCESS, "%s: allocating %zu bytes returned %s: %s", where, bytes,
                cmr_status_string(status), cmr_last_error_message());
  ck_assert_msg(ptr != NULL, "%s: allocating %zu bytes gave NULL", where, bytes);
  ck_assert_msg(aligned_to == 0 || is_aligned(ptr, aligned_to), "%s: %p (%zu bytes) is not aligned to %zu", where, ptr,
                bytes, aligned_to);
  return ptr;
}

void cmr_battery_expect_refused(cmr_resource_ref of, size_t bytes, cmr_status expected, const char *where) {
  void *ptr = cmr_battery_marker;
  cmr_clear_last_error();
  cmr_status status = cmr_allocate(of, bytes, CMR_DEFAULT_STREAM, &ptr);
  ck_assert_msg(status == expected, "%s: allocating %zu bytes returned %s, the spec expects %s (message: \"%s\")",
                where, bytes, cmr_status_string(status), cmr_status_string(expected), cmr_last_error_message());
  ck_assert_msg(cmr_last_error_message()[0] != '\0', "%s: the refusal left no message", where);
  ck_assert_msg(ptr == NULL, "%s: the refused allocation set its out-parameter to %p", where, ptr);
}

void cmr_battery_expect_freed(cmr_resource_ref of, void *ptr, size_t bytes, const char *where) {
  cmr_status status = cmr_deallocate(of, ptr, bytes, CMR_DEFAULT_STREAM);
  ck_assert_msg(status == CMR_SUCCESS, "%s: freeing %p (%zu bytes) returned %s: %s", where, ptr, bytes,
                cmr_status_string(status), cmr_last_error_message());
}

/* One case per expectation, named as the spec names it. */
static Suite *expectation_suite(void) {
  Suite *suite = suite_create("expect");
  int count = 0;
  for (; subject_info->expectations[count].name != NULL; count++) {
    TCase *tcase = tcase_create(subject_info->expectations[count].name);
    tcase_add_checked_fixture(tcase, expect_setup, expect_teardown);
    tcase_set_timeout(tcase, 120);
    tcase_add_loop_test(tcase, case_expectation, count, count + 1);
    suite_add_tcase(suite, tcase);
  }
  printf("%s: %d expectations from spec/%s.toml\n", subject_info->name, count, subject_info->name);
  return suite;
}

static bool has_expectations(void) { return subject_info->expectations[0].name != NULL; }

static bool needs_gpu(void) {
  if (subject_info->needs_gpu) return true;
  if (upstream_name == NULL) return false;
  size_t length = strlen(upstream_name);
  for (const char *s = subject_info->gpu_upstreams; (s = strstr(s, upstream_name)) != NULL; s += length) {
    bool starts = s == subject_info->gpu_upstreams || s[-1] == ' ';
    if (starts && (s[length] == ' ' || s[length] == '\0')) return true;
  }
  return false;
}

/* CUDA does not survive fork(), and Check forks a process per case: the
 * runner itself must never initialise CUDA. Questions that need CUDA are
 * asked in a child of their own, which answers through its exit code. */
static bool ask_in_child(bool (*question)(void)) {
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    bool answer = question();
    fflush(stdout);
    _exit(answer ? 0 : 1);
  }
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool no_gpu_here(void) {
  int devices = 0;
  if (cmr_device_count(&devices) != CMR_ERROR_NO_DEVICE) return false;
  printf("skipped: %s%s%s needs a GPU: %s\n", subject_info->name, upstream_name ? " over " : "",
         upstream_name ? upstream_name : "", cmr_last_error_message());
  return true;
}

/* In a CUDA build, a resource the device lacks a capability for
 * (sam_headroom without pageable memory access: CMR_ERROR_UNSUPPORTED), or
 * that needs a device where there is none (CMR_ERROR_NO_DEVICE), is
 * skipped. The host build skips nothing: all its resources must be made. */
static bool subject_unsupported_here(void) {
  cmr_resource_ref made = {0}, below = {0};
  size_t below_max = 0;
  cmr_status status = CMR_SUCCESS;
  cmr_statistics_resource *expect_upstream = NULL; /* --expect: what the expectations run over */
  if (upstream_name != NULL) {
    status = subject_info->make_upstream(upstream_name, &below, &below_max);
  } else if (subject_info->expect_upstream) {
    status = make_counted_upstream(&expect_upstream);
    if (status == CMR_SUCCESS) below = cmr_statistics_resource_ref(expect_upstream);
  }
  if (status == CMR_SUCCESS) status = subject_info->make(below, &made);
  if (made.ops != NULL) cmr_ref_release(made);
  if (expect_upstream != NULL) {
    cmr_statistics_resource_destroy(expect_upstream);
  } else if (below.ops != NULL) {
    cmr_ref_release(below);
  }
  bool unsupported = cmr_built_with_cuda() && (status == CMR_ERROR_UNSUPPORTED || status == CMR_ERROR_NO_DEVICE);
  if (unsupported) printf("skipped: %s cannot be made here: %s\n", subject_info->name, cmr_last_error_message());
  return unsupported;
}

/* The CUDA build on a machine without a GPU can make no streams at all. */
static bool streams_exist(void) {
  cmr_stream stream;
  cmr_status status = cmr_stream_create(&stream);
  if (status == CMR_SUCCESS) return cmr_stream_destroy(stream) == CMR_SUCCESS;
  printf("%s: case streams left out: no stream can be made here: %s\n", subject_info->name, cmr_last_error_message());
  return false;
}

static TCase *fixture_case(const char *name) {
  TCase *tcase = tcase_create(name);
  tcase_add_checked_fixture(tcase, setup, teardown);
  tcase_set_timeout(tcase, 120);
  return tcase;
}

static void add_ref_case(Suite *suite, const char *name, const TTest *test, bool applies) {
  if (!applies) return;
  TCase *tcase = fixture_case(name);
  tcase_add_test(tcase, test);
  suite_add_tcase(suite, tcase);
}

static void add_case(Suite *suite, const char *name, const TTest *test) {
  if (skipped(name)) {
    printf("%s: case %s left out by spec/%s.toml\n", subject_info->name, name, subject_info->name);
    return;
  }
  add_ref_case(suite, name, test, true);
}

/* The bad-input matrix: the generated typed cases, one forked process
 * each, then the ref-level entry points. */
static Suite *bad_input_suite(void) {
  Suite *suite = suite_create("bad_inputs");
  int count = 0;
  while (subject_info->bad_inputs[count].name != NULL) count++;
  TCase *typed = fixture_case("typed");
  tcase_add_loop_test(typed, case_typed_bad_input, 0, count);
  suite_add_tcase(suite, typed);
  add_ref_case(suite, "ref_null_out", case_ref_null_out, true);
  add_ref_case(suite, "ref_dead_refs", case_ref_dead_refs, true);
  add_ref_case(suite, "ref_bad_alignment", case_ref_bad_alignment, true);
  add_ref_case(suite, "ref_unsupported_alignment", case_ref_unsupported_alignment,
               subject_info->max_alignment != 0 || subject_info->max_alignment_from_upstream);
  add_ref_case(suite, "ref_size_overflow", case_ref_size_overflow, true);
  add_ref_case(suite, "ref_unknown_pointer", case_ref_unknown_pointer, subject_info->rejects_unknown_pointer);
  add_ref_case(suite, "ref_wrong_size", case_ref_wrong_size, subject_info->rejects_wrong_size);
  printf("%s: %d typed bad-input cases\n", subject_info->name, count);
  return suite;
}

static Suite *battery_suite(void) {
  Suite *suite = suite_create(subject_info->name);
  add_case(suite, "zero_size", case_zero_size);
  add_case(suite, "random_sizes", case_random_sizes);
  add_case(suite, "alignments", case_alignments);
  add_case(suite, "equality", case_equality);
  add_case(suite, "properties", case_properties);
  add_case(suite, "out_of_memory", case_out_of_memory);
  add_case(suite, "sync_pair", case_sync_pair);
  if (ask_in_child(streams_exist)) add_case(suite, "streams", case_streams);
  if (subject_info->thread_safe) add_case(suite, "threads", case_threads);
  add_case(suite, "free_on_other_thread", case_free_on_other_thread);
  add_case(suite, "destroyed_handle", case_destroyed_handle);
  return suite;
}

int cmr_battery_main(const cmr_battery_subject *subject_description, int argc, char **argv) {
  subject_info = subject_description;
  bool expect = argc == 2 && strcmp(argv[1], "--expect") == 0;
  bool bad_inputs = argc > 1 && strcmp(argv[1], "--bad-inputs") == 0;
  if (bad_inputs) argc--, argv++;
  upstream_name = argc > 1 && !expect ? argv[1] : NULL;
  if (!expect && (subject_info->make_upstream != NULL) != (upstream_name != NULL)) {
    fprintf(stderr, "usage: %s [--bad-inputs]%s | --expect\n", argv[0],
            subject_info->make_upstream != NULL ? " <upstream>" : "");
    return 2;
  }
  if (expect && !has_expectations()) {
    fprintf(stderr, "%s: spec/%s.toml has no [[expect]]: nothing to run\n", argv[0], subject_info->name);
    return 2;
  }
  if (needs_gpu() && ask_in_child(no_gpu_here)) return 77;
  if (ask_in_child(subject_unsupported_here)) return 77;
  SRunner *runner = srunner_create(expect ? expectation_suite() : bad_inputs ? bad_input_suite() : battery_suite());
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

/* ---- values for conformance.args ------------------------------------------------ */

cmr_resource_ref *cmr_battery_upstream_slot(void) { return &upstream; }

unsigned cmr_battery_upstream_properties(cmr_resource_ref of) {
  unsigned properties = 0;
  return cmr_ref_properties(of, &properties) == CMR_SUCCESS ? properties : 0u;
}

void *cmr_battery_upstream_pool_handle(void) {
  cmr_cuda_async_resource *pool_owner = NULL;
  void *handle = NULL;
  if (cmr_cuda_async_resource_from_ref(upstream, &pool_owner) != CMR_SUCCESS) return NULL;
  cmr_status status = cmr_cuda_async_resource_pool_handle(pool_owner, &handle);
  cmr_cuda_async_resource_destroy(pool_owner); /* the upstream keeps the pool */
  return status == CMR_SUCCESS ? handle : NULL;
}

void *cmr_battery_forward_allocate(size_t bytes, cmr_stream stream, void *arg) {
  void *ptr = NULL;
  return cmr_allocate(*(cmr_resource_ref *)arg, bytes, stream, &ptr) == CMR_SUCCESS ? ptr : NULL;
}

void cmr_battery_forward_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  cmr_deallocate(*(cmr_resource_ref *)arg, ptr, bytes, stream);
}

bool cmr_battery_never_retry(size_t bytes, void *arg) {
  (void)bytes, (void)arg;
  return false;
}
