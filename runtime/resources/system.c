/* SPDX-License-Identifier: Apache-2.0 */
/* system: host memory from posix_memalign / free. Device accessible only
 * where the device reads pageable memory (and always in the host build,
 * where the host is the device). */
#include <stdlib.h>

#include "backend.h"
#include "host_memory.h"
#include "impl.h"
#include "ledger.h"

/* One ledger for every system resource: they are interchangeable (equality
 * "type"), so any of them takes back what another handed out. */
static cmr_ledger cmr_system_ledger;
CMR_SHARE_LEDGERS(system, &cmr_system_ledger, 1)

struct cmr_system_impl {
  bool device_accessible;
  int device; /* current at creation: a free waits for its stream there */
};
CMR_IMPL_LAYOUT(system);

cmr_status cmr_system_impl_init(cmr_system_impl *impl) {
  /* Without a driver the device cannot reach this memory: that is an answer,
   * not a failure, so the query's error is not passed on. */
  if (cmr_backend_pageable_memory_access(&impl->device_accessible) != CMR_SUCCESS) {
    impl->device_accessible = false;
    cmr_clear_last_error();
  }
  impl->device = cmr_backend_device_at_creation();
  return CMR_SUCCESS;
}

static cmr_status cmr_system_obtain(void *impl, size_t bytes, size_t alignment, cmr_stream stream, void **out) {
  (void)impl, (void)stream;
  return cmr_host_memory_allocate("system", bytes, alignment, out);
}

static cmr_status cmr_system_release(void *impl, void *ptr, size_t bytes, size_t alignment, cmr_stream stream) {
  (void)bytes, (void)alignment;
  return cmr_host_memory_deallocate("system", ptr, ((cmr_system_impl *)impl)->device, stream);
}

static const cmr_ledger_memory cmr_system_memory = {cmr_system_obtain, cmr_system_release};

cmr_status cmr_system_impl_allocate(cmr_system_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                    void **out) {
  return cmr_ledger_allocate(&cmr_system_ledger, "system", NULL, &cmr_system_memory, impl, bytes, alignment, stream,
                             out);
}

/* Only what a system resource handed out, with its size, reaches free(). */
cmr_status cmr_system_impl_deallocate(cmr_system_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                      cmr_stream stream) {
  return cmr_ledger_deallocate(&cmr_system_ledger, "system", NULL, &cmr_system_memory, impl, ptr, bytes, alignment,
                               stream);
}

unsigned cmr_system_impl_properties(const cmr_system_impl *impl) {
  return CMR_PROPERTY_HOST_ACCESSIBLE | (impl->device_accessible ? CMR_PROPERTY_DEVICE_ACCESSIBLE : 0u);
}
