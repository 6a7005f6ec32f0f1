/* SPDX-License-Identifier: Apache-2.0 */
/* failure_callback: the upstream's allocation, retried for as long as the
 * user's callback asks after each out-of-memory failure. */

#include "history.h"
#include "impl.h"

struct cmr_failure_callback_impl {
  cmr_failure_callback_params params; /* its upstream and callback (impl.h) */
  _Atomic size_t retries;             /* times the callback asked for another try */
};
CMR_IMPL_LAYOUT(failure_callback);

cmr_status cmr_failure_callback_impl_allocate(cmr_failure_callback_impl *impl, size_t bytes, size_t alignment,
                                              cmr_stream stream, void **out) {
  for (;;) {
    cmr_status status = cmr_allocate_aligned(impl->params.upstream, bytes, alignment, stream, out);
    if (status != CMR_ERROR_OUT_OF_MEMORY) return status;
    /* The callback may call cmr and replace this thread's message: keep the
     * upstream's, which says why the memory ran out. */
    cmr_kept_message reason;
    cmr_keep_message(&reason);
    bool retry = impl->params.callback(bytes, impl->params.callback_arg);
    cmr_log(CMR_LOG_DEBUG, "failure_callback: the upstream is out of memory for %zu bytes: the callback %s", bytes,
            retry ? "asks for a retry" : "gives up");
    if (retry) atomic_fetch_add_explicit(&impl->retries, 1, memory_order_relaxed);
    if (retry) cmr_history_note(CMR_HISTORY_RETRY, impl->params.upstream, stream, NULL, bytes);
    if (!retry) {
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "failure_callback: the callback gave up on %zu bytes: %s", bytes,
                       reason.text);
    }
  }
}

cmr_status cmr_failure_callback_impl_deallocate(cmr_failure_callback_impl *impl, void *ptr, size_t bytes,
                                                size_t alignment, cmr_stream stream) {
  return cmr_deallocate_aligned(impl->params.upstream, ptr, bytes, alignment, stream);
}

/* Its own retries on top of those below it. */
cmr_status cmr_failure_callback_impl_stats(cmr_failure_callback_impl *impl, cmr_stats *out,
                                           cmr_free_by_stream *spread) {
  (void)spread;
  out->failure_callback_retries += atomic_load_explicit(&impl->retries, memory_order_relaxed);
  out->supported |= CMR_STATS_FAILURE_CALLBACK_RETRIES;
  return CMR_SUCCESS;
}

cmr_status cmr_failure_callback_impl_reset_peak_stats(cmr_failure_callback_impl *impl) {
  (void)impl; /* no peak of its own */
  return CMR_SUCCESS;
}
