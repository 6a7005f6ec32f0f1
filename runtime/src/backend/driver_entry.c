/* SPDX-License-Identifier: Apache-2.0 */
#include "driver_entry.h"

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#if !CMR_WITH_CUDA
#error "driver_entry.c belongs to the CUDA build (CMR_WITH_CUDA=1)"
#endif

cmr_status cmr_driver_entry_find(const char *name, void *slot, size_t slot_size, char *why, size_t why_size) {
  void *function = NULL;
  enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t error = cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, why_size, "cudaGetDriverEntryPointByVersion(%s): %s", name, cudaGetErrorName(error));
    return error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice ? CMR_ERROR_NO_DEVICE : CMR_ERROR_CUDA;
  }
  if (found != cudaDriverEntryPointSuccess || function == NULL) {
    snprintf(why, why_size, "cudaGetDriverEntryPointByVersion: the driver has no %s", name);
    return CMR_ERROR_UNSUPPORTED;
  }
  /* An entry point is a function's address handed out as a void * (as
   * dlsym's): copied, not cast, into a function pointer. */
  memcpy(slot, &function, slot_size);
  return CMR_SUCCESS;
}
