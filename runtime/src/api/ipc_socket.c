/* SPDX-License-Identifier: Apache-2.0 */
/* File descriptors passed over a Unix-domain socket (cmr/ipc.h,
 * ipc_socket.h): one message of SCM_RIGHTS with the caller's bytes. Plain
 * POSIX, both builds. */
#define _DEFAULT_SOURCE /* CMSG_SPACE, CMSG_LEN, MSG_CMSG_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmr/ipc.h>

#include "errors.h"
#include "ipc_socket.h"
#include "lock.h"

/* One message of the caller's bytes with room for the descriptors, as
 * sendmsg and recvmsg take it: its header points into the struct, which
 * stays where cmr_rights_message_init made it. */
typedef struct cmr_rights_message {
  struct iovec part;
  struct msghdr header;
  /* Room for the descriptors' control message, aligned as cmsghdr wants. */
  _Alignas(struct cmsghdr) char control[CMSG_SPACE(CMR_IPC_MAX_DESCRIPTORS * sizeof(int))];
} cmr_rights_message;

static void cmr_rights_message_init(cmr_rights_message *message, void *data, size_t bytes) {
  memset(message->control, 0, sizeof message->control);
  message->part = (struct iovec){.iov_base = data, .iov_len = bytes};
  message->header = (struct msghdr){.msg_iov = &message->part,
                                    .msg_iovlen = 1,
                                    .msg_control = message->control,
                                    .msg_controllen = sizeof message->control};
}

/* Sends the message (or receives one into it), after cmr_before_blocking,
 * again while a signal interrupts the call: sendmsg's or recvmsg's result. */
static ssize_t cmr_rights_transfer(int socket, cmr_rights_message *message, bool send) {
  cmr_before_blocking();
  ssize_t done;
  do {
    done = send ? sendmsg(socket, &message->header, MSG_NOSIGNAL) : recvmsg(socket, &message->header, MSG_CMSG_CLOEXEC);
  } while (done < 0 && errno == EINTR);
  return done;
}

static cmr_status cmr_socket_failure(const char *what, int socket, int error) {
  if (error == EPIPE || error == ECONNRESET) {
    return cmr_error(CMR_ERROR_IO, "%s: socket %d: the peer is gone (%s)", what, socket, strerror(error));
  }
  if (error == EBADF || error == ENOTSOCK || error == EINVAL || error == ENOTCONN) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: socket %d: %s", what, socket, strerror(error));
  }
  return cmr_error(CMR_ERROR_IO, "%s: socket %d: %s", what, socket, strerror(error));
}

static cmr_status cmr_check_message(const char *what, const void *data, size_t bytes) {
  if (data == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: data is NULL", what);
  if (bytes == 0) return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: bytes is 0 (a message carries at least one)", what);
  return CMR_SUCCESS;
}

/* Room for `count` descriptors at `file_descriptors`, as many as a message carries. */
static cmr_status cmr_check_count(const char *what, const int *file_descriptors, size_t count) {
  if (file_descriptors == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: file_descriptor is NULL", what);
  if (count == 0 || count > CMR_IPC_MAX_DESCRIPTORS) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %zu file descriptors, not 1 to %d", what, count,
                     CMR_IPC_MAX_DESCRIPTORS);
  }
  return CMR_SUCCESS;
}

/* `count` descriptors to send, each open. */
static cmr_status cmr_check_descriptors(const char *what, const int *file_descriptors, size_t count) {
  cmr_status status = cmr_check_count(what, file_descriptors, count);
  for (size_t i = 0; i < count && status == CMR_SUCCESS; i++) {
    if (file_descriptors[i] < 0 || fcntl(file_descriptors[i], F_GETFD) < 0) {
      status = cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: file_descriptor %d is not an open descriptor", what,
                         file_descriptors[i]);
    }
  }
  return status;
}

