/* SPDX-License-Identifier: Apache-2.0 */
/* Buffers shared between processes (cmr/ipc.h): the export of a
 * cuda_async buffer (with its record in the pool's export records), the
 * imported pool (a resource of its own, whose ref frees what was imported
 * from it, keeping the exporter's records) and the imported buffers
 * (device buffers adopting the import, checked against the records first).
 * The CUDA calls are the backend's; the host build has no pools to share
 * and refuses every call here once its arguments are checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmr/ipc.h>

#include "backend.h"
#include "device_buffer_adopt.h"
#include "errors.h"
#include "ipc_records.h"
#include "ipc_socket.h"
#include "object.h"
#include "refs.h"
#include "resource_class.h"

#if CMR_WITH_CUDA
#include "cuda_memory.h"

/* What the imported pool's struct is made from, and the struct. */
typedef struct cmr_ipc_pool_params {
  int file_descriptor;
  int records_file_descriptor; /* the caller's, or -1: imported without records */
} cmr_ipc_pool_params;

typedef struct cmr_ipc_pool_impl {
  cmr_ipc_pool_params params; /* first, as every resource's */
  cmr_cuda_source source;     /* pool memory of the imported pool */
  int records;                /* a descriptor of the exporter's records of its own, or -1 */
} cmr_ipc_pool_impl;

static const cmr_impl_layout cmr_ipc_pool_layout = {sizeof(cmr_ipc_pool_impl), _Alignof(cmr_ipc_pool_impl)};
static const char cmr_ipc_pool_owner[] = "ipc_pool";

static cmr_status cmr_ipc_pool_init(void *state) {
  cmr_ipc_pool_impl *impl = state;
  impl->source = cmr_cuda_source_here(CMR_CUDA_MEMORY_POOL, cmr_ipc_pool_owner, NULL);
  impl->records = -1;
  if (impl->params.records_file_descriptor >= 0) {
    impl->records = fcntl(impl->params.records_file_descriptor, F_DUPFD_CLOEXEC, 0);
    if (impl->records < 0) {
      return cmr_error(CMR_ERROR_IO, "%s: keeping a descriptor of the export records: %s", cmr_ipc_pool_owner,
                       strerror(errno));
    }
  }
  cmr_status status = cmr_backend_pool_import_file_descriptor(impl->params.file_descriptor, &impl->source.pool);
  if (status != CMR_SUCCESS && impl->records >= 0) close(impl->records);
  return status;
}

/* The driver unmaps the import once the buffers imported from it are freed. */
static void cmr_ipc_pool_fini(void *state) {
  cmr_ipc_pool_impl *impl = state;
  cmr_backend_pool_destroy(impl->source.pool);
  if (impl->records >= 0) close(impl->records);
}

static cmr_ipc_pool_impl *cmr_ipc_pool_of(void *self) { return ((cmr_resource_object *)self)->impl; }

static cmr_status cmr_ipc_pool_allocate(void *self, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)self, (void)alignment, (void)stream, (void)out;
  return cmr_error(CMR_ERROR_UNSUPPORTED,
                   "ipc_pool: cannot allocate %zu bytes: an imported pool's memory is the exporter's to hand out "
                   "(import its buffers with cmr_ipc_import_buffer; an imported buffer cannot grow)",
                   bytes);
}

static cmr_status cmr_ipc_pool_deallocate(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)alignment;
  return cmr_cuda_memory_deallocate(&cmr_ipc_pool_of(self)->source, ptr, bytes, stream);
}

static const cmr_resource_class cmr_ipc_pool_class;

/* Only itself: another import of the same pool is another mapping. */
static bool cmr_ipc_pool_is_equal(const void *self, cmr_resource_ref other) {
  return other.ops == &cmr_ipc_pool_class.ops && cmr_object_peek(other.self) == self;
}

static unsigned cmr_ipc_pool_properties(const void *self) {
  (void)self;
  return CMR_PROPERTY_DEVICE_ACCESSIBLE;
}

static const cmr_resource_class cmr_ipc_pool_class = {
    .type = {"ipc_pool", cmr_resource_finalize, NULL},
    .ops =
        {
            .flags = CMR_OPS_FLAG_COUNTED,
            .type_name = "ipc_pool",
            .allocate = cmr_ipc_pool_allocate,
            .deallocate = cmr_ipc_pool_deallocate,
            .is_equal = cmr_ipc_pool_is_equal,
            .properties = cmr_ipc_pool_properties,
        },
    .create_name = "cmr_ipc_import_pool",
    .from_ref_name = "cmr_ipc_pool_from_ref",
    .layout = &cmr_ipc_pool_layout,
    .init = cmr_ipc_pool_init,
    .fini = cmr_ipc_pool_fini,
};

