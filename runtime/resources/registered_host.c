/* SPDX-License-Identifier: Apache-2.0 */
/* registered_host: each allocation a pre-touched host mapping
 * (host_pages.h) that the CUDA build pins with one cudaHostRegister; every
 * free vouched for by a ledger shared by all resources of the type
 * (equality "type": they map and unmap alike). A free waits for the stream,
 * whose queued work may still read the memory, then unregisters and
 * unmaps. */
#include "backend.h"
#include "host_pages.h"
#include "impl.h"
#include "ledger.h"

struct cmr_registered_host_impl {
  cmr_registered_host_params params; /* first: what it was created with (impl.h) */
  int device;                        /* current at creation: the streams' device */
};
CMR_IMPL_LAYOUT(registered_host);

static cmr_ledger cmr_registered_host_ledger;
CMR_SHARE_LEDGERS(registered_host, &cmr_registered_host_ledger, 1)

static const char cmr_registered_host_owner[] = "registered_host";

static const cmr_host_pages_huge cmr_huge_of[] = {
    [CMR_REGISTERED_HOST_HUGE_PAGES_TRANSPARENT] = CMR_HOST_PAGES_TRANSPARENT,
    [CMR_REGISTERED_HOST_HUGE_PAGES_RESERVED] = CMR_HOST_PAGES_RESERVED,
    [CMR_REGISTERED_HOST_HUGE_PAGES_NONE] = CMR_HOST_PAGES_BASE,
};

/* The CUDA build pins with the driver: without one (CMR_ERROR_NO_DEVICE)
 * the resource is not made, rather than failing every allocation. */
cmr_status cmr_registered_host_impl_init(cmr_registered_host_impl *impl) {
  impl->device = cmr_backend_device_at_creation();
#if CMR_WITH_CUDA
  int devices = 0;
  return cmr_backend_device_count(&devices);
#else
  return CMR_SUCCESS;
#endif
}

static cmr_status cmr_obtain(void *context, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)alignment, (void)stream; /* pages are aligned past what the spec lets reach here */
  const cmr_registered_host_impl *impl = context;
  const cmr_host_pages_huge huge = cmr_huge_of[impl->params.huge_pages];
  cmr_host_pages_made made;
  cmr_status status =
      cmr_host_pages_map(cmr_registered_host_owner, bytes, huge, impl->params.touch_threads, out, &made);
#if CMR_WITH_CUDA
  if (status == CMR_SUCCESS) {
    cmr_backend_device_guard guard;
    status = cmr_backend_device_enter(impl->device, &guard);
    if (status == CMR_SUCCESS)
      status = cmr_backend_device_leave(&guard, cmr_backend_host_register(*out, cmr_host_pages_span(bytes, huge)));
    if (status != CMR_SUCCESS) {
      cmr_host_pages_unmap(*out, bytes, huge);
      *out = NULL;
    }
  }
#endif
  return status;
}

static cmr_status cmr_release(void *context, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)alignment;
  const cmr_registered_host_impl *impl = context;
  cmr_status status = cmr_backend_stream_synchronize_on(impl->device, stream);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s: deallocate", cmr_registered_host_owner);
#if CMR_WITH_CUDA
  status = cmr_backend_host_unregister(ptr);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s: deallocate", cmr_registered_host_owner);
#endif
  cmr_host_pages_unmap(ptr, bytes, cmr_huge_of[impl->params.huge_pages]);
  return CMR_SUCCESS;
}

static const cmr_ledger_memory cmr_registered_host_memory = {cmr_obtain, cmr_release};

cmr_status cmr_registered_host_impl_allocate(cmr_registered_host_impl *impl, size_t bytes, size_t alignment,
                                             cmr_stream stream, void **out) {
  return cmr_ledger_allocate(&cmr_registered_host_ledger, cmr_registered_host_owner, impl, &cmr_registered_host_memory,
                             impl, bytes, alignment, stream, out);
}

cmr_status cmr_registered_host_impl_deallocate(cmr_registered_host_impl *impl, void *ptr, size_t bytes,
                                               size_t alignment, cmr_stream stream) {
  return cmr_ledger_deallocate(&cmr_registered_host_ledger, cmr_registered_host_owner, impl,
                               &cmr_registered_host_memory, impl, ptr, bytes, alignment, stream);
}
