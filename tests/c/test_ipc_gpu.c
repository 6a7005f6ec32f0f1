/* SPDX-License-Identifier: Apache-2.0 */
/* Device memory shared between two processes (cmr/ipc.h), on a device:
 * the exporter (the test) fills a cuda_async buffer and sends its pool
 * (with its export records) and descriptor over a socketpair; the importer
 * (a forked child that had not touched CUDA) reads and checks the bytes,
 * writes its own, frees its import, and the exporter reads what the
 * importer wrote. Then each misuse with its status and no descriptor
 * leaked: a buffer the exporter freed and a pool it destroyed before the
 * import (refused by the export records, whatever the driver would have
 * answered), an import into the exporting process, a closed descriptor, a
 * pool that does not export. The runner asks about the device in a child
 * of its own, so each test's process forks before its first CUDA call.
 * Skips (77) without a device. */
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmr/ipc.h>

#include "test_util.h"

enum { bytes = 1 << 20 };

static cmr_cuda_async_resource *make_exporting_pool(void) {
  cmr_cuda_async_resource *async = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE(0), CMR_SIZE_DEFAULT,
                                              CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CMR_SIZE_DEFAULT,
                                              &async));
  return async;
}

static bool read_all(int socket, void *data, size_t size) {
  size_t have = 0;
  while (have < size) {
    ssize_t got = read(socket, (char *)data + have, size - have);
    if (got <= 0) return false;
    have += (size_t)got;
  }
  return true;
}

/* What the importer sends back before it exits: the step that failed (0:
 * all went as expected) and the status its import got. */
typedef struct importer_report {
  int step;
  cmr_status import_status;
} importer_report;

/* What the importer expects of its import: a status, and for a failure a
 * part of its message. */
typedef struct importer_expects {
  cmr_status status;
  const char *why;
} importer_expects;

/* The importer's steps after its import answered `status` as expected. */
static int importer_checks(cmr_ipc_pool **pool, cmr_device_buffer *buffer, cmr_status status, const char *why) {
  int result = 0;
  if (status == CMR_SUCCESS) {
    unsigned char *host = malloc(bytes);
    if (host == NULL) return 13;
    if (cmr_device_buffer_copy_to_host(buffer, host, bytes) != CMR_SUCCESS) result = 14;
    for (size_t i = 0; i < bytes && result == 0; i++) {
      if (host[i] != (unsigned char)(i * 13 + 1)) result = 15;
    }
    memset(host, 0xa5, bytes);
    if (result == 0 && cmr_device_buffer_copy_from(buffer, host, bytes) != CMR_SUCCESS) result = 16;
    if (result == 0 && cmr_stream_synchronize(CMR_DEFAULT_STREAM) != CMR_SUCCESS) result = 16;
    free(host);
    /* An imported buffer cannot grow. */
    if (result == 0 && cmr_device_buffer_resize(buffer, 2 * bytes, CMR_DEFAULT_STREAM) != CMR_ERROR_UNSUPPORTED) {
      result = 17;
    }
    /* The buffer keeps the import alive past the pool's handle. */
    if (result == 0 && cmr_ipc_pool_destroy(*pool) != CMR_SUCCESS) result = 18;
    *pool = NULL;
    if (result == 0 && cmr_device_buffer_destroy(buffer) != CMR_SUCCESS) result = 19;
  } else if (strstr(cmr_last_error_message(), why) == NULL) {
    result = 20;
  }
  return result;
}

/* The importer's side, in the forked child: receives the pool and says so,
 * receives the descriptor, imports, checks, and always sends its report
 * (the exporter waits for it); returns the failed step as its exit status. */
static int importer(int socket, importer_expects expected) {
  importer_report report = {0, CMR_SUCCESS};
  cmr_ipc_pool *pool = NULL;
  cmr_ipc_descriptor descriptor;
  cmr_device_buffer *buffer = NULL;
  if (cmr_ipc_receive_pool(socket, &pool) != CMR_SUCCESS) {
    report.step = 10;
  } else if (write(socket, "p", 1) != 1 || !read_all(socket, &descriptor, sizeof descriptor)) {
    report.step = 11;
  } else {
    report.import_status = cmr_ipc_import_buffer(pool, &descriptor, CMR_DEFAULT_STREAM, &buffer);
    report.step = report.import_status != expected.status
                      ? 12
                      : importer_checks(&pool, buffer, report.import_status, expected.why);
  }
  if (pool != NULL && cmr_ipc_pool_destroy(pool) != CMR_SUCCESS && report.step == 0) report.step = 21;
  if (write(socket, &report, sizeof report) != (ssize_t)sizeof report && report.step == 0) report.step = 22;
  return report.step;
}

/* Forks the importer, which expects `expected` of its import; returns
 * the exporter's end of the socket and the child in *child. */
