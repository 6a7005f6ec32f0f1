/* SPDX-License-Identifier: Apache-2.0 */
/* A counting upstream for the suballocator suites: a callback resource over
 * aligned_alloc that counts calls and outstanding bytes (atomically, so
 * threads may share it) and can be told to fail. */
#ifndef CMR_TEST_COUNTING_H
#define CMR_TEST_COUNTING_H

#include <stdatomic.h>

#include "test_util.h"

typedef struct test_counting {
  _Atomic size_t allocations; /* calls that succeeded */
  _Atomic size_t deallocations;
  _Atomic size_t live_bytes; /* allocated and not yet freed */
  _Atomic size_t last_bytes; /* of the last successful allocation */
  /* Allocations that still succeed; every later one returns NULL (out of
   * memory). SIZE_MAX: never fail. */
  _Atomic size_t successes_left;
  cmr_callback_resource *handle;
} test_counting;

/* Makes the resource (failing the test if it cannot), with `properties`. */
void test_counting_init(test_counting *counting, unsigned properties);
cmr_resource_ref test_counting_ref(test_counting *counting);
void test_counting_destroy(test_counting *counting);

#define ck_assert_counts(counting, calls, bytes)                       \
  do {                                                                 \
    ck_assert_uint_eq(atomic_load(&(counting)->allocations), (calls)); \
    ck_assert_uint_eq(atomic_load(&(counting)->live_bytes), (bytes));  \
  } while (0)

#endif /* CMR_TEST_COUNTING_H */
