/* SPDX-License-Identifier: Apache-2.0 */
/* thread_safe: one mutex held around every call to the upstream. */
#include <pthread.h>
#include <stdlib.h>

#include "impl.h"
#include "lock.h"

struct cmr_thread_safe_impl {
  cmr_resource_ref upstream; /* the handle holds its share */
  pthread_mutex_t lock;
};

cmr_status cmr_thread_safe_impl_create(cmr_resource_ref upstream, cmr_thread_safe_impl **out) {
  cmr_thread_safe_impl *impl = calloc(1, sizeof *impl);
  if (impl == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "thread_safe: no host memory for the resource");
  impl->upstream = upstream;
  pthread_mutex_init(&impl->lock, NULL);
  *out = impl;
  return CMR_SUCCESS;
}

void cmr_thread_safe_impl_destroy(cmr_thread_safe_impl *impl) {
  pthread_mutex_destroy(&impl->lock);
  free(impl);
}

cmr_status cmr_thread_safe_impl_allocate(cmr_thread_safe_impl *impl, size_t bytes, size_t alignment,
                                         cmr_stream stream, void **out) {
  cmr_mutex_lock(&impl->lock);
  cmr_status status = cmr_allocate_aligned(impl->upstream, bytes, alignment, stream, out);
  pthread_mutex_unlock(&impl->lock);
  return status;
}

cmr_status cmr_thread_safe_impl_deallocate(cmr_thread_safe_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                           cmr_stream stream) {
  cmr_mutex_lock(&impl->lock);
  cmr_status status = cmr_deallocate_aligned(impl->upstream, ptr, bytes, alignment, stream);
  pthread_mutex_unlock(&impl->lock);
  return status;
}
