/* SPDX-License-Identifier: Apache-2.0 */
/* Device memory shared between processes (IPC), over the driver's pools.
 *
 * The exporting process allocates from a cuda_async resource made with
 * posix_file_descriptor in its export_handle_type. It sends the pool once,
 * as two file descriptors: the pool's and its export records'
 * (cmr_cuda_async_resource_export_file_descriptor and
 * cmr_ipc_export_records_file_descriptor, or both at once by
 * cmr_ipc_send_pool over a Unix socket), and each buffer as a descriptor
 * (cmr_ipc_export_buffer: plain bytes, sent any way). The importing process
 * imports the pool (cmr_ipc_import_pool_with_records, or
 * cmr_ipc_receive_pool) and then each buffer (cmr_ipc_import_buffer): a
 * cmr_device_buffer over the same device memory, freed in the importer by
 * cmr_device_buffer_destroy. Every imported buffer holds a share of its
 * imported pool, so the import stays until the last of them and the pool's
 * handle are destroyed.
 *
 * The exporter must keep a buffer alive until every importer has destroyed
 * its import of it, and order its writes before the importers' reads (a
 * synchronize, or an event shared by other means): the driver does neither.
 *
 * Export records. The driver does not promise that importing an allocation
 * the exporter has already freed fails: the import may succeed over memory
 * the pool has since handed to another allocation. So the exporting pool
 * keeps records of its exports in a small shared file (a memfd): each
 * export names its record in the descriptor, each free of an exported
 * buffer clears it, and destroying the pool marks them all gone. Before it
 * asks the driver, cmr_ipc_import_buffer checks the descriptor against the
 * records the pool was imported with, and refuses a buffer the exporter
 * freed, whose pool it destroyed, or that another pool exported
 * (CMR_ERROR_IPC_GONE, the message saying which). It is a check made at the
 * import: a free racing with the import is still the exporter's misuse,
 * which it may miss. A pool imported without records (cmr_ipc_import_pool)
 * has only the driver's answer: an import the driver refuses is
 * CMR_ERROR_IPC_GONE, one it makes over freed memory goes unnoticed.
 *
 * Misuse is reported, each with its status and message: importing into the
 * exporting process (CMR_ERROR_IPC_SAME_PROCESS), a file descriptor that is
 * not open or not export records (CMR_ERROR_INVALID_ARGUMENT), a descriptor
 * whose allocation the exporter freed or whose pool it destroyed
 * (CMR_ERROR_IPC_GONE), a descriptor that is not one
 * (CMR_ERROR_INVALID_ARGUMENT). In the host build the pools do not exist
 * (CMR_ERROR_UNSUPPORTED, after the checks of the arguments); the socket
 * helpers work in both builds. */
#ifndef CMR_IPC_H
#define CMR_IPC_H

#include <stdint.h>

#include <cmr/core.h>
#include <cmr/device_buffer.h>
#include <cmr/resources.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One exported buffer, as the importer needs it: plain bytes, to be copied
 * to the importing process as they are. An import accepts only a
 * descriptor whose struct_size is its own sizeof: the struct grows, with
 * struct_size, when a version of cmr adds to it. */
#define CMR_IPC_POINTER_BYTES 64
typedef struct cmr_ipc_descriptor {
  size_t struct_size;                           /* sizeof(cmr_ipc_descriptor), written by the export */
  int64_t exporter_pid;                         /* the exporting process */
  uint64_t size;                                /* the buffer's size in bytes */
  unsigned char pointer[CMR_IPC_POINTER_BYTES]; /* the driver's name of the allocation (cudaMemPoolPtrExportData) */
  /* The export's record in its pool's export records: */
  uint64_t records_token;     /* the records' random token (which pool's records) */
  uint64_t record_slot;       /* the record's place in them */
  uint64_t record_generation; /* which of the place's records: it moves on at each free */
} cmr_ipc_descriptor;

/* Describes `buffer`'s memory (its whole size) for an importer of its
 * pool (cudaMemPoolExportPointer), and records the export in the pool's
 * export records until the buffer's memory is freed (exporting it again
 * meanwhile gives the same record). The buffer's resource must be a
 * cuda_async resource that exports file descriptors
 * (CMR_ERROR_UNSUPPORTED otherwise); an empty buffer has nothing to share
 * (CMR_ERROR_INVALID_ARGUMENT). */
CMR_API cmr_status cmr_ipc_export_buffer(const cmr_device_buffer *buffer, cmr_ipc_descriptor *out);

