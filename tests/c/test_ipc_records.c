/* SPDX-License-Identifier: Apache-2.0 */
/* Export records (runtime/src/resource_api/ipc_records.h), without a
 * device: a table records and forgets pointers, moves a slot's generation
 * on when it is reused, grows past its first capacity, and answers each
 * check with its status and message; a second process reads the table
 * through the descriptor passed to it and sees a free and the pool's
 * destruction; what is not a table is refused. */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmr/ipc.h>

#include "ipc_records.h"
#include "test_util.h"

static const char what[] = "test";

/* The pointer of export `i`: addresses handed out are at least 256-aligned. */
static const void *pointer(uintptr_t i) { return (const void *)((i + 1) * 256); }

static cmr_ipc_records records;
static int shared = -1; /* an importer's descriptor of `records` */

static void make_records(void) {
  memset(&records, 0, sizeof records);
  ck_assert_ok(cmr_ipc_records_init(&records, "test"));
  ck_assert_ok(cmr_ipc_records_share(&records, &shared));
}

static void drop_records(void) {
  cmr_ipc_records_fini(&records);
  close(shared);
}

static cmr_ipc_record record_of(uintptr_t i) {
  cmr_ipc_record record;
  ck_assert_ok(cmr_ipc_records_record(&records, pointer(i), &record));
  return record;
}

static void assert_live(const cmr_ipc_record *record) {
  ck_assert_ok(cmr_ipc_records_check_export(shared, record, what));
}

/* The check of `record` is CMR_ERROR_IPC_GONE, its message containing `why`. */
static void assert_gone(const cmr_ipc_record *record, const char *why) {
  ck_assert_status(cmr_ipc_records_check_export(shared, record, what), CMR_ERROR_IPC_GONE);
  ck_assert_message_has(why);
}

START_TEST(an_export_is_live_until_its_pointer_is_forgotten) {
  ck_assert(cmr_ipc_records_made(&records));
  const cmr_ipc_record first = record_of(0), again = record_of(0), other = record_of(1);
  ck_assert_uint_eq(first.slot, again.slot);
  ck_assert_uint_eq(first.generation, again.generation); /* re-exporting a live pointer: the same record */
  ck_assert_uint_eq(first.token, other.token);
  ck_assert_uint_ne(first.slot, other.slot);
  assert_live(&first);
  assert_live(&other);
  cmr_ipc_records_forget(&records, pointer(0));
  assert_gone(&first, "the exporter freed the allocation (its record, slot 0, is free)");
  assert_live(&other);
}
END_TEST

START_TEST(a_reused_slot_moves_to_its_next_generation) {
  const cmr_ipc_record first = record_of(0);
  cmr_ipc_records_forget(&records, pointer(0));
  const cmr_ipc_record second = record_of(7); /* takes the forgotten slot */
  ck_assert_uint_eq(second.slot, first.slot);
  ck_assert_uint_eq(second.generation, first.generation + 1);
  assert_gone(&first, "now records a later export: generation 1, the descriptor's 0");
  assert_live(&second);
}
END_TEST

START_TEST(forgetting_what_was_never_recorded_changes_nothing) {
  cmr_ipc_records_forget(&records, pointer(3)); /* before any record: the one load */
  const cmr_ipc_record record = record_of(0);
  cmr_ipc_records_forget(&records, pointer(3));
  assert_live(&record);
  cmr_ipc_records_forget(&records, pointer(0));
  cmr_ipc_records_forget(&records, pointer(0)); /* twice: the second finds nothing */
  const cmr_ipc_record next = record_of(0);
  ck_assert_uint_eq(next.generation, record.generation + 1);
}
END_TEST

START_TEST(the_table_grows_past_its_first_capacity) {
  enum { count = 3000 }; /* a 4 KiB file holds 504 slots: three growths */
  static cmr_ipc_record recorded[count];
  for (uintptr_t i = 0; i < count; i++) recorded[i] = record_of(i);
  ck_assert_uint_eq(recorded[count - 1].slot, count - 1);
  for (uintptr_t i = 0; i < count; i += 97) assert_live(&recorded[i]);
  assert_live(&recorded[count - 1]);
  for (uintptr_t i = 0; i < count; i += 2) cmr_ipc_records_forget(&records, pointer(i));
  assert_gone(&recorded[0], "is free");
  assert_gone(&recorded[count - 2], "is free");
  assert_live(&recorded[count - 1]);
}
END_TEST

