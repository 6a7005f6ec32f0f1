/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async: a cudaMemPool_t of the resource's own, allocated from in
 * stream order. An initial size is reserved by allocating and freeing it
 * once; the release threshold keeps it (and later growth) reserved. The
 * pool's attributes stay readable and settable (CMR_CUDA_POOL_METHODS), and
 * a pool made with posix_file_descriptor exports itself for IPC, with the
 * export records its importers check a buffer's descriptor against. */
#include "backend.h"
#include "impl.h"
#include "cuda_memory.h"
#include "ipc_records.h"

struct cmr_cuda_async_impl {
  cmr_cuda_async_params params; /* first: what it was created with (impl.h) */
  cmr_cuda_source source;       /* pool memory of the pool it made */
  cmr_ipc_records records;      /* made with the pool where it exports file descriptors */
};
CMR_IMPL_LAYOUT(cuda_async);

/* Each value of export_handle_type names a set of handle kinds. */
static const unsigned exports_of[] = {
    [CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_NONE] = CMR_BACKEND_POOL_EXPORT_NONE,
    [CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR] = CMR_BACKEND_POOL_EXPORT_POSIX_FILE_DESCRIPTOR,
    [CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_FABRIC] = CMR_BACKEND_POOL_EXPORT_FABRIC,
    [CMR_CUDA_ASYNC_EXPORT_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_AND_FABRIC] =
        CMR_BACKEND_POOL_EXPORT_POSIX_FILE_DESCRIPTOR | CMR_BACKEND_POOL_EXPORT_FABRIC,
};

/* Grants each device of the mask but the pool's own read and write access
 * to the pool; first checks that every one exists, so a bad mask changes
 * nothing. */
static cmr_status cmr_grant_access(cmr_backend_pool pool, int own, size_t access_devices) {
  int count = 0;
  cmr_status status = cmr_backend_device_count(&count);
  if (status != CMR_SUCCESS) return status;
  const int bits = (int)(sizeof access_devices * 8);
  if (count < bits && (access_devices >> count) != 0) {
    return cmr_error(CMR_ERROR_UNKNOWN_DEVICE, "cuda_async: access_devices %#zx names device %d, not in [0, %d)",
                     access_devices, bits - 1 - __builtin_clzll((unsigned long long)access_devices), count);
  }
  for (int device = 0; device < bits && status == CMR_SUCCESS; device++) {
    if (device != own && (access_devices >> device & 1u)) status = cmr_backend_pool_grant_access(pool, own, device);
  }
  return status;
}

static bool exports_file_descriptors(const cmr_cuda_async_impl *impl) {
  return exports_of[impl->params.export_handle_type] & CMR_BACKEND_POOL_EXPORT_POSIX_FILE_DESCRIPTOR;
}

cmr_status cmr_cuda_async_impl_init(cmr_cuda_async_impl *impl) {
  const cmr_cuda_async_params *params = &impl->params;
  bool supported = false;
  cmr_status status = cmr_backend_pools_supported(&supported);
  if (status != CMR_SUCCESS) return status;
  if (!supported) return cmr_error(CMR_ERROR_UNSUPPORTED, "cuda_async: the current device has no memory pools");
  impl->source = cmr_cuda_source_here(CMR_CUDA_MEMORY_POOL, "cuda_async", NULL);
  status =
      cmr_backend_pool_create(exports_of[params->export_handle_type], params->release_threshold, &impl->source.pool);
  if (status != CMR_SUCCESS) return status;
  if (params->access_devices != 0)
    status = cmr_grant_access(impl->source.pool, impl->source.device, params->access_devices);
  if (status == CMR_SUCCESS && params->initial_pool_size > 0)
    status = cmr_cuda_pool_reserve(&impl->source, params->initial_pool_size);
  /* The export records are made with the pool rather than at the first
   * export: an exporter sends them beside the pool's descriptor, usually
   * before it exports any buffer (cmr_ipc_send_pool); they are one memfd
   * and one page, small beside a driver pool; and no export has to race
   * another to make them, nor fail later for want of a descriptor. */
  if (status == CMR_SUCCESS && exports_file_descriptors(impl))
    status = cmr_ipc_records_init(&impl->records, "cuda_async");
  if (status != CMR_SUCCESS) cmr_backend_pool_destroy(impl->source.pool);
  return status;
}

/* Importers see the pool destroyed before the driver destroys it. */
void cmr_cuda_async_impl_fini(cmr_cuda_async_impl *impl) {
  cmr_ipc_records_fini(&impl->records);
  cmr_backend_pool_destroy(impl->source.pool);
}

cmr_status cmr_cuda_async_impl_allocate(cmr_cuda_async_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                        void **out) {
  (void)alignment;
  return cmr_cuda_memory_allocate(&impl->source, bytes, stream, out);
}

/* An exported pointer is forgotten before the driver's free, not after:
 * once freed, the pool may hand the address out again, and another thread
 * may export it, which the forget would then clear. A free that fails
 * leaves its memory unrecorded, so an earlier descriptor of it is refused
 * by importers: the safe side. */
cmr_status cmr_cuda_async_impl_deallocate(cmr_cuda_async_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                          cmr_stream stream) {
  (void)alignment;
  cmr_ipc_records_forget(&impl->records, ptr);
  return cmr_cuda_memory_deallocate(&impl->source, ptr, bytes, stream);
}

CMR_CUDA_POOL_STATS(cuda_async)
CMR_CUDA_POOL_METHODS(cuda_async)
CMR_CUDA_POOL_HANDLE(cuda_async)

/* What an export through a file descriptor needs, refused as `method`. */
static cmr_status exports_refused(const char *method) {
  return cmr_error(CMR_ERROR_UNSUPPORTED,
                   "cuda_async: %s: the pool was made without posix_file_descriptor in its export_handle_type, so it "
                   "cannot be shared through a file descriptor",
                   method);
}

cmr_status cmr_cuda_async_impl_export_file_descriptor(cmr_cuda_async_impl *impl, int *out) {
  if (!exports_file_descriptors(impl)) return exports_refused("export_file_descriptor");
  return cmr_backend_pool_export_file_descriptor(impl->source.pool, out);
}

cmr_status cmr_cuda_async_impl_export_records_file_descriptor(cmr_cuda_async_impl *impl, int *out) {
  if (!exports_file_descriptors(impl)) return exports_refused("export_records_file_descriptor");
  return cmr_ipc_records_share(&impl->records, out);
}

struct cmr_ipc_records *cmr_cuda_async_impl_export_records(cmr_cuda_async_impl *impl) {
  return exports_file_descriptors(impl) ? &impl->records : NULL;
}
