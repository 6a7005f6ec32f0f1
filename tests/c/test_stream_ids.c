/* SPDX-License-Identifier: Apache-2.0 */
/* The made streams' id table (runtime/src/backend/stream_ids.h): found while added,
 * gone once removed, a handle reused with another id, a full table leaving
 * streams out (never giving a wrong id), and lookups racing with adds and
 * removes (run under TSan in CI). Handles are made-up aligned addresses: the
 * table never dereferences them. The table is the process's: each case
 * removes what it added, for the sanitizer runs, which do not fork per case
 * (CK_FORK=no). */
#include <pthread.h>
#include <stdint.h>

#include "stream_ids.h"
#include "test_util.h"

static cmr_stream handle(unsigned i) { return (cmr_stream)(uintptr_t)(0x7f0000000000u + 0x230u * (i + 1)); }

START_TEST(found_while_added_and_gone_once_removed) {
  uint64_t id = 0;
  ck_assert(!cmr_stream_ids_find(handle(1), &id));
  cmr_stream_ids_add(handle(1), 41);
  cmr_stream_ids_add(handle(2), 42);
  ck_assert(cmr_stream_ids_find(handle(1), &id));
  ck_assert_uint_eq(id, 41);
  ck_assert(cmr_stream_ids_find(handle(2), &id));
  ck_assert_uint_eq(id, 42);
  cmr_stream_ids_remove(handle(1));
  ck_assert(!cmr_stream_ids_find(handle(1), &id));
  ck_assert(cmr_stream_ids_find(handle(2), &id));
  ck_assert_uint_eq(id, 42);
  /* CUDA gives the handle to a new stream: its own id, not the old one. */
  cmr_stream_ids_add(handle(1), 77);
  ck_assert(cmr_stream_ids_find(handle(1), &id));
  ck_assert_uint_eq(id, 77);
  cmr_stream_ids_remove(handle(3)); /* never added: nothing changes */
  ck_assert(cmr_stream_ids_find(handle(2), &id));
  /* Stream 2 destroyed behind cmr's back (cudaStreamDestroy) and its handle
   * made again by cmr_stream_create: the new id, in the one slot. */
  cmr_stream_ids_add(handle(2), 99);
  ck_assert(cmr_stream_ids_find(handle(2), &id));
  ck_assert_uint_eq(id, 99);
  cmr_stream_ids_remove(handle(1));
  cmr_stream_ids_remove(handle(2));
  ck_assert(!cmr_stream_ids_find(handle(2), &id));
}
END_TEST

START_TEST(a_full_table_leaves_streams_out_and_reuses_removed_slots) {
  enum { streams = 3000 };
  unsigned found = 0;
  for (unsigned i = 0; i < streams; ++i) cmr_stream_ids_add(handle(i), 1000 + i);
  for (unsigned i = 0; i < streams; ++i) {
    uint64_t id = 0;
    if (!cmr_stream_ids_find(handle(i), &id)) continue;
    ck_assert_msg(id == 1000 + i, "stream %u found with id %llu", i, (unsigned long long)id);
    ++found;
  }
  ck_assert_msg(found >= 512 && found <= 1024, "%u of %u streams kept in a table of 1024", found, streams);
  for (unsigned i = 0; i < streams; ++i) cmr_stream_ids_remove(handle(i));
  for (unsigned i = 0; i < streams; ++i) {
    uint64_t id = 0;
    ck_assert_msg(!cmr_stream_ids_find(handle(i), &id), "stream %u found after its removal", i);
  }
  /* The tombstones make room again: a few new streams are all kept. */
  for (unsigned i = 0; i < 64; ++i) cmr_stream_ids_add(handle(5000 + i), i);
  for (unsigned i = 0; i < 64; ++i) {
    uint64_t id = 0;
    ck_assert(cmr_stream_ids_find(handle(5000 + i), &id));
    ck_assert_uint_eq(id, i);
  }
  for (unsigned i = 0; i < 64; ++i) cmr_stream_ids_remove(handle(5000 + i));
}
END_TEST

enum { racing_rounds = 20000 };

/* Adds and removes streams 100..163 over and over, each always with id = its number. */
static void *churn(void *arg) {
  (void)arg;
  for (unsigned round = 0; round < racing_rounds; ++round) {
    unsigned i = 100 + round % 64;
    cmr_stream_ids_add(handle(i), i);
    if (round % 3 != 0) cmr_stream_ids_remove(handle(i));
  }
  return NULL;
}

START_TEST(lookups_race_with_adds_and_removes) {
  for (unsigned i = 0; i < 8; ++i) cmr_stream_ids_add(handle(i), i);
  pthread_t writer;
  ck_assert_int_eq(pthread_create(&writer, NULL, churn, NULL), 0);
  for (unsigned round = 0; round < racing_rounds; ++round) {
    uint64_t id = 0;
    unsigned steady = round % 8, churned = 100 + round % 64;
    ck_assert(cmr_stream_ids_find(handle(steady), &id));
    ck_assert_uint_eq(id, steady);
    if (cmr_stream_ids_find(handle(churned), &id)) ck_assert_uint_eq(id, churned);
  }
  ck_assert_int_eq(pthread_join(writer, NULL), 0);
  for (unsigned i = 0; i < 8; ++i) cmr_stream_ids_remove(handle(i));
  for (unsigned i = 100; i < 164; ++i) cmr_stream_ids_remove(handle(i));
}
END_TEST

int main(void) {
  return cmr_test_main("stream_ids", found_while_added_and_gone_once_removed,
                       a_full_table_leaves_streams_out_and_reuses_removed_slots, lookups_race_with_adds_and_removes);
}
