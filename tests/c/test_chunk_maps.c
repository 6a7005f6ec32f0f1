/* SPDX-License-Identifier: Apache-2.0 */
/* The chunk maps' invariant checks (invariants.h, issue 16 item 8): the
 * address map, the block map and the upstream chunks hold after real use,
 * the ledger and the bindings' grants take only what matches their key,
 * and each check says which invariant broke when a test breaks it on
 * purpose. The checks are called directly: a checking build's abort is
 * not what is tested. */
#include <stdint.h>
#include <stdlib.h>

#include "block_map.h"
#include "chunks.h"
#include "grants.h"
#include "ledger.h"
#include "test_util.h"

#define BASE ((char *)(uintptr_t)0x100000)

/* ---- address map ---------------------------------------------------------------- */

enum { entries = 200 };

static cmr_address_entry *filled_address_map(cmr_address_map *map) {
  cmr_address_entry *items = calloc(entries, sizeof *items);
  ck_assert_ptr_nonnull(items);
  ck_assert_ok(cmr_address_map_init(map, "test"));
  for (size_t i = 0; i < entries; ++i) {
    items[i].address = BASE + i * 256;
    cmr_address_map_insert(map, &items[i]);
  }
  const char *why = NULL;
  ck_assert_msg(cmr_address_map_valid(map, &why), "%s", why);
  return items;
}

static void ignore(cmr_address_entry *entry) { (void)entry; }

/* The entries are the test's: the map only lets go of them. */
static void drop_address_map(cmr_address_map *map, cmr_address_entry *items) {
  cmr_address_map_clear(map, ignore);
  free(items);
}

static void assert_address_map_broken(const cmr_address_map *map, const char *expected) {
  const char *why = NULL;
  ck_assert(!cmr_address_map_valid(map, &why));
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, expected) != NULL, "reason \"%s\" lacks \"%s\"", why, expected);
  why = NULL;
  ck_assert(!cmr_address_map_address_valid(map, BASE, &why)); /* small: the whole map */
  ck_assert_ptr_nonnull(why);
}

START_TEST(address_map_holds_after_inserts_and_removes) {
  cmr_address_map map;
  cmr_address_entry *items = filled_address_map(&map);
  for (size_t i = 0; i < entries; i += 2)
    ck_assert_ptr_eq(cmr_address_map_remove(&map, BASE + i * 256, NULL), &items[i]);
  ck_assert_ptr_null(cmr_address_map_remove(&map, BASE + 1, NULL));
  const char *why = NULL;
  ck_assert_msg(cmr_address_map_valid(&map, &why), "%s", why);
  ck_assert_msg(cmr_address_map_address_valid(&map, BASE, &why), "%s", why);
  ck_assert_uint_eq(map.count, entries / 2);
  drop_address_map(&map, items);
}
END_TEST

START_TEST(address_map_entry_moved_to_another_address) {
  cmr_address_map map;
  cmr_address_entry *items = filled_address_map(&map);
  /* Some address nearby hashes to another bucket. */
  const char *original = items[7].address;
  for (size_t step = 1; items[7].address == original || cmr_address_map_valid(&map, &(const char *){NULL}); ++step) {
    items[7].address = original + step * 256 * entries;
  }
  assert_address_map_broken(&map, "not in the bucket its address hashes to");
  drop_address_map(&map, items);
}
END_TEST

START_TEST(address_map_address_twice) {
  cmr_address_map map;
  cmr_address_entry *items = filled_address_map(&map);
  cmr_address_entry twin = {.address = items[3].address};
  /* In the same bucket, behind the map's back (insert would check). */
  cmr_address_entry **head = &map.buckets[0];
  for (size_t b = 0; b < map.bucket_count; ++b) {
    for (cmr_address_entry *e = map.buckets[b]; e != NULL; e = e->next) {
      if (e == &items[3]) head = &map.buckets[b];
    }
  }
  twin.next = *head;
  *head = &twin;
  map.count++;
  assert_address_map_broken(&map, "twice");
  *head = twin.next;
  map.count--;
  drop_address_map(&map, items);
}
END_TEST

