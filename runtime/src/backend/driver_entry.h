/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA driver's functions, found through the runtime
 * (cudaGetDriverEntryPointByVersion) so that libcmr links the CUDA runtime
 * alone. CUDA build only. */
#ifndef CMR_DRIVER_ENTRY_H
#define CMR_DRIVER_ENTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <cmr/core.h>

/* Copies the driver's `name` (as of CUDA 12.0's signature) into *slot, a
 * function pointer slot_size bytes long. On failure *slot is untouched and
 * the status (CMR_ERROR_NO_DEVICE without a driver, CMR_ERROR_UNSUPPORTED
 * when the driver has no such function, else CMR_ERROR_CUDA) comes with
 * its reason in `why` (why_size bytes); nothing is recorded as cmr's last
 * error, so a caller with another way may take it quietly. */
cmr_status cmr_driver_entry_find(const char *name, void *slot, size_t slot_size, char *why, size_t why_size);

#endif /* CMR_DRIVER_ENTRY_H */
