/* TEMPORARY, for the bindings branch only: the per-device acquire getters
 * are landing in main (per_device.c, atomic under the table's lock). Until
 * then these weak stand-ins let the bindings build and test against the API;
 * they are NOT race-free (get, then retain). The lead's strong definitions
 * replace them at link time; delete this file at the merge. */
#include "internal.h"

__attribute__((weak)) cmr_status cmr_acquire_per_device_resource_ref(int device, cmr_resource_ref *out) {
  cmr_status status = cmr_get_per_device_resource_ref(device, out);
  if (status == CMR_SUCCESS) status = cmr_ref_retain(*out);
  return status;
}

__attribute__((weak)) cmr_status cmr_acquire_current_device_resource_ref(cmr_resource_ref *out) {
  cmr_status status = cmr_get_current_device_resource_ref(out);
  if (status == CMR_SUCCESS) status = cmr_ref_retain(*out);
  return status;
}