START_TEST(address_map_count_off) {
  cmr_address_map map;
  cmr_address_entry *items = filled_address_map(&map);
  map.count++;
  assert_address_map_broken(&map, "count is not the number of entries");
  map.count--;
  /* A chain that loops back on itself. */
  cmr_address_entry *last = &items[11];
  while (last->next != NULL) last = last->next;
  last->next = &items[11];
  assert_address_map_broken(&map, "chain loops");
  last->next = NULL;
  size_t buckets = map.bucket_count;
  map.bucket_count = buckets - 1;
  assert_address_map_broken(&map, "power of two");
  map.bucket_count = buckets;
  drop_address_map(&map, items);
}
END_TEST

START_TEST(address_map_large_checks_the_changed_bucket) {
  /* Past 1,024 entries a change checks its bucket only: a broken entry
   * elsewhere goes unseen there, and is seen by the whole check. */
  enum { many = 1500 };
  cmr_address_entry *items = calloc(many, sizeof *items);
  ck_assert_ptr_nonnull(items);
  cmr_address_map map;
  ck_assert_ok(cmr_address_map_init(&map, "test"));
  for (size_t i = 0; i < many; ++i) {
    items[i].address = BASE + i * 256;
    cmr_address_map_insert(&map, &items[i]);
  }
  map.count++;
  const char *why = NULL;
  ck_assert(cmr_address_map_address_valid(&map, BASE, &why));
  ck_assert(!cmr_address_map_valid(&map, &why));
  ck_assert_ptr_nonnull(strstr(why, "count"));
  map.count--;
  drop_address_map(&map, items);
}
END_TEST

START_TEST(address_map_tells_tags_apart) {
  cmr_address_map map;
  ck_assert_ok(cmr_address_map_init(&map, "test"));
  int first_owner, second_owner;
  cmr_address_entry first = {.address = BASE, .tag = &first_owner};
  cmr_address_entry second = {.address = BASE, .tag = &second_owner};
  cmr_address_map_insert(&map, &first);
  cmr_address_map_insert(&map, &second);
  const char *why = NULL;
  ck_assert_msg(cmr_address_map_valid(&map, &why), "%s", why);
  ck_assert_ptr_null(cmr_address_map_remove(&map, BASE, NULL));
  ck_assert_ptr_eq(cmr_address_map_remove(&map, BASE, &first_owner), &first);
  ck_assert_ptr_null(cmr_address_map_remove(&map, BASE, &first_owner));
  ck_assert_ptr_eq(cmr_address_map_remove(&map, BASE, &second_owner), &second);
  ck_assert_uint_eq(map.count, 0);
  cmr_address_map_clear(&map, ignore);
}
END_TEST

/* ---- ledger and grants ------------------------------------------------------------ */