/* The export records of `resource`, a handle the caller holds. */
static cmr_status cmr_records_of(cmr_cuda_async_resource *resource, const char *what, cmr_ipc_records **out) {
  cmr_object *object;
  cmr_status status = cmr_handle_object(resource, NULL, what, &object);
  if (status != CMR_SUCCESS) return status;
  *out = cmr_resource_export_records(object);
  if (*out == NULL) {
    const cmr_resource_class *cls = cmr_resource_class_of(object);
    return cmr_error(CMR_ERROR_UNSUPPORTED,
                     "%s: the %s resource was made without posix_file_descriptor in its export_handle_type, so it "
                     "cannot be shared through a file descriptor",
                     what, cls != NULL ? cls->type.name : "handle's");
  }
  return CMR_SUCCESS;
}

/* The export of `data`, memory of `pool`'s: the driver's name of the
 * allocation and its record in the pool's export records, into *out. */
static cmr_status cmr_export_pointer(cmr_cuda_async_resource *pool, void *data, cmr_ipc_descriptor *out) {
  cmr_ipc_records *records;
  cmr_status status = cmr_records_of(pool, "the buffer's resource", &records);
  /* The driver exports an allocation only from a pool already shared
   * (cudaMemPoolExportPointer is cudaErrorInvalidValue before the pool's
   * first export): the pool is exported, and its descriptor closed, first. */
  int shared = -1;
  if (status == CMR_SUCCESS) status = cmr_cuda_async_resource_export_file_descriptor(pool, &shared);
  if (status != CMR_SUCCESS) return status;
  close(shared);
  status = cmr_backend_pool_export_pointer(data, out->pointer);
  cmr_ipc_record record;
  if (status == CMR_SUCCESS) status = cmr_ipc_records_record(records, data, &record);
  if (status != CMR_SUCCESS) return status;
  out->records_token = record.token;
  out->record_slot = record.slot;
  out->record_generation = record.generation;
  return CMR_SUCCESS;
}
#else
static cmr_status cmr_no_pools(const char *what) {
  return cmr_error(CMR_ERROR_UNSUPPORTED, "%s: the host build has no CUDA memory pools to share between processes",
                   what);
}
#endif

/* ---- export ------------------------------------------------------------------------- */

cmr_status cmr_ipc_export_buffer(const cmr_device_buffer *buffer, cmr_ipc_descriptor *out) {
  static const char what[] = "cmr_ipc_export_buffer";
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  memset(out, 0, sizeof *out);
  cmr_resource_ref mr;
  void *data = NULL;
  size_t size = 0;
  cmr_status status = cmr_device_buffer_resource(buffer, &mr);
  if (status == CMR_SUCCESS) status = cmr_device_buffer_data(buffer, &data);
  if (status == CMR_SUCCESS) status = cmr_device_buffer_size(buffer, &size);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s", what);
  if (size == 0 || data == NULL) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: the buffer is empty: there is no memory to share", what);
  }
  /* A share of the buffer's resource (a cuda_async one) for the export. */
  cmr_cuda_async_resource *pool = NULL;
  if (cmr_cuda_async_resource_from_ref(mr, &pool) != CMR_SUCCESS) {
    return cmr_error(CMR_ERROR_UNSUPPORTED,
                     "%s: the buffer's resource is a %s, not a cuda_async resource made to export file descriptors",
                     what, mr.ops != NULL && mr.ops->type_name != NULL ? mr.ops->type_name : "foreign resource");
  }
#if CMR_WITH_CUDA
  status = cmr_export_pointer(pool, data, out);
  cmr_cuda_async_resource_destroy(pool);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s", what);
  out->struct_size = sizeof *out;
  out->exporter_pid = (int64_t)getpid();
  out->size = size;
  return CMR_SUCCESS;
#else
  cmr_cuda_async_resource_destroy(pool);
  return cmr_no_pools(what);
#endif
}

