/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_async: a cudaMemPool_t of the resource's own, allocated from in
 * stream order. An initial size is reserved by allocating and freeing it
 * once; the release threshold keeps it (and later growth) reserved. The
 * pool's attributes stay readable and settable (CMR_CUDA_POOL_METHODS), and
 * a pool made with posix_file_descriptor exports itself for IPC. */
#include "backend.h"
#include "impl.h"
#include "cuda_memory.h"

struct cmr_cuda_async_impl {
  cmr_cuda_async_params params; /* first: what it was created with (impl.h) */
  cmr_cuda_source source;       /* pool memory of the pool it made */
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
  if (status != CMR_SUCCESS) cmr_backend_pool_destroy(impl->source.pool);
  return status;
}

CMR_CUDA_OWN_POOL_FINI(cuda_async)
CMR_CUDA_POOL_LEAF(cuda_async)
CMR_CUDA_POOL_HANDLE(cuda_async)

cmr_status cmr_cuda_async_impl_export_file_descriptor(cmr_cuda_async_impl *impl, int *out) {
  if (!(exports_of[impl->params.export_handle_type] & CMR_BACKEND_POOL_EXPORT_POSIX_FILE_DESCRIPTOR)) {
    return cmr_error(CMR_ERROR_UNSUPPORTED,
                     "cuda_async: export_file_descriptor: the pool was made without posix_file_descriptor in its "
                     "export_handle_type, so it cannot be shared through a file descriptor");
  }
  return cmr_backend_pool_export_file_descriptor(impl->source.pool, out);
}