START_TEST(a_destroyed_pool_refuses_every_descriptor) {
  const cmr_ipc_record record = record_of(0);
  cmr_ipc_records_fini(&records);
  ck_assert(!cmr_ipc_records_made(&records));
  assert_gone(&record, "the exporter destroyed the pool");
  cmr_ipc_records_fini(&records); /* the teardown's: a table no longer made is left alone */
}
END_TEST

START_TEST(a_record_of_another_table_is_refused) {
  cmr_ipc_records other;
  memset(&other, 0, sizeof other);
  ck_assert_ok(cmr_ipc_records_init(&other, "other"));
  cmr_ipc_record elsewhere;
  ck_assert_ok(cmr_ipc_records_record(&other, pointer(0), &elsewhere));
  ck_assert_uint_ne(elsewhere.token, record_of(0).token);
  assert_gone(&elsewhere, "exported from another pool");
  cmr_ipc_records_fini(&other);
}
END_TEST

START_TEST(a_record_no_export_wrote_is_refused) {
  cmr_ipc_record record = record_of(0);
  record.slot = 1u << 20;
  ck_assert_status(cmr_ipc_records_check_export(shared, &record, what), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("slot 1048576 is past the 504");
  record = record_of(0);
  record.generation = 5;
  ck_assert_status(cmr_ipc_records_check_export(shared, &record, what), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("never held generation 5 live (it is at 0)");
  record.slot = 9; /* a slot no export has used yet */
  record.generation = 0;
  ck_assert_status(cmr_ipc_records_check_export(shared, &record, what), CMR_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(each_importer_gets_its_own_descriptor) {
  int another = -1;
  ck_assert_ok(cmr_ipc_records_share(&records, &another));
  ck_assert_int_ne(another, shared);
  ck_assert_int_ne(fcntl(another, F_GETFD) & FD_CLOEXEC, 0); /* never leaks into an exec */
  ck_assert_ok(cmr_ipc_records_check_file(another, what));
  close(another);
  const cmr_ipc_record record = record_of(0);
  assert_live(&record); /* the first descriptor is untouched */
}
END_TEST

/* ---- another process -------------------------------------------------------------------- */

/* The importer's side, in a forked child: receives the table and a record,
 * checks it live, says so, waits for the exporter's free, checks it gone;
 * then the same for a second record and the pool's destruction. Returns
 * the step that went wrong, 0 when none did. */
static int importer(int socket) {
  int file = -1;
  cmr_ipc_record record;
  if (cmr_ipc_receive_file_descriptor(socket, &file, &record, sizeof record) != CMR_SUCCESS) return 10;
  char step = 0;
  if (cmr_ipc_records_check_export(file, &record, what) != CMR_SUCCESS) return 11;
  if (write(socket, "l", 1) != 1 || read(socket, &step, 1) != 1) return 12; /* the exporter frees it */
  if (cmr_ipc_records_check_export(file, &record, what) != CMR_ERROR_IPC_GONE) return 13;
  if (strstr(cmr_last_error_message(), "freed the allocation") == NULL) return 14;
  if (read(socket, &record, sizeof record) != (ssize_t)sizeof record) return 15;
  if (cmr_ipc_records_check_export(file, &record, what) != CMR_SUCCESS) return 16;
  if (write(socket, "l", 1) != 1 || read(socket, &step, 1) != 1) return 17; /* the exporter destroys its pool */
  if (cmr_ipc_records_check_export(file, &record, what) != CMR_ERROR_IPC_GONE) return 18;
  if (strstr(cmr_last_error_message(), "destroyed the pool") == NULL) return 19;
  close(file);
  return 0;
}

/* The exporter's answer to the importer's "l" (live): `then`, done. */
static void after_importer_saw_it_live(int socket, void (*then)(void)) {
  char seen = 0;
  ck_assert_int_eq(read(socket, &seen, 1), 1);
  ck_assert_int_eq(seen, 'l');
  then();
  ck_assert_int_eq(write(socket, "d", 1), 1);
}

static void forget_first(void) { cmr_ipc_records_forget(&records, pointer(0)); }
static void destroy_pool(void) { cmr_ipc_records_fini(&records); }

START_TEST(another_process_sees_the_free_and_the_destruction_through_the_passed_descriptor) {
  int pair[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  const pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    close(pair[0]);
    _exit(importer(pair[1]));
  }
  close(pair[1]);
  const cmr_ipc_record first = record_of(0);
  ck_assert_ok(cmr_ipc_send_file_descriptor(pair[0], shared, &first, sizeof first));
  after_importer_saw_it_live(pair[0], forget_first);
  const cmr_ipc_record second = record_of(1);
  ck_assert_int_eq(write(pair[0], &second, sizeof second), (ssize_t)sizeof second);
  after_importer_saw_it_live(pair[0], destroy_pool);
  int wstatus = 0;
  ck_assert_int_eq(waitpid(child, &wstatus, 0), child);
  ck_assert(WIFEXITED(wstatus));
  ck_assert_msg(WEXITSTATUS(wstatus) == 0, "the importer failed at step %d", WEXITSTATUS(wstatus));
  close(pair[0]);
}
END_TEST

/* ---- what is not a table ------------------------------------------------------------------ */

/* check_file(file) is CMR_ERROR_INVALID_ARGUMENT, its message containing `why`. */
static void assert_not_a_table(int file, const char *why) {
  ck_assert_status(cmr_ipc_records_check_file(file, what), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has(why);
  const cmr_ipc_record record = {0, 0, 0};
  ck_assert_status(cmr_ipc_records_check_export(file, &record, what), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has(why);
}

/* A memfd of `bytes` bytes starting with `header`, sealed as a table's is when `sealed`. */
static int memfd_with(const uint64_t header[2], size_t bytes, bool sealed) {
  const int file = memfd_create("not-a-table", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ck_assert_int_ge(file, 0);
  ck_assert_int_eq(ftruncate(file, (off_t)bytes), 0);
  if (bytes >= 2 * sizeof *header) ck_assert_int_eq(pwrite(file, header, 2 * sizeof *header, 0), 16);
  if (sealed) ck_assert_int_eq(fcntl(file, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  return file;
}

START_TEST(what_is_not_a_table_is_refused) {
  assert_not_a_table(-1, "records_file_descriptor -1 is not open");
  int pipe_ends[2];
  ck_assert_int_eq(pipe(pipe_ends), 0);
  assert_not_a_table(pipe_ends[0], "not a regular file");
  close(pipe_ends[0]);
  close(pipe_ends[1]);
  assert_not_a_table(pipe_ends[0], "is not open");
  const uint64_t good[2] = {0x636d722d72656373ull, 1}, other_magic[2] = {42, 1}, other_version[2] = {good[0], 2};
  const struct {
    const uint64_t *header;
    size_t bytes;
    bool sealed;
    const char *why;
  } cases[] = {
      {good, 4096, false, "a file that may shrink"},
      {good, 32, true, "shorter than its header"},
      {other_magic, 4096, true, "another magic"},
      {other_version, 4096, true, "another version"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const int file = memfd_with(cases[i].header, cases[i].bytes, cases[i].sealed);
    assert_not_a_table(file, cases[i].why);
    close(file);
  }
  const int table = memfd_with(good, 4096, true); /* a header as the exporter writes it */
  ck_assert_ok(cmr_ipc_records_check_file(table, what));
  close(table);
}
END_TEST

#if !CMR_WITH_CUDA
START_TEST(the_host_build_checks_the_records_then_refuses_the_pool) {
  int pipe_ends[2];
  ck_assert_int_eq(pipe(pipe_ends), 0);
  cmr_ipc_pool *pool = (cmr_ipc_pool *)&pool;
  ck_assert_status(cmr_ipc_import_pool_with_records(pipe_ends[0], shared, &pool), CMR_ERROR_UNSUPPORTED);
  ck_assert_message_has("host build");
  ck_assert_ptr_null(pool);
  close(pipe_ends[0]);
  close(pipe_ends[1]);
}
END_TEST
#endif

static void ipc_records_cases(Suite *suite) {
  cmr_test_case(suite, "exporter", make_records, drop_records, an_export_is_live_until_its_pointer_is_forgotten,
                a_reused_slot_moves_to_its_next_generation, forgetting_what_was_never_recorded_changes_nothing,
                the_table_grows_past_its_first_capacity, a_destroyed_pool_refuses_every_descriptor,
                a_record_of_another_table_is_refused, a_record_no_export_wrote_is_refused,
                each_importer_gets_its_own_descriptor);
  cmr_test_case(suite, "importer", make_records, drop_records,
                another_process_sees_the_free_and_the_destruction_through_the_passed_descriptor,
                what_is_not_a_table_is_refused);
#if !CMR_WITH_CUDA
  cmr_test_case(suite, "host", make_records, drop_records, the_host_build_checks_the_records_then_refuses_the_pool);
#endif
}

int main(void) { return cmr_test_main_suite("ipc_records", CMR_TEST_ANY_MACHINE, ipc_records_cases); }
