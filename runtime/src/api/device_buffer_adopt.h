/* SPDX-License-Identifier: Apache-2.0 */
/* A device buffer over memory obtained otherwise than by allocating from
 * its resource (an import of another process's memory, ipc.c). */
#ifndef CMR_DEVICE_BUFFER_ADOPT_H
#define CMR_DEVICE_BUFFER_ADOPT_H

#include <cmr/device_buffer.h>

/* A new buffer whose memory is the `size` bytes at `data` (non-NULL),
 * which `mr` frees (cmr_deallocate with the default alignment, on the
 * buffer's stream) when the buffer goes; the buffer holds a share of `mr`.
 * On failure nothing is held and `data` stays the caller's, to free. */
cmr_status cmr_device_buffer_adopt(void *data, size_t size, cmr_stream stream, cmr_resource_ref mr, const char *what,
                                   cmr_device_buffer **out);

#endif /* CMR_DEVICE_BUFFER_ADOPT_H */