static int start_importer(importer_expects expected, pid_t *child) {
  int pair[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  *child = fork();
  ck_assert_int_ge(*child, 0);
  if (*child == 0) {
    close(pair[0]);
    _exit(importer(pair[1], expected));
  }
  close(pair[1]);
  return pair[0];
}

/* Sends the pool of `async` and waits until the importer has imported it. */
static void send_pool(int socket, cmr_cuda_async_resource *async) {
  ck_assert_ok(cmr_ipc_send_pool(socket, async));
  char imported = 0;
  ck_assert_msg(read_all(socket, &imported, 1) && imported == 'p', "the importer did not import the pool");
}

/* The exporter's side of a case, once its first steps are done. */
typedef struct exporter {
  int socket;
  pid_t child;
  cmr_cuda_async_resource *async;
  cmr_device_buffer *buffer;
  cmr_ipc_descriptor descriptor;
} exporter;

/* Sends the importer the descriptor to import, then waits for its report. */
static void import_and_finish(const exporter *side) {
  ck_assert_int_eq(write(side->socket, &side->descriptor, sizeof side->descriptor), (ssize_t)sizeof side->descriptor);
  importer_report report = {-1, CMR_SUCCESS};
  const bool reported = read_all(side->socket, &report, sizeof report);
  int wstatus = 0;
  ck_assert_int_eq(waitpid(side->child, &wstatus, 0), side->child);
  ck_assert_msg(reported && WIFEXITED(wstatus), "the importer ended without its report (wait status %#x)", wstatus);
  ck_assert_msg(report.step == 0, "the importer failed at step %d; its import answered %s", report.step,
                cmr_status_string(report.import_status));
  ck_assert_int_eq(WEXITSTATUS(wstatus), 0);
  close(side->socket);
}

/* A buffer of the exporting pool holding the pattern the importer checks. */
static cmr_device_buffer *make_filled_buffer(cmr_cuda_async_resource *async) {
  unsigned char *host = malloc(bytes);
  ck_assert_ptr_nonnull(host);
  for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(i * 13 + 1);
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(
      cmr_device_buffer_create_copy(host, bytes, CMR_DEFAULT_STREAM, cmr_cuda_async_resource_ref(async), &buffer));
  free(host);
  ck_assert_ok(cmr_stream_synchronize(CMR_DEFAULT_STREAM)); /* written before the importer reads */
  return buffer;
}

/* The first steps: the importer forked (before this process's first CUDA
 * call) to expect `expected`, an exporting pool, a filled buffer of it,
 * the pool sent to the importer and the buffer exported. */
static exporter start_exporting(importer_expects expected) {
  exporter side = {0};
  side.socket = start_importer(expected, &side.child);
  side.async = make_exporting_pool();
  side.buffer = make_filled_buffer(side.async);
  send_pool(side.socket, side.async);
  ck_assert_ok(cmr_ipc_export_buffer(side.buffer, &side.descriptor));
  return side;
}

START_TEST(one_process_writes_the_other_reads) {
  exporter side = start_exporting((importer_expects){CMR_SUCCESS, ""});
  ck_assert_uint_eq(side.descriptor.size, bytes);
  import_and_finish(&side);
  /* What the importer wrote is in the exporter's buffer. */
  unsigned char *host = malloc(bytes);
  ck_assert_ptr_nonnull(host);
  ck_assert_ok(cmr_device_buffer_copy_to_host(side.buffer, host, bytes));
  for (size_t i = 0; i < bytes; i++) ck_assert_uint_eq(host[i], 0xa5);
  free(host);
  cmr_test_destroy(side.buffer, side.async);
}
END_TEST

/* The driver does not promise to refuse the import of a freed allocation
 * (on an H100 it did not): the export records do. The pool hands the
 * memory out again first, as it would to the exporter's next allocation. */
START_TEST(a_freed_exporter_is_reported_in_the_importer) {
  exporter side = start_exporting((importer_expects){CMR_ERROR_IPC_GONE, "freed the allocation"});
  ck_assert_ok(cmr_device_buffer_destroy(side.buffer)); /* freed before the importer maps it */
  cmr_device_buffer *reuse = make_filled_buffer(side.async);
  import_and_finish(&side);
  cmr_test_destroy(reuse, side.async);
}
END_TEST

/* The exporter destroys its pool after the importer imported it and
 * before it imports the buffer. */
START_TEST(a_destroyed_pool_is_reported_in_the_importer) {
  exporter side = start_exporting((importer_expects){CMR_ERROR_IPC_GONE, "destroyed the pool"});
  cmr_test_destroy(side.buffer, side.async); /* the buffer held the last share of the pool */
  import_and_finish(&side);
}
END_TEST

START_TEST(a_buffer_exported_twice_keeps_its_record_until_freed) {
  cmr_cuda_async_resource *async = make_exporting_pool();
  cmr_device_buffer *buffer = make_filled_buffer(async);
  cmr_ipc_descriptor first, again;
  ck_assert_ok(cmr_ipc_export_buffer(buffer, &first));
  ck_assert_ok(cmr_ipc_export_buffer(buffer, &again));
  ck_assert_uint_eq(first.records_token, again.records_token);
  ck_assert_uint_eq(first.record_slot, again.record_slot);
  ck_assert_uint_eq(first.record_generation, again.record_generation);
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  buffer = make_filled_buffer(async); /* the same address again, most likely, and the same slot surely */
  ck_assert_ok(cmr_ipc_export_buffer(buffer, &again));
  ck_assert_uint_eq(again.record_slot, first.record_slot);
  ck_assert_uint_eq(again.record_generation, first.record_generation + 1);
  cmr_test_destroy(buffer, async);
}
END_TEST

START_TEST(an_import_into_the_exporting_process_is_refused) {
  cmr_cuda_async_resource *async = make_exporting_pool();
  cmr_device_buffer *buffer = make_filled_buffer(async);
  int pair[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  /* The driver opens descriptors of its own at a process's first export:
   * one export before counting, so that the count sees only the passed one. */
  int first = -1;
  ck_assert_ok(cmr_cuda_async_resource_export_file_descriptor(async, &first));
  ck_assert_int_eq(close(first), 0);
  const int before = cmr_test_open_descriptors();
  ck_assert_ok(cmr_ipc_send_pool(pair[0], async));
  cmr_ipc_pool *pool = (cmr_ipc_pool *)&pool;
  ck_assert_status(cmr_ipc_receive_pool(pair[1], &pool), CMR_ERROR_IPC_SAME_PROCESS);
  ck_assert_message_has("sent by this process");
  ck_assert_ptr_null(pool);
  ck_assert_int_eq(cmr_test_open_descriptors(), before); /* the passed descriptor is closed on both sides */
  cmr_ipc_descriptor descriptor;
  ck_assert_ok(cmr_ipc_export_buffer(buffer, &descriptor));
  cmr_device_buffer *imported = NULL;
  ck_assert_status(cmr_ipc_import_buffer(NULL, &descriptor, CMR_DEFAULT_STREAM, &imported), CMR_ERROR_IPC_SAME_PROCESS);
  ck_assert_ptr_null(imported);
  close(pair[0]);
  close(pair[1]);
  cmr_test_destroy(buffer, async);
}
END_TEST

START_TEST(a_closed_descriptor_is_refused) {
  cmr_cuda_async_resource *async = make_exporting_pool();
  int descriptor = -1;
  ck_assert_ok(cmr_cuda_async_resource_export_file_descriptor(async, &descriptor));
  ck_assert_int_ge(descriptor, 0);
  ck_assert_int_eq(close(descriptor), 0);
  cmr_ipc_pool *pool = NULL;
  ck_assert_status(cmr_ipc_import_pool(descriptor, &pool), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("is not open");
  ck_assert_ok(cmr_cuda_async_resource_destroy(async));
}
END_TEST

START_TEST(a_pool_without_file_descriptors_exports_nothing) {
  cmr_cuda_async_resource *async = NULL;
  ck_assert_ok(cmr_cuda_async_resource_create(CMR_SIZE(0), CMR_SIZE_DEFAULT, CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE,
                                              CMR_SIZE_DEFAULT, &async));
  int descriptor = 5;
  ck_assert_status(cmr_cuda_async_resource_export_file_descriptor(async, &descriptor), CMR_ERROR_UNSUPPORTED);
  ck_assert_message_has("posix_file_descriptor");
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(cmr_device_buffer_create(4096, CMR_DEFAULT_STREAM, cmr_cuda_async_resource_ref(async), &buffer));
  cmr_ipc_descriptor exported;
  ck_assert_status(cmr_ipc_export_buffer(buffer, &exported), CMR_ERROR_UNSUPPORTED);
  ck_assert_message_has("posix_file_descriptor");
  ck_assert_status(cmr_ipc_export_records_file_descriptor(async, &descriptor), CMR_ERROR_UNSUPPORTED);
  ck_assert_message_has("posix_file_descriptor");
  ck_assert_int_eq(descriptor, -1);
  cmr_test_destroy(buffer, async);
}
END_TEST

static void ipc_gpu_cases(Suite *suite) {
  cmr_test_case(suite, "two_processes", NULL, NULL, one_process_writes_the_other_reads,
                a_freed_exporter_is_reported_in_the_importer, a_destroyed_pool_is_reported_in_the_importer);
  cmr_test_case(suite, "records", NULL, NULL, a_buffer_exported_twice_keeps_its_record_until_freed);
  cmr_test_case(suite, "misuse", NULL, NULL, an_import_into_the_exporting_process_is_refused,
                a_closed_descriptor_is_refused, a_pool_without_file_descriptors_exports_nothing);
}

int main(void) { return cmr_test_main_suite("ipc_gpu", CMR_TEST_NEEDS_DEVICE, ipc_gpu_cases); }
