/* SPDX-License-Identifier: Apache-2.0 */
/* fallback: the primary (params.upstream) first, the fallback when the
 * primary is out of memory. A ledger of its own records every pointer handed
 * out, tagged with the resource that served it, so that a free goes back to
 * that one and a pointer it never handed out reaches neither. */
#include "impl.h"
#include "ledger.h"
#include "refs.h"

struct cmr_fallback_impl {
  cmr_fallback_params params;          /* first: the primary and the fallback (impl.h) */
  cmr_ledger *served;                  /* each live pointer, tagged with its resource's ref in params */
  _Atomic size_t fallback_allocations; /* zero-filled: none yet */
  _Atomic size_t fallback_bytes;
};
CMR_IMPL_LAYOUT(fallback);

cmr_status cmr_fallback_impl_init(cmr_fallback_impl *impl) { return cmr_ledger_create("fallback", &impl->served); }

void cmr_fallback_impl_fini(cmr_fallback_impl *impl) { cmr_ledger_destroy(impl->served); }

/* The memory comes from `from` (the primary or the fallback) and is recorded
 * with it as the tag; memory that cannot be recorded goes straight back. */
static cmr_status cmr_fallback_serve(cmr_fallback_impl *impl, const cmr_resource_ref *from, size_t bytes,
                                     size_t alignment, cmr_stream stream, void **out) {
  cmr_status status = cmr_allocate_aligned(*from, bytes, alignment, stream, out);
  if (status != CMR_SUCCESS) return status;
  status = cmr_ledger_add(impl->served, "fallback", *out, from, bytes);
  if (status != CMR_SUCCESS) {
    status = cmr_give_back(status, *from, *out, bytes, alignment, stream);
    *out = NULL;
  }
  return status;
}

cmr_status cmr_fallback_impl_allocate(cmr_fallback_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                      void **out) {
  cmr_status status = cmr_fallback_serve(impl, &impl->params.upstream, bytes, alignment, stream, out);
  if (status != CMR_ERROR_OUT_OF_MEMORY) return status;
  status = cmr_fallback_serve(impl, &impl->params.fallback, bytes, alignment, stream, out);
  if (status == CMR_SUCCESS) {
    atomic_fetch_add_explicit(&impl->fallback_allocations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&impl->fallback_bytes, bytes, memory_order_relaxed);
  }
  return status;
}

/* The record of `ptr` taken out of the ledger, with the resource it names
 * in *from; else why not, and nothing changes. */
static cmr_status cmr_fallback_take(cmr_fallback_impl *impl, void *ptr, size_t bytes, const cmr_resource_ref **from,
                                    cmr_ledger_entry **entry) {
  size_t recorded = 0;
  *from = &impl->params.upstream;
  cmr_status status = cmr_ledger_take(impl->served, *from, ptr, bytes, entry, &recorded);
  if (status == CMR_ERROR_UNKNOWN_POINTER) {
    *from = &impl->params.fallback;
    status = cmr_ledger_take(impl->served, *from, ptr, bytes, entry, &recorded);
  }
  if (status == CMR_ERROR_INVALID_ARGUMENT) {
    return cmr_error(status, "fallback: %p was allocated with %zu bytes, not %zu: nothing was freed", ptr, recorded,
                     bytes);
  }
  if (status != CMR_SUCCESS) {
    return cmr_error(status, "fallback: %p was not allocated by this resource, or is already free", ptr);
  }
  return CMR_SUCCESS;
}

/* A free goes to the resource that served the pointer; if that one refuses
 * it, it stays recorded and can be freed again. */
cmr_status cmr_fallback_impl_deallocate(cmr_fallback_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                        cmr_stream stream) {
  const cmr_resource_ref *from = NULL;
  cmr_ledger_entry *entry = NULL;
  cmr_status status = cmr_fallback_take(impl, ptr, bytes, &from, &entry);
  if (status != CMR_SUCCESS) return status;
  status = cmr_deallocate_aligned(*from, ptr, bytes, alignment, stream);
  if (status != CMR_SUCCESS) {
    cmr_ledger_put_back(impl->served, entry);
    return status;
  }
  cmr_ledger_discard(impl->served, entry);
  if (from == &impl->params.fallback) {
    atomic_fetch_sub_explicit(&impl->fallback_bytes, bytes, memory_order_relaxed);
  }
  return CMR_SUCCESS;
}

/* Memory may come from either: only what both give is promised. */
unsigned cmr_fallback_impl_properties(const cmr_fallback_impl *impl) {
  return cmr_ref_properties_of(impl->params.upstream) & cmr_ref_properties_of(impl->params.fallback);
}
