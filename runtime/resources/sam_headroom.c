/* SPDX-License-Identifier: Apache-2.0 */
/* sam_headroom: system memory whose preferred location is the device for as
 * much of each allocation as fits above the headroom of free device memory,
 * and the host for the rest (RMM's sam_headroom_memory_resource). The host
 * build has no device memory to keep free: it hands out host memory. */
#include <stdlib.h>

#include "backend.h"
#include "host_memory.h"
#include "impl.h"
#include "ledger.h"

struct cmr_sam_headroom_impl {
  cmr_sam_headroom_params params; /* first: what it was created with (impl.h) */
  int device;                     /* the current device at creation, which the advice names */
};
CMR_IMPL_LAYOUT(sam_headroom);

cmr_status cmr_sam_headroom_impl_init(cmr_sam_headroom_impl *impl) {
  cmr_status status = cmr_backend_get_device(&impl->device);
#if CMR_WITH_CUDA
  bool pageable = false;
  if (status == CMR_SUCCESS) status = cmr_backend_pageable_memory_access(&pageable);
  if (status == CMR_SUCCESS && !pageable) {
    return cmr_error(CMR_ERROR_UNSUPPORTED,
                     "sam_headroom: device %d cannot access pageable host memory (cudaDevAttrPageableMemoryAccess "
                     "is 0: no HMM or ATS), so system memory is not device memory there",
                     impl->device);
  }
#endif
  if (status != CMR_SUCCESS) return cmr_error_context(status, "sam_headroom");
  return CMR_SUCCESS;
}

#if CMR_WITH_CUDA
/* Advises the device for the part of `bytes` at `ptr` that fits above the
 * headroom, rounded down to 256 bytes, and the host for the rest. */
static cmr_status cmr_sam_headroom_advise(const cmr_sam_headroom_impl *impl, char *ptr, size_t bytes) {
  size_t free_bytes = 0, total_bytes = 0;
  cmr_status status = cmr_backend_memory_info(&free_bytes, &total_bytes);
  if (status != CMR_SUCCESS) return status;
  size_t allocatable = free_bytes > impl->params.headroom ? free_bytes - impl->params.headroom : 0;
  size_t on_device = (allocatable < bytes ? allocatable : bytes) / CMR_DEFAULT_ALIGNMENT * CMR_DEFAULT_ALIGNMENT;
  if (on_device > 0) status = cmr_backend_advise_location(ptr, on_device, impl->device);
  if (status == CMR_SUCCESS && on_device < bytes)
    status = cmr_backend_advise_location(ptr + on_device, bytes - on_device, -1);
  return status;
}
#endif

static cmr_status cmr_sam_headroom_obtain(void *self, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  cmr_status status = cmr_host_memory_allocate("sam_headroom", bytes, alignment, out);
#if CMR_WITH_CUDA
  const cmr_sam_headroom_impl *impl = self;
  if (status == CMR_SUCCESS) {
    status = cmr_sam_headroom_advise(impl, *out, bytes);
    if (status != CMR_SUCCESS) {
      (void)cmr_host_memory_deallocate("sam_headroom", *out, impl->device, stream);
      *out = NULL;
      return cmr_error_context(status, "sam_headroom: advising where %zu bytes go", bytes);
    }
  }
#else
  (void)self, (void)stream; /* host memory: no device memory to keep free */
#endif
  return status;
}

static cmr_status cmr_sam_headroom_release(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)bytes, (void)alignment;
  return cmr_host_memory_deallocate("sam_headroom", ptr, ((const cmr_sam_headroom_impl *)self)->device, stream);
}

/* One ledger for every sam_headroom resource (equal ones free each other's
 * blocks): only what one handed out, with its size, reaches free(). */
static cmr_ledger cmr_sam_headroom_ledger;
CMR_SHARE_LEDGERS(sam_headroom, &cmr_sam_headroom_ledger, 1)
static const cmr_ledger_memory cmr_sam_headroom_memory = {cmr_sam_headroom_obtain, cmr_sam_headroom_release};

cmr_status cmr_sam_headroom_impl_allocate(cmr_sam_headroom_impl *impl, size_t bytes, size_t alignment,
                                          cmr_stream stream, void **out) {
  return cmr_ledger_allocate(&cmr_sam_headroom_ledger, "sam_headroom", NULL, &cmr_sam_headroom_memory, impl, bytes,
                             alignment, stream, out);
}

cmr_status cmr_sam_headroom_impl_deallocate(cmr_sam_headroom_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                            cmr_stream stream) {
  return cmr_ledger_deallocate(&cmr_sam_headroom_ledger, "sam_headroom", NULL, &cmr_sam_headroom_memory, impl, ptr,
                               bytes, alignment, stream);
}

bool cmr_sam_headroom_impl_is_equal(const cmr_sam_headroom_impl *impl, const cmr_sam_headroom_impl *other) {
  return impl->params.headroom == other->params.headroom;
}
