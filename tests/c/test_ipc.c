/* SPDX-License-Identifier: Apache-2.0 */
/* The IPC calls that need no device (cmr/ipc.h): file descriptors passed
 * between two real processes over a socketpair (SCM_RIGHTS), every misuse
 * of the socket helpers with its status, and no descriptor leaked on any
 * path; the descriptor checks of an import, the checks of a pool's two
 * descriptors (its own and its export records') and of a pool's message;
 * and, in the host build, the refusal of the pools themselves. The export
 * records themselves are runtime.ipc_records; the two-process exchange of
 * device memory is resources.ipc_gpu. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmr/ipc.h>

#include "ipc_socket.h"
#include "test_util.h"

static void make_pair(int type, int pair[2]) { ck_assert_int_eq(socketpair(AF_UNIX, type, 0, pair), 0); }

/* A message on `end` that the receive refuses (CMR_ERROR_INVALID_ARGUMENT),
 * saying `why`, with no descriptor for the caller. */
static void receive_refused(int end, const char *why) {
  int received = 7;
  char payload[4];
  ck_assert_status(cmr_ipc_receive_file_descriptor(end, &received, payload, sizeof payload),
                   CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has(why);
  ck_assert_int_eq(received, -1);
}

/* Closes both ends of a socket pair or a pipe. */
static void close_both(const int ends[2]) {
  close(ends[0]);
  close(ends[1]);
}

START_TEST(a_descriptor_crosses_to_another_process) {
  int pair[2];
  make_pair(SOCK_STREAM, pair);
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    /* The child sends the write end of a pipe of its own and checks that
     * what the parent writes through it arrives. */
    close(pair[0]);
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) _exit(2);
    const char hello[] = "pipe";
    if (cmr_ipc_send_file_descriptor(pair[1], pipe_ends[1], hello, sizeof hello) != CMR_SUCCESS) _exit(3);
    close(pipe_ends[1]);
    char got[16] = {0};
    ssize_t n = read(pipe_ends[0], got, sizeof got);
    _exit(n == 7 && memcmp(got, "parent", 7) == 0 ? 0 : 4);
  }
  close(pair[1]);
  int received = -1;
  char payload[5] = {0};
  ck_assert_ok(cmr_ipc_receive_file_descriptor(pair[0], &received, payload, sizeof payload));
  ck_assert_str_eq(payload, "pipe");
  ck_assert_int_ge(received, 0);
  ck_assert_int_ne(fcntl(received, F_GETFD) & FD_CLOEXEC, 0); /* never leaks into an exec */
  ck_assert_int_eq(write(received, "parent", 7), 7);
  close(received);
  int wstatus = 0;
  ck_assert_int_eq(waitpid(child, &wstatus, 0), child);
  ck_assert(WIFEXITED(wstatus));
  ck_assert_int_eq(WEXITSTATUS(wstatus), 0);
  close(pair[0]);
}
END_TEST

START_TEST(a_message_without_a_descriptor_is_refused) {
  int pair[2];
  make_pair(SOCK_SEQPACKET, pair);
  ck_assert_int_eq(write(pair[1], "abcd", 4), 4);
  receive_refused(pair[0], "no file descriptor");
  close_both(pair);
}
END_TEST

START_TEST(a_message_of_another_length_is_refused_and_its_descriptor_closed) {
  int pair[2];
  make_pair(SOCK_SEQPACKET, pair);
  const int before = cmr_test_open_descriptors();
  char longer[8] = "12345678", shorter[2] = "12";
  ck_assert_ok(cmr_ipc_send_file_descriptor(pair[1], pair[1], longer, sizeof longer));
  ck_assert_ok(cmr_ipc_send_file_descriptor(pair[1], pair[1], shorter, sizeof shorter));
  receive_refused(pair[0], "more");
  receive_refused(pair[0], "fewer");
  ck_assert_int_eq(cmr_test_open_descriptors(), before);
  close_both(pair);
}
END_TEST

