/* SPDX-License-Identifier: Apache-2.0 */
/* thread_safe: one mutex held around every call to the upstream. */
#include <pthread.h>

#include "impl.h"
#include "upstream_lock.h"

struct cmr_thread_safe_impl {
  cmr_thread_safe_params params; /* first: what it was created with (impl.h) */
  cmr_upstream_lock lock;
};
CMR_IMPL_LAYOUT(thread_safe);

cmr_status cmr_thread_safe_impl_init(cmr_thread_safe_impl *impl) {
  return cmr_upstream_lock_init(&impl->lock, "thread_safe: a call from inside its upstream's call");
}

void cmr_thread_safe_impl_fini(cmr_thread_safe_impl *impl) { cmr_upstream_lock_destroy(&impl->lock); }

cmr_status cmr_thread_safe_impl_allocate(cmr_thread_safe_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                         void **out) {
  cmr_status status = cmr_upstream_lock_acquire(&impl->lock);
  if (status != CMR_SUCCESS) return status;
  status = cmr_allocate_aligned(impl->params.upstream, bytes, alignment, stream, out);
  cmr_upstream_lock_release(&impl->lock);
  return status;
}

cmr_status cmr_thread_safe_impl_deallocate(cmr_thread_safe_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                           cmr_stream stream) {
  cmr_status status = cmr_upstream_lock_acquire(&impl->lock);
  if (status != CMR_SUCCESS) return status;
  status = cmr_deallocate_aligned(impl->params.upstream, ptr, bytes, alignment, stream);
  cmr_upstream_lock_release(&impl->lock);
  return status;
}
