/* SPDX-License-Identifier: Apache-2.0 */
/* failure_callback: the upstream's allocation, retried for as long as the
 * user's callback asks after each out-of-memory failure. */
#include <stdio.h>
#include <stdlib.h>

#include "impl.h"

struct cmr_failure_callback_impl {
  cmr_resource_ref upstream;
  cmr_failure_callback callback;
  void *callback_arg;
};

cmr_status cmr_failure_callback_impl_create(cmr_resource_ref upstream, cmr_failure_callback callback,
                                            void *callback_arg, cmr_failure_callback_impl **out) {
  cmr_failure_callback_impl *impl = malloc(sizeof *impl);
  if (impl == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "failure_callback: no host memory for the resource");
  *impl = (cmr_failure_callback_impl){upstream, callback, callback_arg};
  *out = impl;
  return CMR_SUCCESS;
}

void cmr_failure_callback_impl_destroy(cmr_failure_callback_impl *impl) { free(impl); }

cmr_status cmr_failure_callback_impl_allocate(cmr_failure_callback_impl *impl, size_t bytes, size_t alignment,
                                              cmr_stream stream, void **out) {
  for (;;) {
    cmr_status status = cmr_allocate_aligned(impl->upstream, bytes, alignment, stream, out);
    if (status != CMR_ERROR_OUT_OF_MEMORY) return status;
    /* The callback may call cmr and replace this thread's message: keep the
     * upstream's, which says why the memory ran out. */
    char reason[1024]; /* a message's capacity */
    snprintf(reason, sizeof reason, "%s", cmr_last_error_message());
    bool retry = impl->callback(bytes, impl->callback_arg);
    cmr_log(CMR_LOG_DEBUG, "failure_callback: the upstream is out of memory for %zu bytes: the callback %s", bytes,
            retry ? "asks for a retry" : "gives up");
    if (!retry) {
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "failure_callback: the callback gave up on %zu bytes: %s", bytes,
                       reason);
    }
  }
}

cmr_status cmr_failure_callback_impl_deallocate(cmr_failure_callback_impl *impl, void *ptr, size_t bytes,
                                                size_t alignment, cmr_stream stream) {
  return cmr_deallocate_aligned(impl->upstream, ptr, bytes, alignment, stream);
}