START_TEST(ledger_takes_only_its_tag_and_size) {
  cmr_ledger *ledger = NULL;
  ck_assert_ok(cmr_ledger_create("test", &ledger));
  int tag;
  ck_assert_ok(cmr_ledger_add(ledger, "test", BASE, &tag, 512));
  cmr_ledger_entry *taken = NULL;
  size_t recorded = 0;
  ck_assert_int_eq(cmr_ledger_take(ledger, NULL, BASE, 512, &taken, &recorded), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_int_eq(cmr_ledger_take(ledger, &tag, BASE + 256, 512, &taken, &recorded), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_int_eq(cmr_ledger_take(ledger, &tag, BASE, 256, &taken, &recorded), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_uint_eq(recorded, 512);
  ck_assert_ptr_null(taken);
  ck_assert_ok(cmr_ledger_take(ledger, &tag, BASE, 512, &taken, &recorded));
  cmr_ledger_entry *entry = taken;
  ck_assert_ptr_nonnull(entry);
  ck_assert_int_eq(cmr_ledger_take(ledger, &tag, BASE, 512, &taken, &recorded), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_ptr_null(taken);
  cmr_ledger_put_back(ledger, entry);
  ck_assert_ok(cmr_ledger_take(ledger, &tag, BASE, 512, &taken, &recorded));
  cmr_ledger_entry *spare = taken;
  cmr_ledger_discard(ledger, taken); /* kept: the next add in its shard reuses it */
  ck_assert_ok(cmr_ledger_add(ledger, "test", BASE, &tag, 1024));
  ck_assert_ok(cmr_ledger_take(ledger, &tag, BASE, 1024, &taken, &recorded));
  ck_assert_ptr_eq(taken, spare);
  cmr_ledger_discard(ledger, taken); /* destroy frees spares and entries alike */
  cmr_ledger_destroy(ledger);
}
END_TEST

/* Two owners may hand out one address (two simulated resources do): each
 * grant is taken only by its own owner, with its own size. */
START_TEST(grants_of_one_address_by_two_owners) {
  int first_owner, second_owner;
  ck_assert_ok(cmr_grant_record(&first_owner, BASE, 64));
  ck_assert_ok(cmr_grant_record(&second_owner, BASE, 128));
  cmr_grant *grant = NULL;
  size_t granted = 0;
  ck_assert_int_eq(cmr_grant_take(&first_owner, BASE, 128, &grant, &granted), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_uint_eq(granted, 64);
  ck_assert_ok(cmr_grant_take(&second_owner, BASE, 128, &grant, &granted));
  cmr_grant_put_back(grant); /* as when the free fails */
  ck_assert_ok(cmr_grant_take(&second_owner, BASE, 128, &grant, &granted));
  cmr_grant_discard(grant);
  ck_assert_int_eq(cmr_grant_take(&second_owner, BASE, 128, &grant, &granted), CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_ok(cmr_grant_take(&first_owner, BASE, 64, &grant, &granted));
  cmr_grant_discard(grant);
  ck_assert_int_eq(cmr_grant_take(&first_owner, BASE, 64, &grant, &granted), CMR_ERROR_UNKNOWN_POINTER);
}
END_TEST

/* ---- block map ------------------------------------------------------------------ */

typedef struct filled_block_map {
  cmr_block_map *map;
  cmr_block *blocks[64];
} filled_block_map;

static void fill_block_map(filled_block_map *f) {
  ck_assert_ok(cmr_block_map_create(&f->map));
  for (size_t i = 0; i < 64; ++i) {
    ck_assert_ok(cmr_block_new(BASE + i * 4096, 512, 0, &f->blocks[i]));
    cmr_block_map_insert(f->map, f->blocks[i]);
  }
  const char *why = NULL;
  ck_assert_msg(cmr_block_map_valid(f->map, &why), "%s", why);
}

static void assert_block_map_broken(cmr_block_map *map, const char *expected) {
  const char *why = NULL;
  ck_assert(!cmr_block_map_valid(map, &why));
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, expected) != NULL, "reason \"%s\" lacks \"%s\"", why, expected);
}

START_TEST(block_map_holds_after_inserts_and_removes) {
  filled_block_map f;
  fill_block_map(&f);
  for (size_t i = 0; i < 64; i += 3) {
    ck_assert_ptr_eq(cmr_block_map_remove(f.map, f.blocks[i]->address), f.blocks[i]);
    cmr_block_delete(f.blocks[i]);
  }
  const char *why = NULL;
  ck_assert_msg(cmr_block_map_valid(f.map, &why), "%s", why);
  size_t count = 0, bytes = 0;
  cmr_block_map_totals(f.map, &count, &bytes);
  ck_assert_uint_eq(count, 64 - 22);
  ck_assert_uint_eq(bytes, (64 - 22) * 512);
  cmr_block_map_destroy(f.map);
}
END_TEST

START_TEST(block_map_size_changed_behind_its_back) {
  filled_block_map f;
  fill_block_map(&f);
  f.blocks[5]->size += 256;
  assert_block_map_broken(f.map, "byte total");
  f.blocks[5]->size = 300;
  assert_block_map_broken(f.map, "multiple of 256");
  f.blocks[5]->size = 512;
  cmr_block_map_destroy(f.map);
}
END_TEST

START_TEST(block_map_block_moved) {
  filled_block_map f;
  fill_block_map(&f);
  char *address = f.blocks[9]->address;
  f.blocks[9]->address = address + 256; /* the record says one place, the map another */
  assert_block_map_broken(f.map, "another address than its own");
  f.blocks[9]->address = address;
  cmr_block_map_destroy(f.map);
}
END_TEST

/* ---- chunks --------------------------------------------------------------------- */

static void make_chunks(cmr_chunks *chunks, test_foreign *upstream, size_t count) {
  ck_assert_ok(cmr_chunks_init(chunks, "test", test_foreign_ref(upstream, &test_foreign_ops), SIZE_MAX));
  for (size_t i = 0; i < count; ++i) {
    cmr_chunk chunk;
    ck_assert_ok(cmr_chunks_grow(chunks, 4096, 4096, CMR_DEFAULT_STREAM, &chunk));
  }
  const char *why = NULL;
  ck_assert_msg(cmr_chunks_valid(chunks, &why), "%s", why);
}

static void assert_chunks_broken(const cmr_chunks *chunks, const char *expected) {
  const char *why = NULL;
  ck_assert(!cmr_chunks_valid(chunks, &why));
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, expected) != NULL, "reason \"%s\" lacks \"%s\"", why, expected);
}

START_TEST(chunks_hold_after_growing_and_giving_back) {
  test_foreign upstream = {.properties = CMR_PROPERTY_HOST_ACCESSIBLE};
  cmr_chunks chunks;
  make_chunks(&chunks, &upstream, 5);
  cmr_chunk second = chunks.items[1];
  cmr_chunks_give_back(&chunks, &second, CMR_DEFAULT_STREAM);
  const char *why = NULL;
  ck_assert_msg(cmr_chunks_valid(&chunks, &why), "%s", why);
  ck_assert_uint_eq(cmr_chunks_bytes(&chunks), 4 * 4096);
  ck_assert(cmr_chunks_hold(&chunks, (char *)chunks.items[0].address + 256, 4096 - 256, &why));
  ck_assert(!cmr_chunks_hold(&chunks, (char *)chunks.items[0].address + 256, 4096, &why));
  ck_assert_ptr_nonnull(strstr(why, "outside every chunk"));
  ck_assert(!cmr_chunks_hold(&chunks, second.address, 256, &why));
  cmr_chunks_release_all(&chunks);
  ck_assert_uint_eq(upstream.outstanding, 0);
}
END_TEST

START_TEST(chunks_broken_on_purpose) {
  test_foreign upstream = {.properties = CMR_PROPERTY_HOST_ACCESSIBLE};
  cmr_chunks chunks;
  make_chunks(&chunks, &upstream, 3);
  cmr_chunk saved = chunks.items[2];
  chunks.items[2].address = (char *)chunks.items[0].address + 1024;
  assert_chunks_broken(&chunks, "overlap");
  chunks.items[2].address = NULL;
  assert_chunks_broken(&chunks, "no address or no size");
  chunks.items[2] = saved;
  chunks.items[2].size += 256;
  assert_chunks_broken(&chunks, "not the sum");
  chunks.items[2] = saved;
  chunks.maximum = 2 * 4096;
  assert_chunks_broken(&chunks, "maximum");
  chunks.maximum = SIZE_MAX;
  size_t capacity = chunks.capacity;
  chunks.capacity = 2;
  assert_chunks_broken(&chunks, "more records than room");
  chunks.capacity = capacity;
  const char *why = NULL;
  ck_assert_msg(cmr_chunks_valid(&chunks, &why), "%s", why);
  cmr_chunks_release_all(&chunks);
  ck_assert_uint_eq(upstream.outstanding, 0);
}
END_TEST

static void chunk_maps_cases(Suite *suite) {
  cmr_test_case(suite, "core", NULL, NULL, address_map_holds_after_inserts_and_removes,
                address_map_entry_moved_to_another_address, address_map_address_twice, address_map_count_off,
                address_map_large_checks_the_changed_bucket, address_map_tells_tags_apart,
                ledger_takes_only_its_tag_and_size, grants_of_one_address_by_two_owners,
                block_map_holds_after_inserts_and_removes, block_map_size_changed_behind_its_back,
                block_map_block_moved, chunks_hold_after_growing_and_giving_back, chunks_broken_on_purpose);
}

int main(void) { return cmr_test_main_suite("chunk_maps", CMR_TEST_ANY_MACHINE, chunk_maps_cases); }
