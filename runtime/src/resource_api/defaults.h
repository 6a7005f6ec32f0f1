/* SPDX-License-Identifier: Apache-2.0 */
/* Named defaults of spec parameters (device.c), which generated code calls. */
#ifndef CMR_DEFAULTS_H
#define CMR_DEFAULTS_H

#include <stddef.h>

#include <cmr/cmr.h>

/* Half of the current device's free memory, rounded down to 256 bytes (the
 * pool's and arena's initial size in RMM's Python API). */
cmr_status cmr_default_half_of_free_device_memory(size_t *out);

#endif /* CMR_DEFAULTS_H */