/* A new file descriptor (close-on-exec) of the export records of
 * `resource`, which the caller owns and closes: what an importer passes to
 * cmr_ipc_import_pool_with_records beside the pool's own descriptor
 * (cmr_cuda_async_resource_export_file_descriptor). A cuda_async resource
 * made with posix_file_descriptor in its export_handle_type has them from
 * its creation; any other resource has none (CMR_ERROR_UNSUPPORTED). */
CMR_API cmr_status cmr_ipc_export_records_file_descriptor(cmr_cuda_async_resource *resource, int *out);

/* Whether this process may import the buffer `descriptor` names: CMR_SUCCESS,
 * CMR_ERROR_IPC_SAME_PROCESS where this process exported it, or
 * CMR_ERROR_INVALID_ARGUMENT where it is not a descriptor
 * cmr_ipc_export_buffer wrote. cmr_ipc_import_buffer checks it first. */
CMR_API cmr_status cmr_ipc_check_descriptor(const cmr_ipc_descriptor *descriptor);

/* A pool imported from another process: a handle owning one share, whose
 * ref frees the buffers imported from it (and allocates nothing: an
 * imported pool's memory is the exporter's to hand out). */
typedef struct cmr_ipc_pool cmr_ipc_pool;
/* Imports the pool another process exported as `pool_file_descriptor`
 * (cudaMemPoolImportFromShareableHandle), with the export records it
 * exported as `records_file_descriptor`
 * (cmr_ipc_export_records_file_descriptor), which every
 * cmr_ipc_import_buffer from the pool checks first. A records descriptor
 * that is not open, or not export records, is CMR_ERROR_INVALID_ARGUMENT.
 * Both descriptors stay the caller's, to close when it likes (the pool
 * keeps a descriptor of the records of its own). */
CMR_API cmr_status cmr_ipc_import_pool_with_records(int pool_file_descriptor, int records_file_descriptor,
                                                    cmr_ipc_pool **out);
/* Imports the pool without its export records: its imports have only the
 * driver's answer, which may map memory the exporter freed (see above);
 * prefer cmr_ipc_import_pool_with_records. */
CMR_API cmr_status cmr_ipc_import_pool(int file_descriptor, cmr_ipc_pool **out);
CMR_API cmr_status cmr_ipc_pool_destroy(cmr_ipc_pool *pool);
CMR_API cmr_resource_ref cmr_ipc_pool_ref(cmr_ipc_pool *pool);
/* A new buffer over the memory `descriptor` names (cudaMemPoolImportPointer),
 * of the descriptor's size, ordered on `stream`, holding a share of `pool`.
 * Destroying it frees the import (cudaFreeAsync on its stream), never the
 * exporter's memory. It cannot grow: resize and reserve past its size are
 * CMR_ERROR_UNSUPPORTED. A pool imported with its export records refuses,
 * before the driver is asked, a descriptor whose allocation the exporter
 * freed, whose pool it destroyed, or of another pool (CMR_ERROR_IPC_GONE),
 * and one whose record no export wrote (CMR_ERROR_INVALID_ARGUMENT). */
CMR_API cmr_status cmr_ipc_import_buffer(cmr_ipc_pool *pool, const cmr_ipc_descriptor *descriptor, cmr_stream stream,
                                         cmr_device_buffer **out);

/* Passing file descriptors over a connected Unix-domain socket (SCM_RIGHTS):
 * `file_descriptor` with the `bytes` (at least 1) at `data`, in one message.
 * The receiver gets a new descriptor of the same open file, which it owns
 * and closes, and exactly `bytes` bytes; a message without a descriptor, or
 * of another length, is CMR_ERROR_INVALID_ARGUMENT (a descriptor it carried
 * is closed), the peer gone is CMR_ERROR_IO. Both wait until the message
 * has gone or come (the calls are retried when a signal interrupts them). */
CMR_API cmr_status cmr_ipc_send_file_descriptor(int socket, int file_descriptor, const void *data, size_t bytes);
CMR_API cmr_status cmr_ipc_receive_file_descriptor(int socket, int *file_descriptor, void *data, size_t bytes);

/* The pool of `resource` sent over `socket` (its file descriptor, its export
 * records' and the exporter's process id, in one message), and received
 * and imported with its records on the other side
 * (cmr_ipc_import_pool_with_records): receiving it in the process that sent
 * it is CMR_ERROR_IPC_SAME_PROCESS. The descriptors passed are closed on
 * both sides once the import is made. */
CMR_API cmr_status cmr_ipc_send_pool(int socket, cmr_cuda_async_resource *resource);
CMR_API cmr_status cmr_ipc_receive_pool(int socket, cmr_ipc_pool **out);

#ifdef __cplusplus
}
#endif

#endif /* CMR_IPC_H */
