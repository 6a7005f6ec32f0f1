/* SPDX-License-Identifier: Apache-2.0 */
/* prefetch: the upstream's allocation, migrated to the current device on
 * its stream when it is managed memory. */
#include "backend.h"
#include "impl.h"

struct cmr_prefetch_impl {
  cmr_prefetch_params params; /* its upstream (impl.h) */
};
CMR_IMPL_LAYOUT(prefetch);

/* Prefetches `ptr` to the calling thread's current device if it is
 * managed, unless `stream` is capturing a graph: the prefetch is a hint,
 * left out of a capture rather than baked into the graph. */
static cmr_status cmr_prefetch_if_managed(void *ptr, size_t bytes, cmr_stream stream) {
  bool managed = false, capturing = false;
  int device = 0;
  cmr_status status = cmr_backend_stream_capturing(stream, &capturing);
  if (status != CMR_SUCCESS || capturing) return status;
  status = cmr_backend_pointer_is_managed(ptr, &managed);
  if (status != CMR_SUCCESS || !managed) return status;
  status = cmr_backend_get_device(&device);
  if (status == CMR_SUCCESS) status = cmr_backend_prefetch(ptr, bytes, device, stream);
  return status;
}

/* Returns memory that could not be prefetched, failing with the prefetch's
 * `status` and message (and the give-back's, should that fail too). */
static cmr_status cmr_prefetch_give_back(cmr_prefetch_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                         void **out, cmr_status status) {
  status = cmr_give_back(status, impl->params.upstream, *out, bytes, alignment, stream);
  *out = NULL;
  return cmr_error_context(status, "prefetch: %zu bytes not prefetched (and given back to the upstream)", bytes);
}

cmr_status cmr_prefetch_impl_allocate(cmr_prefetch_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                      void **out) {
  cmr_status status = cmr_allocate_aligned(impl->params.upstream, bytes, alignment, stream, out);
  if (status != CMR_SUCCESS) return status;
  status = cmr_prefetch_if_managed(*out, bytes, stream);
  if (status != CMR_SUCCESS) return cmr_prefetch_give_back(impl, bytes, alignment, stream, out, status);
  return CMR_SUCCESS;
}

cmr_status cmr_prefetch_impl_deallocate(cmr_prefetch_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                        cmr_stream stream) {
  return cmr_deallocate_aligned(impl->params.upstream, ptr, bytes, alignment, stream);
}