cmr_status cmr_ipc_send_file_descriptors(int socket, const int *file_descriptors, size_t count, const void *data,
                                         size_t bytes, const char *what) {
  cmr_status status = cmr_check_message(what, data, bytes);
  if (status == CMR_SUCCESS) status = cmr_check_descriptors(what, file_descriptors, count);
  if (status != CMR_SUCCESS) return status;
  cmr_rights_message message;
  cmr_rights_message_init(&message, (void *)(uintptr_t)data, bytes);
  message.header.msg_controllen = CMSG_SPACE(count * sizeof(int));
  struct cmsghdr *header = CMSG_FIRSTHDR(&message.header);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(count * sizeof(int));
  memcpy(CMSG_DATA(header), file_descriptors, count * sizeof(int));
  ssize_t sent = cmr_rights_transfer(socket, &message, true);
  if (sent < 0) return cmr_socket_failure(what, socket, errno);
  if ((size_t)sent != bytes) {
    return cmr_error(CMR_ERROR_IO, "%s: socket %d took %zd of %zu bytes", what, socket, sent, bytes);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_ipc_send_file_descriptor(int socket, int file_descriptor, const void *data, size_t bytes) {
  return cmr_ipc_send_file_descriptors(socket, &file_descriptor, 1, data, bytes, "cmr_ipc_send_file_descriptor");
}

/* The descriptors a received message carried, the first `count` into
 * `found` (which holds -1 past them), any beyond closed: how many it kept. */
static size_t cmr_received_descriptors(struct msghdr *message, int *found, size_t count) {
  size_t kept = 0;
  for (struct cmsghdr *header = CMSG_FIRSTHDR(message); header != NULL; header = CMSG_NXTHDR(message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    size_t carried = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < carried; i++) {
      int descriptor;
      memcpy(&descriptor, CMSG_DATA(header) + i * sizeof(int), sizeof descriptor);
      if (kept < count) {
        found[kept++] = descriptor;
      } else {
        close(descriptor);
      }
    }
  }
  return kept;
}

/* Closes those of the `count` descriptors that are open, leaving -1. */
static void cmr_close_all(int *file_descriptors, size_t count) {
  for (size_t i = 0; i < count; i++) {
    if (file_descriptors[i] >= 0) close(file_descriptors[i]);
    file_descriptors[i] = -1;
  }
}

/* The rest of a message on a stream socket, which may come in parts. */
static ssize_t cmr_receive_rest(int socket, char *data, size_t bytes) {
  size_t have = 0;
  while (have < bytes) {
    ssize_t got = recv(socket, data + have, bytes - have, MSG_WAITALL);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return got;
    have += (size_t)got;
  }
  return (ssize_t)have;
}

cmr_status cmr_ipc_receive_file_descriptors(int socket, int *file_descriptors, size_t count, void *data, size_t bytes,
                                            const char *what) {
  cmr_status status = cmr_check_count(what, file_descriptors, count);
  if (status != CMR_SUCCESS) return status;
  for (size_t i = 0; i < count; i++) file_descriptors[i] = -1;
  status = cmr_check_message(what, data, bytes);
  if (status != CMR_SUCCESS) return status;
  cmr_rights_message message;
  cmr_rights_message_init(&message, data, bytes);
  ssize_t got = cmr_rights_transfer(socket, &message, false);
  if (got < 0) return cmr_socket_failure(what, socket, errno);
  const size_t kept = cmr_received_descriptors(&message.header, file_descriptors, count);
  if (got == 0 && kept == 0) {
    return cmr_error(CMR_ERROR_IO, "%s: socket %d: the peer closed it before sending", what, socket);
  }
  int type = 0;
  socklen_t length = sizeof type;
  if (got > 0 && (size_t)got < bytes && getsockopt(socket, SOL_SOCKET, SO_TYPE, &type, &length) == 0 &&
      type == SOCK_STREAM) {
    ssize_t rest = cmr_receive_rest(socket, (char *)data + got, bytes - (size_t)got);
    got = rest > 0 ? got + rest : got;
  }
  if (kept == count && !(message.header.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && (size_t)got == bytes) {
    return CMR_SUCCESS;
  }
  cmr_close_all(file_descriptors, count);
  if (kept == 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: socket %d: the message carried no file descriptor", what, socket);
  }
  if (kept < count) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "%s: socket %d: the message carried %zu of the %zu file descriptors expected", what, socket, kept,
                     count);
  }
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: socket %d: a message of %s bytes, not the %zu expected", what,
                   socket, (message.header.msg_flags & MSG_TRUNC) ? "more" : "fewer", bytes);
}

cmr_status cmr_ipc_receive_file_descriptor(int socket, int *file_descriptor, void *data, size_t bytes) {
  return cmr_ipc_receive_file_descriptors(socket, file_descriptor, 1, data, bytes, "cmr_ipc_receive_file_descriptor");
}
