/* SPDX-License-Identifier: Apache-2.0 */
/* File descriptors passed over a Unix-domain socket (cmr/ipc.h): one
 * message of SCM_RIGHTS with the caller's bytes. Plain POSIX, both builds. */
#define _DEFAULT_SOURCE /* CMSG_SPACE, CMSG_LEN, MSG_CMSG_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmr/ipc.h>

#include "errors.h"
#include "lock.h"

/* One message of the caller's bytes with room for one descriptor, as
 * sendmsg and recvmsg take it: its header points into the struct, which
 * stays where cmr_rights_message_init made it. */
typedef struct cmr_rights_message {
  struct iovec part;
  struct msghdr header;
  /* Room for one descriptor's control message, aligned as cmsghdr wants. */
  _Alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
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

cmr_status cmr_ipc_send_file_descriptor(int socket, int file_descriptor, const void *data, size_t bytes) {
  static const char what[] = "cmr_ipc_send_file_descriptor";
  cmr_status status = cmr_check_message(what, data, bytes);
  if (status != CMR_SUCCESS) return status;
  if (file_descriptor < 0 || fcntl(file_descriptor, F_GETFD) < 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: file_descriptor %d is not an open descriptor", what,
                     file_descriptor);
  }
  cmr_rights_message message;
  cmr_rights_message_init(&message, (void *)(uintptr_t)data, bytes);
  struct cmsghdr *header = CMSG_FIRSTHDR(&message.header);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(header), &file_descriptor, sizeof(int));
  ssize_t sent = cmr_rights_transfer(socket, &message, true);
  if (sent < 0) return cmr_socket_failure(what, socket, errno);
  if ((size_t)sent != bytes) {
    return cmr_error(CMR_ERROR_IO, "%s: socket %d took %zd of %zu bytes", what, socket, sent, bytes);
  }
  return CMR_SUCCESS;
}

/* The descriptor a received message carried, or -1; closes any beyond the first. */
static int cmr_received_descriptor(struct msghdr *message) {
  int found = -1;
  for (struct cmsghdr *header = CMSG_FIRSTHDR(message); header != NULL; header = CMSG_NXTHDR(message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int descriptor;
      memcpy(&descriptor, CMSG_DATA(header) + i * sizeof(int), sizeof descriptor);
      if (found < 0) {
        found = descriptor;
      } else {
        close(descriptor);
      }
    }
  }
  return found;
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

cmr_status cmr_ipc_receive_file_descriptor(int socket, int *file_descriptor, void *data, size_t bytes) {
  static const char what[] = "cmr_ipc_receive_file_descriptor";
  if (file_descriptor == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: file_descriptor is NULL", what);
  *file_descriptor = -1;
  cmr_status status = cmr_check_message(what, data, bytes);
  if (status != CMR_SUCCESS) return status;
  cmr_rights_message message;
  cmr_rights_message_init(&message, data, bytes);
  ssize_t got = cmr_rights_transfer(socket, &message, false);
  if (got < 0) return cmr_socket_failure(what, socket, errno);
  const int descriptor = cmr_received_descriptor(&message.header);
  if (got == 0 && descriptor < 0) {
    return cmr_error(CMR_ERROR_IO, "%s: socket %d: the peer closed it before sending", what, socket);
  }
  int type = 0;
  socklen_t length = sizeof type;
  if (got > 0 && (size_t)got < bytes && getsockopt(socket, SOL_SOCKET, SO_TYPE, &type, &length) == 0 &&
      type == SOCK_STREAM) {
    ssize_t rest = cmr_receive_rest(socket, (char *)data + got, bytes - (size_t)got);
    got = rest > 0 ? got + rest : got;
  }
  if (descriptor < 0 || (message.header.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)got != bytes) {
    if (descriptor >= 0) close(descriptor);
    if (descriptor < 0) {
      return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: socket %d: the message carried no file descriptor", what,
                       socket);
    }
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: socket %d: a message of %s bytes, not the %zu expected", what,
                     socket, (message.header.msg_flags & MSG_TRUNC) ? "more" : "fewer", bytes);
  }
  *file_descriptor = descriptor;
  return CMR_SUCCESS;
}
