/* SPDX-License-Identifier: Apache-2.0 */
/* Several file descriptors in one message over a Unix-domain socket
 * (ipc_socket.c): what cmr_ipc_send_file_descriptor and
 * cmr_ipc_receive_file_descriptor (cmr/ipc.h) do for one, for the pool and
 * its export records together (cmr_ipc_send_pool, ipc.c). */
#ifndef CMR_IPC_SOCKET_H
#define CMR_IPC_SOCKET_H

#include <stddef.h>

#include <cmr/core.h>

/* The most descriptors one message carries. */
enum { CMR_IPC_MAX_DESCRIPTORS = 2 };

/* As cmr_ipc_send_file_descriptor, with the `count` (1 to
 * CMR_IPC_MAX_DESCRIPTORS) descriptors at `file_descriptors`, reporting as `what`. */
cmr_status cmr_ipc_send_file_descriptors(int socket, const int *file_descriptors, size_t count, const void *data,
                                         size_t bytes, const char *what);
/* As cmr_ipc_receive_file_descriptor, into the `count` descriptors at
 * `file_descriptors` (each -1 on failure): a message that carries fewer is
 * CMR_ERROR_INVALID_ARGUMENT (those it carried are closed), as is one of
 * another length; any beyond `count` are closed. */
cmr_status cmr_ipc_receive_file_descriptors(int socket, int *file_descriptors, size_t count, void *data, size_t bytes,
                                            const char *what);

#endif /* CMR_IPC_SOCKET_H */
