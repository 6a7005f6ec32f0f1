/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch's pluggable-allocator entry points over the per-device table.
 *
 * PyTorch calls them from its own C++ with the GIL let go, from outside
 * cmr: no lock of cmr's is held on entry, so this is where the history's
 * entry context runs (Python's takes the GIL for the caller's frames, as
 * PyTorch's own allocator does before it takes its lock), and nowhere
 * below. A thread waiting here for the GIL holds nothing a GIL holder may
 * wait for in cmr; once it has let the GIL go again it waits for cmr's
 * locks holding nothing of Python's: no cycle. (A resource's callback that
 * calls PyTorch from inside cmr enters here holding what cmr held around
 * it: from Python it holds the GIL already, which Ensure only counts; from
 * C it is as exposed as PyTorch's own allocator would be.) */
#include <cmr/pluggable.h>

#include <stdio.h>

#include "history_entry.h"
#include "internal.h"

void *cmr_pluggable_allocate(ssize_t size, int device, cmr_stream stream) {
  if (size < 0) {
    cmr_error(CMR_ERROR_INVALID_ARGUMENT, "cmr_pluggable_allocate: size %zd is negative", size);
    return NULL;
  }
  cmr_resource_ref ref;
  void *ptr = NULL;
  cmr_history_entry entry = cmr_history_enter();
  /* A share for the call: another thread may replace the entry meanwhile
   * (taken and dropped without the token's checks: the table's share keeps
   * it alive while it is taken). */
  cmr_status status = cmr_acquire_per_device_resource_ref(device, &ref);
  if (status == CMR_SUCCESS) {
    status = cmr_allocate(ref, (size_t)size, stream, &ptr);
    cmr_ref_drop_taken(ref);
  }
  cmr_history_leave(entry);
  if (status != CMR_SUCCESS) {
    cmr_error_context(status, "cmr_pluggable_allocate(%zd bytes, device %d)", size, device);
    return NULL;
  }
  return ptr;
}

void cmr_pluggable_deallocate(void *ptr, ssize_t size, int device, cmr_stream stream) {
  if (ptr == NULL) return;
  cmr_resource_ref ref;
  cmr_history_entry entry = cmr_history_enter();
  cmr_status status = size < 0 ? cmr_error(CMR_ERROR_INVALID_ARGUMENT, "size %zd is negative", size)
                               : cmr_acquire_per_device_resource_ref(device, &ref);
  if (status == CMR_SUCCESS) {
    status = cmr_deallocate(ref, ptr, (size_t)size, stream);
    cmr_ref_drop_taken(ref);
  }
  cmr_history_leave(entry);
  /* PyTorch's free returns nothing, so this is the one place a lost free
   * can be seen: a leak or a wrong size, not something to carry on silently. */
  if (status != CMR_SUCCESS) {
    fprintf(stderr, "cmr_pluggable_deallocate(%p, %zd bytes, device %d): %s: %s\n", ptr, size, device,
            cmr_status_string(status), cmr_last_error_message());
  }
}