cmr_status cmr_ipc_export_records_file_descriptor(cmr_cuda_async_resource *resource, int *out) {
  static const char what[] = "cmr_ipc_export_records_file_descriptor";
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  *out = -1;
#if CMR_WITH_CUDA
  cmr_ipc_records *records;
  cmr_status status = cmr_records_of(resource, what, &records);
  return status == CMR_SUCCESS ? cmr_ipc_records_share(records, out) : status;
#else
  if (resource == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: resource is NULL", what);
  return cmr_no_pools(what);
#endif
}

/* ---- import ------------------------------------------------------------------------- */

/* Whether `file_descriptor`, the argument `name`, is open here. */
static cmr_status cmr_check_open(const char *what, const char *name, int file_descriptor) {
  if (file_descriptor < 0 || (fcntl(file_descriptor, F_GETFD) < 0 && errno == EBADF)) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %s %d is not open (closed, or never received)", what, name,
                     file_descriptor);
  }
  return CMR_SUCCESS;
}

/* The import of the pool `file_descriptor` (the argument `name`) names,
 * with the export records `records_file_descriptor` names when `with_records`. */
static cmr_status cmr_import_pool(const char *what, const char *name, int file_descriptor, bool with_records,
                                  int records_file_descriptor, cmr_ipc_pool **out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  *out = NULL;
  cmr_status status = cmr_check_open(what, name, file_descriptor);
  if (status == CMR_SUCCESS && with_records) status = cmr_ipc_records_check_file(records_file_descriptor, what);
  if (status != CMR_SUCCESS) return status;
#if CMR_WITH_CUDA
  const cmr_ipc_pool_params params = {file_descriptor, with_records ? records_file_descriptor : -1};
  return cmr_resource_create(&cmr_ipc_pool_class, (cmr_resource_ref){NULL, NULL}, &params, sizeof params, (void **)out);
#else
  return cmr_no_pools(what);
#endif
}

cmr_status cmr_ipc_import_pool(int file_descriptor, cmr_ipc_pool **out) {
  return cmr_import_pool("cmr_ipc_import_pool", "file_descriptor", file_descriptor, false, -1, out);
}

cmr_status cmr_ipc_import_pool_with_records(int pool_file_descriptor, int records_file_descriptor, cmr_ipc_pool **out) {
  return cmr_import_pool("cmr_ipc_import_pool_with_records", "pool_file_descriptor", pool_file_descriptor, true,
                         records_file_descriptor, out);
}

cmr_status cmr_ipc_pool_destroy(cmr_ipc_pool *pool) { return cmr_handle_destroy(pool, "cmr_ipc_pool_destroy"); }

cmr_resource_ref cmr_ipc_pool_ref(cmr_ipc_pool *pool) {
#if CMR_WITH_CUDA
  return cmr_resource_ref_of(&cmr_ipc_pool_class, pool);
#else
  (void)pool;
  return (cmr_resource_ref){NULL, NULL};
#endif
}

