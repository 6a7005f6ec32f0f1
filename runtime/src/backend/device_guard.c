/* SPDX-License-Identifier: Apache-2.0 */
/* Making a resource's device current around its CUDA calls (backend.h). */
#include "backend.h"

cmr_status cmr_backend_device_enter(int device, cmr_backend_device_guard *guard) {
  guard->switched = false;
  if (device < 0) return CMR_SUCCESS; /* no device to make current */
  cmr_status status = cmr_backend_get_device(&guard->previous);
  if (status == CMR_SUCCESS && guard->previous != device) {
    status = cmr_backend_set_device(device);
    guard->switched = status == CMR_SUCCESS;
  }
  return status;
}

cmr_status cmr_backend_device_leave(const cmr_backend_device_guard *guard, cmr_status status) {
  if (!guard->switched) return status;
  cmr_status restored = cmr_backend_set_device(guard->previous);
  return status == CMR_SUCCESS ? restored : status;
}

cmr_status cmr_backend_event_create_on(int device, cmr_backend_event *out) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_backend_device_enter(device, &guard);
  return status == CMR_SUCCESS ? cmr_backend_device_leave(&guard, cmr_backend_event_create(out)) : status;
}

cmr_status cmr_backend_device_synchronize_on(int device) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_backend_device_enter(device, &guard);
  return status == CMR_SUCCESS ? cmr_backend_device_leave(&guard, cmr_backend_device_synchronize()) : status;
}

int cmr_backend_device_at_creation(void) {
  int device = -1;
  if (cmr_backend_get_device(&device) != CMR_SUCCESS) {
    cmr_clear_last_error();
    device = -1;
  }
  return device;
}

cmr_status cmr_backend_stream_synchronize_on(int device, cmr_stream stream) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_backend_device_enter(device, &guard);
  return status == CMR_SUCCESS ? cmr_backend_device_leave(&guard, cmr_backend_stream_synchronize(stream)) : status;
}
