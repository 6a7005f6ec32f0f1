/* SPDX-License-Identifier: Apache-2.0 */
/* callback: memory from the user's allocate / deallocate functions. The
 * deallocate function sees only pointers its allocate function returned
 * through this resource, with the size they were asked for: the resource
 * keeps a ledger of its own (so it is equal only to itself, as RMM's). */
#include "impl.h"
#include "ledger.h"

struct cmr_callback_impl {
  cmr_callback_params params; /* first: its functions and properties (impl.h) */
  cmr_ledger *ledger;
};
CMR_IMPL_LAYOUT(callback);

cmr_status cmr_callback_impl_init(cmr_callback_impl *impl) { return cmr_ledger_create("callback", &impl->ledger); }

/* Memory still out stays the user's; only the records go. */
void cmr_callback_impl_fini(cmr_callback_impl *impl) { cmr_ledger_destroy(impl->ledger); }

static cmr_status cmr_callback_obtain(void *resource, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  cmr_callback_impl *impl = resource;
  (void)alignment; /* the functions promise 256; dispatch verifies what comes back */
  *out = impl->params.allocate(bytes, stream, impl->params.allocate_arg);
  if (*out == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "callback: the allocate function returned NULL for %zu bytes", bytes);
  }
  return CMR_SUCCESS;
}

static cmr_status cmr_callback_release(void *resource, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  cmr_callback_impl *impl = resource;
  (void)alignment;
  impl->params.deallocate(ptr, bytes, stream, impl->params.deallocate_arg);
  return CMR_SUCCESS;
}

static const cmr_ledger_memory cmr_callback_memory = {cmr_callback_obtain, cmr_callback_release};

cmr_status cmr_callback_impl_allocate(cmr_callback_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                      void **out) {
  return cmr_ledger_allocate(impl->ledger, "callback", NULL, &cmr_callback_memory, impl, bytes, alignment, stream, out);
}

cmr_status cmr_callback_impl_deallocate(cmr_callback_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                        cmr_stream stream) {
  return cmr_ledger_deallocate(impl->ledger, "callback", NULL, &cmr_callback_memory, impl, ptr, bytes, alignment,
                               stream);
}

unsigned cmr_callback_impl_properties(const cmr_callback_impl *impl) { return impl->params.properties; }
