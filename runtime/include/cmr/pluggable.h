/* SPDX-License-Identifier: Apache-2.0 */
/* Allocation entry points of the shape PyTorch's CUDAPluggableAllocator
 * loads from a shared library: they allocate and free through the
 * per-device table's resource of `device`, so that PyTorch shares cmr's
 * resources with C and Python (cmr.allocators.torch names them). */
#ifndef CMR_PLUGGABLE_H
#define CMR_PLUGGABLE_H

#include <sys/types.h>

#include <cmr/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `size` bytes from device `device`'s resource, ordered on `stream`; NULL
 * when they cannot be had (cmr_last_error_message() says why), and for a
 * size of 0. */
CMR_API void *cmr_pluggable_allocate(ssize_t size, int device, cmr_stream stream);
/* Frees what cmr_pluggable_allocate returned, with the same size and device.
 * A failure cannot be returned to PyTorch: it is written to stderr. */
CMR_API void cmr_pluggable_deallocate(void *ptr, ssize_t size, int device, cmr_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* CMR_PLUGGABLE_H */
