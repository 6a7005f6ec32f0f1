/* SPDX-License-Identifier: Apache-2.0 */
/* A program outside the cmr tree, built against an installed cmr: allocate
 * and free through the current device's resource, then through the
 * PyTorch entry points that <cmr/cmr.h> declares too (pluggable.h), and
 * print the version.
 * In a CUDA build on a machine without a usable GPU the default resource
 * cannot be made (CMR_ERROR_NO_DEVICE); that is reported and counts as
 * success, since the library was found, linked, loaded and answered. */
#include <cmr/cmr.h>

#include <stdio.h>

int main(void) {
  printf("consumer: cmr %s (%s build)\n", cmr_version(), cmr_built_with_cuda() ? "CUDA" : "host");
  const size_t bytes = (size_t)1 << 20;
  cmr_resource_ref mr;
  void *ptr = NULL;
  cmr_status status = cmr_get_current_device_resource_ref(&mr);
  if (status == CMR_SUCCESS) {
    status = cmr_allocate(mr, bytes, CMR_DEFAULT_STREAM, &ptr);
  }
  if (status == CMR_SUCCESS) {
    status = cmr_deallocate(mr, ptr, bytes, CMR_DEFAULT_STREAM);
  }
  if (status == CMR_SUCCESS) {
    void *torch = cmr_pluggable_allocate((ssize_t)bytes, 0, CMR_DEFAULT_STREAM);
    if (torch == NULL) {
      fprintf(stderr, "consumer: cmr_pluggable_allocate: %s\n", cmr_last_error_message());
      return 1;
    }
    cmr_pluggable_deallocate(torch, (ssize_t)bytes, 0, CMR_DEFAULT_STREAM);
  }
  if (status == CMR_ERROR_NO_DEVICE && cmr_built_with_cuda()) {
    printf("consumer: note: no usable GPU, nothing allocated (%s)\n", cmr_last_error_message());
    return 0;
  }
  if (status != CMR_SUCCESS) {
    fprintf(stderr, "consumer: %s: %s\n", cmr_status_string(status), cmr_last_error_message());
    return 1;
  }
  printf("consumer: allocated and freed %zu bytes through the current device resource\n", bytes);
  return 0;
}