/* cmr_ipc_check_descriptor, reporting as `what`. */
static cmr_status cmr_check_descriptor(const char *what, const cmr_ipc_descriptor *descriptor) {
  if (descriptor == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: descriptor is NULL", what);
  if (descriptor->struct_size != sizeof *descriptor || descriptor->size == 0 || descriptor->size > SIZE_MAX) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "%s: descriptor is not one cmr_ipc_export_buffer wrote (struct_size %zu, size %llu)", what,
                     descriptor->struct_size, (unsigned long long)descriptor->size);
  }
  if (descriptor->exporter_pid == (int64_t)getpid()) {
    return cmr_error(CMR_ERROR_IPC_SAME_PROCESS,
                     "%s: the buffer was exported by this process (%lld): use the buffer itself, the driver maps "
                     "an export only in another process",
                     what, (long long)descriptor->exporter_pid);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_ipc_check_descriptor(const cmr_ipc_descriptor *descriptor) {
  return cmr_check_descriptor("cmr_ipc_check_descriptor", descriptor);
}

#if CMR_WITH_CUDA
/* Whether the exporter's `records` still hold the export `descriptor` names live. */
static cmr_status cmr_check_record(const char *what, const cmr_ipc_descriptor *descriptor, int records) {
  char context[128];
  snprintf(context, sizeof context, "%s: process %lld's buffer", what, (long long)descriptor->exporter_pid);
  const cmr_ipc_record record = {descriptor->records_token, descriptor->record_slot, descriptor->record_generation};
  return cmr_ipc_records_check_export(records, &record, context);
}
#endif

cmr_status cmr_ipc_import_buffer(cmr_ipc_pool *pool, const cmr_ipc_descriptor *descriptor, cmr_stream stream,
                                 cmr_device_buffer **out) {
  static const char what[] = "cmr_ipc_import_buffer";
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  *out = NULL;
  cmr_status status = cmr_check_descriptor(what, descriptor);
  if (status != CMR_SUCCESS) return status;
#if CMR_WITH_CUDA
  cmr_object *object;
  status = cmr_handle_object(pool, &cmr_ipc_pool_class.type, what, &object);
  if (status != CMR_SUCCESS) return status;
  const cmr_ipc_pool_impl *impl = ((cmr_resource_object *)object)->impl;
  void *data = NULL;
  const size_t size = (size_t)descriptor->size;
  cmr_call_begin(); /* the pool stays while it runs */
  if (impl->records >= 0) status = cmr_check_record(what, descriptor, impl->records);
  if (status == CMR_SUCCESS) status = cmr_cuda_memory_import(&impl->source, descriptor->pointer, size, &data);
  if (status == CMR_ERROR_CUDA) {
    status = cmr_error(CMR_ERROR_IPC_GONE,
                       "%s: the driver refused the import: the exporter (process %lld) freed the allocation or "
                       "destroyed its pool, or the descriptor belongs to another pool: %s",
                       what, (long long)descriptor->exporter_pid, cmr_last_error_message());
  }
  if (status == CMR_SUCCESS) {
    cmr_resource_ref ref = cmr_resource_ref_of(&cmr_ipc_pool_class, pool);
    status = cmr_device_buffer_adopt(data, size, stream, ref, what, out);
    if (status != CMR_SUCCESS) cmr_cuda_memory_deallocate(&impl->source, data, size, stream);
  }
  cmr_call_end();
  return status;
#else
  (void)pool, (void)stream;
  return cmr_no_pools(what);
#endif
}

/* ---- a pool over a socket ------------------------------------------------------------ */

/* What travels with the pool's descriptors, and their places in the message. */
typedef struct cmr_ipc_pool_message {
  uint64_t magic; /* cmr_ipc_pool_magic: the message is a pool's */
  int64_t exporter_pid;
} cmr_ipc_pool_message;
static const uint64_t cmr_ipc_pool_magic = 0x636d722d706f6f6cull; /* "cmr-pool" */
enum { cmr_pool_descriptor, cmr_records_descriptor, cmr_pool_descriptors };

static void cmr_close_pool_descriptors(const int descriptors[cmr_pool_descriptors]) {
  for (int i = 0; i < cmr_pool_descriptors; i++) {
    if (descriptors[i] >= 0) close(descriptors[i]);
  }
}

cmr_status cmr_ipc_send_pool(int socket, cmr_cuda_async_resource *resource) {
  static const char what[] = "cmr_ipc_send_pool";
  int descriptors[cmr_pool_descriptors] = {-1, -1};
  cmr_status status = cmr_cuda_async_resource_export_file_descriptor(resource, &descriptors[cmr_pool_descriptor]);
  if (status == CMR_SUCCESS) {
    status = cmr_ipc_export_records_file_descriptor(resource, &descriptors[cmr_records_descriptor]);
  }
  if (status == CMR_SUCCESS) {
    const cmr_ipc_pool_message message = {cmr_ipc_pool_magic, (int64_t)getpid()};
    status = cmr_ipc_send_file_descriptors(socket, descriptors, cmr_pool_descriptors, &message, sizeof message, what);
  } else {
    status = cmr_error_context(status, "%s", what);
  }
  cmr_close_pool_descriptors(descriptors);
  return status;
}

cmr_status cmr_ipc_receive_pool(int socket, cmr_ipc_pool **out) {
  static const char what[] = "cmr_ipc_receive_pool";
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  *out = NULL;
  cmr_ipc_pool_message message;
  int descriptors[cmr_pool_descriptors];
  cmr_status status =
      cmr_ipc_receive_file_descriptors(socket, descriptors, cmr_pool_descriptors, &message, sizeof message, what);
  if (status != CMR_SUCCESS) return status;
  if (message.magic != cmr_ipc_pool_magic) {
    status = cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: socket %d: the message is not a pool cmr_ipc_send_pool sent",
                       what, socket);
  } else if (message.exporter_pid == (int64_t)getpid()) {
    status = cmr_error(CMR_ERROR_IPC_SAME_PROCESS,
                       "%s: the pool was sent by this process (%lld): use its resource, the driver imports a pool "
                       "only into another process",
                       what, (long long)message.exporter_pid);
  } else {
    status =
        cmr_ipc_import_pool_with_records(descriptors[cmr_pool_descriptor], descriptors[cmr_records_descriptor], out);
  }
  cmr_close_pool_descriptors(descriptors);
  return status;
}