START_TEST(a_closed_descriptor_is_not_sent) {
  int pair[2];
  make_pair(SOCK_STREAM, pair);
  int pipe_ends[2];
  ck_assert_int_eq(pipe(pipe_ends), 0);
  close_both(pipe_ends);
  ck_assert_status(cmr_ipc_send_file_descriptor(pair[1], pipe_ends[0], "x", 1), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("not an open descriptor");
  ck_assert_status(cmr_ipc_send_file_descriptor(pair[1], -1, "x", 1), CMR_ERROR_INVALID_ARGUMENT);
  close_both(pair);
}
END_TEST

START_TEST(a_gone_peer_is_an_io_error) {
  int pair[2];
  make_pair(SOCK_STREAM, pair);
  close(pair[1]);
  int received = 7;
  char payload[4];
  ck_assert_status(cmr_ipc_receive_file_descriptor(pair[0], &received, payload, sizeof payload), CMR_ERROR_IO);
  ck_assert_message_has("closed");
  ck_assert_status(cmr_ipc_send_file_descriptor(pair[0], pair[0], "x", 1), CMR_ERROR_IO);
  ck_assert_message_has("peer is gone");
  close(pair[0]);
}
END_TEST

START_TEST(bad_arguments_of_the_socket_helpers) {
  int pair[2];
  make_pair(SOCK_STREAM, pair);
  int received;
  char payload[4];
  ck_assert_status(cmr_ipc_send_file_descriptor(pair[0], pair[0], NULL, 1), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_ipc_send_file_descriptor(pair[0], pair[0], payload, 0), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_ipc_receive_file_descriptor(pair[0], NULL, payload, 1), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_ipc_receive_file_descriptor(pair[0], &received, NULL, 1), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_ipc_receive_file_descriptor(pair[0], &received, payload, 0), CMR_ERROR_INVALID_ARGUMENT);
  /* Not a socket: a pipe. */
  int pipe_ends[2];
  ck_assert_int_eq(pipe(pipe_ends), 0);
  ck_assert_status(cmr_ipc_send_file_descriptor(pipe_ends[1], pair[0], "x", 1), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("socket");
  close_both(pipe_ends);
  close_both(pair);
}
END_TEST

/* A descriptor as an export of this process writes it. */
static cmr_ipc_descriptor own_descriptor(void) {
  cmr_ipc_descriptor descriptor;
  memset(&descriptor, 0, sizeof descriptor);
  descriptor.struct_size = sizeof descriptor;
  descriptor.exporter_pid = (int64_t)getpid();
  descriptor.size = 4096;
  return descriptor;
}

START_TEST(an_import_checks_its_descriptor_first) {
  cmr_device_buffer *buffer = (cmr_device_buffer *)&buffer;
  cmr_ipc_descriptor descriptor = own_descriptor();
  ck_assert_status(cmr_ipc_import_buffer(NULL, &descriptor, CMR_DEFAULT_STREAM, &buffer), CMR_ERROR_IPC_SAME_PROCESS);
  ck_assert_message_has("exported by this process");
  ck_assert_ptr_null(buffer);
  descriptor.struct_size = 3;
  ck_assert_status(cmr_ipc_import_buffer(NULL, &descriptor, CMR_DEFAULT_STREAM, &buffer), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("struct_size 3");
  descriptor = own_descriptor();
  descriptor.size = 0;
  ck_assert_status(cmr_ipc_import_buffer(NULL, &descriptor, CMR_DEFAULT_STREAM, &buffer), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_status(cmr_ipc_import_buffer(NULL, NULL, CMR_DEFAULT_STREAM, &buffer), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_ipc_import_buffer(NULL, &descriptor, CMR_DEFAULT_STREAM, NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(a_closed_descriptor_imports_no_pool) {
  int pipe_ends[2];
  ck_assert_int_eq(pipe(pipe_ends), 0);
  close_both(pipe_ends);
  cmr_ipc_pool *pool = (cmr_ipc_pool *)&pool;
  ck_assert_status(cmr_ipc_import_pool(pipe_ends[0], &pool), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("is not open");
  ck_assert_ptr_null(pool);
  ck_assert_status(cmr_ipc_import_pool(3, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_ipc_pool_destroy(NULL));
}
END_TEST

START_TEST(an_import_with_records_checks_both_descriptors) {
  int pipe_ends[2];
  ck_assert_int_eq(pipe(pipe_ends), 0);
  cmr_ipc_pool *pool = (cmr_ipc_pool *)&pool;
  ck_assert_status(cmr_ipc_import_pool_with_records(pipe_ends[0], pipe_ends[1], &pool), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("records_file_descriptor");
  ck_assert_message_has("is not an export record table (not a regular file)");
  ck_assert_ptr_null(pool);
  ck_assert_status(cmr_ipc_import_pool_with_records(pipe_ends[0], -1, &pool), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("records_file_descriptor -1 is not open");
  close_both(pipe_ends);
  ck_assert_status(cmr_ipc_import_pool_with_records(pipe_ends[0], pipe_ends[1], &pool), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("pool_file_descriptor");
  ck_assert_message_has("is not open");
  ck_assert_status(cmr_ipc_import_pool_with_records(3, 4, NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

/* What cmr_ipc_send_pool sends beside the two descriptors (ipc.c's wire format). */
typedef struct pool_message {
  uint64_t magic;
  int64_t exporter_pid;
} pool_message;
static const uint64_t pool_magic = 0x636d722d706f6f6cull; /* "cmr-pool" */

/* cmr_ipc_receive_pool of what `send` puts on a socket pair is `expected`,
 * its message containing `why`; no descriptor is left open. */
static void receive_pool_refused(void (*send)(int socket), cmr_status expected, const char *why) {
  int pair[2];
  make_pair(SOCK_SEQPACKET, pair);
  const int before = cmr_test_open_descriptors();
  send(pair[1]);
  cmr_ipc_pool *pool = (cmr_ipc_pool *)&pool;
  ck_assert_status(cmr_ipc_receive_pool(pair[0], &pool), expected);
  ck_assert_message_has(why);
  ck_assert_ptr_null(pool);
  ck_assert_int_eq(cmr_test_open_descriptors(), before);
  close_both(pair);
}

/* A pool's message from `pid` with two descriptors (the socket's own end
 * stands for both; the receiver gets its own of each). */
static void send_pool_message(int socket, uint64_t magic, int64_t pid) {
  const pool_message message = {magic, pid};
  const int descriptors[2] = {socket, socket};
  ck_assert_ok(cmr_ipc_send_file_descriptors(socket, descriptors, 2, &message, sizeof message, "test"));
}

static void send_one_descriptor(int socket) {
  const pool_message message = {pool_magic, (int64_t)getpid() + 1};
  ck_assert_ok(cmr_ipc_send_file_descriptor(socket, socket, &message, sizeof message));
}
static void send_another_magic(int socket) { send_pool_message(socket, 42, (int64_t)getpid() + 1); }
static void send_own_pool(int socket) { send_pool_message(socket, pool_magic, (int64_t)getpid()); }
static void send_records_that_are_not(int socket) { send_pool_message(socket, pool_magic, (int64_t)getpid() + 1); }

START_TEST(a_pool_message_is_checked_and_its_descriptors_closed) {
  receive_pool_refused(send_one_descriptor, CMR_ERROR_INVALID_ARGUMENT, "carried 1 of the 2 file descriptors");
  receive_pool_refused(send_another_magic, CMR_ERROR_INVALID_ARGUMENT, "not a pool cmr_ipc_send_pool sent");
  receive_pool_refused(send_own_pool, CMR_ERROR_IPC_SAME_PROCESS, "sent by this process");
  receive_pool_refused(send_records_that_are_not, CMR_ERROR_INVALID_ARGUMENT, "not an export record table");
}
END_TEST

START_TEST(an_export_needs_a_buffer) {
  cmr_ipc_descriptor descriptor;
  ck_assert_status(cmr_ipc_export_buffer(NULL, &descriptor), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_ipc_export_buffer(NULL, NULL), CMR_ERROR_NULL_POINTER);
  int records = 7;
  ck_assert_status(cmr_ipc_export_records_file_descriptor(NULL, &records), CMR_ERROR_NULL_POINTER);
  ck_assert_int_eq(records, -1);
  ck_assert_status(cmr_ipc_export_records_file_descriptor(NULL, NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

#if !CMR_WITH_CUDA
START_TEST(the_host_build_has_no_pools_to_share) {
  int pipe_ends[2];
  ck_assert_int_eq(pipe(pipe_ends), 0);
  cmr_ipc_pool *pool = NULL;
  ck_assert_status(cmr_ipc_import_pool(pipe_ends[0], &pool), CMR_ERROR_UNSUPPORTED);
  ck_assert_message_has("host build");
  ck_assert_ptr_null(pool);
  close_both(pipe_ends);
  /* A host buffer is no cuda_async one. */
  cmr_device_buffer *buffer = NULL;
  ck_assert_ok(
      cmr_device_buffer_create(256, CMR_DEFAULT_STREAM, cmr_system_resource_ref(cmr_test_system_resource()), &buffer));
  cmr_ipc_descriptor descriptor;
  ck_assert_status(cmr_ipc_export_buffer(buffer, &descriptor), CMR_ERROR_UNSUPPORTED);
  ck_assert_message_has("not a cuda_async resource");
  ck_assert_ok(cmr_device_buffer_destroy(buffer));
  int pair[2];
  make_pair(SOCK_STREAM, pair);
  ck_assert_status(cmr_ipc_send_pool(pair[0], NULL), CMR_ERROR_UNSUPPORTED);
  close_both(pair);
}
END_TEST
#endif

static void ipc_cases(Suite *suite) {
  cmr_test_case(suite, "sockets", NULL, NULL, a_descriptor_crosses_to_another_process,
                a_message_without_a_descriptor_is_refused,
                a_message_of_another_length_is_refused_and_its_descriptor_closed, a_closed_descriptor_is_not_sent,
                a_gone_peer_is_an_io_error, bad_arguments_of_the_socket_helpers);
  cmr_test_case(suite, "imports", NULL, NULL, an_import_checks_its_descriptor_first,
                a_closed_descriptor_imports_no_pool, an_import_with_records_checks_both_descriptors,
                a_pool_message_is_checked_and_its_descriptors_closed, an_export_needs_a_buffer);
#if !CMR_WITH_CUDA
  cmr_test_case(suite, "host", NULL, NULL, the_host_build_has_no_pools_to_share);
#endif
}

int main(void) { return cmr_test_main_suite("ipc", CMR_TEST_ANY_MACHINE, ipc_cases); }
